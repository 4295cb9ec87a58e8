"""GPU catalog rows: NVIDIA GeForce RTX 40 and 50 series, desktop and laptop.

Conventions as in :mod:`oomkit.hardware.gpu_data_geforce`. Throughput is derived from NVIDIA's
"AI TOPS" figure, which is sparse FP8 for Ada and sparse FP4 for Blackwell, by the ratios the
Ada whitepaper (appendix tables) and the RTX Blackwell whitepaper give: for Ada, dense INT8 =
AI/2, dense FP8 with FP32 accumulate = AI/4, dense FP16/BF16 with FP32 accumulate = AI/8
(RTX 4090: 1321 AI TOPS -> 660.6 INT8, 330.3 FP8, 165.2 FP16, exactly the whitepaper's row);
for Blackwell each figure is half again (AI/4, AI/8, AI/16).
"""

from __future__ import annotations

from oomkit.hardware.gpu_data_build import nvidia
from oomkit.units import GiB, MiB

__all__ = ["GEFORCE_40_50"]

_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_BW = (
    "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/"
    "nvidia-rtx-blackwell-gpu-architecture.pdf"
)
_PCIE4 = "PCIe 4.0 x16"
_PCIE5 = "PCIe 5.0 x16"
_SMI = "nvidia-smi pastes on GitHub"


def _ada(ai_tops: float) -> tuple[float, float, float, float]:
    fp16 = round(ai_tops / 8, 1)
    return (fp16, fp16, round(ai_tops / 4, 1), round(ai_tops / 2, 1))


def _blackwell(ai_tops: float) -> tuple[float, float, float, float]:
    fp16 = round(ai_tops / 16, 1)
    return (fp16, fp16, round(ai_tops / 8, 1), round(ai_tops / 4, 1))


