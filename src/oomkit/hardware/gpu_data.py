"""Every row of the GPU catalog, in listing order (NVIDIA, AMD, Intel, Apple).

The rows are split by family into ``gpu_data_*.py`` modules to keep each under the house size
limit; each module's docstring states its conventions (what "memory" and "TFLOPS" mean there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomkit.hardware.gpu_data_datacenter import DATACENTER
from oomkit.hardware.gpu_data_geforce import GEFORCE_10_TO_30
from oomkit.hardware.gpu_data_geforce_new import GEFORCE_40_50
from oomkit.hardware.gpu_data_other import AMD, APPLE, INTEL
from oomkit.hardware.gpu_data_workstation import WORKSTATION

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel

__all__ = ["GPUS"]

GPUS: tuple[GpuModel, ...] = (
    *GEFORCE_10_TO_30,
    *GEFORCE_40_50,
    *WORKSTATION,
    *DATACENTER,
    *AMD,
    *INTEL,
    *APPLE,
)
