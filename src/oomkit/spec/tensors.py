"""The per-tensor layout of a model derived from its :class:`ModelSpec`; exact parameter counts.

Names are the GGUF names llama.cpp's ``convert_hf_to_gguf.py`` writes for the architecture
(``token_embd.weight``, ``blk.{i}.attn_q.weight``, ``blk.{i}.ffn_down_exps.weight``...; the table is
``LLM_TENSOR_NAMES`` in llama.cpp ``src/llama-arch.cpp``). Biases are separate ``.bias`` tensors.

Shapes are in the Hugging Face / PyTorch order ``[out_features, in_features]`` (stacked experts
``[n_expert, out, in]``), i.e. the *reverse* of GGUF's ``ne`` order: the last entry is GGUF's
``ne[0]``, the row length that block quantization runs along. Two deliberate departures from the
HF file: GPT-2's ``Conv1D`` weights (stored ``[in, out]`` by HF) are listed ``[out, in]`` as the
GGUF converter transposes them, and depthwise conv1d weights are listed squeezed
``[channels, d_conv]`` as GGUF stores them (HF ``[channels, 1, d_conv]``). Neither changes a
parameter count.

Parameter counts follow the HF checkpoint: rotary ``inv_freq`` buffers are not parameters, tied
embeddings count once, learned position embeddings count. Three GGUF tensors are *not* parameters
(:data:`NON_PARAMETER_ROLES`): ``rope_freqs.weight`` (llama3 rope scaling, written by the converter
from ``rope_scaling``) and Phi-3 LongRoPE's ``rope_factors_long``/``rope_factors_short``. They are
in :func:`derive_tensors` (they are in the GGUF file) and skipped by :func:`count_params`.

>>> from oomkit.spec.model import ModelSpec
>>> tiny = ModelSpec(name="tiny", architecture="LlamaForCausalLM", model_type="llama",
...     num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
...     head_dim=16, v_head_dim=16, intermediate_size=128, vocab_size=1000)
>>> [t.name for t in derive_tensors(tiny)][:4]
['token_embd.weight', 'blk.0.attn_norm.weight', 'blk.0.attn_q.weight', 'blk.0.attn_k.weight']
>>> count_params(tiny)
202048
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import compress

from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.tensor_table import TensorTable
from oomkit.spec.tensors_blocks import (
    NON_PARAMETER_ROLES,
    NON_PARAMETER_SUFFIXES,
    Builder,
    build_layout,
    decoder_layer,
)

__all__ = [
    "NON_PARAMETER_ROLES",
    "NON_PARAMETER_SUFFIXES",
    "active_params",
    "count_params",
    "derive_tensors",
    "is_parameter",
    "is_parameter_role",
    "model_tensors",
    "mtp_params",
]


# The planner, the doctor and reverse search re-estimate one spec many times; the layout depends
# only on the (frozen) spec and the result is an immutable tuple.
@lru_cache(maxsize=64)
def derive_tensors(spec: ModelSpec) -> tuple[TensorInfo, ...]:
    """The checkpoint layout llama.cpp's converter writes for ``spec`` (``dtype``/``n_bytes`` None).

    DeepSeek/GLM multi-token-prediction layers are not included (see :func:`mtp_params`).

    Returns:
        One :class:`TensorInfo` per tensor, GGUF names, shapes ``[out, in]``.
    """
    return build_layout(spec)


def model_tensors(spec: ModelSpec) -> Sequence[TensorInfo]:
    """``spec.tensors`` when read from a checkpoint header, else :func:`derive_tensors`."""
    if spec.tensors is not None:
        return spec.tensors
    return derive_tensors(spec)


def is_parameter(tensor: TensorInfo) -> bool:
    """False for GGUF rope tables and quantization sidecars (scales, zero points), else True."""
    return is_parameter_role(tensor.role)


def is_parameter_role(role: str) -> bool:
    """:func:`is_parameter` of a tensor with this role (it depends on nothing else)."""
    if role in NON_PARAMETER_ROLES:
        return False
    return role.rpartition(".")[2] not in NON_PARAMETER_SUFFIXES


def _counted(spec: ModelSpec) -> list[TensorInfo]:
    """Parameter tensors of the model proper: no rope tables, sidecars or MTP blocks."""
    n = spec.num_hidden_layers
    return [t for t in model_tensors(spec) if is_parameter(t) and (t.layer is None or t.layer < n)]


def _counted_table(spec: ModelSpec, table: TensorTable, routed_only: bool) -> int:
    """Parameters of :func:`_counted` (or of its routed experts) from a table's columns, deciding
    each distinct (role, in the model proper) once instead of once per tensor."""
    n = spec.num_hidden_layers
    keep: dict[tuple[str, bool], bool] = {}
    for role, layer in set(zip(table.roles, map(_in_model(n), table.layers), strict=True)):
        ok = layer and is_parameter_role(role)
        keep[role, layer] = ok and (not routed_only or role.rpartition(".")[0].endswith("_exps"))
    flags = map(keep.__getitem__, zip(table.roles, map(_in_model(n), table.layers), strict=True))
    return sum(compress(table.n_params, flags))


def _in_model(n_layer: int) -> Callable[[int | None], bool]:
    def f(layer: int | None) -> bool:
        return layer is None or layer < n_layer

    return f


def count_params(spec: ModelSpec) -> int:
    """Exact parameter count: parameter tensors of :func:`model_tensors` + ``multimodal_params``.

    Tensors of blocks ``>= num_hidden_layers`` (GLM-4.5's MTP block, which its GGUF keeps) are
    left out, so the count never includes multi-token prediction (see :func:`mtp_params`).

    Returns:
        Number of parameters (int).
    """
    if isinstance(spec.tensors, TensorTable):
        return _counted_table(spec, spec.tensors, False) + spec.multimodal_params
    return sum(t.n_params for t in _counted(spec)) + spec.multimodal_params


def active_params(spec: ModelSpec) -> int:
    """Parameters touched per token: routed experts count ``experts_per_tok / num_experts``.

    Everything else (embeddings, attention, shared experts, dense layers, routers) counts fully,
    as Mixtral's "12.9B active" and DeepSeek-V3's "37B activated" do. Dense models: the total.

    Returns:
        Number of parameters (int).
    """
    total = count_params(spec)
    moe = spec.moe
    if moe is None or moe.num_experts == 0:
        return total
    if isinstance(spec.tensors, TensorTable):
        routed = _counted_table(spec, spec.tensors, True)
    else:
        routed = sum(
            t.n_params for t in _counted(spec) if t.role.rpartition(".")[0].endswith("_exps")
        )
    inactive = routed - routed * moe.num_experts_per_tok // moe.num_experts
    return total - inactive


def mtp_params(spec: ModelSpec) -> int:
    """Parameters of the multi-token-prediction layers (``num_nextn_predict_layers``).

    The HF checkpoints of DeepSeek-V3 and GLM-4.5 hold them: each MTP layer is one more decoder
    block of the last layer's kind plus ``enorm``, ``hnorm``, ``eh_proj [H, 2H]``,
    ``shared_head.norm`` and its own copies of ``embed_tokens`` and ``shared_head.head``
    (GLM-4.5-Air: 106,852,251,264 + 3,616,573,568 = the published 110,468,824,832).
    :func:`count_params` leaves them out; :func:`derive_tensors` lists them only where the GGUF
    keeps them (GLM-4.5, as ``blk.{n}.nextn.*``; llama.cpp drops DeepSeek's).

    Returns:
        Number of parameters (int); 0 without MTP layers.
    """
    n = spec.num_nextn_predict_layers
    if n == 0:
        return 0
    hidden = spec.hidden_size
    last = spec.num_hidden_layers - 1
    b = Builder()
    decoder_layer(b, spec, last)
    block = sum(t.n_params for t in b.tensors if is_parameter(t))
    extra = 3 * hidden + 2 * hidden * hidden + 2 * spec.vocab_size * hidden
    return n * (block + extra)
