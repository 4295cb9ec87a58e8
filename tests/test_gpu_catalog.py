"""Tests for the GPU catalog (oomkit.hardware.catalog and the rows of oomkit/data/gpus.json)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import fields
from pathlib import Path

import pytest

from oomkit.errors import UnknownNameError
from oomkit.hardware.catalog import (
    DTYPES,
    SEGMENTS,
    VENDORS,
    GpuModel,
    all_gpus,
    find_gpu,
    find_gpu_by_nvml_name,
    normalize_gpu_name,
    search_gpus,
)
from oomkit.units import GB, GiB, MiB

ROWS = all_gpus()
GPUS_JSON = Path(__file__).parents[1] / "src" / "oomkit" / "data" / "gpus.json"


# The rules gpus.md states; every row is checked against them, so the data cannot drift.
def nvidia_dtypes(cc: str) -> tuple[str, ...]:
    """Native dtypes of an NVIDIA GPU of compute capability ``cc`` (CUDA guide, whitepapers)."""
    major, _, minor = cc.partition(".")
    v = (int(major), int(minor))
    out = ["fp32", "fp16"]
    if v >= (8, 0):
        out.append("bf16")
    if v >= (8, 9):
        out.append("fp8")
    if v >= (6, 1):
        out.append("int8")
    if v >= (10, 0):
        out.append("fp4")
    return tuple(out)


def apple_usable_memory_bytes(ram_bytes: int) -> int:
    """Metal's default GPU working-set limit: 2/3 of RAM up to 32 GiB, 3/4 above."""
    if ram_bytes <= 32 * GiB:
        return ram_bytes * 2 // 3
    return ram_bytes * 3 // 4


def _cc(gpu: GpuModel) -> tuple[int, int]:
    assert gpu.compute_capability is not None
    major, minor = gpu.compute_capability.split(".")
    return int(major), int(minor)


# --- the rows as data -------------------------------------------------------------------------


def test_catalog_has_at_least_80_rows() -> None:
    assert len(ROWS) >= 80


def test_every_json_row_holds_every_field_and_a_source() -> None:
    # One table, every GpuModel field spelled out in every row (no defaults hiding a fact).
    rows = json.loads(GPUS_JSON.read_text(encoding="utf-8"))["gpus"]
    names = {f.name for f in fields(GpuModel)}
    for raw in rows:
        assert set(raw) - {"note"} == names, raw["key"]
        assert raw["source"].startswith("https://"), raw["key"]
    assert [r["key"] for r in rows] == [g.key for g in ROWS]


def test_catalog_modules_are_gone_and_loader_imports_no_data_module() -> None:
    # The old gpu_data*.py modules and their import cycle with catalog.py are gone.
    hardware = Path(__file__).parents[1] / "src" / "oomkit" / "hardware"
    assert not list(hardware.glob("gpu_data*.py"))


def test_all_gpus_is_read_once() -> None:
    assert all_gpus() is all_gpus()


def test_keys_are_unique_slugs() -> None:
    keys = [g.key for g in ROWS]
    assert len(keys) == len(set(keys))
    for key in keys:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", key), key


def test_no_name_belongs_to_two_rows() -> None:
    # Every key, name and alias, once normalised, must point at exactly one row; otherwise a
    # lookup would silently depend on catalog order.
    owners: dict[str, set[str]] = defaultdict(set)
    for gpu in ROWS:
        for name in gpu.names():
            owners[normalize_gpu_name(name)].add(gpu.key)
    clashes = {name: keys for name, keys in owners.items() if len(keys) > 1}
    assert clashes == {}


@pytest.mark.parametrize("gpu", ROWS, ids=lambda g: g.key)
def test_every_name_of_a_row_resolves_to_it(gpu: GpuModel) -> None:
    for name in gpu.names():
        assert find_gpu(name) is gpu, name


@pytest.mark.parametrize("gpu", ROWS, ids=lambda g: g.key)
def test_row_fields_are_well_formed(gpu: GpuModel) -> None:
    assert gpu.vendor in VENDORS
    assert gpu.segment in SEGMENTS
    assert gpu.source.startswith("https://")
    assert gpu.name
    assert gpu.architecture
    assert gpu.interconnect
    assert set(gpu.native_dtypes) <= set(DTYPES)
    assert "fp32" in gpu.native_dtypes
    # Plausible memory: no accelerator here has less than 4 GiB or more than 512 GiB.
    assert 4 * GiB <= gpu.memory_bytes <= 512 * GiB
    # Bandwidth between a laptop-class 60 GB/s and a B200-class 10 TB/s.
    assert 60 * GB <= gpu.bandwidth_bytes_per_s <= 10_000 * GB
    for value in (gpu.fp16_tflops, gpu.bf16_tflops, gpu.fp8_tflops, gpu.int8_tops):
        assert value is None or 1 <= value <= 20_000


