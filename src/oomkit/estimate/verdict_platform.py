"""Platform facts for the verdict: what the estimate cannot know about the machine.

:class:`Platform` (OS, display, catalog segment, unified memory, MPS watermark), the platform
terms of the band and reservations (``PLATFORM_TERMS``) with the limits the verdict of
:mod:`oomkit.estimate.verdict` reads, and the lookups of a device's catalog segment and unified
memory.

Platform terms (``PLATFORM_TERMS``):

* CUDA context by driver: contexts of 250-600 MiB are observed with lazy module loading
  (pytorch #107667, #109888; InvokeAI #9413: 256 MiB on an RTX 3090; Hopper 0.5-0.7 GiB), while
  oomkit charges 300-400 MiB: the 300 MiB spread is in the band of every CUDA/ROCm device.
* A display on the GPU: the desktop session (Xorg/Wayland compositor, dwm.exe, browser surfaces)
  holds 0.2-1 GiB of a consumer/workstation/laptop card. Known attached (``display=True``): 512
  MiB reserved; unknown on such a card: 512 MiB in the band; datacenter parts: none.
* Windows (WDDM): the OS keeps part of dedicated memory for its video memory manager; 512 MiB is
  reserved. (Since driver 536.40 CUDA may spill to shared system memory instead of failing: a
  "does not fit" on Windows can run very slowly rather than die; a llama.cpp/Ollama CUDA run
  over by less than WDDM's shared segment is "tight", :mod:`oomkit.estimate.verdict_windows`.)
  WSL 2 too: its CUDA runs on
  the Windows host's WDDM driver through GPU paravirtualization (NVIDIA, "CUDA on WSL User
  Guide": GPU acceleration "in WDDM mode", not TCC; libcuda.so is the host driver's, mapped
  into the WSL 2 VM), so the same video memory manager holds the card.
* Apple silicon (ggml-metal: llama.cpp, Ollama): the capacity is the catalog's Metal working
  set (``recommendedMaxWorkingSetSize``: 2/3 of RAM up to 32 GB, 3/4 above, as macOS 13-15
  report it). Going over it is not refused by ggml-metal (``ggml_metal_log_allocated_size``
  only warns "current allocated size is greater than the recommended max working set size",
  ggml/src/ggml-metal, every build since 2023) but by macOS when a command buffer runs
  (``kIOGPUCommandBufferCallbackErrorOutOfMemory``, "command buffer failed with status 5":
  ollama #434, antirez/ds4 #890/#909), and that limit is not one number: it follows
  ``iogpu.wired_limit_mb`` and newer macOS defaults to more (macOS 26: 107.52 GiB of 128 GiB,
  84%, measured on two machines, antirez/ds4 #893). A run over the catalog's working set but
  within ``METAL_NEWEST_DEFAULT_FRACTION`` of the RAM is "tight" with that risk named (not
  "does not fit"); beyond it, "does not fit".
* Apple silicon (PyTorch MPS: transformers): the same working set is the capacity, but PyTorch's
  MPS allocator refuses only past ``PYTORCH_MPS_HIGH_WATERMARK_RATIO`` x
  ``recommendedMaxWorkingSetSize`` (1.7 by default on unified memory, MPSAllocator.mm; the "max
  allowed" of "MPS backend out of memory"), letting buffers grow past the working set and the
  RAM into swap: a run over the working set but within that limit is "tight" (slow, swapping),
  beyond it "does not fit" (:mod:`oomkit.estimate.verdict_mps`).
* AMD APUs (Strix Halo): what the GPU may use of the unified memory is the BIOS carve-out
  (Variable Graphics Memory, at most 3/4 of RAM) plus GTT, which is half of the rest by default
  (Linux: ``amdgpu_ttm_init`` ``gtt_size = ttm_tt_pages_limit() << PAGE_SHIFT``,
  drivers/gpu/drm/amd/amdgpu/amdgpu_ttm.c since v6.1, with TTM's default ``pages_limit`` half
  of system RAM, drivers/gpu/drm/ttm/ttm_device.c ``ttm_global_init``; ``amdgpu_gtt_mgr.c``
  refuses past it with -ENOSPC; Windows gives a GPU half of system RAM as shared memory). So at
  least 1/8 of a capacity given as the whole unified memory is out of the GPU's reach unless
  ``ttm.pages_limit`` is raised: that 1/8 is in the band (``APU_UNREACHABLE_FRACTION``).
  Ollama on Linux may see only the OS's free RAM as the iGPU's: :mod:`.verdict_ollama_apu`.
* Windows commit limit: WDDM backs every GPU allocation with system commit (RAM + page file),
  so GPU totals plus the host part above the installed RAM (``--ram``) need the page file: a
  "tight" margin of its own, never "does not fit" (:mod:`oomkit.estimate.verdict_windows`,
  ollama#8825).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.spec.hardware import DeviceTarget
from oomkit.units import MiB

__all__ = [
    "APU_SHARE",
    "APU_UNREACHABLE_FRACTION",
    "DISPLAY_SEGMENTS",
    "METAL_NEWEST_DEFAULT_FRACTION",
    "METAL_OVER",
    "PLATFORM_TERMS",
    "WDDM_OS",
    "Platform",
    "apu_rocm_devices",
    "device_segment",
    "device_unified_bytes",
    "platform_term",
    "segment_at",
    "unified_at",
]

#: name -> (bytes, why); see the module docstring for the sources
PLATFORM_TERMS: Mapping[str, tuple[int, str]] = {
    "cuda_context_spread": (300 * MiB, "CUDA context by driver/architecture (250-600 MiB seen)"),
    "display": (512 * MiB, "desktop display/compositor on this GPU (0.2-1 GiB)"),
    "windows_wddm": (512 * MiB, "Windows WDDM video memory manager reservation"),
}
#: the largest default Metal working set measured, as a fraction of RAM: macOS 26.x reports
#: 107.52 GiB on 128 GiB Macs (M5 Max and a second chip generation, antirez/ds4 #893)
METAL_NEWEST_DEFAULT_FRACTION = 0.84
#: the least share of an APU's unified memory its GPU cannot reach by default: carve-out at
#: most 3/4 of RAM (AMD Variable Graphics Memory: 96 of 128 GB), GTT half of the rest (TTM)
APU_UNREACHABLE_FRACTION = 0.125
METAL_OVER = (
    "over the Metal working set of macOS 13-15 (runs only where macOS allows more: macOS 26 "
    "or a raised iogpu.wired_limit_mb; else 'command buffer failed with status 5')"
)
APU_SHARE = (
    "APU: the GPU reaches only its carve-out + GTT (half of the rest by default; raise "
    "ttm.pages_limit)"
)
#: catalog segments whose cards may drive a desktop display
DISPLAY_SEGMENTS = frozenset({"consumer", "laptop", "workstation"})
#: systems whose CUDA runs on the WDDM driver (WSL 2: the Windows host's, paravirtualized)
WDDM_OS = frozenset({"windows", "wsl"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Platform:
    """What the estimate cannot know about the machine (None = unknown)."""

    os: str | None = None  # "linux" | "windows" | "macos" | "wsl"
    display: bool | None = None  # a display is attached to the GPU(s)
    segments: tuple[str | None, ...] = ()  # GPU catalog segment per device
    ollama_gpu_overhead_bytes: int = 0  # OLLAMA_GPU_OVERHEAD
    #: per device: the memory it shares with the CPU (:func:`device_unified_bytes`): an Apple
    #: GPU's installed RAM when its capacity is the catalog's Metal working set, an AMD APU's
    #: capacity as given; None for a discrete GPU or when unknown
    unified_bytes: tuple[int | None, ...] = ()
    #: ``PYTORCH_MPS_HIGH_WATERMARK_RATIO`` of a transformers run on an Apple GPU (0 = no
    #: limit); None = PyTorch's default
    #: (:data:`~oomkit.estimate.verdict_mps.MPS_HIGH_WATERMARK_RATIO`)
    mps_high_watermark_ratio: float | None = None


def platform_term(name: str) -> tuple[str, int]:
    """A ``PLATFORM_TERMS`` entry as a band term or reservation: (why, bytes)."""
    b, why = PLATFORM_TERMS[name]
    return why, b


def segment_at(platform: Platform, index: int) -> str | None:
    """The catalog segment of device ``index`` (None when not given)."""
    return platform.segments[index] if index < len(platform.segments) else None


def unified_at(platform: Platform, index: int) -> int | None:
    """The unified memory of device ``index`` (None for a discrete GPU or when not given)."""
    return platform.unified_bytes[index] if index < len(platform.unified_bytes) else None


def device_segment(d: DeviceTarget) -> str | None:
    """The catalog segment of a target (consumer cards may drive a display; datacenter
    ones do not); None for a GPU outside the catalog."""
    if d.key is None:
        return None
    from oomkit.hardware.catalog import find_gpu

    return find_gpu(d.key).segment


def device_unified_bytes(d: DeviceTarget) -> int | None:
    """The memory a device shares with the CPU, for the verdict's unified-memory terms.

    Apple: the installed RAM, when the capacity is the catalog's Metal working set (a ``--vram``
    the user gives is their own limit, taken as is); AMD APU: the capacity as given (the
    catalog's whole unified memory, or ``--vram``). None for discrete GPUs and other rows.
    """
    if d.key is None or not d.unified_memory:
        return None
    from oomkit.hardware.catalog import find_gpu

    g = find_gpu(d.key)
    if g.vendor == "apple":
        ok = g.usable_memory_bytes is not None and d.capacity_bytes == g.usable_memory_bytes
        return g.memory_bytes if ok else None
    return d.capacity_bytes if g.vendor == "amd" else None


def apu_rocm_devices(est: Estimate, unified_bytes: tuple[int | None, ...]) -> Iterator[DeviceUsage]:
    """The HIP (ROCm) devices of ``est`` that share memory with the CPU (an AMD APU: the
    platform's ``unified_bytes`` entry is set), in device order: what the Windows HIP and the
    Ollama iGPU rules (:mod:`oomkit.estimate.verdict_windows`,
    :mod:`oomkit.estimate.verdict_ollama_apu`) look at."""
    for i, d in enumerate(est.devices):
        unified = unified_bytes[i] if i < len(unified_bytes) else None
        if unified is not None and d.device.startswith("rocm:"):
            yield d
