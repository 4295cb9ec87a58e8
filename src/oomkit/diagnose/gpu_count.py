"""How many GPUs a llama.cpp log lists, or None when it lists none (never guessed from an index).

A device index in an error (``allocating ... on device 1``) says only that there are at least
two; the run may have had three. The count comes from what the log lists, in order of
authority: ggml-cuda's ``ggml_cuda_init: found N CUDA devices`` (ggml/src/ggml-cuda/ggml-cuda.cu,
``ggml_cuda_init``), its ``Device K: <name>, compute capability ...`` lines, and
``llama_model_load_from_file_impl: using device CUDAk (...) - N MiB free`` (src/llama.cpp), one
line per device the model is loaded on. With none of them the doctor names no count ("on the
devices the log names").

>>> from oomkit.diagnose.events import DeviceInfo, LogContext
>>> listed_gpus(LogContext()) is None
True
>>> listed_gpus(LogContext(devices=(DeviceInfo(name="Device 0"), DeviceInfo(name="Device 1"))))
2
>>> listed_gpus(LogContext(gpus_found=3, devices=(DeviceInfo(name="CUDA0"),)))
3
"""

from __future__ import annotations

from oomkit.diagnose.events import LogContext

__all__ = ["devices_phrase", "listed_gpus"]

_GPU_NAMES = ("CUDA", "ROCm", "MUSA", "Vulkan", "SYCL", "MTL", "Metal")


def listed_gpus(ctx: LogContext) -> int | None:
    """The number of GPUs the log lists (module doc), or None."""
    if ctx.gpus_found:
        return ctx.gpus_found
    numbered = {d.name for d in ctx.devices if d.name.startswith("Device ")}
    used = {d.name for d in ctx.devices if d.name.startswith(_GPU_NAMES)}
    n = max(len(numbered), len(used))
    return n or None


def devices_phrase(ctx: LogContext) -> str:
    """``all 3 devices`` when the log lists them, else ``the devices the log names``."""
    n = listed_gpus(ctx)
    return f"all {n} devices" if n else "the devices the log names"