_UNIFIED_SOCS = {
    "dgx-spark",
    "jetson-agx-orin-64gb",
    "jetson-agx-orin-32gb",
    "jetson-orin-nano-8gb",
    "ryzen-ai-max-395-128gb",
}


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor != "apple"], ids=lambda g: g.key)
def test_discrete_memory_is_a_whole_number_of_mib(gpu: GpuModel) -> None:
    # Drivers report MiB; the catalog stores "N * MiB" (or a nominal whole GiB).
    assert gpu.memory_bytes % MiB == 0
    assert gpu.usable_memory_bytes is None
    assert gpu.effective_memory_bytes == gpu.memory_bytes
    if gpu.unified_memory:  # only the SoCs whose GPU shares LPDDR with the CPU
        assert gpu.key in _UNIFIED_SOCS, gpu.key


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor == "apple"], ids=lambda g: g.key)
def test_apple_rows_are_unified_with_a_gpu_limit(gpu: GpuModel) -> None:
    assert gpu.segment == "apple"
    assert gpu.unified_memory is True
    assert gpu.compute_capability is None
    assert gpu.usable_memory_bytes is not None
    assert gpu.memory_bytes // 2 < gpu.usable_memory_bytes < gpu.memory_bytes
    assert gpu.effective_memory_bytes == gpu.usable_memory_bytes


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor == "nvidia"], ids=lambda g: g.key)
def test_nvidia_dtypes_follow_compute_capability(gpu: GpuModel) -> None:
    cc = _cc(gpu)
    assert ("bf16" in gpu.native_dtypes) == (cc >= (8, 0))  # Ampere
    assert ("fp8" in gpu.native_dtypes) == (cc >= (8, 9))  # Ada / Hopper
    assert ("fp4" in gpu.native_dtypes) == (cc >= (10, 0))  # Blackwell
    assert ("int8" in gpu.native_dtypes) == (cc >= (6, 1))  # dp4a


# AMD: the ROCm precision-support table by gfx target (documented in data/gpus.md).
_AMD_FP8 = {"gfx942", "gfx950", "gfx1201"}
_AMD_NO_BF16 = {"gfx906", "gfx1030"}  # Vega 20 and RDNA2: no bf16 dot/WMMA instructions


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor == "amd"], ids=lambda g: g.key)
def test_amd_dtypes_follow_gfx_target(gpu: GpuModel) -> None:
    assert gpu.compute_capability is not None
    assert gpu.compute_capability.startswith("gfx")
    assert ("bf16" in gpu.native_dtypes) == (gpu.compute_capability not in _AMD_NO_BF16)
    assert ("fp8" in gpu.native_dtypes) == (gpu.compute_capability in _AMD_FP8)
    assert ("fp4" in gpu.native_dtypes) == (gpu.compute_capability == "gfx950")


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor == "apple"], ids=lambda g: g.key)
def test_apple_bf16_from_m2(gpu: GpuModel) -> None:
    assert ("bf16" in gpu.native_dtypes) == (gpu.architecture != "Apple M1")


@pytest.mark.parametrize("gpu", ROWS, ids=lambda g: g.key)
def test_throughput_only_for_native_dtypes(gpu: GpuModel) -> None:
    if gpu.bf16_tflops is not None:
        assert "bf16" in gpu.native_dtypes
    if gpu.fp8_tflops is not None:
        assert "fp8" in gpu.native_dtypes
        # fp8 tensor math is never slower than fp16 on the same part.
        if gpu.fp16_tflops is not None:
            assert gpu.fp8_tflops >= gpu.fp16_tflops
    if gpu.int8_tops is not None:
        assert "int8" in gpu.native_dtypes


def test_nvidia_dtype_rule_examples() -> None:
    assert nvidia_dtypes("6.0") == ("fp32", "fp16")  # P100: no dp4a
    assert nvidia_dtypes("7.5") == ("fp32", "fp16", "int8")  # T4
    assert nvidia_dtypes("8.0") == ("fp32", "fp16", "bf16", "int8")  # A100
    assert nvidia_dtypes("9.0") == ("fp32", "fp16", "bf16", "fp8", "int8")  # H100
    assert "fp4" in nvidia_dtypes("12.0")  # RTX 50


