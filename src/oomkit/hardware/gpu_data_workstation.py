"""GPU catalog rows: NVIDIA RTX workstation cards (Ampere RTX A-series, Ada, Blackwell).

Memory is NVML ``memory.total`` with ECC off, the workstation default (turning ECC on hides
1/16 of GDDR6: an RTX A6000 goes from 49140 to 46068 MiB). Throughput is dense: NVIDIA's
workstation datasheets quote sparse tensor TFLOPS, halved here; unlike GeForce, these cards run
FP16 with FP32 accumulate at full rate.
"""

from __future__ import annotations

from oomkit.hardware.gpu_data_build import nvidia
from oomkit.units import MiB

__all__ = ["WORKSTATION"]

_PCIE4 = "PCIe 4.0 x16"
_SMI = "nvidia-smi pastes on GitHub"


def _dense(sparse_fp16: float, *, fp8: bool) -> tuple[float, float, float | None, float]:
    """Dense (fp16, bf16, fp8, int8) from sparse FP16 tensor TFLOPS (= dense FP8 on Ada)."""
    fp16 = round(sparse_fp16 / 2, 1)
    return (fp16, fp16, round(sparse_fp16, 1) if fp8 else None, round(sparse_fp16, 1))


WORKSTATION = (
    nvidia(
        key="rtx-a2000-12gb",
        name="NVIDIA RTX A2000 12GB",
        aliases=("A2000 12GB", "RTX A2000 12GB"),
        segment="workstation",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=12282 * MiB,
        bandwidth_gb_s=288,
        tflops=_dense(63.9, fp8=False),
        interconnect="PCIe 4.0 x16",
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-a2000/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA RTX A2000 12GB ... 12282MiB')"
        ),
        nvml_names=("NVIDIA RTX A2000 12GB",),
    ),
    nvidia(
        key="rtx-a4000",
        name="NVIDIA RTX A4000",
        aliases=("A4000", "rtxa4000"),
        segment="workstation",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=16376 * MiB,
        bandwidth_gb_s=448,
        tflops=_dense(153.4, fp8=False),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-a4000/ ; "
            "memory: https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/791"
        ),
        nvml_names=("NVIDIA RTX A4000",),
    ),
    nvidia(
        key="rtx-a4500",
        name="NVIDIA RTX A4500",
        aliases=("A4500", "rtxa4500"),
        segment="workstation",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=20470 * MiB,
        bandwidth_gb_s=640,
        tflops=_dense(189.2, fp8=False),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-a4500/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA RTX A4500 ... 20470MiB')"
        ),
        nvml_names=("NVIDIA RTX A4500",),
    ),
    nvidia(
        key="rtx-a5000",
        name="NVIDIA RTX A5000",
        aliases=("A5000", "rtxa5000"),
        segment="workstation",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=24564 * MiB,
        bandwidth_gb_s=768,
        tflops=_dense(222.2, fp8=False),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-a5000/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA RTX A5000 ... 24564MiB')"
        ),
        nvml_names=("NVIDIA RTX A5000",),
    ),
    nvidia(
        key="rtx-a6000",
        name="NVIDIA RTX A6000",
        aliases=("A6000", "rtxa6000"),
        segment="workstation",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=49140 * MiB,
        bandwidth_gb_s=768,
        tflops=_dense(309.7, fp8=False),
        interconnect="PCIe 4.0 x16, NVLink bridge 112.5 GB/s",
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-a6000/ ; "
            f"memory: {_SMI} ('NVIDIA RTX A6000 ... 49140MiB')"
        ),
        nvml_names=("NVIDIA RTX A6000",),
    ),
    nvidia(
        key="rtx-4000-ada",
        name="NVIDIA RTX 4000 Ada Generation",
        aliases=("RTX 4000 Ada", "rtx4000ada", "4000 Ada"),
        segment="workstation",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=20475 * MiB,  # ECC off; 19195 MiB with ECC on
        bandwidth_gb_s=360,
        tflops=_dense(163.8, fp8=True),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-4000/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA RTX 4000 Ada Generation ... 20475MiB')"
        ),
        nvml_names=("NVIDIA RTX 4000 Ada Generation",),
    ),
    nvidia(
        key="rtx-5000-ada",
        name="NVIDIA RTX 5000 Ada Generation",
        aliases=("RTX 5000 Ada", "rtx5000ada", "5000 Ada"),
        segment="workstation",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=32760 * MiB,
        bandwidth_gb_s=576,
        tflops=_dense(522.2, fp8=True),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-5000/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA RTX 5000 Ada Generation ... 32760MiB')"
        ),
        nvml_names=("NVIDIA RTX 5000 Ada Generation",),
    ),
    nvidia(
        key="rtx-6000-ada",
        name="NVIDIA RTX 6000 Ada Generation",
        aliases=("RTX 6000 Ada", "rtx6000ada", "6000 Ada"),
        segment="workstation",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=49140 * MiB,
        bandwidth_gb_s=960,
        tflops=_dense(728.5, fp8=True),
        interconnect=_PCIE4,
        source=(
            "https://www.nvidia.com/en-us/design-visualization/rtx-6000/ ; "
            f"memory: {_SMI} ('RTX 6000 Ada Gene... 49140MiB')"
        ),
        nvml_names=("NVIDIA RTX 6000 Ada Generation",),
    ),
    nvidia(
        key="rtx-pro-6000-blackwell",
        name="NVIDIA RTX PRO 6000 Blackwell",
        aliases=(
            "RTX PRO 6000",
            "rtxpro6000",
            "RTX PRO 6000 Blackwell Workstation Edition",
            "RTX PRO 6000 Blackwell Server Edition",
            "RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        ),
        segment="workstation",
        architecture="Blackwell",
        cc="12.0",
        memory_bytes=97887 * MiB,
        bandwidth_gb_s=1792,
        # 4000 sparse FP4 "AI TOPS" -> 2000 dense FP4 -> 1000 FP8/INT8 -> 500 FP16.
        tflops=(500.0, 500.0, 1000.0, 1000.0),
        interconnect="PCIe 5.0 x16",
        source=(
            "https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/"
            f"rtx-pro-6000/ ; memory: {_SMI} ('RTX PRO 6000 Blac... 97887MiB', all editions)"
        ),
        nvml_names=(
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        ),
    ),
)
