"""GPU catalog rows: NVIDIA GeForce desktop cards, GTX 10 to RTX 30 series.

Memory is NVML ``memory.total`` (``nvidia-smi`` "MiB" total) as a recent Linux driver reports it;
each figure cites a public ``nvidia-smi`` paste, or says "nominal; driver figure not found".
Tensor throughput is dense (no sparsity), FP16/BF16 with FP32 accumulate, the rate PyTorch
matmuls run at: GeForce cards run FP32-accumulate tensor math at half the FP16-accumulate rate
NVIDIA's marketing tables lead with (Ampere GA102 whitepaper, appendix A). Pascal GeForce has
no tensor cores and 1/64-rate FP16, so its tensor fields are ``None``.
"""

from __future__ import annotations

from oomkit.hardware.gpu_data_build import nvidia
from oomkit.units import GiB, MiB

__all__ = ["GEFORCE_10_TO_30"]

_PASCAL = "https://www.nvidia.com/en-us/geforce/10-series/"
_TURING = (
    "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/"
    "turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf"
)
_GA102 = (
    "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf"
)
_PCIE3 = "PCIe 3.0 x16"
_SMI = "memory: nvidia-smi pastes on GitHub"
_PCIE4 = "PCIe 4.0 x16"

GEFORCE_10_TO_30 = (
    nvidia(
        key="gtx-1060-6gb",
        name="NVIDIA GeForce GTX 1060 6GB",
        aliases=("GTX 1060", "1060", "GTX 1060 6GB", "gtx1060"),
        segment="consumer",
        architecture="Pascal",
        cc="6.1",
        memory_bytes=6144 * MiB,
        bandwidth_gb_s=192,
        tflops=(None, None, None, None),
        interconnect=_PCIE3,
        source=f"{_PASCAL} ; {_SMI} ('NVIDIA GeForce GTX 1060 6GB ... 6144MiB')",
        nvml_names=("NVIDIA GeForce GTX 1060 6GB", "GeForce GTX 1060 6GB"),
    ),
    nvidia(
        key="gtx-1070",
        name="NVIDIA GeForce GTX 1070",
        aliases=("1070", "gtx1070"),
        segment="consumer",
        architecture="Pascal",
        cc="6.1",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=256,
        tflops=(None, None, None, None),
        interconnect=_PCIE3,
        source=f"{_PASCAL} ; {_SMI} ('NVIDIA GeForce GTX 1070 ... 8192MiB')",
        nvml_names=("NVIDIA GeForce GTX 1070", "GeForce GTX 1070"),
    ),
    nvidia(
        key="gtx-1080",
        name="NVIDIA GeForce GTX 1080",
        aliases=("1080", "gtx1080"),
        segment="consumer",
        architecture="Pascal",
        cc="6.1",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=320,
        tflops=(None, None, None, None),
        interconnect=_PCIE3,
        source=f"{_PASCAL} ; {_SMI} ('NVIDIA GeForce GTX 1080 ... 8192MiB')",
        nvml_names=("NVIDIA GeForce GTX 1080", "GeForce GTX 1080"),
    ),
    nvidia(
        key="gtx-1080-ti",
        name="NVIDIA GeForce GTX 1080 Ti",
        aliases=("1080 Ti", "1080ti", "gtx1080ti"),
        segment="consumer",
        architecture="Pascal",
        cc="6.1",
        memory_bytes=11264 * MiB,
        bandwidth_gb_s=484,
        tflops=(None, None, None, None),
        interconnect=_PCIE3,
        source=f"{_PASCAL} ; memory: https://github.com/PromtEngineer/localGPT/issues/14",
        nvml_names=("NVIDIA GeForce GTX 1080 Ti", "GeForce GTX 1080 Ti"),
    ),
    nvidia(
        key="rtx-2060",
        name="NVIDIA GeForce RTX 2060",
        aliases=("2060", "rtx2060"),
        segment="consumer",
        architecture="Turing",
        cc="7.5",
        memory_bytes=6144 * MiB,
        bandwidth_gb_s=336,
        tflops=(25.8, None, None, 103.2),
        interconnect=_PCIE3,
        source=f"{_TURING} ; {_SMI} ('NVIDIA GeForce RTX 2060 ... 6144MiB')",
        nvml_names=("NVIDIA GeForce RTX 2060", "GeForce RTX 2060"),
    ),
    nvidia(
        key="rtx-2070",
        name="NVIDIA GeForce RTX 2070",
        aliases=("2070", "rtx2070"),
        segment="consumer",
        architecture="Turing",
        cc="7.5",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=448,
        tflops=(29.9, None, None, 119.4),
        interconnect=_PCIE3,
        source=f"{_TURING} ; {_SMI} ('NVIDIA GeForce RTX 2070 ... 8192MiB')",
        nvml_names=("NVIDIA GeForce RTX 2070", "GeForce RTX 2070"),
    ),
    nvidia(
        key="rtx-2080",
        name="NVIDIA GeForce RTX 2080",
        aliases=("2080", "rtx2080"),
        segment="consumer",
        architecture="Turing",
        cc="7.5",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=448,
        tflops=(40.3, None, None, 161.1),
        interconnect=_PCIE3,
        source=f"{_TURING} ; {_SMI} ('NVIDIA GeForce RTX 2080 ... 8192MiB')",
        nvml_names=("NVIDIA GeForce RTX 2080", "GeForce RTX 2080"),
    ),
    nvidia(
        key="rtx-2080-ti",
        name="NVIDIA GeForce RTX 2080 Ti",
        aliases=("2080 Ti", "2080ti", "rtx2080ti"),
        segment="consumer",
        architecture="Turing",
        cc="7.5",
        memory_bytes=11264 * MiB,
        bandwidth_gb_s=616,
        tflops=(53.8, None, None, 215.2),
        interconnect=_PCIE3,
        source=f"{_TURING} ; {_SMI} ('NVIDIA GeForce RTX 2080 Ti ... 11264MiB')",
        nvml_names=("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"),
    ),
    nvidia(
        key="rtx-3050",
        name="NVIDIA GeForce RTX 3050",
        aliases=("3050", "rtx3050", "RTX 3050 8GB"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=224,
        tflops=(18.2, 18.2, None, 72.8),
        interconnect="PCIe 4.0 x8",
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3050/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3050 ... 8192MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3050",),
    ),
    nvidia(
        key="rtx-3050-6gb",
        name="NVIDIA GeForce RTX 3050 6GB",
        aliases=("3050 6GB", "rtx3050 6gb"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=6144 * MiB,
        bandwidth_gb_s=168,
        tflops=(None, None, None, None),
        interconnect="PCIe 4.0 x8",
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3050/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3050 ... 70W ... 6144MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3050",),
    ),
    nvidia(
        key="rtx-3060",
        name="NVIDIA GeForce RTX 3060 12GB",
        aliases=("RTX 3060", "3060", "rtx3060", "3060 12GB"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=12288 * MiB,
        bandwidth_gb_s=360,
        tflops=(25.6, 25.6, None, 102.4),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3060-3060ti/ ; "
            "memory: https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/790"
        ),
        nvml_names=("NVIDIA GeForce RTX 3060",),
    ),
    nvidia(
        key="rtx-3060-ti",
        name="NVIDIA GeForce RTX 3060 Ti",
        aliases=("3060 Ti", "3060ti", "rtx3060ti"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=448,
        tflops=(32.4, 32.4, None, 129.6),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3060-3060ti/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3060 Ti ... 8192MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3060 Ti",),
    ),
    nvidia(
        key="rtx-3070",
        name="NVIDIA GeForce RTX 3070",
        aliases=("3070", "rtx3070"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=448,
        tflops=(40.6, 40.6, None, 162.6),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3070-3070ti/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3070 ... 8192MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3070",),
    ),
    nvidia(
        key="rtx-3070-ti",
        name="NVIDIA GeForce RTX 3070 Ti",
        aliases=("3070 Ti", "3070ti", "rtx3070ti"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=8192 * MiB,
        bandwidth_gb_s=608,
        tflops=(43.5, 43.5, None, 174.0),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3070-3070ti/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3070 Ti ... 8192MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3070 Ti",),
    ),
    nvidia(
        key="rtx-3080",
        name="NVIDIA GeForce RTX 3080 10GB",
        aliases=("RTX 3080", "3080", "rtx3080", "3080 10GB"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=10240 * MiB,
        bandwidth_gb_s=760,
        tflops=(59.5, 59.5, None, 238.0),
        interconnect=_PCIE4,
        source=f"{_GA102} ; {_SMI} ('RTX 3080 ... 10240MiB')",
        nvml_names=("NVIDIA GeForce RTX 3080",),
    ),
    nvidia(
        key="rtx-3080-12gb",
        name="NVIDIA GeForce RTX 3080 12GB",
        aliases=("3080 12GB", "rtx3080 12gb"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=12 * GiB,  # nominal; driver figure not found
        bandwidth_gb_s=912,
        tflops=(61.3, 61.3, None, 245.0),
        interconnect=_PCIE4,
        source="https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3080-3080ti/",
        nvml_names=("NVIDIA GeForce RTX 3080",),
    ),
    nvidia(
        key="rtx-3080-ti",
        name="NVIDIA GeForce RTX 3080 Ti",
        aliases=("3080 Ti", "3080ti", "rtx3080ti"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=12288 * MiB,
        bandwidth_gb_s=912,
        tflops=(68.2, 68.2, None, 272.8),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3080-3080ti/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3080 Ti ... 12288MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3080 Ti",),
    ),
    nvidia(
        key="rtx-3090",
        name="NVIDIA GeForce RTX 3090",
        aliases=("3090", "rtx3090"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=24576 * MiB,
        bandwidth_gb_s=936,
        tflops=(71.0, 71.0, None, 284.0),
        interconnect=_PCIE4,
        source=f"{_GA102} ; memory: https://github.com/noonghunna/club-3090/issues/1128",
        nvml_names=("NVIDIA GeForce RTX 3090",),
    ),
    nvidia(
        key="rtx-3090-ti",
        name="NVIDIA GeForce RTX 3090 Ti",
        aliases=("3090 Ti", "3090ti", "rtx3090ti"),
        segment="consumer",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=24564 * MiB,
        bandwidth_gb_s=1008,
        tflops=(80.0, 80.0, None, 320.0),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3090-3090ti/"
            f" ; {_SMI} ('NVIDIA GeForce RTX 3090 Ti ... 24564MiB')"
        ),
        nvml_names=("NVIDIA GeForce RTX 3090 Ti",),
    ),
)
