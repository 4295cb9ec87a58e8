"""Weights of an HF checkpoint as the PyTorch runtimes hold them, per tensor-parallel rank.

Sharding rules model vLLM's parallel layers (vllm/model_executor/layers/linear.py:
``QKVParallelLinear`` replicates KV heads when ``num_kv_heads < tp``; ``ColumnParallelLinear``/
``RowParallelLinear`` split the output/input dim; ``ReplicatedLinear`` for MLA's ``q_a``/``kv_a``
and MoE routers; vocab_parallel_embedding.py pads the vocabulary to a multiple of 64 and splits
it evenly; norms and row-parallel biases are replicated).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from oomkit.errors import UnknownNameError, close_matches
from oomkit.estimate.breakdown import ModelInfo
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.tensors import count_params
from oomkit.units import ceil_div

__all__ = [
    "DTYPE_BYTES",
    "PLAIN_DTYPES",
    "WeightsPlan",
    "dtype_bytes",
    "format_name",
    "model_info",
    "plan_weights",
    "shard_fraction",
    "weights_format",
]

#: element sizes of unquantized dtypes (names as users and configs write them)
DTYPE_BYTES: dict[str, int] = {
    "fp32": 4,
    "float32": 4,
    "f32": 4,
    "float": 4,
    "fp16": 2,
    "float16": 2,
    "f16": 2,
    "half": 2,
    "bf16": 2,
    "bfloat16": 2,
    "fp8": 1,
    "float8_e4m3fn": 1,
    "f8_e4m3": 1,
    "int8": 1,
    "auto": 2,
}

_VOCAB_PAD = 64  # vllm DEFAULT_VOCAB_PADDING_SIZE (vocab_parallel_embedding.py)
#: unquantized weight dtypes; fp8/int8/nf4/gptq/awq go through oomkit.quant.hf_formats, which
#: keeps embeddings, norms and routers in 16 bits as each format does
_PLAIN = frozenset(
    {
        "fp32",
        "float32",
        "f32",
        "float",
        "fp16",
        "float16",
        "f16",
        "half",
        "bf16",
        "bfloat16",
        "auto",
    }
)
PLAIN_DTYPES = _PLAIN


def model_info(spec: ModelSpec) -> ModelInfo:
    """``Estimate.model`` for the PyTorch runtimes: parameters counted from the tensors."""
    return ModelInfo(
        name=spec.name,
        architecture=spec.architecture,
        params=count_params(spec),
        source=spec.source,
    )


def dtype_bytes(name: str) -> int:
    """Bytes per element of an unquantized dtype name.

    Raises:
        UnknownNameError: not a plain dtype (quantized formats go through hf_formats).
    """
    key = name.strip().lower()
    if key not in DTYPE_BYTES:
        raise UnknownNameError(
            kind="dtype",
            name=name,
            suggestions=close_matches(name, DTYPE_BYTES),
            hint="Valid dtypes: " + ", ".join(DTYPE_BYTES) + ".",
        )
    return DTYPE_BYTES[key]


_REPLICATED_ROLES = (
    "norm",  # every *_norm tensor
    "ffn_gate_inp",  # MoE router
    "exp_probs_b",
    "attn_q_a.",  # MLA ReplicatedLinear
    "attn_kv_a_mqa.",
    "attn_sinks",
    "rope_freqs",
    "pos_embd",
    "ssm_a",
    "ssm_d",
)


def shard_fraction(tensor: TensorInfo, spec: ModelSpec, tp: int) -> tuple[int, int]:
    """Fraction (numerator, denominator) of ``tensor`` held by one of ``tp`` ranks."""
    if tp <= 1:
        return (1, 1)
    return _role_fraction(tensor.role, tp, spec.num_key_value_heads, spec.vocab_size)


@functools.lru_cache(maxsize=4096)
def _role_fraction(role: str, tp: int, kv_heads: int, vocab_size: int) -> tuple[int, int]:
    """:func:`shard_fraction` by what it reads (a few roles, asked once per tensor per
    estimate: memoised, ``gpus --for`` prices thousands of TP layouts)."""
    if any(r in role for r in _REPLICATED_ROLES):
        return (1, 1)
    if role.startswith("attn_output.bias") or role.startswith("ffn_down.bias"):
        return (1, 1)  # RowParallelLinear adds the bias once after the reduce
    if role.startswith(("attn_k.", "attn_v.")):
        kv = kv_heads
        if kv < tp:
            return (1, kv)  # each rank holds one whole (replicated) KV head
        return (1, tp)
    if role.startswith(("token_embd.", "output.")):
        # VocabParallelEmbedding: pad_vocab_size(vocab, 64), then an equal slice per rank
        padded = ceil_div(vocab_size, _VOCAB_PAD) * _VOCAB_PAD
        return (ceil_div(padded, tp), vocab_size)
    return (1, tp)


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightsPlan:
    """Weights per rank and what was assumed."""

    bytes_per_rank: int
    total_bytes: int
    #: stored bytes of each tensor (unsharded), in the order given
    tensor_bytes: tuple[int, ...]
    formula: str
    assumptions: tuple[str, ...] = ()


def weights_format(spec: ModelSpec, quant: str | None) -> str:
    """The weight format vLLM/SGLang load (and :func:`plan_weights` prices): the ``--quant``
    given, else the checkpoint's ``quantization_config`` method, else its ``torch_dtype``
    (vLLM ``ModelConfig._verify_quantization`` / ``dtype="auto"``). The estimate's
    ``settings.quant`` reports it, so the JSON and the text name what was priced."""
    if quant is not None and quant.strip():
        return format_name(quant)
    if spec.quantization is not None:
        return format_name(spec.quantization.method)
    return format_name(spec.torch_dtype or "bf16")


def format_name(name: str) -> str:
    """One spelling per weight format: ``--quant``'s (../shared/DESIGN.md: ``fp32 fp16 bf16
    fp8 int8 nf4 fp4 awq gptq mxfp4``) for a config dtype (``"bfloat16"``), an alias or a
    ``--quant`` given in another case, so ``settings.quant`` names one type one way whether
    ``--quant`` was passed or not; a name :func:`~oomkit.quant.hf_formats.hf_format` does not
    know (``compressed-tensors``) is kept, lower-cased.

    >>> format_name("bfloat16"), format_name("BF16"), format_name("float16")
    ('bf16', 'bf16', 'fp16')
    """
    from oomkit.quant.hf_formats import hf_format

    key = name.strip().lower()
    try:
        return hf_format(key).name
    except UnknownNameError:
        return key


def plan_weights(
    spec: ModelSpec,
    tensors: Sequence[TensorInfo],
    *,
    quant: str | None,
    tp: int = 1,
    fused_experts_unquantized: bool = False,
) -> WeightsPlan:
    """Bytes of weights per TP rank.

    Exact header bytes win (``TensorInfo.n_bytes`` from safetensors). Otherwise each tensor is
    sized by ``quant`` (a plain dtype, or an HF format handled by
    :mod:`oomkit.quant.hf_formats`), defaulting to the config's ``torch_dtype``.
    """
    notes: list[str] = []
    fmt = (quant or "").strip().lower() or None
    have_bytes = all(t.n_bytes is not None for t in tensors) and fmt is None
    if not have_bytes and fmt is None:
        fmt = weights_format(spec, None)
        if spec.quantization is not None:
            notes.append(f"weights sized from the checkpoint's quantization_config ({fmt})")
        else:
            notes.append(f"weights in the config's dtype ({fmt})")
    total = 0
    per_rank = 0
    sizes: list[int] = []
    for t in tensors:
        if have_bytes:
            b = int(t.n_bytes or 0)
        elif fmt in _PLAIN:
            b = t.n_params * DTYPE_BYTES[fmt]
        else:
            from oomkit.quant.hf_formats import hf_tensor_bytes

            assert fmt is not None
            group = spec.quantization.group_size if spec.quantization else None
            b = hf_tensor_bytes(
                fmt,
                t,
                dtype=_base_dtype(spec),
                group_size=group,
                n_layers=spec.num_hidden_layers,
                fused_experts_unquantized=fused_experts_unquantized,
            )
        num, den = shard_fraction(t, spec, tp)
        sizes.append(b)
        total += b
        per_rank += ceil_div(b * num, den)
    source = "checkpoint header bytes" if have_bytes else f"{fmt} storage of each tensor"
    formula = f"sum over {len(tensors)} tensors of {source}"
    if tp > 1:
        formula += f", split over tp={tp} (norms/routers replicated, KV heads max(1, kv/tp))"
    return WeightsPlan(
        bytes_per_rank=per_rank,
        total_bytes=total,
        tensor_bytes=tuple(sizes),
        formula=formula,
        assumptions=tuple(notes),
    )


def _base_dtype(spec: ModelSpec) -> str:
    d = (spec.torch_dtype or "bf16").lower()
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(d, d)
