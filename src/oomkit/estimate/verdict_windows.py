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
"""

from __future__ import annotations

from oomkit.estimate.breakdown import Estimate
from oomkit.units import format_bytes

__all__ = ["WDDM_COMMIT", "wddm_commit_over", "wddm_commit_risk"]

WDDM_COMMIT = "Windows commits system memory (RAM + page file) for every GPU allocation (WDDM)"


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
