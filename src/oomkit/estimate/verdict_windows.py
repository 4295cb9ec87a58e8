"""Windows (WDDM): device memory is charged to the system commit limit, RAM + page file (pure).

Under the WDDM driver model the video memory manager may evict any allocation of a process to
system memory, so every ``cudaMalloc`` (and every Vulkan/DirectML device allocation) is backed
by commit charge, and the commit limit is the installed RAM plus the page file. A run whose GPU
allocations are larger than the RAM therefore starts only when the page file covers the rest;
a small one (Windows' system-managed file starts small) makes ``cudaMalloc`` fail with GPU
memory to spare:

* ollama#8825: deepseek-r1:32b on 2x RTX 4060 Ti 16GB ("memory.required 23.4 GiB") on a host
  with 8 GB RAM: "CUDA malloc error, even if there is more than enough VRAM"; the reporter's
  fix: "My pagefile was managed by Windows and was too small - only around 2Gb. I set it
  manually to 16Gb and voila, the model loaded".
* ollama#15352 (Windows, RTX 3090, 16 GiB RAM): cudaMalloc of a 19.6 GiB weight buffer fails
  with 23.4 GiB of VRAM free ("On Windows WDDM, GPU memory allocations are backed by system
  RAM").
* ollama#18117 (Vulkan on Windows): re-enabling a disabled page file "fixed a broader set of
  failures"; GPU miners' rule of thumb: a page file at least the rig's total VRAM.

How large a page file the machine has is not known, so this never says "does not fit": GPU
allocations (every device's total) plus the host part above the installed RAM make the
verdict "tight" with the page file named. WSL 2 is left out: its ``--ram`` is the VM's, not
the Windows host's commit limit.

CUDA System Memory Fallback (:func:`within_sysmem_fallback`): from driver 536.40 (June 2023)
NVIDIA's Windows driver lets CUDA allocations that do not fit the dedicated memory go to shared
system memory instead of failing ("CUDA - Sysmem Fallback Policy", on under "Driver Default";
NVIDIA support answer 5490, "System Memory Fallback for Stable Diffusion"). llama.cpp's CUDA
build documents it as the Windows counterpart of ``GGML_CUDA_ENABLE_UNIFIED_MEMORY=1``
(docs/build.md, CUDA "Unified Memory": "allows swapping to system RAM instead of crashing when
the GPU VRAM is exhausted. In Windows this setting is available in the NVIDIA control panel as
System Memory Fallback"). How much system memory a GPU may use is WDDM's shared segment,
``MAX(TotalSystemMemory / 2, 64 MB)`` (Windows Driver Kit, "Calculating graphics memory"): a
ggml CUDA run (llama.cpp, Ollama) over its card by less than that runs, slowly, rather than
dying. Records: llama.cpp#8760 (b3488, RTX 3090, Windows, ``--no-mmap -ngl 39``: its logged
CUDA0 buffers are 23941 MiB of the 24576 MiB card before the driver's own share, and it ran at
1.86 tokens/s); ollama#4790 (0.1.41, command-r:35b on a 12 GB RTX 4070 with 64 GB RAM: loads and
runs). The driver version and the control-panel setting are not inputs, so such a run is
"tight" (with the spill named), never "fits"; with the RAM unknown the allowance is what the
smallest Windows 10/11 machine has (2 GB of RAM, Windows 10 x64's minimum: 1 GiB).
PyTorch runtimes are left out (not checked against records here; vLLM does not run natively on
Windows).

HIP on an integrated Radeon under Windows (:func:`windows_hip_apu_overs`): AMD's Windows HIP
runtime does not place large allocations in the BIOS carve-out the driver reports as dedicated
memory. ROCm/legacy-rocm-build#5940 (AMD, ROCm 7.12 preview, Ryzen AI Max+ 395 with 96 GB of
VRAM set in the BIOS): "if current VRAM allocation < 32GB allocate in VRAM else allocate in
shared memory" (measured: 16 + 16 + 16 GB -> 32 GB VRAM, 16 GB shared); shared memory is WDDM's
shared segment, half of the RAM Windows still sees. ROCm/rocm-systems#1786 (HIP SDK 6.4, same
chip): a single ``hipMalloc`` of 64 GiB or more fails on Windows and succeeds on Linux.
ROCm/TheRock#1957: gpt-oss-120b (-ngl 999, 96 GB carve-out, 32 GB RAM) fails "to allocate ROCm0
buffers" on ROCm 7.9/7.10 Windows builds and loads on the Vulkan build of the same llama.cpp.
Which HIP release the user has (and whether its fix landed: #1786 is "fix submitted") is not an
input, so a Windows HIP run on an APU with more than 32 GiB on the device is "tight" (never
"fits"), with the Vulkan build named as the change; Linux (KFD/TTM) is not affected.
"""

from __future__ import annotations

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.units import GiB, MiB, format_bytes

