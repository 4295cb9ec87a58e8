"""llama.cpp mix branches where a rule *keeps* the file type's default (quant/llamacpp_mix.py).

units, errors and quant are already at 100% line coverage from their own tests; these cases cover
the three branch arcs left (measured with ``--cov-branch``): the fall-through paths of
``llama_tensor_get_type_impl`` in src/llama-quant.cpp (ggml-org/llama.cpp), quoted per case.
Each case names the upstream condition that does NOT fire, so a rule added on our side that
upstream lacks makes it fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from oomkit.quant.ggml_types import ggml_type
from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes, tensor_type_for
from oomkit.spec.model import TensorInfo


def _t(name: str, shape: tuple[int, int]) -> TensorInfo:
    layer = int(name.split(".")[1])
    return TensorInfo(name=name, shape=shape, role=name.split(".", 2)[2][:-7], layer=layer)


# Llama-3-8B-like dense model and Mixtral-8x7B (32 layers, 32 heads / 8 KV heads each)
_DENSE: dict[str, Any] = {"n_layer": 32, "n_expert": 0, "n_gqa": 4, "arch": "llama"}
_MIXTRAL: dict[str, Any] = {"n_layer": 32, "n_expert": 8, "n_gqa": 4, "arch": "llama"}


@pytest.mark.parametrize(
    ("ftype", "role", "expected"),
    [
        # IQ1/IQ2 block, attn_output, n_expert != 8: only IQ1_S/IQ1_M (-> IQ2_XXS) and IQ2_S/IQ2_M
        # (-> IQ3_S) are bumped; IQ2_XXS and IQ2_XS keep their default type.
        ("IQ2_XXS", "attn_output", "IQ2_XXS"),
        ("IQ2_XS", "attn_output", "IQ2_XS"),
        # IQ1/IQ2 block, a tensor none of its else-ifs name (attn_q, ffn_gate, ffn_up): the block
        # still returns, so the later generic ffn_gate/ffn_up rules never apply to IQ1/IQ2 mixes.
        ("IQ2_XXS", "attn_q", "IQ2_XXS"),
        ("IQ2_XS", "ffn_gate", "IQ2_XS"),
        ("IQ1_S", "ffn_up", "IQ1_S"),
        # IQ2_M's default type is IQ2_S (llama_model_quantize_impl: case LLAMA_FTYPE_MOSTLY_IQ2_M)
        ("IQ2_M", "attn_q", "IQ2_S"),
    ],
)
def test_iq1_iq2_mixes_keep_default_type(ftype: str, role: str, expected: str) -> None:
    # Why: these are the fall-through arcs of the IQ1/IQ2 branch; a missing `return` there would
    # let e.g. ffn_gate pick up a K-quant bump and mis-size every low-bit GGUF.
    tensor = _t(f"blk.3.{role}.weight", (4096, 4096))
    assert tensor_type_for(ftype, tensor, **_DENSE) == expected


@pytest.mark.parametrize(
    ("ftype", "moe", "dense"),
    [
        # n_expert == 8 bumps attn_output to Q5_K only for the listed ftypes; Q3_K_L is not listed,
        # so Mixtral Q3_K_L keeps Q3_K while a dense model's Q3_K_L gets Q5_K (the else-branch map).
        ("Q3_K_L", "Q3_K", "Q5_K"),
        # Q5_K_M / Q5_K_S / Q6_K are not listed either: the default (Q5_K, Q5_K, Q6_K) stays.
        ("Q5_K_M", "Q5_K", "Q5_K"),
        ("Q5_K_S", "Q5_K", "Q5_K"),
        ("Q6_K", "Q6_K", "Q6_K"),
        # Q2_K_S is neither in the MoE list nor in the dense map
        ("Q2_K_S", "Q2_K", "Q2_K"),
        # contrast: Q4_K_M is listed -> Q5_K on Mixtral, stays Q4_K on a dense model
        ("Q4_K_M", "Q5_K", "Q4_K"),
    ],
)
def test_attn_output_with_eight_experts_only_bumps_listed_ftypes(
    ftype: str, moe: str, dense: str
) -> None:
    # Why: the `if (n_expert == 8) { if (ftype == ... ) new_type = Q5_K; }` arc where the inner
    # condition is false. A Mixtral Q3_K_L file really has smaller attn_output tensors than the
    # dense rule would give; an estimator that applied the dense map would over-count.
    tensor = _t("blk.7.attn_output.weight", (4096, 4096))
    assert tensor_type_for(ftype, tensor, **_MIXTRAL) == moe
    assert tensor_type_for(ftype, tensor, **_DENSE) == dense


def test_mixtral_q3_k_l_attn_output_bytes_in_a_full_walk() -> None:
    # Why: the same fall-through through predict_gguf_tensor_bytes (the counters-replaying walk
    # the file-size estimate uses), with exact ggml bytes: Q3_K is 110 bytes per 256 weights.
    tensors = [
        _t("blk.0.attn_q.weight", (4096, 4096)),
        _t("blk.0.attn_k.weight", (1024, 4096)),
        _t("blk.0.attn_v.weight", (1024, 4096)),
        _t("blk.0.attn_output.weight", (4096, 4096)),
    ]
    rows = predict_gguf_tensor_bytes("Q3_K_L", tensors, **_MIXTRAL)
    chosen = {t.name: (ty, b) for t, ty, b in rows}
    q3k = ggml_type("Q3_K")
    assert (q3k.block_size, q3k.type_size) == (256, 110)
    assert chosen["blk.0.attn_output.weight"] == ("Q3_K", 4096 * 4096 // 256 * 110)
