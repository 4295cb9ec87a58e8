"""One table of every quantization name ``--quant`` accepts.

Three families share the table:

* ``"ggml"``: single GGML tensor types (``Q4_K``, ``Q8_0``, ``IQ4_XS``...), exact block math in
  :mod:`oomkit.quant.ggml_types`;
* ``"ggml_mix"``: llama.cpp file types (``Q4_K_M``, ``Q5_K_M``...), whose per-tensor types come from
  :mod:`oomkit.quant.llamacpp_mix`;
* ``"hf"``: Hugging Face / PyTorch formats (``bf16``, ``int8``, ``nf4``, ``gptq``, ``awq``, ``fp8``,
  ``mxfp4``...), storage in :mod:`oomkit.quant.hf_formats`.

``bits`` is for display only; bytes always come from the family's exact math.

Names overlap between families (``Q8_0`` is a GGML type and a llama.cpp file type; ``bf16`` is an
HF dtype and ``BF16`` a llama.cpp file type; ``MXFP4`` a GGML type, ``mxfp4`` the gpt-oss
format). Lookup takes the exact spelling first (GGUF names are upper case, HF names lower case),
then, case-insensitively, llama.cpp file types, GGML types and HF formats in that order; pass
``family`` to choose.

>>> quant_format("q4_k_m").family
'ggml_mix'
>>> quant_format("nf4").family
'hf'
>>> quant_format("bf16").family, quant_format("BF16").family
('hf', 'ggml_mix')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from oomkit.errors import UnknownNameError, close_matches
from oomkit.quant.ggml_types import GGML_TYPES
from oomkit.quant.hf_formats import HF_FORMATS, hf_format
from oomkit.quant.llamacpp_ftypes import LLAMACPP_FTYPES, llamacpp_ftype

__all__ = ["FAMILIES", "QUANT_FORMATS", "QuantFormat", "list_quant_formats", "quant_format"]

FAMILIES: tuple[str, ...] = ("ggml_mix", "ggml", "hf")


@dataclass(frozen=True, slots=True, kw_only=True)
class QuantFormat:
    """A name ``--quant`` accepts."""

    name: str
    family: str  # "ggml" | "ggml_mix" | "hf"
    bits: float  # nominal bits per weight, display only
    description: str
    block_size: int | None = None  # GGML: weights per block
    type_size: int | None = None  # GGML: bytes per block


def _ggml_rows() -> list[QuantFormat]:
    rows = []
    for t in GGML_TYPES.values():
        kind = "quantized block" if t.block_size > 1 else "plain"
        rows.append(
            QuantFormat(
                name=t.name,
                family="ggml",
                bits=t.bits_per_weight,
                description=f"GGML {kind} type: {t.type_size} bytes per {t.block_size} weights",
                block_size=t.block_size,
                type_size=t.type_size,
            )
        )
    return rows


def _mix_rows() -> list[QuantFormat]:
    return [
        QuantFormat(
            name=f.name,
            family="ggml_mix",
            bits=GGML_TYPES[f.default_type].bits_per_weight,
            description=f"llama.cpp file type '{f.display}': {f.description}",
        )
        for f in LLAMACPP_FTYPES.values()
    ]


def _hf_rows() -> list[QuantFormat]:
    return [
        QuantFormat(name=f.name, family="hf", bits=float(f.bits), description=f.description)
        for f in HF_FORMATS.values()
    ]


#: Every format, keyed by (family, name).
QUANT_FORMATS: Mapping[tuple[str, str], QuantFormat] = MappingProxyType(
    {(r.family, r.name): r for r in (*_mix_rows(), *_ggml_rows(), *_hf_rows())}
)


def list_quant_formats(family: str | None = None) -> tuple[QuantFormat, ...]:
    """All formats (or one family's), llama.cpp file types first, then GGML types, then HF."""
    return tuple(r for r in QUANT_FORMATS.values() if family is None or r.family == family)


def _lookup(name: str, family: str) -> QuantFormat | None:
    try:
        if family == "ggml_mix":
            key = llamacpp_ftype(name).name
        elif family == "hf":
            key = hf_format(name).name
        else:
            key = name.strip().upper()
    except UnknownNameError:
        return None
    return QUANT_FORMATS.get((family, key))


def quant_format(name: str, *, family: str | None = None) -> QuantFormat:
    """Look up a quantization name from any family (see the module docstring for the order).

    Raises:
        UnknownNameError: no family knows the name; suggestions are close names from all
            families (``'Q4KM'`` suggests ``'Q4_K_M'``).
    """
    families = FAMILIES if family is None else (family,)
    if family is not None and family not in FAMILIES:
        raise UnknownNameError(kind="quant format family", name=family, suggestions=FAMILIES)
    for fam in families:  # exact spelling first
        hit = QUANT_FORMATS.get((fam, name.strip()))
        if hit is not None:
            return hit
    for fam in families:
        found = _lookup(name, fam)
        if found is not None:
            return found
    pool = [r.name for r in QUANT_FORMATS.values() if r.family in families]
    squashed = name.upper().replace("_", "").replace("-", "")
    exact_squash = [n for n in pool if n.upper().replace("_", "").replace("-", "") == squashed]
    raise UnknownNameError(
        kind="quant format",
        name=name,
        suggestions=tuple(dict.fromkeys(exact_squash)) or close_matches(name, pool),
        hint="Use a GGUF name such as Q4_K_M, Q8_0, IQ4_XS or an HF format such as bf16, nf4, "
        "gptq, awq, fp8.",
    )