__all__ = [
    "SYSMEM_OVER",
    "WDDM_COMMIT",
    "sysmem_fallback_bytes",
    "wddm_commit_over",
    "wddm_commit_risk",
    "windows_hip_apu_overs",
    "within_sysmem_fallback",
]

WDDM_COMMIT = "Windows commits system memory (RAM + page file) for every GPU allocation (WDDM)"
SYSMEM_OVER = (
    "over the card's dedicated memory: NVIDIA's Windows driver (536.40+, CUDA System Memory "
    "Fallback on by default) puts it in shared system memory, so it runs very slowly instead "
    "of failing (with the fallback off, or an older driver: cudaMalloc out of memory)"
)
#: Windows 10 x64's minimum RAM: the smallest shared segment any Windows 10/11 machine has is
#: half of it
WINDOWS_MIN_RAM_BYTES = 2 * GiB
#: what Windows HIP keeps in an APU's carve-out before it allocates in shared memory
#: (ROCm/legacy-rocm-build#5940)
WINDOWS_HIP_CARVEOUT_FIRST = 32 * GiB
WINDOWS_HIP_APU_WHAT = "Windows HIP on an integrated Radeon: carve-out used beyond 32 GiB"
WINDOWS_HIP_APU_RISK = (
    "on the device beyond the 32 GiB that Windows HIP places in the carve-out: later "
    "allocations go to shared memory (half the RAM Windows sees; ROCm legacy-rocm-build#5940) "
    "and single hipMalloc calls of 64 GiB or more fail in HIP SDK 6.4 (rocm-systems#1786)"
)
WINDOWS_HIP_APU_CHANGE = (
    "run the Vulkan build of the same runtime (llama.cpp's Vulkan release; Ollama 0.12.11+: "
    "OLLAMA_VULKAN=1), which loaded where ROCm failed (ROCm/TheRock#1957), or keep the "
    "device under 32 GiB"
)
#: runtimes that allocate through ggml's CUDA backend (cudaMalloc'd buffers)
_GGML_RUNTIMES = frozenset({"llama.cpp", "ollama"})


def wddm_commit_over(est: Estimate, os_name: str | None) -> int | None:
    """Bytes by which GPU allocations plus the host part exceed the installed RAM on Windows
    (what the page file must cover), or None (not Windows, RAM unknown, or within it)."""
    if (os_name or "").lower() != "windows":
        return None
    ram = est.host.capacity_bytes
    if ram is None:
        return None
    gpus = sum(d.total_bytes for d in est.devices if d.device != "cpu")
    if gpus <= 0:
        return None
    over = gpus + est.host.total_bytes - ram
    return over if over > 0 else None


def wddm_commit_risk(over: int) -> str:
    """The risk line for a run ``over`` bytes above the RAM."""
    return (
        f"{WDDM_COMMIT}: {format_bytes(over)} above the installed RAM must come from the page "
        "file (a small system-managed one makes cudaMalloc fail with VRAM free, ollama#8825)"
    )


def sysmem_fallback_bytes(ram_bytes: int | None) -> int:
    """WDDM's shared segment for one GPU: ``MAX(RAM / 2, 64 MB)`` (Windows Driver Kit,
    "Calculating graphics memory"); RAM unknown: that of Windows 10 x64's minimum 2 GB."""
    ram = WINDOWS_MIN_RAM_BYTES if ram_bytes is None else ram_bytes
    return max(ram // 2, 64 * MiB)


def within_sysmem_fallback(
    est: Estimate, device: DeviceUsage, os_name: str | None, over_bytes: int
) -> bool:
    """Whether a ggml CUDA run ``over_bytes`` over ``device`` on native Windows would spill to
    shared system memory (NVIDIA's System Memory Fallback) rather than fail."""
    return (
        (os_name or "").lower() == "windows"
        and est.runtime in _GGML_RUNTIMES
        and device.device.startswith("cuda:")
        and 0 < over_bytes <= sysmem_fallback_bytes(est.host.capacity_bytes)
    )


def windows_hip_apu_overs(
    est: Estimate, os_name: str | None, unified_bytes: tuple[int | None, ...]
) -> list[tuple[str, int, str, str, str]]:
    """(device, bytes over, what, risk, safe change) of each HIP device of an APU (a device
    with unified memory) on native Windows whose total passes
    :data:`WINDOWS_HIP_CARVEOUT_FIRST`: the shape of
    :func:`oomkit.estimate.verdict_runtime.tight_overs`."""
    if (os_name or "").lower() != "windows":
        return []
    from oomkit.estimate.verdict_platform import apu_rocm_devices

    out = []
    for d in apu_rocm_devices(est, unified_bytes):
        over = d.total_bytes - WINDOWS_HIP_CARVEOUT_FIRST
        if over > 0:
            out.append(
                (d.device, over, WINDOWS_HIP_APU_WHAT, WINDOWS_HIP_APU_RISK, WINDOWS_HIP_APU_CHANGE)
            )
    return out
