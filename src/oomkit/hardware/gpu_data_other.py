"""GPU catalog rows: AMD Instinct and Radeon, Intel Arc and Gaudi, Apple silicon Macs.

AMD memory is ``rocm-smi``'s "VRAM Total Memory (B)" (the amdgpu ``mem_info_vram_total``) where
a public log shows it (MI100, MI250X, MI300X, RX 7900 XTX), else the nominal capacity in GiB, as
is all Intel memory; throughput is dense, from each vendor's spec page, ``None`` where the
vendor publishes none. An MI250/MI250X module is two GCDs that ROCm shows as two devices, so
the rows describe one GCD (half the module's memory, bandwidth and throughput).

Apple rows: one per unified-memory configuration people run LLMs on. ``memory_bytes`` is the
RAM; ``usable_memory_bytes`` is the Metal GPU working-set limit
(:func:`oomkit.hardware.gpu_data_build.apple_usable_memory_bytes`).
"""

from __future__ import annotations

from oomkit.hardware.gpu_data_build import amd, apple, intel
from oomkit.units import GiB, MiB

__all__ = ["AMD", "APPLE", "INTEL"]

_CDNA2 = ("fp32", "fp16", "bf16", "int8")
_CDNA3 = ("fp32", "fp16", "bf16", "fp8", "int8")
_CDNA4 = ("fp32", "fp16", "bf16", "fp8", "int8", "fp4")
_RDNA3 = ("fp32", "fp16", "bf16", "int8")
_RDNA4 = ("fp32", "fp16", "bf16", "fp8", "int8")
_AMD = "https://www.amd.com/en/products"

