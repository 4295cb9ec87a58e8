"""Storage of Hugging Face / PyTorch weight formats, tensor by tensor.

Bytes are exact for each format's tensors as the loader creates them (weights, scales, zero
points, index tensors), from a GGUF-named tensor list (:class:`oomkit.spec.model.TensorInfo`,
shape ``[out, in]``, stacked experts ``[n_expert, out, in]`` counted as ``n_expert`` linears).
Allocator rounding is not included.

Which tensors each format quantizes ("linear weights": 2-D/3-D ``*.weight`` of attention, MLP and
expert projections); everything else keeps ``dtype`` (norms, biases, embeddings, lm_head, SSM
conv1d, position embeddings):

=========  ==================================================================================
format     storage per quantized linear of ``out x in``  (upstream)
=========  ==================================================================================
fp32/fp16  4 / 2 / 2 bytes per element, every tensor
/bf16
int8       LLM.int8 (bitsandbytes ``Int8Params``/``int8_vectorwise_quant``): int8 ``CB``
           ``[out, in]`` + fp32 row scale ``SCB`` ``[out]``. transformers'
           ``get_keys_to_not_convert`` keeps lm_head; routers are nn.Linear and get quantized.
nf4/fp4    bitsandbytes ``functional.quantize_4bit``: ``(n + 1) // 2`` packed bytes, blocks of
           ``group_size`` (default 64): fp32 absmax per block, or with double quant
           (``compress_statistics``) uint8 absmax per block + fp32 absmax per 256 blocks
           (``quantize_blockwise(absmax, blocksize=256)``) + fp32 offset; + the 16-entry fp32
           4-bit code per tensor. The 256-entry fp32 dynamic map of the nested state is shared
           (``name2qmap["dynamic"]``): counted once per model in :func:`hf_weights_bytes`.
gptq       AutoGPTQ/GPTQModel ``QuantLinear``: int32 ``qweight`` ``[in * bits / 32, out]``,
           int32 ``qzeros`` ``[groups, out * bits / 32]``, fp16 ``scales`` ``[groups, out]``,
           int32 ``g_idx`` ``[in]`` (always saved, act-order or not); groups =
           ``ceil(in / group_size)`` (default 128). Embeddings, lm_head, routers stay fp16.
awq        AutoAWQ ``WQLinear_GEMM``: int32 ``qweight`` ``[in, out * bits / 32]``, int32
           ``qzeros`` ``[groups, out * bits / 32]``, fp16 ``scales`` ``[groups, out]``; no g_idx.
fp8        e4m3 weight (1 byte) + fp32 scales: per tensor (1), per channel (``out``) or blocks
           ``[128, 128]`` (``ceil(out/128) * ceil(in/128)``, DeepSeek-V3 ``weight_scale_inv``).
           ``group_size`` None = per tensor, 0 = per channel, 128 = block. Routers, embeddings,
           lm_head stay ``dtype``.
fbgemm_fp8 Meta's Llama 3.1 FP8 checkpoints (``quant_method: fbgemm_fp8``, vLLM
           ``FBGEMMFp8Config``): FFN linears only, e4m3 + fp32 scale per output row; the
           ``modules_to_not_convert`` list keeps every self-attention projection and the first
           and last layers' FFN in ``dtype`` (Llama 3 paper, arXiv 2407.21783, sec. 6.2: "we
           do not perform quantization in the self-attention layers", nor "in the first and
           last Transformer layers"). Layer exclusion needs ``n_layers``.
mxfp4      gpt-oss / OCP MX: experts only (3-D), ``*_blocks`` 16 bytes per 32 values +
           ``*_scales`` one E8M0 byte per 32 values; every other tensor ``dtype``.
nvfp4      NVIDIA ModelOpt NVFP4: 4-bit packed (``in / 2`` bytes per row) + one fp8 e4m3 scale
           per 16 values + fp32 ``weight_scale_2`` and ``input_scale`` per tensor.
=========  ==================================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from types import MappingProxyType

from oomkit.errors import InvalidSettingError, UnknownNameError, close_matches
from oomkit.spec.model import TensorInfo
from oomkit.units import ceil_div

__all__ = [
    "BNB_DYNAMIC_MAP_BYTES",
    "HF_FORMATS",
    "HfFormat",
    "hf_format",
    "hf_tensor_bytes",
    "hf_weights_bytes",
    "is_quantizable_linear",
]

_DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {
        "fp32": 4,
        "float32": 4,
        "f32": 4,
        "fp16": 2,
        "float16": 2,
        "f16": 2,
        "bf16": 2,
        "bfloat16": 2,
    }
)

#: bytes of bitsandbytes' shared 256-entry fp32 dynamic map (``create_dynamic_map``)
BNB_DYNAMIC_MAP_BYTES = 256 * 4
_BNB_4BIT_CODE_BYTES = 16 * 4  # get_4bit_type(): 16 fp32 values per QuantState
_BNB_NESTED_BLOCKSIZE = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class HfFormat:
    """One Hugging Face / PyTorch weight format."""

    name: str  # canonical lower-case name ("nf4", "gptq", "fp8")
    method: str  # "float" | "bnb_int8" | "bnb_4bit" | "gptq" | "awq" | "fp8" | "mxfp4" | "nvfp4"
    bits: int  # weight bits of quantized tensors (display and packing)
    default_group_size: int | None
    description: str


_ROWS: tuple[HfFormat, ...] = (
    HfFormat(name="fp32", method="float", bits=32, default_group_size=None,
             description="float32, every tensor"),
    HfFormat(name="fp16", method="float", bits=16, default_group_size=None,
             description="float16, every tensor"),
    HfFormat(name="bf16", method="float", bits=16, default_group_size=None,
             description="bfloat16, every tensor"),
    HfFormat(name="int8", method="bnb_int8", bits=8, default_group_size=None,
             description="bitsandbytes LLM.int8: int8 weights + fp32 scale per output row"),
    HfFormat(name="nf4", method="bnb_4bit", bits=4, default_group_size=64,
             description="bitsandbytes NF4: 4-bit + absmax per 64 (double quant optional)"),
    HfFormat(name="fp4", method="bnb_4bit", bits=4, default_group_size=64,
             description="bitsandbytes FP4: 4-bit + absmax per 64 (double quant optional)"),
    HfFormat(name="gptq", method="gptq", bits=4, default_group_size=128,
             description="GPTQ 4-bit, fp16 scales + packed zeros per 128, g_idx"),
    HfFormat(name="gptq-int8", method="gptq", bits=8, default_group_size=128,
             description="GPTQ 8-bit, fp16 scales + packed zeros per 128, g_idx"),
    HfFormat(name="gptq-int3", method="gptq", bits=3, default_group_size=128,
             description="GPTQ 3-bit, fp16 scales + packed zeros per 128, g_idx"),
    HfFormat(name="gptq-int2", method="gptq", bits=2, default_group_size=128,
             description="GPTQ 2-bit, fp16 scales + packed zeros per 128, g_idx"),
    HfFormat(name="awq", method="awq", bits=4, default_group_size=128,
             description="AWQ 4-bit GEMM, fp16 scales + packed zeros per 128"),
    HfFormat(name="fp8", method="fp8", bits=8, default_group_size=None,
             description="FP8 e4m3 weights + fp32 scales (tensor, channel or 128x128 block)"),
    HfFormat(name="fbgemm_fp8", method="fbgemm_fp8", bits=8, default_group_size=0,
             description="Meta FBGEMM FP8: FFN fp8 + row scales; attention, first/last FFN bf16"),
    HfFormat(name="mxfp4", method="mxfp4", bits=4, default_group_size=32,
             description="OCP MXFP4 experts (gpt-oss): 4-bit + E8M0 scale per 32"),
    HfFormat(name="nvfp4", method="nvfp4", bits=4, default_group_size=16,
             description="NVIDIA NVFP4: 4-bit + fp8 scale per 16 + fp32 global scale"),
)  # fmt: skip

HF_FORMATS: Mapping[str, HfFormat] = MappingProxyType({f.name: f for f in _ROWS})

_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "float32": "fp32",
        "float16": "fp16",
        "bfloat16": "bf16",
        "bnb-int8": "int8",
        "bnb_int8": "int8",
        "llm.int8": "int8",
        "bitsandbytes_8bit": "int8",
        "bnb-nf4": "nf4",
        "bnb_nf4": "nf4",
        "bitsandbytes_4bit": "nf4",
        "bnb-fp4": "fp4",
        "gptq-int4": "gptq",
        "gptq-4bit": "gptq",
        "gptq-8bit": "gptq-int8",
        "awq-int4": "awq",
        "awq-4bit": "awq",
        "fp8-e4m3": "fp8",
        "e4m3": "fp8",
        "fbgemm-fp8": "fbgemm_fp8",
    }
)


def hf_format(name: str) -> HfFormat:
    """Look up an HF format by name or alias (case-insensitive).

    Raises:
        UnknownNameError: not an HF format; suggestions are close names.
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    fmt = HF_FORMATS.get(key)
    if fmt is None:
        raise UnknownNameError(
            kind="HF weight format",
            name=name,
            suggestions=close_matches(name, [*HF_FORMATS, *_ALIASES]),
            hint="Valid formats: " + ", ".join(HF_FORMATS) + ".",
        )
    return fmt