# Driver-reported totals, each cited in the row's source (nvidia-smi "MiB" totals).
@pytest.mark.parametrize(
    ("key", "mib"),
    [
        ("rtx-4090", 24564),
        ("rtx-3090", 24576),
        ("rtx-5090", 32607),
        ("h100-sxm", 81559),
        ("h100-pcie", 81559),
        ("h100-nvl", 95830),
        ("a100-80gb-sxm", 81920),
        ("a100-40gb-sxm", 40960),
        ("h200", 143771),
        ("l40s", 46068),
        ("l4", 23034),
        ("t4", 15360),
        ("a10g", 23028),
        ("b200", 183359),
        ("gb200", 189471),
        ("gh200-96gb", 97871),
        ("rtx-pro-6000-blackwell", 97887),
        ("rtx-4060-ti-16gb", 16380),
        ("rtx-4060-ti-8gb", 8188),
        ("rtx-5080", 16303),
        ("rtx-a6000", 49140),
        ("a40", 46068),
        ("v100-32gb-sxm2", 32510),
        ("p40", 24451),
        ("titan-rtx", 24576),
    ],
)
def test_driver_reported_memory(key: str, mib: int) -> None:
    assert find_gpu(key).memory_bytes == mib * MiB


def test_driver_total_is_below_marketing_gigabytes_for_hbm3_h100() -> None:
    # "80GB" on the box, 81559 MiB from the driver: the catalog must not store 80 GiB.
    assert find_gpu("H100").memory_bytes != 80 * GiB
    assert find_gpu("H100").memory_bytes < 80 * GiB


# --- Apple GPU limit ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ram_gib", "limit_mib"),
    [
        (16, 10922),  # llama.cpp prints 10922.67 MB on a 16 GB Mac
        (32, 21845),  # 21845.34 MB on 32 GB
        (64, 49152),  # 49152.00 MiB on 64 GB
        (96, 73728),  # 73728.00 MB on 96 GB
    ],
)
def test_apple_usable_memory_matches_logged_limits(ram_gib: int, limit_mib: int) -> None:
    assert apple_usable_memory_bytes(ram_gib * GiB) // MiB == limit_mib


def test_apple_usable_memory_switches_above_32_gib() -> None:
    assert apple_usable_memory_bytes(32 * GiB) == 32 * GiB * 2 // 3
    assert apple_usable_memory_bytes(36 * GiB) == 36 * GiB * 3 // 4


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor == "apple"], ids=lambda g: g.key)
def test_apple_rows_follow_the_working_set_rule(gpu: GpuModel) -> None:
    assert gpu.usable_memory_bytes == apple_usable_memory_bytes(gpu.memory_bytes)


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.vendor == "nvidia"], ids=lambda g: g.key)
def test_nvidia_rows_follow_the_dtype_rule_exactly(gpu: GpuModel) -> None:
    assert gpu.compute_capability is not None
    assert gpu.native_dtypes == nvidia_dtypes(gpu.compute_capability)


def test_apple_row_memory() -> None:
    mac = find_gpu("m3-max-128gb")
    assert mac.memory_bytes == 128 * GiB
    assert mac.effective_memory_bytes == 96 * GiB
    assert find_gpu("M2 Ultra 192GB").key == "m2-ultra-192gb"
    assert find_gpu("m3-ultra-512gb").usable_memory_bytes == 384 * GiB