AMD = (
    amd(
        key="mi100",
        name="AMD Instinct MI100",
        aliases=("MI100", "Instinct MI100"),
        segment="datacenter",
        architecture="CDNA",
        gfx="gfx908",
        memory_bytes=32752 * MiB,  # rocm-smi VRAM Total Memory 34342961152 B
        bandwidth_gb_s=1228.8,
        tflops=(184.6, 92.3, None, 184.6),
        dtypes=_CDNA2,
        interconnect="PCIe 4.0 x16, Infinity Fabric 276 GB/s",
        source=f"{_AMD}/accelerators/instinct/mi100.html",
    ),
    amd(
        key="mi210",
        name="AMD Instinct MI210",
        aliases=("MI210", "Instinct MI210"),
        segment="datacenter",
        architecture="CDNA2",
        gfx="gfx90a",
        memory_bytes=64 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=1638.4,
        tflops=(181.0, 181.0, None, 181.0),
        dtypes=_CDNA2,
        interconnect="PCIe 4.0 x16, Infinity Fabric 300 GB/s",
        source=f"{_AMD}/accelerators/instinct/mi200/mi210.html",
    ),
    amd(
        key="mi250",
        name="AMD Instinct MI250 (one GCD)",
        aliases=("MI250", "Instinct MI250"),
        segment="datacenter",
        architecture="CDNA2",
        gfx="gfx90a",
        memory_bytes=64 * GiB,  # nominal; driver figure not found (128 GB module, 2 GCDs)
        bandwidth_gb_s=1638.4,
        tflops=(181.0, 181.0, None, 181.0),
        dtypes=_CDNA2,
        interconnect="OAM, Infinity Fabric",
        source=f"{_AMD}/accelerators/instinct/mi200/mi250.html",
    ),
    amd(
        key="mi250x",
        name="AMD Instinct MI250X (one GCD)",
        aliases=("MI250X", "Instinct MI250X"),
        segment="datacenter",
        architecture="CDNA2",
        gfx="gfx90a",
        memory_bytes=65520 * MiB,  # per GCD: HIP total memory 68702699520 B
        bandwidth_gb_s=1638.4,
        tflops=(191.5, 191.5, None, 191.5),
        dtypes=_CDNA2,
        interconnect="OAM, Infinity Fabric",
        source=f"{_AMD}/accelerators/instinct/mi200/mi250x.html",
    ),
    amd(
        key="mi300x",
        name="AMD Instinct MI300X",
        aliases=("MI300X", "Instinct MI300X", "MI300", "MI300X VF", "AMD Instinct MI300X OAM"),
        segment="datacenter",
        architecture="CDNA3",
        gfx="gfx942",
        memory_bytes=196288 * MiB,  # rocm-smi VRAM Total Memory 205822885888 B
        bandwidth_gb_s=5300,
        tflops=(1307.4, 1307.4, 2614.9, 2614.9),
        dtypes=_CDNA3,
        interconnect="OAM, Infinity Fabric 896 GB/s",
        source=f"{_AMD}/accelerators/instinct/mi300/mi300x.html",
    ),
    amd(
        key="mi325x",
        name="AMD Instinct MI325X",
        aliases=("MI325X", "Instinct MI325X"),
        segment="datacenter",
        architecture="CDNA3",
        gfx="gfx942",
        memory_bytes=256 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=6000,
        tflops=(1307.4, 1307.4, 2614.9, 2614.9),
        dtypes=_CDNA3,
        interconnect="OAM, Infinity Fabric 896 GB/s",
        source=f"{_AMD}/accelerators/instinct/mi300/mi325x.html",
    ),
    amd(
        key="mi355x",
        name="AMD Instinct MI355X",
        aliases=("MI355X", "Instinct MI355X"),
        segment="datacenter",
        architecture="CDNA4",
        gfx="gfx950",
        memory_bytes=288 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=8000,
        tflops=(2516.6, 2516.6, 5033.2, 5033.2),
        dtypes=_CDNA4,
        interconnect="OAM, Infinity Fabric 1075 GB/s",
        source=f"{_AMD}/accelerators/instinct/mi350/mi355x.html",
    ),
    amd(
        key="rx-7800-xt",
        name="AMD Radeon RX 7800 XT",
        aliases=("RX 7800 XT", "7800 XT", "7800xt", "rx7800xt"),
        segment="consumer",
        architecture="RDNA3",
        gfx="gfx1101",
        memory_bytes=16 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=624,
        tflops=(74.6, 74.6, None, None),
        dtypes=_RDNA3,
        interconnect="PCIe 4.0 x16",
        source=f"{_AMD}/graphics/desktops/radeon/7000-series/amd-radeon-rx-7800-xt.html",
    ),
    amd(
        key="rx-7900-xt",
        name="AMD Radeon RX 7900 XT",
        aliases=("RX 7900 XT", "7900 XT", "7900xt", "rx7900xt"),
        segment="consumer",
        architecture="RDNA3",
        gfx="gfx1100",
        memory_bytes=20 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=800,
        tflops=(103.0, 103.0, None, None),
        dtypes=_RDNA3,
        interconnect="PCIe 4.0 x16",
        source=f"{_AMD}/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xt.html",
    ),
    amd(
        key="rx-7900-xtx",
        name="AMD Radeon RX 7900 XTX",
        aliases=("RX 7900 XTX", "7900 XTX", "7900xtx", "rx7900xtx"),
        segment="consumer",
        architecture="RDNA3",
        gfx="gfx1100",
        memory_bytes=24560 * MiB,  # rocm-smi VRAM Total Memory 25753026560 B
        bandwidth_gb_s=960,
        tflops=(122.8, 122.8, None, None),
        dtypes=_RDNA3,
        interconnect="PCIe 4.0 x16",
        source=f"{_AMD}/graphics/desktops/radeon/7000-series/amd-radeon-rx-7900xtx.html",
    ),
    amd(
        key="rx-9070-xt",
        name="AMD Radeon RX 9070 XT",
        aliases=("RX 9070 XT", "9070 XT", "9070xt", "rx9070xt"),
        segment="consumer",
        architecture="RDNA4",
        gfx="gfx1201",
        memory_bytes=16 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=644.6,
        tflops=(None, None, None, None),
        dtypes=_RDNA4,
        interconnect="PCIe 5.0 x16",
        source=f"{_AMD}/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html",
    ),
    amd(
        key="radeon-pro-w7900",
        name="AMD Radeon PRO W7900",
        aliases=("W7900", "Radeon PRO W7900", "PRO W7900", "w7900"),
        segment="workstation",
        architecture="RDNA3",
        gfx="gfx1100",
        memory_bytes=48 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=864,
        tflops=(122.6, 122.6, None, None),
        dtypes=_RDNA3,
        interconnect="PCIe 4.0 x16",
        source=f"{_AMD}/graphics/workstations/radeon-pro/w7900.html",
    ),
)

