"""llama-quantize's Q2_K mixes of 2023: heavier than today's, so an old Q2_K file is larger (pure).

:mod:`oomkit.quant.llamacpp_mix` models today's ``llama_tensor_get_type``, whose Q2_K is "an
actual 2-bit quantization (less than 3 bits-per-weight)" (ikawrakow, llama.cpp PR #5060,
2024-01-21: LLaMA-v2-70B 23.71 GiB). A Q2_K file quantized before January 2024 is one of two
older mixes (dense models; the quantizer's categories as today):

* ``"k-quants-2023-06"`` (PR #1684, k-quants, June 2023): "GGML_TYPE_Q4_K for the
  attention.vw and feed_forward.w2 tensors, GGML_TYPE_Q2_K for the other tensors" (ikawrakow in
  PR #1684, 2023-06-07: 3.315 bpw for LLaMA-7B); ``output.weight`` Q6_K.
* ``"3bit-2023-08"`` (PR #2707, "Quantization improvements for k_quants", Aug 2023, until the
  2-bit quantization changes of January 2024): "Q2_K was basically a 3-bit quantization with
  just the attn_k and attn_q tensors quantized with 2 bit" (PR #5060): Q3_K for attn_v,
  attn_output and the three FFN matrices, Q2_K for attn_q, attn_k and token_embd, Q6_K for
  ``output.weight``; LLaMA-v2-70B's attn_v gets Q5_K (PR #2807, 2023-08-26: its Q2_K "27.11 GiB
  -> 27.27 GiB"). This mix gives Llama-2-70B 29,278,486,528 bytes (27.27 GiB) and
  Llama-2-13B/7B the 5.43/2.83 GB of the Q2_K files published in September 2023.

Only tensors the current mix gives a K-quant are re-typed (a row size that is no multiple of
256 keeps its fallback type); MoE models (the pre-#4872 expert rules) and Falcon are left as
modelled today.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oomkit.quant.ggml_types import GGML_TYPES
from oomkit.quant.llamacpp_mix import is_llm_type_70b
from oomkit.quant.llamacpp_tensors import (
    ATTENTION_K,
    ATTENTION_OUTPUT,
    ATTENTION_Q,
    ATTENTION_V,
    FFN_DOWN,
    FFN_GATE,
    FFN_UP,
    tensor_category,
)
from oomkit.spec.model import TensorInfo

__all__ = ["Q2K_MIXES", "legacy_q2k_rows", "legacy_q2k_type"]

#: category -> type of each 2023 mix (categories not named keep Q2_K)
_MIXES: Mapping[str, Mapping[str, str]] = {
    "k-quants-2023-06": {ATTENTION_V: "Q4_K", FFN_DOWN: "Q4_K"},
    "3bit-2023-08": {
        ATTENTION_V: "Q3_K",
        ATTENTION_OUTPUT: "Q3_K",
        FFN_GATE: "Q3_K",
        FFN_UP: "Q3_K",
        FFN_DOWN: "Q3_K",
    },
}
Q2K_MIXES: tuple[str, ...] = tuple(_MIXES)
_K_TYPES = frozenset({"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"})
#: the layer matrices the mixes choose for; token_embd (Q2_K) and output.weight (Q6_K) are as
#: today's Q2_K gives them
_RETYPED = frozenset(
    {ATTENTION_Q, ATTENTION_K, ATTENTION_V, ATTENTION_OUTPUT, FFN_GATE, FFN_UP, FFN_DOWN}
)

SOURCE = (
    "llama.cpp Q2_K mixes: PR #1684 (June 2023), PR #2707 (Aug 2023, 'mostly 3-bit') with "
    "PR #2807 (70B attn_v Q5_K), replaced in January 2024 (PR #5060: 'Old Q2_K 27.11 GiB', "
    "new 23.71 GiB for LLaMA-v2-70B)"
)


def legacy_q2k_type(mix: str, category: str, *, arch: str, n_layer: int, n_gqa: int) -> str:
    """The type a 2023 Q2_K ``mix`` gives a layer matrix of ``category`` (attn_q/k/v/output,
    ffn_gate/up/down).

    >>> legacy_q2k_type("3bit-2023-08", "ffn_up", arch="llama", n_layer=80, n_gqa=8)
    'Q3_K'
    >>> legacy_q2k_type("3bit-2023-08", "attn_v", arch="llama", n_layer=80, n_gqa=8)
    'Q5_K'
    """
    ty = _MIXES[mix].get(category, "Q2_K")
    if category == ATTENTION_V and mix == "3bit-2023-08" and is_llm_type_70b(arch, n_layer, n_gqa):
        ty = "Q5_K"
    return ty


def legacy_q2k_rows(
    rows: Sequence[tuple[TensorInfo, str, int]],
    mix: str,
    *,
    arch: str,
    n_layer: int,
    n_gqa: int,
    n_expert: int,
) -> tuple[tuple[TensorInfo, str, int], ...]:
    """A predicted Q2_K weights table re-typed to the 2023 ``mix`` (unchanged for MoE/Falcon)."""
    if n_expert > 1 or arch == "falcon":
        return tuple(rows)
    out = []
    for t, ty, n in rows:
        cat = tensor_category(t.name)
        if ty in _K_TYPES and cat in _RETYPED:
            new = legacy_q2k_type(mix, cat, arch=arch, n_layer=n_layer, n_gqa=n_gqa)
            if new != ty:
                ty, n = new, GGML_TYPES[new].tensor_bytes(t.n_params)
        out.append((t, ty, n))
    return tuple(out)
