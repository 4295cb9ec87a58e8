"""llama.cpp file types (``enum llama_ftype``): the names ``llama-quantize`` accepts.

Each row gives the enum value stored in GGUF ``general.file_type``, the default GGML tensor type
(``llama_ftype_get_default_type`` in src/llama-quant.cpp) and the string llama.cpp prints as
``file type`` (``llama_model_ftype_name`` in src/llama-model-loader.cpp). The per-tensor choice
that turns a default type into a mix lives in :mod:`oomkit.quant.llamacpp_mix`.

Q1_0 / Q2_0 (ids 40/41, 2026) are not listed: their GGML block layouts are not in
:data:`oomkit.quant.ggml_types.GGML_TYPES` yet.

>>> llamacpp_ftype("q4_k_m").name
'Q4_K_M'
>>> llamacpp_ftype("Q4_K - Medium").ftype_id
15
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from oomkit.errors import UnknownNameError, close_matches

__all__ = [
    "FTYPE_ALIASES",
    "LLAMACPP_FTYPES",
    "UNSLOTH_DYNAMIC",
    "LlamaCppFtype",
    "ftype_case",
    "llamacpp_ftype",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class LlamaCppFtype:
    """One ``LLAMA_FTYPE_*`` value."""

    name: str  # the llama-quantize argument, e.g. "Q4_K_M"
    ftype_id: int  # enum llama_ftype value (GGUF general.file_type)
    default_type: str  # GGML type most 2-D weights get (llama_ftype_get_default_type)
    display: str  # what llama.cpp logs as "file type" (llama_model_ftype_name)
    description: str


# (name, id, default GGML type, llama_model_ftype_name, description)
_ROWS: tuple[tuple[str, int, str, str, str], ...] = (
    ("F32", 0, "F32", "all F32", "no quantization, 32-bit floats"),
    ("F16", 1, "F16", "F16", "no quantization, 16-bit floats"),
    ("BF16", 32, "BF16", "BF16", "no quantization, bfloat16"),
    ("Q4_0", 2, "Q4_0", "Q4_0", "legacy 4-bit, one f16 scale per 32"),
    ("Q4_1", 3, "Q4_1", "Q4_1", "legacy 4-bit, f16 scale + min per 32"),
    ("Q5_0", 8, "Q5_0", "Q5_0", "legacy 5-bit, one f16 scale per 32"),
    ("Q5_1", 9, "Q5_1", "Q5_1", "legacy 5-bit, f16 scale + min per 32"),
    ("Q8_0", 7, "Q8_0", "Q8_0", "8-bit, one f16 scale per 32"),
    ("Q2_K", 10, "Q2_K", "Q2_K - Medium", "K-quant 2-bit mix (attn_v/ffn_down higher)"),
    ("Q2_K_S", 21, "Q2_K", "Q2_K - Small", "K-quant 2-bit, smaller mix (needs imatrix)"),
    ("Q3_K_S", 11, "Q3_K", "Q3_K - Small", "K-quant 3-bit everywhere"),
    ("Q3_K_M", 12, "Q3_K", "Q3_K - Medium", "K-quant 3-bit mix, attn_v/attn_output/ffn_down Q4-Q5"),
    ("Q3_K_L", 13, "Q3_K", "Q3_K - Large", "K-quant 3-bit mix, attn_v/attn_output/ffn_down Q5_K"),
    ("Q4_K_S", 14, "Q4_K", "Q4_K - Small", "K-quant 4-bit, a few early layers Q5_K"),
    ("Q4_K_M", 15, "Q4_K", "Q4_K - Medium", "K-quant 4-bit, half of attn_v/ffn_down Q6_K"),
    ("Q5_K_S", 16, "Q5_K", "Q5_K - Small", "K-quant 5-bit everywhere"),
    ("Q5_K_M", 17, "Q5_K", "Q5_K - Medium", "K-quant 5-bit, half of attn_v/ffn_down Q6_K"),
    ("Q6_K", 18, "Q6_K", "Q6_K", "K-quant 6-bit"),
    ("IQ2_XXS", 19, "IQ2_XXS", "IQ2_XXS - 2.0625 bpw", "i-quant 2-bit (needs imatrix)"),
    ("IQ2_XS", 20, "IQ2_XS", "IQ2_XS - 2.3125 bpw", "i-quant 2-bit (needs imatrix)"),
    ("IQ2_S", 28, "IQ2_XS", "IQ2_S - 2.5 bpw", "i-quant 2-bit mix (needs imatrix)"),
    ("IQ2_M", 29, "IQ2_S", "IQ2_M - 2.7 bpw", "i-quant 2-bit mix (needs imatrix)"),
    ("IQ3_XXS", 23, "IQ3_XXS", "IQ3_XXS - 3.0625 bpw", "i-quant 3-bit (needs imatrix)"),
    ("IQ3_XS", 22, "IQ3_S", "IQ3_XS - 3.3 bpw", "i-quant 3-bit mix"),
    ("IQ3_S", 26, "IQ3_S", "IQ3_S - 3.4375 bpw", "i-quant 3-bit"),
    ("IQ3_M", 27, "IQ3_S", "IQ3_S mix - 3.66 bpw", "i-quant 3-bit mix"),
    ("IQ1_S", 24, "IQ1_S", "IQ1_S - 1.5625 bpw", "i-quant 1-bit (needs imatrix)"),
    ("IQ1_M", 31, "IQ1_M", "IQ1_M - 1.75 bpw", "i-quant 1-bit (needs imatrix)"),
    ("IQ4_NL", 25, "IQ4_NL", "IQ4_NL - 4.5 bpw", "non-linear 4-bit, blocks of 32"),
    ("IQ4_XS", 30, "IQ4_XS", "IQ4_XS - 4.25 bpw", "non-linear 4-bit, blocks of 256"),
    ("TQ1_0", 36, "TQ1_0", "TQ1_0 - 1.69 bpw ternary", "ternary (BitNet-style models)"),
    ("TQ2_0", 37, "TQ2_0", "TQ2_0 - 2.06 bpw ternary", "ternary (BitNet-style models)"),
    ("MXFP4_MOE", 38, "MXFP4", "MXFP4 MoE", "MoE experts MXFP4, other weights Q8_0"),
    ("NVFP4", 39, "NVFP4", "NVFP4", "NVIDIA FP4: 4-bit with an E4M3 scale per 16"),
)

LLAMACPP_FTYPES: Mapping[str, LlamaCppFtype] = MappingProxyType(
    {
        n: LlamaCppFtype(name=n, ftype_id=i, default_type=t, display=d, description=desc)
        for n, i, t, d, desc in _ROWS
    }
)


def _squash(text: str) -> str:
    """Upper-case and drop everything but letters and digits: 'q4_k-m' -> 'Q4KM'."""
    return re.sub(r"[^0-9A-Z]", "", text.upper())


def _build_aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for ft in LLAMACPP_FTYPES.values():
        aliases[ft.name.upper()] = ft.name
        aliases[ft.display.upper()] = ft.name
        aliases[f"LLAMA_FTYPE_MOSTLY_{ft.name}"] = ft.name
    aliases["ALL_F32"] = "F32"
    aliases["LLAMA_FTYPE_ALL_F32"] = "F32"
    aliases["FP16"] = "F16"
    aliases["FLOAT16"] = "F16"
    aliases["FP32"] = "F32"
    aliases["FLOAT32"] = "F32"
    aliases["BFLOAT16"] = "BF16"
    aliases["MXFP4"] = "MXFP4_MOE"
    # Unsloth Dynamic 2.0 quants are not llama-quantize types: Unsloth raises some tensors
    # (per model, from its own calibration) above the base mix. The closest llama-quantize mix
    # stands in for each; published UD file sizes are within a few % of it (see UNSLOTH_DYNAMIC)
    for ud, base in UNSLOTH_DYNAMIC.items():
        aliases[ud] = base
        aliases[ud.removeprefix("UD-")] = base
    return aliases


#: Unsloth Dynamic quant name -> the llama-quantize mix it is modelled as
UNSLOTH_DYNAMIC: Mapping[str, str] = MappingProxyType(
    {
        "UD-Q2_K_XL": "Q2_K",
        "UD-Q3_K_XL": "Q3_K_M",
        "UD-Q4_K_XL": "Q4_K_M",
        "UD-Q5_K_XL": "Q5_K_M",
        "UD-Q6_K_XL": "Q6_K",
        "UD-Q8_K_XL": "Q8_0",
    }
)


#: Accepted spellings (upper-cased) -> canonical llama-quantize name.
FTYPE_ALIASES: Mapping[str, str] = MappingProxyType(_build_aliases())
_BY_ID: Mapping[int, LlamaCppFtype] = MappingProxyType(
    {f.ftype_id: f for f in LLAMACPP_FTYPES.values()}
)


def ftype_case(name: str | None) -> str | None:
    """``name`` in llama-quantize's case when it is a file type in another case (``q4_k_m`` ->
    ``Q4_K_M``); anything else (an alias such as ``MXFP4``, an HF format) as given.

    >>> ftype_case("q4_k_m"), ftype_case("MXFP4"), ftype_case("awq"), ftype_case(None)
    ('Q4_K_M', 'MXFP4', 'awq', None)
    """
    if name is None:
        return None
    upper = name.strip().upper()
    return upper if upper in LLAMACPP_FTYPES else name


def llamacpp_ftype(name: str) -> LlamaCppFtype:
    """Look up a llama.cpp file type by any common spelling.

    Accepts the llama-quantize name (``Q4_K_M``, any case), the ``file type`` string llama.cpp
    prints (``Q4_K - Medium``), the enum name (``LLAMA_FTYPE_MOSTLY_Q4_K_M``) and the GGUF
    ``general.file_type`` number as a string (``"15"``). A trailing ``(guessed)`` is ignored.

    Raises:
        UnknownNameError: not a llama.cpp file type; suggestions hold close canonical names
            (``'Q4KM'`` suggests ``'Q4_K_M'``).
    """
    text = name.strip()
    if text.lower().endswith("(guessed)"):
        text = text[: -len("(guessed)")].strip()
    key = text.upper()
    hit = FTYPE_ALIASES.get(key)
    if hit is not None:
        return LLAMACPP_FTYPES[hit]
    if key.isdigit() and int(key) in _BY_ID:
        return _BY_ID[int(key)]
    squashed = _squash(text)
    matches = [n for n in LLAMACPP_FTYPES if _squash(n) == squashed]
    if len(matches) == 1:
        suggestions: tuple[str, ...] = (matches[0],)
    else:
        suggestions = close_matches(text, LLAMACPP_FTYPES)
    raise UnknownNameError(
        kind="llama.cpp file type",
        name=name,
        suggestions=suggestions,
        hint="Valid llama-quantize types: " + ", ".join(LLAMACPP_FTYPES) + ".",
    )
