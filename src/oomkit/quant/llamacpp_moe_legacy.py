"""llama-quantize's k-quant mixes of MoE models before PR #4872 (2024-01-11): lighter than today's.

:mod:`oomkit.quant.llamacpp_mix` models today's ``llama_tensor_get_type``, whose ``_M`` mixes give
half of ``ffn_down`` more bits on MoE models too. Until ikawrakow's PR #4872 ("Restore intended
k-quants quantization mixes for MoE models", 2024-01-11: "The existing implementation of this
intended behavior fails for MoE models such as Mistral-8x7B, resulting in `QX_K_M` being mostly
equivalent to `QX_K_S`") the quantizer matched ``name.find("ffn_down.weight")`` (and
``ffn_gate.weight``/``ffn_up.weight`` for Q2_K), which the per-expert tensors of the GGUFs of
the day (``blk.N.ffn_down.E.weight``) never contain: every expert matrix kept the file type's
default type. ``attn_output`` got the dense rule (Q2_K -> Q3_K, Q3_K_M -> Q4_K, Q3_K_L -> Q5_K);
PR #4906 (2024-01-13) made it Q5_K for Q2_K ... Q4_K_M on 8-expert models. ``attn_k``/``attn_v``
were already Q8_0 on 8-expert models ("bumping this to Q8_0 trades just ~128MB"), as today.
Read in the llama.cpp vendored by llama-cpp-python 0.2.24 (December 2023),
``get_k_quant_type``.

Checks against published sizes of Mixtral-8x7B: PR #4872's table ("Q2_K (Master)" 14.57 GiB,
"Q3_K_M (Master)" 18.96 GiB) and TheBloke's December 2023 ``mixtral-8x7b-v0.1.Q4_K_M.gguf``
(26.44 GB; today's mix predicts 28.4 GB): ``tests/test_llamacpp_moe_legacy_mix.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oomkit.quant.ggml_types import GGML_TYPES
from oomkit.quant.llamacpp_tensors import (
    ATTENTION_OUTPUT,
    FFN_DOWN,
    FFN_GATE,
    FFN_UP,
    tensor_category,
)
from oomkit.spec.model import TensorInfo

__all__ = ["MOE_MIXES", "PRE_4872", "SOURCE", "legacy_moe_rows"]

PRE_4872 = "pre-4872"
MOE_MIXES: tuple[str, ...] = (PRE_4872,)
SOURCE = (
    "llama.cpp get_k_quant_type before PR #4872 (2024-01-11): expert FFN tensors keep the "
    "file type's default type; attn_output by the dense rule (PR #4906 came 2024-01-13)"
)
_K_TYPES = frozenset({"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"})
_EXPERT_FFN = frozenset({FFN_DOWN, FFN_GATE, FFN_UP})
#: the dense attn_output rule of the day (``get_k_quant_type``, non-Falcon)
_ATTN_OUTPUT: Mapping[str, str] = {"Q2_K": "Q3_K", "Q3_K_M": "Q4_K", "Q3_K_L": "Q5_K"}


def legacy_moe_type(category: str, name: str, *, ftype: str, default_type: str) -> str | None:
    """The type the pre-#4872 quantizer gave a MoE tensor, or None where it chose as today.

    >>> legacy_moe_type("ffn_down", "blk.3.ffn_down_exps.weight", ftype="Q4_K_M",
    ...                 default_type="Q4_K")
    'Q4_K'
    >>> legacy_moe_type("attn_output", "blk.3.attn_output.weight", ftype="Q4_K_M",
    ...                 default_type="Q4_K")
    'Q4_K'
    >>> legacy_moe_type("attn_v", "blk.3.attn_v.weight", ftype="Q4_K_M", default_type="Q4_K")
    """
    if category in _EXPERT_FFN and "_exps." in name:
        return default_type
    if category == ATTENTION_OUTPUT:
        return _ATTN_OUTPUT.get(ftype, default_type)
    return None


def legacy_moe_rows(
    rows: Sequence[tuple[TensorInfo, str, int]], *, ftype: str, default_type: str, n_expert: int
) -> tuple[tuple[TensorInfo, str, int], ...]:
    """A predicted weights table of a k-quant ``ftype`` re-typed to the pre-#4872 MoE mix
    (unchanged for a dense model or a file type that is not a k-quant)."""
    if n_expert <= 1 or default_type not in _K_TYPES:
        return tuple(rows)
    out = []
    for t, ty, n in rows:
        if ty in _K_TYPES:
            new = legacy_moe_type(
                tensor_category(t.name), t.name, ftype=ftype, default_type=default_type
            )
            if new is not None and new != ty:
                ty, n = new, GGML_TYPES[new].tensor_bytes(t.n_params)
        out.append((t, ty, n))
    return tuple(out)
