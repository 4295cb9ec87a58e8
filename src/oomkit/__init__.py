"""oomkit: will it fit, and if not, what is the best thing to change?

The public API is re-exported here and loaded lazily (PEP 562), so ``import oomkit`` stays
light: no torch, pynvml, huggingface_hub, click or web stack is imported until used.

>>> import oomkit
>>> est = oomkit.estimate_model("llama-3.1-8b", oomkit.InferenceSettings(quant="Q4_K_M", ctx=8192))
>>> est.devices[0].kv_cache_bytes
1073741824
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from oomkit import _codecache

__version__ = "0.1.0"

if _codecache.running_as_cli():  # the command, not a program importing the library
    _codecache.install()  # dataclass methods from __pycache__, not compiled on each start
    from oomkit._gcpause import pause_for_command_start

    pause_for_command_start()  # no cyclic-GC passes while it imports; main turns it back on

_EXPORTS: dict[str, str] = {
    "Component": "oomkit.estimate.breakdown",
    "DeviceTarget": "oomkit.spec.hardware",
    "DeviceUsage": "oomkit.estimate.breakdown",
    "Estimate": "oomkit.estimate.breakdown",
    "Hardware": "oomkit.spec.hardware",
    "InferenceSettings": "oomkit.spec.settings",
    "ModelSpec": "oomkit.spec.model",
    "OomkitError": "oomkit.errors",
    "TensorInfo": "oomkit.spec.model",
    "count_params": "oomkit.spec.tensors",
    "detect_gpus": "oomkit.hardware.live",
    "diagnose_text": "oomkit.diagnose.doctor",
    "estimate_model": "oomkit.api",
    "find_batch_size": "oomkit.inprocess.retry",
    "find_gpu": "oomkit.hardware.catalog",
    "find_model": "oomkit.catalog.models",
    "format_bytes": "oomkit.units",
    "free_memory": "oomkit.inprocess.torch_memory",
    "install": "oomkit.inprocess.hook",
    "is_oom_error": "oomkit.inprocess.retry",
    "uninstall": "oomkit.inprocess.hook",
    "allocator_stats": "oomkit.inprocess.torch_memory",
    "load_model": "oomkit.api",
    "oom_retry": "oomkit.inprocess.retry",
    "parse_size": "oomkit.units",
    "plan": "oomkit.planner.core",
    "probe": "oomkit.inprocess.probe",
    "ProbeResult": "oomkit.inprocess.probe",
    "Plan": "oomkit.planner.core",
    "PlanRequest": "oomkit.planner.request",
    "PlanResult": "oomkit.planner.core",
    "snapshot_report": "oomkit.inprocess.snapshot",
    "TrainingSettings": "oomkit.spec.settings",
    "estimate_training": "oomkit.estimate.training",
}

__all__ = [
    "Component",
    "DeviceTarget",
    "DeviceUsage",
    "Estimate",
    "Hardware",
    "InferenceSettings",
    "ModelSpec",
    "OomkitError",
    "Plan",
    "PlanRequest",
    "PlanResult",
    "ProbeResult",
    "TensorInfo",
    "TrainingSettings",
    "__version__",
    "allocator_stats",
    "count_params",
    "detect_gpus",
    "diagnose_text",
    "estimate_model",
    "estimate_training",
    "find_batch_size",
    "find_gpu",
    "find_model",
    "format_bytes",
    "free_memory",
    "install",
    "is_oom_error",
    "load_model",
    "oom_retry",
    "parse_size",
    "plan",
    "probe",
    "snapshot_report",
    "uninstall",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oomkit' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from oomkit.api import estimate_model, load_model
    from oomkit.catalog.models import find_model
    from oomkit.diagnose.doctor import diagnose_text
    from oomkit.errors import OomkitError
    from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate
    from oomkit.estimate.training import estimate_training
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.live import detect_gpus
    from oomkit.inprocess.hook import install, uninstall
    from oomkit.inprocess.probe import ProbeResult, probe
    from oomkit.inprocess.retry import find_batch_size, is_oom_error, oom_retry
    from oomkit.inprocess.snapshot import snapshot_report
    from oomkit.inprocess.torch_memory import allocator_stats, free_memory
    from oomkit.planner.core import Plan, PlanResult, plan
    from oomkit.planner.request import PlanRequest
    from oomkit.spec.hardware import DeviceTarget, Hardware
    from oomkit.spec.model import ModelSpec, TensorInfo
    from oomkit.spec.settings import InferenceSettings, TrainingSettings
    from oomkit.spec.tensors import count_params
    from oomkit.units import format_bytes, parse_size
