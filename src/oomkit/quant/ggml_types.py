"""GGML tensor types: block size (weights per block) and type size (bytes per block).

Facts as data, exact integer math (gguf-py ``GGML_QUANT_SIZES``; ggml ``type_traits`` in
ggml/src/ggml.c). A tensor of ``n`` elements in type ``t`` takes
``ceil(n / block_size) * type_size`` bytes; ggml requires rows to be whole blocks.

>>> ggml_tensor_bytes("Q4_K", 4096 * 4096)
9437184
>>> ggml_type("q8_0").bits_per_weight
8.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from oomkit.errors import UnknownNameError, close_matches
from oomkit.units import ceil_div

__all__ = ["GGML_TYPES", "GgmlType", "ggml_tensor_bytes", "ggml_type", "ggml_type_by_id"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GgmlType:
    """One ggml tensor type: its enum value, block size and bytes per block."""

    name: str
    type_id: int  # enum ggml_type value, as stored in GGUF tensor infos
    block_size: int  # weights per block
    type_size: int  # bytes per block

    @property
    def bits_per_weight(self) -> float:
        """Display only; never used to compute bytes."""
        return self.type_size * 8 / self.block_size

    def tensor_bytes(self, n_elements: int) -> int:
        return ceil_div(n_elements, self.block_size) * self.type_size


_ROWS: tuple[tuple[str, int, int, int], ...] = (
    ("F32", 0, 1, 4),
    ("F16", 1, 1, 2),
    ("Q4_0", 2, 32, 18),
    ("Q4_1", 3, 32, 20),
    ("Q5_0", 6, 32, 22),
    ("Q5_1", 7, 32, 24),
    ("Q8_0", 8, 32, 34),
    ("Q8_1", 9, 32, 40),
    ("Q2_K", 10, 256, 84),
    ("Q3_K", 11, 256, 110),
    ("Q4_K", 12, 256, 144),
    ("Q5_K", 13, 256, 176),
    ("Q6_K", 14, 256, 210),
    ("Q8_K", 15, 256, 292),
    ("IQ2_XXS", 16, 256, 66),
    ("IQ2_XS", 17, 256, 74),
    ("IQ3_XXS", 18, 256, 98),
    ("IQ1_S", 19, 256, 50),
    ("IQ4_NL", 20, 32, 18),
    ("IQ3_S", 21, 256, 110),
    ("IQ2_S", 22, 256, 82),
    ("IQ4_XS", 23, 256, 136),
    ("I8", 24, 1, 1),
    ("I16", 25, 1, 2),
    ("I32", 26, 1, 4),
    ("I64", 27, 1, 8),
    ("F64", 28, 1, 8),
    ("IQ1_M", 29, 256, 56),
    ("BF16", 30, 1, 2),
    ("TQ1_0", 34, 256, 54),
    ("TQ2_0", 35, 256, 66),
    ("MXFP4", 39, 32, 17),
    ("NVFP4", 40, 64, 36),
)

GGML_TYPES: Mapping[str, GgmlType] = MappingProxyType(
    {n: GgmlType(name=n, type_id=i, block_size=b, type_size=s) for n, i, b, s in _ROWS}
)
_BY_ID: Mapping[int, GgmlType] = MappingProxyType({t.type_id: t for t in GGML_TYPES.values()})


def ggml_type(name: str) -> GgmlType:
    """Look up a GGML type by name (case-insensitive).

    Raises:
        UnknownNameError: not a GGML type; suggestions are close names.
    """
    t = GGML_TYPES.get(name) or GGML_TYPES.get(name.upper())
    if t is None:
        raise UnknownNameError(
            kind="GGML type", name=name, suggestions=close_matches(name, GGML_TYPES)
        )
    return t


def ggml_type_by_id(type_id: int) -> GgmlType | None:
    """The GGML type with enum value ``type_id``, or None when unknown."""
    return _BY_ID.get(type_id)


def ggml_tensor_bytes(type_name: str, n_elements: int) -> int:
    """Exact bytes of ``n_elements`` stored as ``type_name``."""
    return ggml_type(type_name).tensor_bytes(n_elements)