GEFORCE_40_50 = (
    nvidia(
        key="rtx-4060",
        name="NVIDIA GeForce RTX 4060",
        aliases=("4060", "rtx4060"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=8188 * MiB,
        bandwidth_gb_s=272,
        tflops=_ada(242),
        interconnect="PCIe 4.0 x8",
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA GeForce RTX 4060 ... 8188MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4060",),
    ),
    nvidia(
        key="rtx-4060-ti-8gb",
        name="NVIDIA GeForce RTX 4060 Ti 8GB",
        aliases=("RTX 4060 Ti", "4060 Ti", "4060ti", "rtx4060ti", "4060 Ti 8GB"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=8188 * MiB,
        bandwidth_gb_s=288,
        tflops=_ada(353),
        interconnect="PCIe 4.0 x8",
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA GeForce RTX 4060 Ti ... 8188MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4060 Ti",),
    ),
    nvidia(
        key="rtx-4060-ti-16gb",
        name="NVIDIA GeForce RTX 4060 Ti 16GB",
        aliases=("4060 Ti 16GB", "4060ti 16gb", "rtx4060ti16gb"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=16380 * MiB,
        bandwidth_gb_s=288,
        tflops=_ada(353),
        interconnect="PCIe 4.0 x8",
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA GeForce RTX 4060 Ti ... 16380MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4060 Ti",),
    ),
    nvidia(
        key="rtx-4070",
        name="NVIDIA GeForce RTX 4070",
        aliases=("4070", "rtx4070"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=12282 * MiB,
        bandwidth_gb_s=504,
        tflops=_ada(466),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4070-family/ ; "
            f"memory: {_SMI} ('RTX 4070 ... 12282MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4070",),
    ),
    nvidia(
        key="rtx-4070-super",
        name="NVIDIA GeForce RTX 4070 SUPER",
        aliases=("4070 Super", "4070super", "rtx4070super", "4070S"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=12282 * MiB,
        bandwidth_gb_s=504,
        tflops=_ada(568),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4070-family/ ; "
            f"memory: {_SMI} ('4070S 12282MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4070 SUPER",),
    ),
    nvidia(
        key="rtx-4070-ti",
        name="NVIDIA GeForce RTX 4070 Ti",
        aliases=("4070 Ti", "4070ti", "rtx4070ti"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=12282 * MiB,
        bandwidth_gb_s=504,
        tflops=_ada(641),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4070-family/ ; "
            "memory: https://github.com/1MLightyears/AIP14"
        ),
        nvml_names=("NVIDIA GeForce RTX 4070 Ti",),
    ),
    nvidia(
        key="rtx-4070-ti-super",
        name="NVIDIA GeForce RTX 4070 Ti SUPER",
        aliases=("4070 Ti Super", "4070tisuper", "rtx4070tisuper", "4070 TiS"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=16376 * MiB,
        bandwidth_gb_s=672,
        tflops=_ada(706),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4070-family/ ; "
            f"memory: {_SMI} ('RTX4070TiSUPER .../16376MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4070 Ti SUPER",),
    ),
    nvidia(
        key="rtx-4080",
        name="NVIDIA GeForce RTX 4080",
        aliases=("4080", "rtx4080"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=16376 * MiB,
        bandwidth_gb_s=716.8,
        tflops=_ada(780),
        interconnect=_PCIE4,
        source=f"{_ADA} ; memory: {_SMI} ('RTX 4080 ... 16376MiB')",
        nvml_names=("NVIDIA GeForce RTX 4080",),
    ),
    nvidia(
        key="rtx-4080-super",
        name="NVIDIA GeForce RTX 4080 SUPER",
        aliases=("4080 Super", "4080super", "rtx4080super", "4080S"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=16 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=736,
        tflops=_ada(836),
        interconnect=_PCIE4,
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4080-family/",
        nvml_names=("NVIDIA GeForce RTX 4080 SUPER",),
    ),
    nvidia(
        key="rtx-4090",
        name="NVIDIA GeForce RTX 4090",
        aliases=("4090", "rtx4090"),
        segment="consumer",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=24564 * MiB,
        bandwidth_gb_s=1008,
        tflops=_ada(1321.2),
        interconnect=_PCIE4,
        source=f"{_ADA} ; memory: https://github.com/RLinf/RLinf/issues/255",
        nvml_names=("NVIDIA GeForce RTX 4090",),
    ),
    nvidia(
        key="rtx-5060-ti-16gb",
        name="NVIDIA GeForce RTX 5060 Ti 16GB",
        aliases=("RTX 5060 Ti", "5060 Ti", "5060ti", "rtx5060ti", "5060 Ti 16GB"),
        segment="consumer",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=16311 * MiB,
        bandwidth_gb_s=448,
        tflops=_blackwell(759),
        interconnect="PCIe 5.0 x8",
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5060-family/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA GeForce RTX 5060 Ti ... 16311MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 5060 Ti",),
    ),
    nvidia(
        key="rtx-5070",
        name="NVIDIA GeForce RTX 5070",
        aliases=("5070", "rtx5070"),
        segment="consumer",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=12227 * MiB,
        bandwidth_gb_s=672,
        tflops=_blackwell(988),
        interconnect=_PCIE5,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/ ; "
            "memory: https://github.com/shkhln/libc6-shim/issues/14"
        ),
        nvml_names=("NVIDIA GeForce RTX 5070",),
    ),
    nvidia(
        key="rtx-5070-ti",
        name="NVIDIA GeForce RTX 5070 Ti",
        aliases=("5070 Ti", "5070ti", "rtx5070ti"),
        segment="consumer",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=16303 * MiB,
        bandwidth_gb_s=896,
        tflops=_blackwell(1406),
        interconnect=_PCIE5,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA GeForce RTX 5070 Ti ... 16303MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 5070 Ti",),
    ),
    nvidia(
        key="rtx-5080",
        name="NVIDIA GeForce RTX 5080",
        aliases=("5080", "rtx5080"),
        segment="consumer",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=16303 * MiB,
        bandwidth_gb_s=960,
        tflops=_blackwell(1801),
        interconnect=_PCIE5,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5080/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA GeForce RTX 5080 ... 16303MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 5080",),
    ),
    nvidia(
        key="rtx-5090",
        name="NVIDIA GeForce RTX 5090",
        aliases=("5090", "rtx5090"),
        segment="consumer",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=32607 * MiB,
        bandwidth_gb_s=1792,
        tflops=_blackwell(3352),
        interconnect=_PCIE5,
        source=f"{_BW} ; memory: https://github.com/noonghunna/club-3090/issues/1261",
        nvml_names=("NVIDIA GeForce RTX 5090",),
    ),
    # Laptops: memory and bandwidth of NVIDIA's reference configuration; OEM power limits
    # change clocks, so throughput is for the top TGP and only indicative.
    nvidia(
        key="rtx-3060-laptop",
        name="NVIDIA GeForce RTX 3060 Laptop GPU",
        aliases=("3060 Laptop", "3060 mobile", "rtx3060laptop"),
        segment="laptop",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=6 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=336,
        tflops=(None, None, None, None),
        interconnect=_PCIE4,
        source="https://www.nvidia.com/en-us/geforce/laptops/30-series/",
        nvml_names=("NVIDIA GeForce RTX 3060 Laptop GPU",),
    ),
    nvidia(
        key="rtx-3070-laptop",
        name="NVIDIA GeForce RTX 3070 Laptop GPU",
        aliases=("3070 Laptop", "3070 mobile", "rtx3070laptop"),
        segment="laptop",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=8 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=448,
        tflops=(None, None, None, None),
        interconnect=_PCIE4,
        source="https://www.nvidia.com/en-us/geforce/laptops/30-series/",
        nvml_names=("NVIDIA GeForce RTX 3070 Laptop GPU",),
    ),
    nvidia(
        key="rtx-3080-laptop",
        name="NVIDIA GeForce RTX 3080 Laptop GPU 16GB",
        aliases=("3080 Laptop", "3080 mobile", "rtx3080laptop"),
        segment="laptop",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=16 * GiB,  # nominal; driver figure not found (an 8 GB model exists too)
        bandwidth_gb_s=448,
        tflops=(None, None, None, None),
        interconnect=_PCIE4,
        source="https://www.nvidia.com/en-us/geforce/laptops/30-series/",
        nvml_names=("NVIDIA GeForce RTX 3080 Laptop GPU",),
    ),
    nvidia(
        key="rtx-4060-laptop",
        name="NVIDIA GeForce RTX 4060 Laptop GPU",
        aliases=("4060 Laptop", "4060 mobile", "rtx4060laptop"),
        segment="laptop",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=8 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=256,
        tflops=_ada(233),
        interconnect="PCIe 4.0 x8",
        source="https://www.nvidia.com/en-us/geforce/laptops/40-series/",
        nvml_names=("NVIDIA GeForce RTX 4060 Laptop GPU",),
    ),
    nvidia(
        key="rtx-4070-laptop",
        name="NVIDIA GeForce RTX 4070 Laptop GPU",
        aliases=("4070 Laptop", "4070 mobile", "rtx4070laptop"),
        segment="laptop",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=8 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=256,
        tflops=_ada(321),
        interconnect="PCIe 4.0 x8",
        source="https://www.nvidia.com/en-us/geforce/laptops/40-series/",
        nvml_names=("NVIDIA GeForce RTX 4070 Laptop GPU",),
    ),
    nvidia(
        key="rtx-4080-laptop",
        name="NVIDIA GeForce RTX 4080 Laptop GPU",
        aliases=("4080 Laptop", "4080 mobile", "rtx4080laptop"),
        segment="laptop",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=12282 * MiB,
        bandwidth_gb_s=432,
        tflops=_ada(542),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/laptops/40-series/ ; "
            f"memory: {_SMI} ('GeForce RTX 4080 Laptop GPU (12282MiB)')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4080 Laptop GPU",),
    ),
    nvidia(
        key="rtx-4090-laptop",
        name="NVIDIA GeForce RTX 4090 Laptop GPU",
        aliases=("4090 Laptop", "4090 mobile", "rtx4090laptop"),
        segment="laptop",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=16376 * MiB,
        bandwidth_gb_s=576,
        tflops=_ada(686),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/laptops/40-series/ ; "
            f"memory: {_SMI} ('RTX 4090 ... 155W ... 16376MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 4090 Laptop GPU",),
    ),
    nvidia(
        key="rtx-5090-laptop",
        name="NVIDIA GeForce RTX 5090 Laptop GPU",
        aliases=("5090 Laptop", "5090 mobile", "rtx5090laptop"),
        segment="laptop",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=24 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=896,
        tflops=_blackwell(1824),
        interconnect=_PCIE5,
        source="https://www.nvidia.com/en-us/geforce/laptops/50-series/",
        nvml_names=("NVIDIA GeForce RTX 5090 Laptop GPU",),
    ),
)
