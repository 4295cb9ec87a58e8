"""Row builders for the GPU catalog: the rules every row shares, written once.

The data files (``gpu_data_*.py``) call these with the figures from each vendor's datasheet;
what follows from the architecture (which dtypes are native, the Apple GPU memory limit) is
computed here so no row can contradict the rule.

Dtype rules (NVIDIA, by CUDA compute capability, from the CUDA programming guide's "arithmetic
instructions" table and the architecture whitepapers):

* ``fp16`` on every listed part (Pascal GeForce runs it at 1/64 rate, hence no fp16 figure).
* ``int8`` from 6.1 (``dp4a``); P100 (6.0) and earlier lack it.
* ``bf16`` from 8.0 (Ampere), ``fp8`` from 8.9 (Ada, Hopper), ``fp4`` from 10.0 (Blackwell).

Apple GPU working-set limit (Metal ``recommendedMaxWorkingSetSize``), as llama.cpp prints it at
start-up (``ggml_metal_init: recommendedMaxWorkingSetSize``; its "MB" are MiB):

* 2/3 of RAM up to 32 GB: 16 GB -> 10922.67 MiB
  (https://github.com/abetlen/llama-cpp-python/issues/687), 32 GB -> 21845.34 MiB
  (https://github.com/ollama/ollama/issues/434).
* 3/4 of RAM above that: 64 GB -> 49152 MiB (https://github.com/ggml-org/llama.cpp/issues/1870),
  96 GB -> 73728 MiB (https://github.com/ggml-org/llama.cpp/issues/3213).
* Newer macOS releases have been seen to allow more (128 GB M5 Max on macOS 26: 107.52 GiB,
  https://github.com/antirez/ds4/pull/893); the older, smaller limit is kept as the
  conservative figure. ``sudo sysctl iogpu.wired_limit_mb=...`` raises it on any release.
"""

from __future__ import annotations

from oomkit.hardware.catalog import GpuModel
from oomkit.units import GB, GiB

__all__ = [
    "APPLE_SPECS",
    "amd",
    "apple",
    "apple_usable_memory_bytes",
    "intel",
    "nvidia",
    "nvidia_dtypes",
]

Tflops = tuple[float | None, float | None, float | None, float | None]


def _cc_tuple(cc: str) -> tuple[int, int]:
    major, _, minor = cc.partition(".")
    return int(major), int(minor)


def nvidia_dtypes(cc: str) -> tuple[str, ...]:
    """Native dtypes of an NVIDIA GPU of compute capability ``cc`` (rules in the docstring)."""
    v = _cc_tuple(cc)
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


def nvidia(
    *,
    key: str,
    name: str,
    aliases: tuple[str, ...],
    segment: str,
    architecture: str,
    cc: str,
    memory_bytes: int,
    bandwidth_gb_s: float,
    tflops: Tflops,
    interconnect: str,
    source: str,
    nvml_names: tuple[str, ...] = (),
) -> GpuModel:
    """An NVIDIA row; ``tflops`` is dense (fp16, bf16, fp8, int8), bandwidth in GB/s (SI)."""
    fp16, bf16, fp8, int8 = tflops
    return GpuModel(
        key=key,
        name=name,
        aliases=aliases,
        vendor="nvidia",
        segment=segment,
        architecture=architecture,
        compute_capability=cc,
        memory_bytes=memory_bytes,
        usable_memory_bytes=None,
        unified_memory=False,
        bandwidth_bytes_per_s=round(bandwidth_gb_s * GB),
        fp16_tflops=fp16,
        bf16_tflops=bf16,
        fp8_tflops=fp8,
        int8_tops=int8,
        native_dtypes=nvidia_dtypes(cc),
        interconnect=interconnect,
        source=source,
        nvml_names=nvml_names,
    )


def amd(
    *,
    key: str,
    name: str,
    aliases: tuple[str, ...],
    segment: str,
    architecture: str,
    gfx: str,
    memory_bytes: int,
    bandwidth_gb_s: float,
    tflops: Tflops,
    dtypes: tuple[str, ...],
    interconnect: str,
    source: str,
) -> GpuModel:
    """An AMD row; ``dtypes`` come from the ROCm precision-support table per gfx target."""
    fp16, bf16, fp8, int8 = tflops
    return GpuModel(
        key=key,
        name=name,
        aliases=aliases,
        vendor="amd",
        segment=segment,
        architecture=architecture,
        compute_capability=gfx,
        memory_bytes=memory_bytes,
        usable_memory_bytes=None,
        unified_memory=False,
        bandwidth_bytes_per_s=round(bandwidth_gb_s * GB),
        fp16_tflops=fp16,
        bf16_tflops=bf16,
        fp8_tflops=fp8,
        int8_tops=int8,
        native_dtypes=dtypes,
        interconnect=interconnect,
        source=source,
    )