# --- find_gpu ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("rtx-4090", "rtx-4090"),
        ("RTX 4090", "rtx-4090"),
        ("4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("  rtx_4090  ", "rtx-4090"),
        ("H100", "h100-sxm"),  # documented default: SXM
        ("h100 80gb", "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # NVML product name
        ("H100 PCIe", "h100-pcie"),
        ("A100", "a100-80gb-sxm"),  # documented default: 80GB SXM
        ("A100-80GB", "a100-80gb-sxm"),
        ("A100 40GB", "a100-40gb-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("V100", "v100-16gb-sxm2"),
        ("Tesla T4", "t4"),
        ("RTX 3080", "rtx-3080"),  # smaller variant by default
        ("4060 Ti", "rtx-4060-ti-8gb"),
        ("4060 Ti 16GB", "rtx-4060-ti-16gb"),
        ("GH200", "gh200-96gb"),
        ("MI300X", "mi300x"),
        ("AMD Instinct MI300X", "mi300x"),
        ("7900 XTX", "rx-7900-xtx"),
        ("M3 Max", "m3-max-36gb"),  # base configuration
        ("Apple M3 Max 128GB", "m3-max-128gb"),
        ("m4-pro-48gb", "m4-pro-48gb"),
        ("Gaudi 3", "gaudi3"),
        ("Arc A770", "arc-a770-16gb"),
        ("RTX 3090 24GB", "rtx-3090"),  # a memory size that matches the card is accepted
        ("rtx 4090 24g", "rtx-4090"),
        ("L40S 48 GiB", "l40s"),
        # Rows users asked for (issue 10).
        ("P40", "p40"),
        ("Tesla P40", "p40"),
        ("Titan RTX", "titan-rtx"),
        ("NVIDIA TITAN RTX", "titan-rtx"),
        ("DGX Spark", "dgx-spark"),
        ("GB10", "dgx-spark"),
        ("Strix Halo", "ryzen-ai-max-395-128gb"),
        ("Ryzen AI Max+ 395", "ryzen-ai-max-395-128gb"),
        ("Jetson AGX Orin", "jetson-agx-orin-64gb"),
        ("AGX Orin 32GB", "jetson-agx-orin-32gb"),
        ("Orin Nano", "jetson-orin-nano-8gb"),
        ("RX 6800 XT", "rx-6800-xt"),
        ("6800xt", "rx-6800-xt"),
        ("Radeon VII", "radeon-vii"),
        ("GTX 1660", "gtx-1660"),
        ("1660 Super", "gtx-1660-super"),
        ("gtx1660ti", "gtx-1660-ti"),
        ("7900xtx", "rx-7900-xtx"),
    ],
)
def test_find_gpu_fuzzy(query: str, key: str) -> None:
    assert find_gpu(query).key == key


def test_unknown_gpu_raises_with_suggestions() -> None:
    with pytest.raises(UnknownNameError) as info:
        find_gpu("rtx 4900")
    err = info.value
    assert isinstance(err, LookupError)
    assert err.kind == "GPU"
    assert err.name == "rtx 4900"
    assert "rtx-4090" in err.suggestions
    assert "oomkit gpus --catalog" in str(err)
    assert "'rtx 4900'" in str(err)


@pytest.mark.parametrize("query", ["H100 40GB", "RTX 4090 48GB", "zz9000 24GB"])
def test_a_memory_size_that_does_not_match_is_unknown(query: str) -> None:
    # A wrong size must not silently pick a card with a different capacity.
    with pytest.raises(UnknownNameError):
        find_gpu(query)


def test_unknown_gpu_without_close_match_has_no_suggestions() -> None:
    with pytest.raises(UnknownNameError) as info:
        find_gpu("zzzzzzzzzzzz")
    assert info.value.suggestions == ()


def test_normalize_strips_brands_but_never_everything() -> None:
    assert normalize_gpu_name("NVIDIA GeForce RTX 4060 Ti") == "rtx4060ti"
    assert normalize_gpu_name("AMD Radeon PRO W7900") == "prow7900"
    assert normalize_gpu_name("nvidia") == "nvidia"  # a lone brand word stays
    assert normalize_gpu_name("") == ""


# --- search_gpus ---------------------------------------------------------------------------


def test_search_none_lists_all_sorted_by_vendor_then_memory() -> None:
    rows = search_gpus()
    assert len(rows) == len(ROWS)
    assert search_gpus("   ") == rows
    order = [(g.vendor, g.memory_bytes) for g in rows]
    assert order == sorted(order)


def test_search_filters_by_substring() -> None:
    keys = {g.key for g in search_gpus("rtx 40")}
    assert {"rtx-4090", "rtx-4060", "rtx-4080-laptop"} <= keys
    assert "rtx-3090" not in keys
    assert {g.key for g in search_gpus("hopper")} >= {"h100-sxm", "h200", "gh200-96gb"}
    assert all(g.vendor == "amd" for g in search_gpus("instinct"))


def test_search_all_words_when_not_found_whole() -> None:
    rows = search_gpus("apple max")
    assert rows
    assert all(g.vendor == "apple" and "max" in g.key for g in rows)


def test_search_falls_back_to_close_names_on_a_typo() -> None:
    assert "rtx-4090" in {g.key for g in search_gpus("rtx 4900")}
    assert search_gpus("zzzzzzzzzzzz") == ()


# --- find_gpu_by_nvml_name -----------------------------------------------------------------


def test_nvml_name_and_memory() -> None:
    gpu = find_gpu_by_nvml_name("NVIDIA H100 80GB HBM3", 81559 * MiB)
    assert gpu is not None
    assert gpu.key == "h100-sxm"


@pytest.mark.parametrize(
    ("name", "memory_bytes", "key"),
    [
        # One NVML name, two memory sizes: the memory decides.
        ("NVIDIA GeForce RTX 4060 Ti", 16380 * MiB, "rtx-4060-ti-16gb"),
        ("NVIDIA GeForce RTX 4060 Ti", 8188 * MiB, "rtx-4060-ti-8gb"),
        ("NVIDIA GeForce RTX 4060 Ti", None, "rtx-4060-ti-8gb"),  # default variant
        ("NVIDIA GeForce RTX 3080", 12288 * MiB, "rtx-3080-12gb"),
        ("NVIDIA GeForce RTX 3080", 10240 * MiB, "rtx-3080"),
        ("NVIDIA GeForce RTX 3050", 6144 * MiB, "rtx-3050-6gb"),
        ("NVIDIA GeForce RTX 3050", None, "rtx-3050"),
        # Names from older drivers, without the "NVIDIA" prefix.
        ("GeForce GTX 1080 Ti", 11264 * MiB, "gtx-1080-ti"),
        ("Tesla V100-SXM2-16GB", 16160 * MiB, "v100-16gb-sxm2"),
        # An NVML name that is not also an alias.
        ("Tesla P100-PCIE-16GB", 16280 * MiB, "p100-16gb-pcie"),
        ("NVIDIA GH200 480GB", 97871 * MiB, "gh200-96gb"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", None, "rtx-pro-6000-blackwell"),
        # A MIG instance resolves to its parent GPU model.
        ("NVIDIA A100-SXM4-80GB MIG 3g.40gb", None, "a100-80gb-sxm"),
        # A catalog alias passed where an NVML name was expected still matches.
        ("H100", None, "h100-sxm"),
    ],
)
def test_nvml_name_disambiguation(name: str, memory_bytes: int | None, key: str) -> None:
    gpu = find_gpu_by_nvml_name(name, memory_bytes)
    assert gpu is not None
    assert gpu.key == key


def test_unknown_nvml_name_is_none() -> None:
    assert find_gpu_by_nvml_name("NVIDIA Graphics Device", 95830 * MiB) is None


@pytest.mark.parametrize("gpu", [g for g in ROWS if g.nvml_names], ids=lambda g: g.key)
def test_every_nvml_name_finds_a_row_that_carries_it(gpu: GpuModel) -> None:
    for nvml_name in gpu.nvml_names:
        found = find_gpu_by_nvml_name(nvml_name, gpu.memory_bytes)
        assert found is gpu, nvml_name


# --- serialisation ---------------------------------------------------------------------------


def test_to_dict_is_plain_json() -> None:
    gpu = find_gpu("m4-max-128gb")
    doc = gpu.to_dict()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["memory_bytes"] == 128 * GiB
    assert doc["effective_memory_bytes"] == gpu.effective_memory_bytes
    assert isinstance(doc["aliases"], list)
    assert set(doc) >= {f for f in GpuModel.__dataclass_fields__}
    for name, value in doc.items():
        if name.endswith("_bytes") or name.endswith("_per_s"):
            assert value is None or type(value) is int, name


def test_every_row_serialises() -> None:
    text = json.dumps([g.to_dict() for g in ROWS])
    assert len(json.loads(text)) == len(ROWS)


def test_to_device_target() -> None:
    target = find_gpu("H100").to_device_target()
    assert target.key == "h100-sxm"
    assert target.backend == "cuda"
    # what CUDA reports on Linux (cudaMemGetInfo), not NVML's 81559 MiB; WDDM reports NVML's
    assert target.capacity_bytes == find_gpu("H100").cuda_total_bytes == 80998 * MiB
    assert find_gpu("H100").to_device_target(os="windows").capacity_bytes == 81559 * MiB
    assert "fp8" in target.native_dtypes
    mac = find_gpu("m2-ultra-192gb").to_device_target()
    assert mac.backend == "metal"
    assert mac.unified_memory is True
    assert mac.capacity_bytes == 144 * GiB
    assert find_gpu("mi300x").to_device_target().backend == "rocm"