_NOT_LINEAR_PREFIXES = (
    "token_embd",
    "per_layer_token_embd",
    "position_embd",
    "token_types",
    "output.weight",
)


#: GGUF tensors computed by the converter, not in HF checkpoints (no storage in HF formats).
_GGUF_ONLY = ("rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight")


def _is_router(name: str) -> bool:
    return "ffn_gate_inp" in name


def _layer(name: str) -> int | None:
    """Block index of a GGUF-named tensor (``blk.12.ffn_up.weight`` -> 12), else None."""
    parts = name.split(".")
    if len(parts) > 2 and parts[0] == "blk" and parts[1].isdigit():
        return int(parts[1])
    return None


def is_quantizable_linear(tensor: TensorInfo) -> bool:
    """Whether ``tensor`` is a projection weight that quantized HF formats replace.

    2-D or 3-D ``*.weight`` tensors that are not embeddings, lm_head (``output.weight``), norms or
    SSM/short convolutions. Routers (``ffn_gate_inp``) are linears too; formats decide on them.
    """
    name = tensor.name
    if len(tensor.shape) < 2 or not name.endswith(".weight"):
        return False
    if name.startswith(_NOT_LINEAR_PREFIXES):
        return False
    return not any(f in name for f in ("_norm", "conv1d", "shortconv", "rel_pos", "patch_embd"))


