"""The unified --quant table (oomkit.quant.formats)."""

from __future__ import annotations

import pytest

from oomkit.errors import UnknownNameError
from oomkit.quant.formats import FAMILIES, QUANT_FORMATS, list_quant_formats, quant_format
from oomkit.quant.ggml_types import GGML_TYPES, ggml_tensor_bytes, ggml_type, ggml_type_by_id
from oomkit.quant.hf_formats import HF_FORMATS
from oomkit.quant.llamacpp_ftypes import LLAMACPP_FTYPES


@pytest.mark.parametrize(
    ("name", "family", "canonical"),
    [
        ("Q4_K_M", "ggml_mix", "Q4_K_M"),
        ("q4_k_m", "ggml_mix", "Q4_K_M"),  # case-insensitive
        ("Q4_K - Medium", "ggml_mix", "Q4_K_M"),  # llama.cpp's printed file type
        ("Q4_K", "ggml", "Q4_K"),  # a tensor type, not a file type
        ("IQ4_XS", "ggml_mix", "IQ4_XS"),
        ("bf16", "hf", "bf16"),  # HF names are lower case ...
        ("BF16", "ggml_mix", "BF16"),  # ... GGUF names upper case
        ("mxfp4", "hf", "mxfp4"),
        ("MXFP4", "ggml", "MXFP4"),
        ("nf4", "hf", "nf4"),
        ("GPTQ", "hf", "gptq"),
        ("fp8", "hf", "fp8"),
    ],
)
def test_lookup(name: str, family: str, canonical: str) -> None:
    f = quant_format(name)
    assert (f.family, f.name) == (family, canonical)


def test_family_argument_disambiguates() -> None:
    assert quant_format("bf16", family="ggml_mix").name == "BF16"
    assert quant_format("Q8_0", family="ggml").block_size == 32
    assert quant_format("int8", family="hf").bits == 8
    with pytest.raises(UnknownNameError):
        quant_format("nf4", family="ggml")
    with pytest.raises(UnknownNameError):
        quant_format("Q4_K_M", family="gguf")


def test_unknown_name_suggests_across_families() -> None:
    with pytest.raises(UnknownNameError) as err:
        quant_format("Q4KM")
    assert err.value.suggestions == ("Q4_K_M",)
    with pytest.raises(UnknownNameError, match="nf4"):
        quant_format("nf5")


def test_table_covers_every_family_row() -> None:
    assert set(FAMILIES) == {r.family for r in QUANT_FORMATS.values()}
    assert len(list_quant_formats("ggml")) == len(GGML_TYPES)
    assert len(list_quant_formats("ggml_mix")) == len(LLAMACPP_FTYPES)
    assert len(list_quant_formats("hf")) == len(HF_FORMATS)
    assert len(list_quant_formats()) == len(GGML_TYPES) + len(LLAMACPP_FTYPES) + len(HF_FORMATS)


def test_ggml_rows_carry_exact_block_math() -> None:
    q4k = quant_format("Q4_K")
    assert (q4k.block_size, q4k.type_size) == (256, 144)
    assert q4k.bits == 4.5  # display only
    n = 4096 * 4096
    assert n // q4k.block_size * q4k.type_size == ggml_tensor_bytes("Q4_K", n)


def test_ggml_type_lookups() -> None:
    # GGUF tensor infos store the enum value: 12 is Q4_K, 39 MXFP4
    assert ggml_type_by_id(12) is GGML_TYPES["Q4_K"]
    assert ggml_type_by_id(39) is GGML_TYPES["MXFP4"]
    assert ggml_type_by_id(4) is None  # removed Q4_2
    with pytest.raises(UnknownNameError, match="Q4_K"):
        ggml_type("Q4K")
