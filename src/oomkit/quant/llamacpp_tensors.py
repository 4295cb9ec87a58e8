"""Per-tensor facts llama.cpp's quantizer uses: category, quantizability, source type, fallback.

Models ``tensor_get_category``, ``tensor_allows_quantization`` and ``tensor_type_fallback`` in
src/llama-quant.cpp (ggml-org/llama.cpp, 2026) and the F32-forcing of
``convert_hf_to_gguf.py`` ``prepare_tensors``. The type choice itself is
:mod:`oomkit.quant.llamacpp_mix`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from oomkit.errors import UnsupportedModelError
from oomkit.quant.ggml_types import ggml_type
from oomkit.spec.model import TensorInfo

__all__ = [
    "ATTENTION_K",
    "ATTENTION_KV_B",
    "ATTENTION_OUTPUT",
    "ATTENTION_Q",
    "ATTENTION_QKV",
    "ATTENTION_V",
    "ATTN_V_LIKE",
    "FFN_DOWN",
    "FFN_GATE",
    "FFN_UP",
    "LAYER_RE",
    "OTHER",
    "OUTPUT",
    "TOKEN_EMBD",
    "ne0",
    "ne2",
    "tensor_allows_quantization",
    "tensor_category",
    "tensor_source_type",
    "tensor_type_fallback",
]

# tensor_get_category() in src/llama-quant.cpp
TOKEN_EMBD = "token_embd"
ATTENTION_Q = "attn_q"
ATTENTION_K = "attn_k"
ATTENTION_V = "attn_v"
ATTENTION_QKV = "attn_qkv"
ATTENTION_KV_B = "attn_kv_b"
ATTENTION_OUTPUT = "attn_output"
FFN_UP = "ffn_up"
FFN_GATE = "ffn_gate"
FFN_DOWN = "ffn_down"
OUTPUT = "output"
OTHER = "other"

ATTN_V_LIKE = frozenset({ATTENTION_V, ATTENTION_QKV, ATTENTION_KV_B})


# tensor_allows_quantization(): name fragments never quantized
_NO_QUANT_FRAGMENTS: tuple[str, ...] = (
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
)

# convert_hf_to_gguf.py writes these as F32 whatever --outtype says (prepare_tensors)
_F32_SOURCE_FRAGMENTS: tuple[str, ...] = (
    "_norm.weight",
    "ffn_gate_inp.weight",
    "position_embd.weight",
    "token_types.weight",
    "ssm_conv1d",
    "time_mix_first.weight",
)

LAYER_RE = re.compile(r"^blk\.(\d+)\.")

#: tensor_get_category()'s substring checks, in llama.cpp's order
_CATEGORY_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("attn_qkv.weight", ATTENTION_QKV),
    ("attn_kv_b.weight", ATTENTION_KV_B),
    ("attn_v.weight", ATTENTION_V),
    ("attn_k.weight", ATTENTION_K),
    ("attn_q.weight", ATTENTION_Q),
    ("attn_output.weight", ATTENTION_OUTPUT),
    ("ffn_up", FFN_UP),
    ("ffn_gate", FFN_GATE),
    ("ffn_down", FFN_DOWN),
)


def _layer_free(name: str) -> str:
    """``blk.12.attn_q.weight`` -> ``blk.#.attn_q.weight``; any other name unchanged.

    The name checks below answer the same for every layer number when no fragment they look
    for can match across the number (:func:`_fragments_are_layer_free`), so a model's tensors
    are scanned once per kind (~10) instead of once per tensor (~300; ~1 ms of a cold
    ``oomkit estimate``, issue 10).
    """
    if name.startswith("blk."):
        dot = name.find(".", 4)
        if dot > 4 and name[4:dot].isdecimal():
            return "blk.#" + name[dot:]
    return name


def _fragments_are_layer_free(fragments: tuple[str, ...]) -> bool:
    """No fragment can match a name ``blk.N.rest`` across ``N`` (decimal digits between two
    dots): each digit in a fragment has a neighbour in the fragment that is neither a digit
    nor a dot, which ``N``'s digits never have. A match then lies wholly in ``blk.`` or in
    ``.rest``, the same text in ``blk.#.rest`` (and no fragment holds ``#``)."""
    for f in fragments:
        if "#" in f:
            return False
        for i, ch in enumerate(f):
            if not ch.isdecimal():
                continue
            left = f[i - 1] if i > 0 else None
            right = f[i + 1] if i + 1 < len(f) else None
            if not any(c is not None and not c.isdecimal() and c != "." for c in (left, right)):
                return False
    return True


_CATEGORY_LAYER_FREE = _fragments_are_layer_free(tuple(f for f, _ in _CATEGORY_FRAGMENTS))
_NO_QUANT_LAYER_FREE = _fragments_are_layer_free(_NO_QUANT_FRAGMENTS)


@lru_cache(maxsize=8192)
def tensor_category(name: str) -> str:
    """The quantizer's category of a GGUF tensor name (``tensor_get_category``).

    Substring matches, in llama.cpp's order: ``ffn_down_exps`` and ``ffn_down_shexp`` are
    ``ffn_down``; ``attn_qkv`` and ``attn_kv_b`` are checked before ``attn_v``.
    """
    key = _layer_free(name) if _CATEGORY_LAYER_FREE else name
    return tensor_category(key) if key != name else _category_of(name)