def _matrices(tensor: TensorInfo) -> tuple[int, int, int]:
    """(count, out, in) of the 2-D matrices in a 2-D or stacked 3-D+ weight."""
    shape = tensor.shape
    return prod(shape[:-2]) if len(shape) > 2 else 1, shape[-2], shape[-1]


def _float_bytes(tensor: TensorInfo, dtype: str) -> int:
    key = dtype.lower()
    if key not in _DTYPE_BYTES:
        raise UnknownNameError(
            kind="dtype",
            name=dtype,
            suggestions=close_matches(dtype, _DTYPE_BYTES),
            hint="Valid dtypes: " + ", ".join(_DTYPE_BYTES) + ".",
        )
    return tensor.n_params * _DTYPE_BYTES[key]


def _group_size(fmt: HfFormat, group_size: int | None) -> int:
    gs = group_size if group_size is not None else fmt.default_group_size
    if gs is None or gs == 0 or gs < -1:
        raise InvalidSettingError(
            f"Storage math failed for 'group_size' ({group_size}) with format '{fmt.name}': "
            "it must be a positive group size or -1 (one group per row). Pass e.g. 128.",
            setting="group_size",
            value=group_size,
        )
    return gs


def _bnb_4bit(n: int, blocksize: int, double_quant: bool) -> int:
    """``quantize_4bit`` outputs for ``n`` elements (packed + quant state)."""
    packed = (n + 1) // 2
    blocks = ceil_div(n, blocksize)
    if not double_quant:
        return packed + 4 * blocks + _BNB_4BIT_CODE_BYTES
    nested = 4 * ceil_div(blocks, _BNB_NESTED_BLOCKSIZE)
    return packed + blocks + nested + 4 + _BNB_4BIT_CODE_BYTES


def _gptq_like(count: int, out: int, in_: int, bits: int, gs: int, *, g_idx: bool) -> int:
    groups = 1 if gs == -1 else ceil_div(in_, gs)
    qweight = 4 * ceil_div(in_ * bits, 32) * out
    qzeros = 4 * groups * ceil_div(out * bits, 32)
    scales = 2 * groups * out
    return count * (qweight + qzeros + scales + (4 * in_ if g_idx else 0))


