"""Which GGML type llama.cpp's quantizer gives each tensor of a llama.cpp file type (mix).

Models ``src/llama-quant.cpp`` of ggml-org/llama.cpp as of 2026 (the version with
``tensor_category``, ``tensor_allows_quantization``, ``llama_tensor_get_type_impl`` and
``tensor_type_fallback``); the rules for Q4_K_M/Q5_K_M/Q8_0 and the K-quants have been stable
since early 2024 (tied embeddings -> ``output`` rules since the Gemma ``has_output`` change).
Older GGUFs (2023, before ``use_more_bits`` on attn_v counted per tensor and before the
``n_expert == 8`` bumps) may differ in a few tensors.

The quantizer walks tensors sorted by (layer, name) (``weight_name_comparer`` in
src/llama-model-loader.h) and keeps counters (``i_attention_wv``, ``i_ffn_down``...):
:func:`predict_gguf_tensor_bytes` replays that walk exactly; :func:`tensor_type_for` answers for
one tensor, taking the layer index as the counter value (exact whenever each layer has one
attn_v-like and one ffn_down tensor, i.e. every dense transformer).

Options of ``llama-quantize`` that change the choice are keyword arguments: ``pure``
(``--pure``), ``has_imatrix`` (``--imatrix``), ``output_tensor_type`` / ``token_embedding_type``
(``--output-tensor-type`` / ``--token-embedding-type``). ``--tensor-type`` overrides are not
modelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from oomkit.errors import UnsupportedModelError
from oomkit.quant.ggml_types import GGML_TYPES, ggml_type
from oomkit.quant.llamacpp_ftypes import llamacpp_ftype
from oomkit.quant.llamacpp_tensors import (
    ATTENTION_K,
    ATTENTION_OUTPUT,
    ATTENTION_Q,
    ATTN_V_LIKE,
    FFN_DOWN,
    FFN_GATE,
    FFN_UP,
    LAYER_RE,
    OUTPUT,
    TOKEN_EMBD,
    ne0,
    ne2,
    tensor_allows_quantization,
    tensor_category,
    tensor_source_type,
    tensor_type_fallback,
)
from oomkit.spec.model import TensorInfo

__all__ = [
    "MixContext",
    "is_llm_type_70b",
    "predict_gguf_tensor_bytes",
    "tensor_allows_quantization",
    "tensor_category",
    "tensor_source_type",
    "tensor_type_fallback",
    "tensor_type_for",
    "use_more_bits",
]

# IQ1/IQ2 file types share one branch in llama_tensor_get_type_impl
_IQ12 = frozenset({"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"})


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """The Q4_K_M/Q5_K_M "more bits" layers (lambda in ``llama_tensor_get_type_impl``).

    First eighth, last eighth, and every third layer in between, with C integer division and
    C's ``%`` (truncating toward zero, so a negative difference never counts).

    >>> [i for i in range(16) if use_more_bits(i, 16)]
    [0, 1, 4, 7, 10, 13, 14, 15]
    """
    d8 = n_layers // 8
    diff = i_layer - d8
    c_mod = diff - 3 * int(diff / 3)  # C '%' truncates toward zero
    return i_layer < d8 or i_layer >= 7 * n_layers // 8 or c_mod == 2


def is_llm_type_70b(arch: str, n_layer: int, n_gqa: int) -> bool:
    """Whether llama.cpp labels the model ``LLM_TYPE_70B`` (attn_v gets Q5_K instead of Q3/Q4_K).

    ``load_hparams`` in src/llama-model.cpp: llama with 80 layers and GQA (n_head != n_head_kv,
    else 65B), deci, olmo and qwen2 with 80 layers (Qwen2/2.5-72B, Llama-2/3-70B).
    """
    if n_layer != 80:
        return False
    if arch == "llama":
        return n_gqa > 1
    return arch in ("deci", "olmo", "qwen2")


@dataclass(frozen=True, slots=True, kw_only=True)
class MixContext:
    """Model facts and ``llama-quantize`` options the type choice depends on."""

    ftype: str  # canonical llama-quantize name, e.g. "Q4_K_M"
    arch: str  # GGUF general.architecture, e.g. "llama", "qwen2", "falcon"
    n_layer: int  # hparams.n_layer_all (block count)
    n_expert: int = 0
    n_gqa: int = 1  # n_head / n_head_kv of layer 0
    has_tied_embeddings: bool = False  # no output.weight tensor
    has_imatrix: bool = False
    pure: bool = False
    output_tensor_type: str | None = None
    token_embedding_type: str | None = None
    quantize_output: bool = True
    source_type: str = "F16"

    @property
    def llm_type_70b(self) -> bool:
        return is_llm_type_70b(self.arch, self.n_layer, self.n_gqa)


@dataclass(slots=True)
class _Counters:
    """``quantize_state_impl`` counters."""

    n_attention_wv: int
    i_attention_wv: int = 0
    i_ffn_down: int = 0
    i_ffn_gate: int = 0
    i_ffn_up: int = 0


def _layer_of(tensor: TensorInfo) -> int:
    m = LAYER_RE.match(tensor.name)
    if m is not None:
        return int(m.group(1))
    if tensor.layer is not None:
        return tensor.layer
    raise UnsupportedModelError(
        f"Layer lookup failed for '{tensor.name}' (llama.cpp layer_info): the name has no "
        "'blk.N.' prefix. Name expert tensors in GGUF style (blk.N.ffn_down_exps.weight).",
        architecture="",
        feature="tensor naming",
    )


def _impl(ctx: MixContext, new_type: str, tensor: TensorInfo, category: str, qs: _Counters) -> str:
    """``llama_tensor_get_type_impl`` (src/llama-quant.cpp), same branch order."""
    ft = ctx.ftype
    arch = ctx.arch
    n_expert = ctx.n_expert
    n_gqa = ctx.n_gqa

    def layer_info(counter: int) -> tuple[int, int]:
        # lambda layer_info: MoE models parse the layer from the name
        if max(1, n_expert) > 1:
            return _layer_of(tensor), ctx.n_layer
        return counter, ctx.n_layer

    if category == OUTPUT or (ctx.has_tied_embeddings and category == TOKEN_EMBD):
        if ctx.output_tensor_type is not None:
            return ctx.output_tensor_type
        qk_k = ggml_type(new_type).block_size
        if ft == "MXFP4_MOE" or arch == "falcon" or ne0(tensor) % qk_k != 0:
            return "Q8_0"
        if ft in ("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ2_S", "IQ2_M", "IQ1_M"):
            return "Q5_K"
        if new_type != "Q8_0":
            return "Q6_K"
        return new_type
    if ft == "MXFP4_MOE":
        # MoE tensors -> MXFP4, other tensors -> Q8_0
        bailing_expert = arch == "bailingmoe3" and category in (FFN_UP, FFN_GATE, FFN_DOWN)
        if ne2(tensor) > 1 and (arch != "bailingmoe3" or bailing_expert):
            return "MXFP4"
        return "Q8_0"
    if category == TOKEN_EMBD:
        # (a token_embedding_type override returned earlier, in llama_tensor_get_type)
        if ft in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
            return "Q2_K"
        if ft in ("IQ2_S", "IQ2_M", "IQ3_XXS"):
            return "IQ3_S"
        if ft in ("TQ1_0", "TQ2_0"):
            return "Q4_K"
        return new_type
    if ft in _IQ12:
        if category in ATTN_V_LIKE:
            if n_gqa >= 4 or n_expert >= 4:
                new_type = "Q4_K"
            else:
                new_type = "IQ3_S" if ft in ("IQ2_S", "IQ2_M") else "Q2_K"
            qs.i_attention_wv += 1
        elif n_expert == 8 and category == ATTENTION_K:
            new_type = "Q4_K"
        elif category == FFN_DOWN:
            if qs.i_ffn_down < ctx.n_layer // 8:
                new_type = "IQ3_S" if ft in ("IQ2_S", "IQ2_M") else "Q2_K"
            qs.i_ffn_down += 1
        elif category == ATTENTION_OUTPUT:
            if n_expert == 8:
                new_type = "Q5_K"
            elif ft in ("IQ1_S", "IQ1_M"):
                new_type = "IQ2_XXS"
            elif ft in ("IQ2_S", "IQ2_M"):
                new_type = "IQ3_S"
        return new_type
    if category in ATTN_V_LIKE:
        if ft == "Q2_K":
            new_type = "Q4_K" if n_gqa >= 4 else "Q3_K"
        elif ft == "Q2_K_S" and n_gqa >= 4:
            new_type = "Q4_K"
        elif ft == "IQ3_XXS":
            if n_gqa >= 4:  # noqa: SIM108 -- same shape as the C++ source
                new_type = "Q4_K"
            else:
                new_type = "IQ3_S" if not ctx.has_imatrix else "IQ3_XXS"
        elif ft in ("IQ3_XS", "IQ3_S") and n_gqa >= 4:  # noqa: SIM114 -- C++ branch order
            new_type = "Q4_K"
        elif ft == "IQ3_M":
            new_type = "Q4_K"
        elif ft == "Q3_K_M":
            new_type = "Q5_K" if qs.i_attention_wv < 2 else "Q4_K"
        elif ft == "Q3_K_L":  # noqa: SIM114 -- C++ branch order
            new_type = "Q5_K"
        elif ft in ("IQ4_NL", "IQ4_XS") and n_gqa >= 4:
            new_type = "Q5_K"
        elif ft in ("Q4_K_M", "Q5_K_M") and use_more_bits(qs.i_attention_wv, qs.n_attention_wv):
            new_type = "Q6_K"
        elif ft == "Q4_K_S" and qs.i_attention_wv < 4:
            new_type = "Q5_K"
        if ctx.llm_type_70b and new_type in ("Q3_K", "Q4_K"):
            # 8 heads share attn_v in 70B: more bits for almost no size
            new_type = "Q5_K"
        if n_expert == 8:
            new_type = "Q8_0"
        qs.i_attention_wv += 1
        return new_type
    if category == ATTENTION_K:
        if n_expert == 8:
            return "Q8_0"
        if ft == "IQ3_XS":
            return "IQ3_XXS"
        if ft == "IQ3_XXS":
            return "IQ2_S"
        return new_type
    if category == ATTENTION_Q:
        if ft == "IQ3_XS":
            return "IQ3_XXS"
        if ft == "IQ3_XXS":
            return "IQ2_S"
        return new_type
    if category == FFN_DOWN:
        i_layer, n_layer = layer_info(qs.i_ffn_down)
        if ft == "Q2_K":
            new_type = "Q3_K"
        elif ft == "Q2_K_S":
            if i_layer < n_layer // 8:
                new_type = "Q4_K"
        elif ft == "IQ3_XXS" and not ctx.has_imatrix:
            new_type = "Q4_K" if i_layer < n_layer // 8 else "Q3_K"
        elif ft == "Q3_K_M":
            if i_layer < n_layer // 16:
                new_type = "Q5_K"
            elif arch != "falcon" or use_more_bits(i_layer, n_layer):
                new_type = "Q4_K"
            else:
                new_type = "Q3_K"
        elif ft == "IQ3_M" and (
            i_layer < n_layer // 8 or (n_expert == 8 and use_more_bits(i_layer, n_layer))
        ):
            new_type = "Q4_K"
        elif ft == "Q3_K_L":
            new_type = "Q4_K" if arch == "falcon" else "Q5_K"
        elif ft == "Q4_K_M":
            if arch == "falcon":
                if i_layer < n_layer // 16:
                    new_type = "Q6_K"
                elif use_more_bits(i_layer, n_layer):
                    new_type = "Q5_K"
                else:
                    new_type = "Q4_K"
            elif use_more_bits(i_layer, n_layer):
                new_type = "Q6_K"
        elif i_layer < n_layer // 8 and ft in ("IQ4_NL", "IQ4_XS") and not ctx.has_imatrix:
            new_type = "Q5_K"
        elif ft == "Q5_K_M" and use_more_bits(i_layer, n_layer):
            new_type = "Q6_K"
        elif ft == "Q4_K_S" and arch != "falcon" and i_layer < n_layer // 8:
            new_type = "Q5_K"
        elif ft in ("Q4_0", "Q5_0") and ctx.has_imatrix and i_layer < n_layer // 8:
            new_type = "Q4_1" if ft == "Q4_0" else "Q5_1"
        qs.i_ffn_down += 1
        return new_type
    if category == ATTENTION_OUTPUT:
        if arch != "falcon":
            if n_expert == 8:
                if ft in (
                    "Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL",
                    "Q4_K_S", "Q4_K_M", "IQ3_S", "IQ3_M", "IQ4_XS",
                ):  # fmt: skip
                    new_type = "Q5_K"
            else:
                new_type = {
                    "Q2_K": "Q3_K",
                    "IQ3_XXS": "IQ3_S",
                    "Q3_K_M": "Q4_K",
                    "Q3_K_L": "Q5_K",
                    "IQ3_M": "Q4_K",
                }.get(ft, new_type)
        elif ft == "Q3_K_L":
            new_type = "Q4_K"
        return new_type
    # (an ATTENTION_QKV branch follows in the source, unreachable: attn_qkv is attn_v-like)
    if category in (FFN_GATE, FFN_UP):
        counter = qs.i_ffn_gate if category == FFN_GATE else qs.i_ffn_up
        i_layer, n_layer = layer_info(counter)
        if ft == "IQ3_XS" and n_layer // 8 <= i_layer < 7 * n_layer // 8:
            new_type = "IQ3_XXS"
        if category == FFN_GATE:
            qs.i_ffn_gate += 1
        else:
            qs.i_ffn_up += 1
        return new_type
    return new_type


def _is_quantized(type_name: str) -> bool:
    return GGML_TYPES[type_name].block_size > 1


@lru_cache(maxsize=128)
def _default_type(ftype: str) -> str:
    return llamacpp_ftype(ftype).default_type


def _get_type(ctx: MixContext, tensor: TensorInfo, qs: _Counters) -> str:
    """``llama_tensor_get_type``: the outer wrapper."""
    if not tensor_allows_quantization(tensor, quantize_output=ctx.quantize_output):
        return tensor_source_type(tensor, source_type=ctx.source_type)
    category = tensor_category(tensor.name)
    if ctx.token_embedding_type is not None and category == TOKEN_EMBD:
        return ctx.token_embedding_type
    if ctx.output_tensor_type is not None and category == OUTPUT:
        return ctx.output_tensor_type
    new_type = _default_type(ctx.ftype)
    if _is_quantized(new_type):
        if not ctx.pure:
            new_type = _impl(ctx, new_type, tensor, category, qs)
        new_type = tensor_type_fallback(tensor, new_type)
    return new_type


def _sort_key(tensor: TensorInfo) -> tuple[int, str]:
    """``weight_name_comparer``: by ``blk.N`` layer (-1 for others), then by name."""
    m = LAYER_RE.match(tensor.name)
    return (int(m.group(1)) if m else -1, tensor.name)


def tensor_type_for(
    ftype: str,
    tensor: TensorInfo,
    *,
    n_layer: int,
    n_expert: int,
    n_gqa: int,
    arch: str,
    has_tied_embeddings: bool = False,
    has_imatrix: bool = False,
    pure: bool = False,
) -> str:
    """The GGML type llama-quantize writes ``tensor`` in for file type ``ftype``.

    Single-tensor form: the attn_v/ffn counters are taken to be the tensor's layer index (exact
    for dense transformers; use :func:`predict_gguf_tensor_bytes` for the whole list, which
    replays llama.cpp's counters and detects tied embeddings itself).

    Args:
        ftype: a llama.cpp file type in any spelling (``"Q4_K_M"``, ``"Q4_K - Medium"``).
        tensor: GGUF-named tensor, shape in [out, in] order.
        n_layer: block count. n_expert: experts (0 for dense). n_gqa: n_head / n_head_kv.
        arch: GGUF architecture name (``llama``, ``qwen2``, ``falcon``...).
        has_tied_embeddings: the model has no ``output.weight`` (token_embd takes its rules).

    Returns:
        GGML type name such as ``"Q6_K"``.

    Raises:
        UnknownNameError: unknown file type.
        UnsupportedModelError: llama.cpp would abort on this tensor's row size.
    """
    ctx = MixContext(
        ftype=llamacpp_ftype(ftype).name,
        arch=arch,
        n_layer=n_layer,
        n_expert=n_expert,
        n_gqa=n_gqa,
        has_tied_embeddings=has_tied_embeddings,
        has_imatrix=has_imatrix,
        pure=pure,
    )
    layer = tensor.layer if tensor.layer is not None else 0
    qs = _Counters(
        n_attention_wv=n_layer,
        i_attention_wv=layer,
        i_ffn_down=layer,
        i_ffn_gate=layer,
        i_ffn_up=layer,
    )
    return _get_type(ctx, tensor, qs)


def predict_gguf_tensor_bytes(
    ftype: str,
    tensors: Sequence[TensorInfo],
    *,
    n_layer: int,
    n_expert: int,
    n_gqa: int,
    arch: str,
    has_imatrix: bool = False,
    pure: bool = False,
    source_type: str = "F16",
    output_tensor_type: str | None = None,
    token_embedding_type: str | None = None,
) -> tuple[tuple[TensorInfo, str, int], ...]:
    """Each tensor with the type llama-quantize gives it and its exact data bytes.

    Replays ``llama_model_quantize_impl``: tensors in ``weight_name_comparer`` order,
    ``n_attention_wv`` counted over attn_v/attn_qkv/attn_kv_b tensors, tied embeddings when no
    ``output.weight`` is present. Bytes are ``ggml_nbytes`` (no alignment padding; see
    :func:`oomkit.quant.llamacpp_filesize.predict_gguf_file_bytes` for the file).
    ``output_tensor_type`` / ``token_embedding_type`` are llama-quantize's
    ``--output-tensor-type`` / ``--token-embedding-type`` (bartowski's ``*_L`` files use Q8_0).

    Returns:
        (tensor, GGML type name, bytes) in the input order.

    Raises:
        UnknownNameError: unknown file type.
        UnsupportedModelError: llama.cpp would abort (row size without a fallback).
    """
    names = {t.name for t in tensors}
    ctx = MixContext(
        ftype=llamacpp_ftype(ftype).name,
        arch=arch,
        n_layer=n_layer,
        n_expert=n_expert,
        n_gqa=n_gqa,
        has_tied_embeddings="output.weight" not in names,
        has_imatrix=has_imatrix,
        pure=pure,
        source_type=source_type,
        output_tensor_type=output_tensor_type,
        token_embedding_type=token_embedding_type,
    )
    qs = _Counters(n_attention_wv=sum(1 for t in tensors if tensor_category(t.name) in ATTN_V_LIKE))
    chosen: dict[int, str] = {}
    for index, tensor in sorted(enumerate(tensors), key=lambda it: _sort_key(it[1])):
        chosen[index] = _get_type(ctx, tensor, qs)
    return tuple(
        (t, chosen[i], ggml_type(chosen[i]).tensor_bytes(t.n_params)) for i, t in enumerate(tensors)
    )