def intel(
    *,
    key: str,
    name: str,
    aliases: tuple[str, ...],
    segment: str,
    architecture: str,
    memory_bytes: int,
    bandwidth_gb_s: float,
    tflops: Tflops,
    dtypes: tuple[str, ...],
    interconnect: str,
    source: str,
) -> GpuModel:
    """An Intel row (Arc GPUs and Gaudi accelerators)."""
    fp16, bf16, fp8, int8 = tflops
    return GpuModel(
        key=key,
        name=name,
        aliases=aliases,
        vendor="intel",
        segment=segment,
        architecture=architecture,
        compute_capability=None,
        memory_bytes=memory_bytes,
        usable_memory_bytes=None,
        unified_memory=False,
        bandwidth_bytes_per_s=round(bandwidth_gb_s * GB),
        fp16_tflops=fp16,
        bf16_tflops=bf16,
        fp8_tflops=fp8,
        int8_tops=int8,
        native_dtypes=dtypes,
        interconnect=interconnect,
        source=source,
    )


def apple_usable_memory_bytes(ram_bytes: int) -> int:
    """Metal's default GPU working-set limit for a Mac with ``ram_bytes`` of RAM.

    >>> apple_usable_memory_bytes(16 * GiB) // 2**20  # llama.cpp prints 10922.67 MB
    10922
    >>> apple_usable_memory_bytes(64 * GiB) // 2**20
    49152
    """
    if ram_bytes <= 32 * GiB:
        return ram_bytes * 2 // 3
    return ram_bytes * 3 // 4


# chip -> (architecture, memory bandwidth GB/s, Apple spec page). Bandwidth is for the GPU
# configuration that the listed memory sizes ship with (M3 Max 36 GB: 30-core GPU, 300 GB/s;
# M4 Max 36 GB: 32-core, 410 GB/s; larger Max configs have the full chip).
APPLE_SPECS: dict[str, tuple[str, float, str]] = {
    "M1": ("Apple M1", 68.25, "https://support.apple.com/en-us/docs/mac"),
    "M1 Pro": ("Apple M1", 200, "https://support.apple.com/en-us/111902"),
    "M1 Max": ("Apple M1", 400, "https://support.apple.com/en-us/111901"),
    "M1 Ultra": ("Apple M1", 800, "https://support.apple.com/en-us/111900"),
    "M2": ("Apple M2", 100, "https://support.apple.com/en-us/docs/mac"),
    "M2 Pro": ("Apple M2", 200, "https://support.apple.com/en-us/111340"),
    "M2 Max": ("Apple M2", 400, "https://support.apple.com/en-us/docs/mac"),
    "M2 Ultra": ("Apple M2", 800, "https://support.apple.com/en-us/111835"),
    "M3": ("Apple M3", 100, "https://support.apple.com/en-us/docs/mac"),
    "M3 Pro": ("Apple M3", 150, "https://support.apple.com/en-us/docs/mac"),
    "M3 Max 30c": ("Apple M3", 300, "https://support.apple.com/en-us/docs/mac"),
    "M3 Max": ("Apple M3", 400, "https://support.apple.com/en-us/docs/mac"),
    "M3 Ultra": ("Apple M3", 819, "https://support.apple.com/en-us/122211"),
    "M4": ("Apple M4", 120, "https://support.apple.com/en-us/docs/mac"),
    "M4 Pro": ("Apple M4", 273, "https://www.apple.com/macbook-pro/specs/"),
    "M4 Max 32c": ("Apple M4", 410, "https://www.apple.com/macbook-pro/specs/"),
    "M4 Max": ("Apple M4", 546, "https://www.apple.com/macbook-pro/specs/"),
}


def apple(chip: str, ram_gb: int, *, default: bool = False) -> GpuModel:
    """A Mac with chip ``chip`` (a key of :data:`APPLE_SPECS`) and ``ram_gb`` GB of RAM.

    Apple's "GB" of RAM are GiB. ``default=True`` makes the bare chip name (``"M3 Max"``)
    an alias of this row. Apple publishes no tensor throughput, so those fields are ``None``;
    bf16 is native from M2 (Apple GPU family 8, Metal 3.1 ``bfloat``).
    """
    architecture, bandwidth_gb_s, source = APPLE_SPECS[chip]
    chip_name = chip.removesuffix(" 30c").removesuffix(" 32c")
    slug = chip_name.lower().replace(" ", "-")
    key = f"{slug}-{ram_gb}gb"
    aliases = [f"{chip_name} {ram_gb}GB", f"Apple {chip_name} {ram_gb}GB", f"{slug}-{ram_gb}"]
    if default:
        aliases += [chip_name, f"Apple {chip_name}"]
    memory_bytes = ram_gb * GiB
    dtypes = ("fp32", "fp16") if architecture == "Apple M1" else ("fp32", "fp16", "bf16")
    return GpuModel(
        key=key,
        name=f"Apple {chip_name} ({ram_gb} GB)",
        aliases=tuple(aliases),
        vendor="apple",
        segment="apple",
        architecture=architecture,
        compute_capability=None,
        memory_bytes=memory_bytes,
        usable_memory_bytes=apple_usable_memory_bytes(memory_bytes),
        unified_memory=True,
        bandwidth_bytes_per_s=round(bandwidth_gb_s * GB),
        fp16_tflops=None,
        bf16_tflops=None,
        fp8_tflops=None,
        int8_tops=None,
        native_dtypes=dtypes,
        interconnect="unified memory (SoC)",
        source=source,
    )
