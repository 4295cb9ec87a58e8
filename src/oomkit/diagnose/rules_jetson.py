"""A failed NvMap allocation on an NVIDIA Jetson (``parse_accel``'s ``jetson_nvmap_alloc``).

On Tegra the GPU has no memory of its own: the CUDA driver allocates from the board's RAM
through NvMap (L4T's ``libnvrm_mem``), which prints ``NvMapMemAllocInternalTagged: <tag> error
12`` when the kernel cannot supply the pages (errno 12, ``ENOMEM``). The same RAM holds the OS,
the page cache and every other process, and NvMap needs its pages where the kernel can find
them, so a failure says the board's RAM could not give the request, not which of three things
took it: the model and its buffers (too large for the board), other processes and the page
cache (freed by closing them / dropping caches), or NvMap's own state after hours of loads
(fragmentation that a reboot clears). Whether it also fails right after a reboot, with nothing
else running, decides between them.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic

__all__ = ["analyze_jetson"]


def analyze_jetson(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The reading of a Jetson NvMap allocation failure (``None`` for any other event)."""
    del ctx  # the status line is all this rule reads
    if e.format != "jetson_nvmap_alloc":
        return None
    call = f" ({e.detail})" if e.detail else ""
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"A Jetson NvMap allocation failed{call}: the CUDA driver could not get "
        "pages from the board's RAM, which the GPU shares with the OS, the page cache and "
        "other processes. The message has no sizes: the model and its buffers, what else holds "
        "RAM, or NvMap's state after many loads (fragmentation that a reboot clears) can each "
        "cause it. What would decide: does it also fail right after a reboot with nothing else "
        "running (`tegrastats` shows the RAM in use)?",
        fixes=(
            generic(
                "Free the board's RAM before loading",
                "on Tegra the GPU allocates from system RAM; other apps and the page cache take "
                "from the same pages.",
                ("sudo sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'", "tegrastats"),
            ),
            generic(
                "Load a smaller or quantized model",
                "the weights are the largest allocation on an 8 GB board.",
                ("4-bit / INT8 weights", "a smaller model"),
            ),
        ),
        open_question=False,
    )