INTEL = (
    intel(
        key="arc-a770-16gb",
        name="Intel Arc A770 16GB",
        aliases=("Arc A770", "A770", "A770 16GB", "arca770"),
        segment="consumer",
        architecture="Xe-HPG (Alchemist)",
        memory_bytes=16 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=560,
        tflops=(None, None, None, None),
        dtypes=("fp32", "fp16", "bf16", "int8"),
        interconnect="PCIe 4.0 x16",
        source=(
            "https://www.intel.com/content/www/us/en/products/sku/229151/"
            "intel-arc-a770-graphics-16gb/specifications.html"
        ),
    ),
    intel(
        key="arc-b580",
        name="Intel Arc B580",
        aliases=("Arc B580", "B580", "arcb580"),
        segment="consumer",
        architecture="Xe2-HPG (Battlemage)",
        memory_bytes=12 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=456,
        tflops=(None, None, None, None),
        dtypes=("fp32", "fp16", "bf16", "int8"),
        interconnect="PCIe 4.0 x8",
        source=(
            "https://www.intel.com/content/www/us/en/products/sku/241598/"
            "intel-arc-b580-graphics/specifications.html"
        ),
    ),
    intel(
        key="gaudi2",
        name="Intel Gaudi 2",
        aliases=("Gaudi 2", "Gaudi2", "HL-225"),
        segment="datacenter",
        architecture="Gaudi 2",
        memory_bytes=96 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=2460,
        tflops=(None, 432.0, 865.0, None),
        dtypes=("fp32", "fp16", "bf16", "fp8", "int8"),
        interconnect="OAM, 24x 100 GbE RoCE",
        source="https://habana.ai/products/gaudi2/",
    ),
    intel(
        key="gaudi3",
        name="Intel Gaudi 3",
        aliases=("Gaudi 3", "Gaudi3", "HL-325L"),
        segment="datacenter",
        architecture="Gaudi 3",
        memory_bytes=128 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=3700,
        tflops=(None, 1835.0, 1835.0, None),
        dtypes=("fp32", "fp16", "bf16", "fp8"),
        interconnect="OAM, 24x 200 GbE RoCE",
        source=(
            "https://www.intel.com/content/www/us/en/products/details/processors/"
            "ai-accelerators/gaudi.html"
        ),
    ),
)

APPLE = (
    apple("M1", 16, default=True),
    apple("M1 Pro", 16, default=True),
    apple("M1 Pro", 32),
    apple("M1 Max", 32, default=True),
    apple("M1 Max", 64),
    apple("M1 Ultra", 64, default=True),
    apple("M1 Ultra", 128),
    apple("M2", 16, default=True),
    apple("M2", 24),
    apple("M2 Pro", 16, default=True),
    apple("M2 Pro", 32),
    apple("M2 Max", 32, default=True),
    apple("M2 Max", 64),
    apple("M2 Max", 96),
    apple("M2 Ultra", 64, default=True),
    apple("M2 Ultra", 128),
    apple("M2 Ultra", 192),
    apple("M3", 16, default=True),
    apple("M3", 24),
    apple("M3 Pro", 18, default=True),
    apple("M3 Pro", 36),
    apple("M3 Max 30c", 36, default=True),
    apple("M3 Max", 48),
    apple("M3 Max", 64),
    apple("M3 Max", 96),
    apple("M3 Max", 128),
    apple("M3 Ultra", 96, default=True),
    apple("M3 Ultra", 256),
    apple("M3 Ultra", 512),
    apple("M4", 16, default=True),
    apple("M4", 24),
    apple("M4", 32),
    apple("M4 Pro", 24, default=True),
    apple("M4 Pro", 48),
    apple("M4 Pro", 64),
    apple("M4 Max 32c", 36, default=True),
    apple("M4 Max", 48),
    apple("M4 Max", 64),
    apple("M4 Max", 128),
)