def _category_of(name: str) -> str:
    if name == "output.weight":
        return OUTPUT
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return TOKEN_EMBD
    for fragment, cat in _CATEGORY_FRAGMENTS:
        if fragment in name:
            return cat
    return OTHER


def _n_dims(shape: tuple[int, ...]) -> int:
    """``ggml_n_dims``: dimensions ignoring trailing ne (leading [out, in]-order) sizes of 1."""
    dims = list(shape)
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    return max(1, len(dims))


def tensor_allows_quantization(tensor: TensorInfo, *, quantize_output: bool = True) -> bool:
    """``tensor_allows_quantization``: only 2-D/3-D ``*weight`` tensors, minus exceptions.

    Norms, MoE routers (``ffn_gate_inp``), position embeddings, token types, SSM conv1d, RWKV
    small matrices and a few multimodal tensors keep their source type.
    """
    if _n_dims(tensor.shape) < 2:
        return False
    return _name_allows_quantization(tensor.name, quantize_output)


# Names repeat across layers, quants and models (``blk.N.attn_q.weight``): the substring scan
# is done once per name, and once for all layers of one kind (``_layer_free``).
@lru_cache(maxsize=8192)
def _name_allows_quantization(name: str, quantize_output: bool) -> bool:
    key = _layer_free(name) if _NO_QUANT_LAYER_FREE else name
    if key != name:
        return _name_allows_quantization(key, quantize_output)
    return _allows_of(name, quantize_output)


def _allows_of(name: str, quantize_output: bool) -> bool:
    if not name.endswith("weight"):
        return False
    if not quantize_output and name == "output.weight":
        return False
    if name in ("position_embd.weight", "token_types.weight"):
        return False
    return not any(f in name for f in _NO_QUANT_FRAGMENTS)


def tensor_source_type(tensor: TensorInfo, *, source_type: str = "F16") -> str:
    """The type a tensor has in the unquantized GGUF that ``llama-quantize`` reads.

    ``convert_hf_to_gguf.py`` stores 1-D tensors, norms, MoE routers, position embeddings and SSM
    conv1d in F32; everything else in ``--outtype`` (``source_type``). A header-read
    ``tensor.dtype`` that is a float GGML type wins for the latter.
    """
    if _n_dims(tensor.shape) < 2 or any(f in tensor.name for f in _F32_SOURCE_FRAGMENTS):
        return "F32"
    if tensor.dtype is not None and tensor.dtype.upper() in ("F32", "F16", "BF16"):
        return tensor.dtype.upper()
    return source_type.upper()


def ne0(tensor: TensorInfo) -> int:
    """GGUF ``ne[0]``: the row length (last entry of an [out, in] shape)."""
    return tensor.shape[-1] if tensor.shape else 1


def ne2(tensor: TensorInfo) -> int:
    """GGUF ``ne[2]``: the expert count of a stacked [n_expert, out, in] tensor, else 1."""
    return tensor.shape[-3] if len(tensor.shape) >= 3 else 1


def tensor_type_fallback(tensor: TensorInfo, target_type: str) -> str:
    """``tensor_type_fallback``: a type whose block fits a row of ``ne[0]`` elements.

    IQ 256-blocks -> IQ4_NL; Q2_K/Q3_K/TQ -> Q4_0; Q4_K -> Q5_0; Q5_K -> Q5_1; Q6_K -> Q8_0;
    F16 when even the 32-block fallback does not divide the row.

    Raises:
        UnsupportedModelError: llama.cpp defines no fallback (e.g. Q8_0 or MXFP4 with a row not
            a multiple of 32): llama-quantize aborts on such a tensor.
    """
    ncols = ne0(tensor)
    if ncols % ggml_type(target_type).block_size == 0:
        return target_type
    fallback = {
        "IQ1_S": "IQ4_NL",
        "IQ1_M": "IQ4_NL",
        "IQ2_XXS": "IQ4_NL",
        "IQ2_XS": "IQ4_NL",
        "IQ2_S": "IQ4_NL",
        "IQ3_XXS": "IQ4_NL",
        "IQ3_S": "IQ4_NL",
        "IQ4_XS": "IQ4_NL",
        "Q2_K": "Q4_0",
        "Q3_K": "Q4_0",
        "TQ1_0": "Q4_0",
        "TQ2_0": "Q4_0",
        "Q4_K": "Q5_0",
        "Q5_K": "Q5_1",
        "Q6_K": "Q8_0",
    }.get(target_type)
    if fallback is None:
        raise UnsupportedModelError(
            f"Quantization failed for '{tensor.name}' (type {target_type}, row of {ncols}): "
            f"llama.cpp has no fallback when a row is not a multiple of "
            f"{ggml_type(target_type).block_size}. Choose another file type.",
            architecture="",
            feature=f"{target_type} row size",
        )
    if ncols % ggml_type(fallback).block_size != 0:
        return "F16"
    return fallback
