"""GPUStack's own VRAM reserve read from its allocatable share (pure; revfix20f).

GPUStack's scheduler counts a GPU's allocatable VRAM as its total minus what other model instances
claim minus the worker's ``system_reserved.vram`` (gpustack@47277d79
gpustack/policies/utils.py:114-121), and its vLLM selector prints that over the total as the
share (vllm_resource_fit_selector.py:425 ``allocatable_vram / gpu.memory.total``, printed at
:468-473 as "The current available GPU only has X GiB allocatable VRAM (P%)"). From v0.5.1 to
v2.0.1 a worker reserved 1 GiB of VRAM per GPU by default (commit a22db746 "reserved 1GiB vram by
default", ``--system-reserved`` default ``{"ram": 2, "vram": 1}``; removed in v2.0.2 by 96aa3952).
So an idle 8 GiB card shows exactly 7.0 GiB = 87.5%, under the 90% the vLLM backend's default
``--gpu-memory-utilization`` needs (gpustack #3745): what is missing from the share is GPUStack's
own reserve, not another process. When total - allocatable (total = allocatable / share) is that
reserve, within the rounding of the printed figures, this module says so; the worker's allocated
list (the instances GPUStack counts on that GPU) is what would decide.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["reserve_only"]

#: GPUStack's default VRAM reserve per GPU, v0.5.1-v2.0.1 (config.py, a22db746)
DEFAULT_RESERVE = 1 << 30
#: the printed allocatable VRAM has one or two decimals of GiB, the share two of a percent
_ROUNDING = 0.08 * (1 << 30)


def reserve_only(avail: int | None, share: float | None, util: float | None) -> Analysis | None:
    """The reserve reading when the share missing is GPUStack's default reserve (module doc)."""
    if avail is None or not share or util is None or share >= 100 * util:
        return None
    total = avail / (share / 100)
    if abs(total - avail - DEFAULT_RESERVE) > _ROUNDING:
        return None
    lower = min(share / 100 - 0.02, 0.9)
    return Analysis(
        cause="unknown",
        confidence=0.4,
        open_question=True,
        explanation=f"GPUStack's scheduler needs {100 * util:.0f}% of each GPU's VRAM to be "
        f"allocatable (the vLLM --gpu-memory-utilization) and the GPU offers {share:g}%: "
        f"{size_text(avail)} of a {size_text(int(total))} card. The missing "
        f"{size_text(int(total - avail))} is GPUStack's own default reserve (1 GiB of VRAM per "
        "GPU, --system-reserved, v0.5.1 to v2.0.1), not another process: an idle card of this "
        "size can never offer the share asked for. What would decide: the worker's allocated "
        "list in GPUStack (the model instances it counts on that GPU): empty means the reserve "
        "alone refuses the model.",
        fixes=(
            generic(
                "Ask vLLM for a share the reserve leaves",
                "the scheduler compares --gpu-memory-utilization with the allocatable share, "
                "which the reserve caps.",
                (f"--gpu-memory-utilization={lower:.2f}",),
            ),
            generic(
                "Lower the worker's VRAM reserve",
                "GPUStack subtracts system_reserved.vram from every GPU before scheduling.",
                ("""gpustack start --system-reserved '{"ram": 2, "vram": 0}'""",),
            ),
        ),
    )
