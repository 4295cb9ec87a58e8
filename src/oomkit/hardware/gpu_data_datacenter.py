"""GPU catalog rows: NVIDIA data-center GPUs (Pascal P100 to Blackwell B300).

Memory is NVML ``memory.total`` with ECC on, the data-center default (GDDR parts lose 1/16 to
ECC: an A40 reports 46068 MiB with ECC on, 49140 MiB with it off; HBM parts keep ECC in-band
and report the same either way). Older drivers reported a little less on some parts (A100
40GB: 40536 MiB on driver 470, 40960 MiB on 535 and later); the figures are from recent
drivers. Throughput is dense tensor TFLOPS from each datasheet (sparse figures halved).
"""

from __future__ import annotations

from oomkit.hardware.gpu_data_build import nvidia
from oomkit.units import GiB, MiB

__all__ = ["DATACENTER"]

_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_MODAL = "https://github.com/modal-labs/modal-client/pull/2797"
_SMI = "nvidia-smi pastes on GitHub"
_HOPPER_SXM = (989.4, 989.4, 1978.9, 1978.9)
_HOPPER_NVL = (835.5, 835.5, 1670.5, 1670.5)

DATACENTER = (
    nvidia(
        key="p100-16gb-pcie",
        name="NVIDIA Tesla P100 PCIe 16GB",
        aliases=("P100", "Tesla P100", "p100-16gb", "P100 PCIe"),
        segment="datacenter",
        architecture="Pascal",
        cc="6.0",
        memory_bytes=16276 * MiB,
        bandwidth_gb_s=732,
        tflops=(18.7, None, None, None),  # packed FP16 on the CUDA cores, no tensor cores
        interconnect="PCIe 3.0 x16",
        source=(
            "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-PCIe-datasheet.pdf"
            " ; memory: 16276 MiB in public nvidia-smi CSV and OpenCL logs"
        ),
        nvml_names=("Tesla P100-PCIE-16GB",),
    ),
    nvidia(
        key="t4",
        name="NVIDIA T4",
        aliases=("Tesla T4", "nvidia-t4"),
        segment="datacenter",
        architecture="Turing",
        cc="7.5",
        memory_bytes=15360 * MiB,
        bandwidth_gb_s=320,
        tflops=(65.0, None, None, 130.0),
        interconnect="PCIe 3.0 x16",
        source=(
            "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
            f"t4-tensor-core-datasheet-951643.pdf ; memory: {_MODAL}"
        ),
        nvml_names=("Tesla T4", "NVIDIA T4"),
    ),
    nvidia(
        key="v100-16gb-sxm2",
        name="NVIDIA Tesla V100 SXM2 16GB",
        aliases=("V100", "Tesla V100", "V100 16GB", "V100 SXM2", "v100-sxm2-16gb"),
        segment="datacenter",
        architecture="Volta",
        cc="7.0",
        memory_bytes=16160 * MiB,
        bandwidth_gb_s=900,
        tflops=(125.0, None, None, None),
        interconnect="SXM2 NVLink 300 GB/s",
        source=f"{_V100} ; memory: {_SMI} ('Tesla V100-SXM2... 16160MiB')",
        nvml_names=("Tesla V100-SXM2-16GB",),
    ),
    nvidia(
        key="v100-32gb-sxm2",
        name="NVIDIA Tesla V100 SXM2 32GB",
        aliases=("V100 32GB", "V100 SXM2 32GB", "v100-sxm2-32gb"),
        segment="datacenter",
        architecture="Volta",
        cc="7.0",
        memory_bytes=32510 * MiB,
        bandwidth_gb_s=900,
        tflops=(125.0, None, None, None),
        interconnect="SXM2 NVLink 300 GB/s",
        source=f"{_V100} ; memory: {_SMI} ('Tesla V100-SXM2... 32510MiB')",
        nvml_names=("Tesla V100-SXM2-32GB",),
    ),
    nvidia(
        key="v100-16gb-pcie",
        name="NVIDIA Tesla V100 PCIe 16GB",
        aliases=("V100 PCIe", "V100 PCIe 16GB", "v100-pcie-16gb"),
        segment="datacenter",
        architecture="Volta",
        cc="7.0",
        memory_bytes=16160 * MiB,
        bandwidth_gb_s=900,
        tflops=(112.0, None, None, None),
        interconnect="PCIe 3.0 x16",
        source=f"{_V100} ; memory: {_SMI} ('Tesla V100-PCIE... 16160MiB')",
        nvml_names=("Tesla V100-PCIE-16GB",),
    ),
    nvidia(
        key="v100-32gb-pcie",
        name="NVIDIA Tesla V100 PCIe 32GB",
        aliases=("V100 PCIe 32GB", "v100-pcie-32gb"),
        segment="datacenter",
        architecture="Volta",
        cc="7.0",
        memory_bytes=32510 * MiB,
        bandwidth_gb_s=900,
        tflops=(112.0, None, None, None),
        interconnect="PCIe 3.0 x16",
        source=f"{_V100} ; memory: {_SMI} ('Tesla V100-PCIE... 32510MiB')",
        nvml_names=("Tesla V100-PCIE-32GB",),
    ),
    nvidia(
        key="a10",
        name="NVIDIA A10",
        aliases=("nvidia-a10", "A10 24GB"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=23028 * MiB,
        bandwidth_gb_s=600,
        tflops=(125.0, 125.0, None, 250.0),
        interconnect="PCIe 4.0 x16",
        source=f"https://www.nvidia.com/en-us/data-center/products/a10-gpu/ ; memory: {_MODAL}",
        nvml_names=("NVIDIA A10",),
    ),
    nvidia(
        key="a10g",
        name="NVIDIA A10G",
        aliases=("nvidia-a10g", "A10G 24GB"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=23028 * MiB,
        bandwidth_gb_s=600,
        tflops=(None, None, None, None),  # AWS-only part; NVIDIA publishes no tensor figures
        interconnect="PCIe 4.0 x16",
        source=(
            "https://aws.amazon.com/ec2/instance-types/g5/ ; "
            "memory: https://github.com/NVIDIA/DCGM/issues/232"
        ),
        nvml_names=("NVIDIA A10G",),
    ),
    nvidia(
        key="a30",
        name="NVIDIA A30",
        aliases=("nvidia-a30", "A30 24GB"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.0",
        memory_bytes=24576 * MiB,
        bandwidth_gb_s=933,
        tflops=(165.0, 165.0, None, 330.0),
        interconnect="PCIe 4.0 x16, NVLink bridge 200 GB/s",
        source=(
            "https://www.nvidia.com/en-us/data-center/products/a30-gpu/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA A30 ... 24576MiB')"
        ),
        nvml_names=("NVIDIA A30",),
    ),
    nvidia(
        key="a40",
        name="NVIDIA A40",
        aliases=("nvidia-a40", "A40 48GB"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.6",
        memory_bytes=46068 * MiB,
        bandwidth_gb_s=696,
        tflops=(149.7, 149.7, None, 299.3),
        interconnect="PCIe 4.0 x16, NVLink bridge 112.5 GB/s",
        source=(
            "https://images.nvidia.com/content/Solutions/data-center/a40/"
            f"nvidia-a40-datasheet.pdf ; memory: {_SMI} ('NVIDIA A40 ... 46068MiB', ECC on)"
        ),
        nvml_names=("NVIDIA A40",),
    ),
    nvidia(
        key="l4",
        name="NVIDIA L4",
        aliases=("nvidia-l4", "L4 24GB"),
        segment="datacenter",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=23034 * MiB,
        bandwidth_gb_s=300,
        tflops=(121.0, 121.0, 242.5, 242.5),
        interconnect="PCIe 4.0 x16",
        source=f"https://www.nvidia.com/en-us/data-center/l4/ ; memory: {_MODAL}",
        nvml_names=("NVIDIA L4",),
    ),
    nvidia(
        key="l40",
        name="NVIDIA L40",
        aliases=("nvidia-l40", "L40 48GB"),
        segment="datacenter",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=46068 * MiB,
        bandwidth_gb_s=864,
        tflops=(181.0, 181.0, 362.1, 362.1),
        interconnect="PCIe 4.0 x16",
        source=(
            "https://www.nvidia.com/en-us/data-center/l40/"
            " ; memory: nvidia-smi pastes on GitHub ('NVIDIA L40 ... 46068MiB', ECC on)"
        ),
        nvml_names=("NVIDIA L40",),
    ),
    nvidia(
        key="l40s",
        name="NVIDIA L40S",
        aliases=("nvidia-l40s", "L40S 48GB"),
        segment="datacenter",
        architecture="Ada Lovelace",
        cc="8.9",
        memory_bytes=46068 * MiB,
        bandwidth_gb_s=864,
        tflops=(362.0, 362.0, 733.0, 733.0),
        interconnect="PCIe 4.0 x16",
        source=(
            "https://www.nvidia.com/en-us/data-center/l40s/ ; "
            "memory: https://github.com/akash-network/provider-configs/pull/99"
        ),
        nvml_names=("NVIDIA L40S",),
    ),
    nvidia(
        key="a100-40gb-pcie",
        name="NVIDIA A100 40GB PCIe",
        aliases=("A100 PCIe 40GB", "A100-PCIE-40GB", "a100-40gb-pcie"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.0",
        memory_bytes=40960 * MiB,  # = nominal 40 GiB, what the SXM4 40GB reports
        bandwidth_gb_s=1555,
        tflops=(312.0, 312.0, None, 624.0),
        interconnect="PCIe 4.0 x16, NVLink bridge 600 GB/s",
        source=f"{_A100} ; memory: {_MODAL}",
        nvml_names=("NVIDIA A100-PCIE-40GB",),
    ),
    nvidia(
        key="a100-40gb-sxm",
        name="NVIDIA A100 40GB SXM4",
        aliases=("A100 40GB", "A100-40GB", "A100 SXM4 40GB", "A100-SXM4-40GB"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.0",
        memory_bytes=40960 * MiB,
        bandwidth_gb_s=1555,
        tflops=(312.0, 312.0, None, 624.0),
        interconnect="SXM4 NVLink 600 GB/s",
        source=(
            f"{_A100} ; memory: https://github.com/bottlerocket-os/bottlerocket-core-kit/pull/834"
        ),
        nvml_names=("NVIDIA A100-SXM4-40GB",),
    ),
    nvidia(
        key="a100-80gb-pcie",
        name="NVIDIA A100 80GB PCIe",
        aliases=("A100 PCIe", "A100 PCIe 80GB", "A100 80GB PCIe"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.0",
        memory_bytes=81920 * MiB,  # = nominal 80 GiB, what the SXM4 80GB reports
        bandwidth_gb_s=1935,
        tflops=(312.0, 312.0, None, 624.0),
        interconnect="PCIe 4.0 x16, NVLink bridge 600 GB/s",
        source=f"{_A100} ; memory: {_MODAL}",
        nvml_names=("NVIDIA A100 80GB PCIe",),
    ),
    nvidia(
        key="a100-80gb-sxm",
        name="NVIDIA A100 80GB SXM4",
        aliases=("A100", "A100 80GB", "A100-80GB", "A100 SXM", "A100-SXM4-80GB"),
        segment="datacenter",
        architecture="Ampere",
        cc="8.0",
        memory_bytes=81920 * MiB,
        bandwidth_gb_s=2039,
        tflops=(312.0, 312.0, None, 624.0),
        interconnect="SXM4 NVLink 600 GB/s",
        source=f"{_A100} ; memory: https://github.com/NVIDIA/mig-parted/issues/31",
        nvml_names=("NVIDIA A100-SXM4-80GB",),
    ),
    nvidia(
        key="h100-pcie",
        name="NVIDIA H100 PCIe",
        aliases=("H100 PCIe", "H100 PCIe 80GB", "h100pcie"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=81559 * MiB,
        bandwidth_gb_s=2000,
        tflops=(756.5, 756.5, 1513.0, 1513.0),
        interconnect="PCIe 5.0 x16, NVLink bridge 600 GB/s",
        source=f"{_H100} ; memory: {_SMI} ('NVIDIA H100 PCIe ... 81559MiB')",
        nvml_names=("NVIDIA H100 PCIe",),
    ),
    nvidia(
        key="h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        aliases=("H100", "H100 SXM", "H100 80GB", "H100 SXM5", "H100 80GB HBM3", "h100sxm"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=81559 * MiB,
        bandwidth_gb_s=3350,
        tflops=_HOPPER_SXM,
        interconnect="SXM5 NVLink 900 GB/s",
        source=f"{_H100} ; memory: https://github.com/NVIDIA/nccl/issues/1264",
        nvml_names=("NVIDIA H100 80GB HBM3",),
    ),
    nvidia(
        key="h100-nvl",
        name="NVIDIA H100 NVL",
        aliases=("H100 NVL", "H100 94GB", "h100nvl"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=95830 * MiB,
        bandwidth_gb_s=3900,
        tflops=_HOPPER_NVL,
        interconnect="PCIe 5.0 x16, NVLink bridge 600 GB/s",
        source=f"{_H100} ; memory: {_SMI} ('NVIDIA H100 NVL ... 95830MiB')",
        nvml_names=("NVIDIA H100 NVL",),
    ),
    nvidia(
        key="h200",
        name="NVIDIA H200 SXM 141GB",
        aliases=("H200", "H200 SXM", "H200 141GB", "h200sxm"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=143771 * MiB,
        bandwidth_gb_s=4800,
        tflops=_HOPPER_SXM,
        interconnect="SXM5 NVLink 900 GB/s",
        source=f"{_H200} ; memory: {_SMI} ('NVIDIA H200 ... 143771MiB')",
        nvml_names=("NVIDIA H200",),
    ),
    nvidia(
        key="h200-nvl",
        name="NVIDIA H200 NVL",
        aliases=("H200 NVL", "h200nvl"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=143771 * MiB,
        bandwidth_gb_s=4800,
        tflops=_HOPPER_NVL,
        interconnect="PCIe 5.0 x16, NVLink bridge 900 GB/s",
        source=f"{_H200} ; memory: {_SMI} ('NVIDIA H200 NVL (143771 MiB, driver 570)')",
        nvml_names=("NVIDIA H200 NVL",),
    ),
    nvidia(
        key="gh200-96gb",
        name="NVIDIA GH200 Grace Hopper Superchip 96GB",
        aliases=("GH200", "GH200 96GB", "GH200 480GB", "GH200 120GB", "gh200-96"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=97871 * MiB,
        bandwidth_gb_s=4000,
        tflops=_HOPPER_SXM,
        interconnect="NVLink-C2C 900 GB/s to Grace",
        source=(
            "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/ ; "
            f"memory: {_SMI} ('NVIDIA GH200 480GB ... 97871MiB')"
        ),
        nvml_names=("NVIDIA GH200 480GB", "NVIDIA GH200 120GB"),
    ),
    nvidia(
        key="gh200-144gb",
        name="NVIDIA GH200 Grace Hopper Superchip 144GB",
        aliases=("GH200 144GB", "GH200 144G HBM3e", "gh200-144"),
        segment="datacenter",
        architecture="Hopper",
        cc="9.0",
        memory_bytes=145920 * MiB,  # CUDA total 153008209920 bytes in a public driver fixture
        bandwidth_gb_s=4900,
        tflops=_HOPPER_SXM,
        interconnect="NVLink-C2C 900 GB/s to Grace",
        source="https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/",
        nvml_names=("NVIDIA GH200 144G HBM3e",),
    ),
    nvidia(
        key="b200",
        name="NVIDIA B200",
        aliases=("B200 SXM", "B200 180GB", "b200sxm"),
        segment="datacenter",
        architecture="Blackwell",
        cc="10.0",
        memory_bytes=183359 * MiB,
        # 7680-bit bus x 3996 MHz DDR as the driver reports it (the 8 TB/s of the launch
        # material assumed 8192 bits): https://github.com/pytorch/ao/pull/4002
        bandwidth_gb_s=7672,
        tflops=(2250.0, 2250.0, 4500.0, 4500.0),
        interconnect="SXM6 NVLink 1.8 TB/s",
        source=(
            "https://www.nvidia.com/en-us/data-center/hgx/ ; "
            "memory: https://github.com/NVIDIA/TensorRT-LLM/issues/10278"
        ),
        nvml_names=("NVIDIA B200",),
    ),
    nvidia(
        key="gb200",
        name="NVIDIA GB200 (one Blackwell GPU)",
        aliases=("GB200", "GB200 NVL72", "gb200-nvl72"),
        segment="datacenter",
        architecture="Blackwell",
        cc="10.0",
        memory_bytes=189471 * MiB,
        bandwidth_gb_s=8000,
        tflops=(2500.0, 2500.0, 5000.0, 5000.0),
        interconnect="NVLink 1.8 TB/s, NVLink-C2C to Grace",
        source=(
            "https://www.nvidia.com/en-us/data-center/gb200-nvl72/ ; "
            f"memory: {_SMI} ('NVIDIA GB200 ... 189471MiB')"
        ),
        nvml_names=("NVIDIA GB200",),
    ),
    nvidia(
        key="b300",
        name="NVIDIA B300 (Blackwell Ultra)",
        aliases=("B300", "B300 SXM6", "Blackwell Ultra"),
        segment="datacenter",
        architecture="Blackwell",
        cc="10.3",
        # nominal; driver figure not found. Public logs show ~268-275 GB per GPU, below the
        # 288 GB label, so the lower figure is used.
        memory_bytes=268 * GiB,
        bandwidth_gb_s=8000,
        tflops=(2250.0, 2250.0, 4500.0, None),  # Blackwell Ultra cut INT8 tensor throughput
        interconnect="SXM6 NVLink 1.8 TB/s",
        source="https://www.nvidia.com/en-us/data-center/hgx/",
        nvml_names=("NVIDIA B300 SXM6 AC",),
    ),
)