def hf_tensor_bytes(
    fmt: str,
    tensor: TensorInfo,
    *,
    dtype: str = "bf16",
    group_size: int | None = None,
    double_quant: bool = True,
    n_layers: int | None = None,
    fused_experts_unquantized: bool = False,
) -> int:
    """Bytes of one tensor stored in HF format ``fmt`` (see the module table).

    Args:
        fmt: format name (``"nf4"``, ``"gptq"``, ``"fp8"``...).
        tensor: GGUF-named tensor, shape ``[out, in]`` or ``[n_expert, out, in]``.
        dtype: the type unquantized tensors keep (``"bf16"``, ``"fp16"``, ``"fp32"``); GPTQ/AWQ
            checkpoints keep fp16.
        group_size: nf4/fp4 blocksize (64), GPTQ/AWQ group (128, -1 = per row); fp8: None per
            tensor, 0 per channel, 128 for 128x128 blocks.
        double_quant: bitsandbytes 4-bit ``bnb_4bit_use_double_quant`` (transformers' default
            is False; QLoRA recipes turn it on).
        n_layers: the model's layer count (``fbgemm_fp8``: its first and last layers' FFN stay
            ``dtype``); None: no layer is excluded.
        fused_experts_unquantized: bitsandbytes through transformers >= 5: MoE experts are
            fused 3-D ``nn.Parameter`` s (``MixtralExperts.gate_up_proj``, transformers 5.0.0
            ``models/mixtral/modeling_mixtral.py``) that ``replace_with_bnb_linear`` (which
            swaps ``nn.Linear`` only) never converts, so they stay ``dtype``
            (bitsandbytes-foundation/bitsandbytes#1849).

    Returns:
        Bytes (weights plus their scales, zeros and index tensors).

    Raises:
        UnknownNameError: unknown format or dtype.
        InvalidSettingError: a group size the format cannot use.
    """
    f = hf_format(fmt)
    _float_bytes(tensor, dtype)  # validates dtype
    if tensor.name in _GGUF_ONLY:
        return 0
    if f.method == "float":
        return _float_bytes(tensor, f.name)
    if f.method in ("gptq", "awq"):
        dtype = "fp16"
    if not is_quantizable_linear(tensor):
        return _float_bytes(tensor, dtype)
    if (
        fused_experts_unquantized
        and f.method in ("bnb_int8", "bnb_4bit")
        and len(tensor.shape) >= 3
    ):
        return _float_bytes(tensor, dtype)
    count, out, in_ = _matrices(tensor)
    if _is_router(tensor.name) and f.method not in ("bnb_int8", "bnb_4bit"):
        return _float_bytes(tensor, dtype)
    if f.method == "bnb_int8":
        return count * (out * in_ + 4 * out)
    if f.method == "bnb_4bit":
        return count * _bnb_4bit(out * in_, _group_size(f, group_size), double_quant)
    if f.method == "gptq":
        return _gptq_like(count, out, in_, f.bits, _group_size(f, group_size), g_idx=True)
    if f.method == "awq":
        return _gptq_like(count, out, in_, f.bits, _group_size(f, group_size), g_idx=False)
    if f.method == "fp8":
        if group_size is None:
            scales = 1
        elif group_size == 0:
            scales = out
        else:
            scales = ceil_div(out, group_size) * ceil_div(in_, group_size)
        return count * (out * in_ + 4 * scales)
    if f.method == "fbgemm_fp8":
        layer = tensor.layer if tensor.layer is not None else _layer(tensor.name)
        kept = (0, n_layers - 1) if n_layers else ()
        if ".ffn_" not in tensor.name or layer in kept:
            return _float_bytes(tensor, dtype)
        return count * (out * in_ + 4 * out)
    if f.method == "mxfp4":
        if len(tensor.shape) < 3:  # only the stacked experts are MXFP4 in gpt-oss
            return _float_bytes(tensor, dtype)
        blocks = ceil_div(in_, 32)
        return count * out * blocks * (16 + 1)
    # nvfp4
    return count * (out * ceil_div(in_, 2) + out * ceil_div(in_, 16) + 8)


def hf_weights_bytes(
    fmt: str,
    tensors: Sequence[TensorInfo],
    *,
    dtype: str = "bf16",
    group_size: int | None = None,
    double_quant: bool = True,
    n_layers: int | None = None,
    fused_experts_unquantized: bool = False,
) -> int:
    """Bytes of all ``tensors`` in format ``fmt`` (:func:`hf_tensor_bytes` summed).

    For bitsandbytes 4-bit with double quant the shared 1 KiB dynamic map is added once.
    """
    total = sum(
        hf_tensor_bytes(
            fmt,
            t,
            dtype=dtype,
            group_size=group_size,
            double_quant=double_quant,
            n_layers=n_layers,
            fused_experts_unquantized=fused_experts_unquantized,
        )
        for t in tensors
    )
    if (
        hf_format(fmt).method == "bnb_4bit"
        and double_quant
        and any(is_quantizable_linear(t) for t in tensors)
    ):
        total += BNB_DYNAMIC_MAP_BYTES
    return total
