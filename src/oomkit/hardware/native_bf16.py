"""Whether a GPU computes bf16 natively: the training default precision depends on it.

bf16 tensor-core math starts at compute capability 8.0 (Ampere): the CUDA C++ Programming
Guide's warp matrix functions list ``__nv_bfloat16`` for devices of compute capability 8.0 and
higher, and ``torch.cuda.is_bf16_supported(including_emulation=False)`` is False below 8.0
(torch/cuda/__init__.py). On a T4, V100 or RTX 20xx bf16 runs emulated (far slower) or is
refused, so fp16 mixed precision (the HF Trainer's ``fp16=True``) is the run to price there.
"""

from __future__ import annotations

__all__ = ["native_bf16"]


def native_bf16(device: object) -> bool:
    """Whether ``device`` (a :class:`~oomkit.spec.hardware.DeviceTarget` or a catalog GPU)
    computes bf16 natively: a CUDA GPU of compute capability 8.0 or newer, else one whose
    catalog entry lists bf16; the CPU, and a device oomkit knows nothing about: yes."""
    if getattr(device, "backend", "cuda") == "cpu":
        return True
    cc = getattr(device, "compute_capability", None)
    major, _, minor = (cc if isinstance(cc, str) else "").partition(".")
    if major.isdigit() and minor.isdigit():
        return (int(major), int(minor)) >= (8, 0)
    dtypes = getattr(device, "native_dtypes", ())
    return not dtypes or "bf16" in dtypes
