"""The tensors llama.cpp requires of a GGUF, per architecture: a file that lacks one is refused
at load, so oomkit refuses it too instead of estimating a model that never runs.

llama.cpp ``src/llama-model.cpp`` ``llama_model::load_tensors`` creates every tensor of the
architecture with ``create_tensor(tn(...), dims, flags)``; without ``TENSOR_NOT_REQUIRED`` in
``flags`` a tensor absent from the file makes ``llama_model_loader::check_tensor_dims`` (src/
llama-model-loader.cpp) throw ``format("%s: tensor '%s' not found", ...)``, reported by the
loader as ``missing tensor 'blk.0.attn_k.weight'`` (``create_tensor_for``), and the model does
not load. Tensors are created in the order below: the globals, then layer by layer; the first
one missing is the one llama.cpp names.

Only the required (flag 0) tensors that llama.cpp creates for every file of the architecture
are listed; an optional one (the ``output.weight`` of a tied model, attention biases, the
``rope_freqs`` of llama3 scaling) is never asked for. The architectures listed are those whose
``load_tensors`` case was read (``LLM_ARCH_LLAMA``, ``LLM_ARCH_QWEN2``, ``LLM_ARCH_QWEN2MOE``,
``LLM_ARCH_QWEN3``, ``LLM_ARCH_QWEN3MOE``); the others the loader reads are not checked.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["CHECKED_ARCHITECTURES", "first_missing_tensor"]

#: the globals: ``tok_embd`` and ``output_norm`` (flag 0; ``output`` is TENSOR_NOT_REQUIRED
#: and falls back to ``token_embd`` with TENSOR_DUPLICATED)
_GLOBAL = ("token_embd.weight", "output_norm.weight")
#: ``layer.attn_norm``, ``wq``, ``wk``, ``wv``, ``wo`` (flag 0)
_ATTN = (
    "attn_norm.weight",
    "attn_q.weight",
    "attn_k.weight",
    "attn_v.weight",
    "attn_output.weight",
)
#: qwen3's ``attn_k_norm`` / ``attn_q_norm`` (flag 0), created after ``wo``
_QK_NORM = ("attn_k_norm.weight", "attn_q_norm.weight")
#: ``ffn_norm`` then a dense FFN: ``ffn_gate``, ``ffn_down``, ``ffn_up`` (flag 0)
_DENSE = ("ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight")
#: ``ffn_norm`` then the routed experts: ``ffn_gate_inp``, ``ffn_gate_exps``,
#: ``ffn_down_exps``, ``ffn_up_exps`` (flag 0)
_MOE = (
    "ffn_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_exps.weight",
    "ffn_down_exps.weight",
    "ffn_up_exps.weight",
)

#: GGUF architecture -> (per-layer attention part, "moe" / "dense" / "by_experts": llama's
#: ``if (n_expert == 0)`` dense else MoE)
_LAYOUT: dict[str, tuple[tuple[str, ...], str]] = {
    "llama": (_ATTN, "by_experts"),
    "qwen2": (_ATTN, "dense"),
    "qwen2moe": (_ATTN, "moe"),
    "qwen3": (_ATTN + _QK_NORM, "dense"),
    "qwen3moe": (_ATTN + _QK_NORM, "moe"),
}
CHECKED_ARCHITECTURES: frozenset[str] = frozenset(_LAYOUT)


def first_missing_tensor(
    arch: str, names: Collection[str], *, n_layer: int, n_expert: int
) -> str | None:
    """The first tensor llama.cpp requires of a GGUF of ``arch`` with ``n_layer`` blocks
    (``block_count``) that ``names`` lacks, or None (also for an architecture not checked).

    >>> first_missing_tensor("llama", {"token_embd.weight"}, n_layer=1, n_expert=0)
    'output_norm.weight'
    >>> first_missing_tensor("gemma3", set(), n_layer=1, n_expert=0) is None
    True
    """
    layout = _LAYOUT.get(arch)
    if layout is None:
        return None
    attn, ffn = layout
    moe = ffn == "moe" or (ffn == "by_experts" and n_expert > 0)
    for name in _GLOBAL:
        if name not in names:
            return name
    per_layer = attn + (_MOE if moe else _DENSE)
    for il in range(n_layer):
        for tail in per_layer:
            name = f"blk.{il}.{tail}"
            if name not in names:
                return name
    return None
