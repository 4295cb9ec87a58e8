"""One planner candidate judged against the hardware: :class:`Evaluation` and :func:`judge`
(:class:`oomkit.planner.search.Searcher` estimates each candidate and delegates the verdict
here; both names are re-exported from :mod:`oomkit.planner.search`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import verdict
from oomkit.planner.knobs import Candidate
from oomkit.planner.sglang_fraction import RAISE_TRIED
from oomkit.units import format_bytes

if TYPE_CHECKING:
    from oomkit.planner.search import Searcher
    from oomkit.spec.hardware import DeviceTarget

__all__ = ["HOST_HEADROOM_BYTES", "Evaluation", "judge", "refused_estimate", "unified_total"]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A candidate with its estimate and the verdict against the hardware."""

    cand: Candidate
    estimate: Estimate
    fits: bool
    #: least free memory on any GPU after the estimate and headroom (negative: short by that)
    margin_bytes: int
    #: why it does not fit: needed vs available per device ("" when it fits)
    reason: str
    #: the only shortfall is host RAM (which falls as more moves to the GPU)
    host_only: bool = False


#: RAM the operating system keeps when layers or experts run on the CPU (an assumption, stated
#: in the plan's notes: a desktop needs a few GiB, a headless server less)
HOST_HEADROOM_BYTES = 2 * 1024**3


def unified_total(gpus: list[DeviceTarget]) -> int | None:
    """Installed memory of an Apple machine (the catalog row's total)."""
    from oomkit.hardware.catalog import find_gpu

    keys = [d.key for d in gpus if d.key]
    return find_gpu(keys[0]).memory_bytes if keys else None


def refused_estimate(model: str, runtime: str) -> Estimate:
    """A placeholder estimate for a refused combination (never shown as a plan)."""
    from oomkit.estimate.breakdown import DeviceUsage, ModelInfo

    return Estimate(
        model=ModelInfo(name=model, architecture="", params=0, source=""),
        runtime=runtime,
        settings={},
        devices=(),
        host=DeviceUsage(device="cpu"),
    )


def judge(s: Searcher, cand: Candidate, est: Estimate) -> Evaluation:
    """The verdict on ``cand``'s estimate: fits when every GPU keeps the headroom (vLLM/SGLang
    their own ``1 - utilisation``), the host part fits in the RAM with
    :data:`HOST_HEADROOM_BYTES` for the system, the estimate has no blocker, the verdict is not
    tight, and (vLLM/SGLang) the KV pool holds the asked parallel sequences; otherwise the
    reasons, and whether host RAM is the only one."""
    # vLLM/SGLang keep their own (1 - utilisation) free; transformers and GGUF the headroom
    headroom = 0 if s.runtime in ("vllm", "sglang") else s.request.headroom_bytes
    margin: int | None = None
    short: list[str] = []
    for dev in est.devices:
        if dev.capacity_bytes is None:
            continue
        free = dev.capacity_bytes - dev.total_bytes - headroom
        margin = free if margin is None else min(margin, free)
        if free < 0:
            extra = f" + {format_bytes(headroom)} headroom" if headroom else ""
            short.append(
                f"{dev.device} needs {format_bytes(dev.total_bytes)}{extra}, "
                f"has {format_bytes(dev.capacity_bytes)}"
            )
    host_cap = s.hardware.host_ram_bytes
    n_device_short = len(short) + len(est.blockers)
    host_need = est.host.total_bytes
    if s.unified and host_need:
        # Apple: the GPU's working set and the CPU's share one memory
        host_need += sum(d.total_bytes for d in est.devices)
        host_cap = host_cap if host_cap is not None else s.unified_total
    if host_cap is not None and host_need and host_need + HOST_HEADROOM_BYTES > host_cap:
        short.append(
            f"host RAM needs {format_bytes(host_need)} + {format_bytes(HOST_HEADROOM_BYTES)}"
            f" for the system, has {format_bytes(host_cap)}"
            + (" (unified memory: GPU and CPU share it)" if s.unified else "")
        )
    short.extend(est.blockers)
    if not short:
        # a plan must clear the measured variance band too: never propose a tight run
        v = verdict(est, s.platform)
        if v.level in ("tight", "does_not_fit"):
            short.append(v.summary())
    tried = est.runtime_details.get(RAISE_TRIED)
    frac = est.settings.get("mem_fraction_static")
    if short and isinstance(tried, str) and isinstance(frac, float):
        # SGLang: the reason above is the default fraction's; say which raise failed
        short = [f"at SGLang's default --mem-fraction-static {frac:g}: {short[0]}", *short[1:]]
        short[-1] = short[-1].rstrip(".")
        short.append(tried)
    offloaded = s._hf_offloaded(est)
    if offloaded and s.request.no_offload:
        short.append(
            f"device_map='auto' would put {format_bytes(offloaded)} of weights on the CPU "
            "(--no-offload)"
        )
    if not s.gguf and s.request.parallel:
        conc = est.runtime_details.get("max_concurrency")
        if isinstance(conc, int | float) and conc < s.request.parallel:
            short.append(
                f"KV pool holds {conc:.1f} sequences of {cand.ctx} tokens, "
                f"{s.request.parallel} asked"
            )
    host_only = (
        bool(short)
        and n_device_short == 0
        and not (len(short) > 1 or not short[0].startswith("host RAM"))
    )
    return Evaluation(
        cand=cand,
        estimate=est,
        fits=not short,
        margin_bytes=0 if margin is None else margin,
        reason="; ".join(short),
        host_only=host_only,
    )
