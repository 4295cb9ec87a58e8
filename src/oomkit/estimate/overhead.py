"""Per-process runtime overhead on each GPU that no buffer log shows: the CUDA/ROCm/Metal context.

A small table of documented defaults, keyed by (runtime, backend); the user overrides it with
``InferenceSettings.overhead_bytes``. Never a percentage of the model.

Sources for the defaults:

* CUDA context with lazy module loading (CUDA >= 11.7): ~250-400 MiB per process per GPU
  (pytorch/pytorch #107667, #109888; invoke-ai/InvokeAI #9413 measured 256 MiB on an RTX 3090).
  llama.cpp also loads cuBLAS and its own kernels: gguf-parser-go (file_estimate__llamacpp.go)
  reserves 250 MiB VRAM per GPU for it; Ollama's scheduler adds 457 MiB per CUDA/ROCm GPU
  (ollama ``llm/memory.go`` ``gpuZeroOverhead``/``GpuInfo.MinimumMemory``) and 512 MiB on Metal.
* Hopper/Blackwell-class parts report a larger non-allocator share (0.5-0.7 GiB) at start-up;
  on a real H100 (CUDA 13, torch 2.11) it measured 675-721 MiB (``benchmarks/gpu/results``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from oomkit.errors import UnknownNameError
from oomkit.estimate.registry import normalize_runtime
from oomkit.spec.hardware import DeviceTarget
from oomkit.units import MiB

__all__ = ["CONTEXT_OVERHEAD", "cuda_context_bytes"]

#: (runtime, backend) -> (bytes, explanation). ``"*"`` matches any runtime.
CONTEXT_OVERHEAD: Mapping[tuple[str, str], tuple[int, str]] = MappingProxyType(
    {
        ("llama.cpp", "cuda"): (
            300 * MiB,
            "CUDA context + cuBLAS handles of a llama.cpp process (~250-400 MiB with lazy "
            "loading; gguf-parser uses 250 MiB)",
        ),
        ("llama.cpp", "rocm"): (
            300 * MiB,
            "ROCm/HIP context + hipBLAS of a llama.cpp process (CUDA figure assumed)",
        ),
        ("llama.cpp", "vulkan"): (
            150 * MiB,
            "Vulkan instance/device and pipeline objects of a llama.cpp process",
        ),
        ("llama.cpp", "metal"): (
            0,
            "Metal: no separate context reservation in unified memory (buffers are counted)",
        ),
        ("ollama", "cuda"): (
            457 * MiB,
            "Ollama's per-GPU minimum memory for CUDA (discover/gpu.go: 457 MiB)",
        ),
        ("ollama", "rocm"): (
            457 * MiB,
            "Ollama's per-GPU minimum memory for ROCm (discover/amd_linux.go: 457 MiB)",
        ),
        ("ollama", "metal"): (
            512 * MiB,
            "Ollama's minimum memory on Metal (discover/gpu_darwin.go: 512 MiB)",
        ),
        ("*", "cuda"): (
            400 * MiB,
            "CUDA context with lazy module loading (~250-400 MiB; pytorch #107667)",
        ),
        ("*", "rocm"): (400 * MiB, "ROCm/HIP context (CUDA figure assumed)"),
        ("*", "cpu"): (0, "no device context on the CPU"),
    }
)

#: GPU architectures whose context is measured larger at start-up (Hopper/Blackwell class):
#: arch -> (bytes, where the figure comes from); a PyTorch process (transformers, vLLM, SGLang,
#: training) and a ggml process load different kernel images, so the PyTorch figure is kept apart
_LARGE_CONTEXT_ARCHS: Mapping[str, tuple[int, str]] = MappingProxyType(
    {
        # a CUDA build of llama.cpp (llama-cpp-python 0.3.36's vendored tree, sm_90) on an H100:
        # nvidia-smi less the model, KV and compute buffers = 590-593 MiB over 7 fully
        # offloaded runs (benchmarks/gpu/results/llamacpp_h100.json)
        "hopper": (600 * MiB, "600 MiB (590-593 MiB measured for llama.cpp on an H100)"),
        "blackwell": (600 * MiB, "0.5-0.7 GiB reported: 600 MiB"),
    }
)
#: the same for a PyTorch process, where measured. NVIDIA H100 80GB HBM3, driver 580.159.04,
#: CUDA 13.0, torch 2.11: torch's own OOM message reports 675-676 MiB "outside PyTorch" and
#: nvidia-smi shows 701-721 MiB above torch's reserved memory over 8 generate() runs
#: (benchmarks/gpu/results/transformers_h100.json, oom_h100/*.json)
_TORCH_CONTEXT_ARCHS: Mapping[str, tuple[int, str]] = MappingProxyType(
    {
        "hopper": (
            700 * MiB,
            "700 MiB measured for a PyTorch process on an H100 (CUDA 13, torch 2.11)",
        )
    }
)
_TORCH_RUNTIMES = frozenset({"transformers", "vllm", "sglang", "training"})


def _runtime_key(runtime: str) -> str:
    """The registry's canonical name (all its aliases); an unknown name keys the ``*`` rows."""
    try:
        return normalize_runtime(runtime)
    except UnknownNameError:
        return runtime.strip().lower()


def cuda_context_bytes(runtime: str, device: DeviceTarget) -> tuple[int, str]:
    """Default context overhead on ``device`` for ``runtime``: (bytes, explanation).

    >>> from oomkit.spec.hardware import DeviceTarget
    >>> cuda_context_bytes("llama.cpp", DeviceTarget(name="RTX 4090"))[0] // MiB
    300
    >>> cuda_context_bytes("llama.cpp", DeviceTarget(name="cpu", backend="cpu"))[0]
    0
    """
    rt = _runtime_key(runtime)
    backend = device.backend
    row = CONTEXT_OVERHEAD.get((rt, backend)) or CONTEXT_OVERHEAD.get(("*", backend))
    if row is None:
        return 0, f"no context overhead known for backend '{backend}'"
    n_bytes, why = row
    arch = (device.architecture or "").lower()
    if backend == "cuda" and arch in _LARGE_CONTEXT_ARCHS and n_bytes:
        table = _TORCH_CONTEXT_ARCHS if rt in _TORCH_RUNTIMES else {}
        large, where = table.get(arch) or _LARGE_CONTEXT_ARCHS[arch]
        n_bytes = max(n_bytes, large)
        why += f"; {arch} parts start larger: {where}"
    return n_bytes, why
