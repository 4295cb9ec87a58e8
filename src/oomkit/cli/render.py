"""Human-readable rendering of results (display strings only; JSON goes through serialize)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import CATEGORIES, DeviceUsage, Estimate
from oomkit.units import format_bytes, format_params

if TYPE_CHECKING:
    from oomkit.estimate.verdict import Verdict

__all__ = ["render_estimate"]

_LABELS = {
    "weights": "weights",
    "kv_cache": "KV cache",
    "activations": "activations/compute",
    "overhead": "runtime overhead",
    "gradients": "gradients",
    "optimizer": "optimizer state",
}


def _device_block(
    d: DeviceUsage,
    name: str,
    *,
    explain: bool,
    run_fails: bool = False,
    static_fraction: float | None = None,
    reservations: tuple[tuple[str, int], ...] = (),
) -> list[str]:
    """``run_fails``: the run does not fit for a reason other than this device's total (vLLM's
    KV pool against one full request, a platform reservation): its total is then "within
    capacity", not "fits", so the block never says "fits" above "Does not fit.".
    ``static_fraction``: SGLang's ``mem_fraction_static``; its device total is the whole GPU by
    construction (weights + KV pool fill the static fraction, the rest is kept for activations
    and CUDA graphs: ``oomkit.estimate.sglang``), so the block says the GPU is claimed by
    design instead of "0 free"; the free figure is the verdict's pool margin, stated once.
    ``reservations``: the verdict's platform reservations on this device (Windows' WDDM
    reservation, an attached display): the free figure is the verdict's, net of them, and
    names them (the table said "5.05 GiB free" above the verdict's "4.55 GiB free" on Windows).
    """
    lines = [f"{d.device}  {name}".rstrip()]
    # a training step's optimizer temporaries (torch/optim/adamw.py _multi_tensor_adamw's
    # _foreach_sqrt over every state; ZeRO's step on the largest partition) on their own line,
    # as --json has them (their own component): folded in, "optimizer state 89.75 GiB" read as
    # states where 29.92 GiB of it were the foreach temporaries that a fused step does not take
    temps = sum(c.n_bytes for c in d.components if _step_temporary(c.category, c.label))
    for cat in CATEGORIES:
        b = d.category_bytes(cat) - (temps if cat == "optimizer" else 0)
        if b:
            lines.append(f"  {_LABELS[cat]:<22}{format_bytes(b):>12}")
        if cat == "optimizer" and temps:
            lines.append(f"  {'step temporaries':<22}{format_bytes(temps):>12}")
    total = f"  {'total':<22}{format_bytes(d.total_bytes):>12}"
    if d.capacity_bytes is not None:
        reserved = sum(b for _, b in reservations)
        free = d.capacity_bytes - d.total_bytes - reserved
        fits = d.capacity_bytes >= d.total_bytes  # the totals decide the word, as est.fits
        verdict = ("within capacity" if run_fails else "fits") if fits else "DOES NOT FIT"
        total += f" of {format_bytes(d.capacity_bytes)}  {verdict}"
        if static_fraction is not None and fits:
            total += (
                f" (claimed by design: mem_fraction_static {static_fraction:g} for weights + "
                "KV pool, the rest for activations and CUDA graphs)"
            )
        else:
            after = ""
            if reserved:
                after = " after " + ", ".join(f"{k} {format_bytes(b)}" for k, b in reservations)
            total += f" ({format_bytes(abs(free))} {'free' if free >= 0 else 'over'}{after})"
    lines.append(total)
    if d.capacity_bytes:
        from oomkit.cli.bars import device_bar, use_color

        lines.append(f"  {device_bar(d, color=use_color())}")
    if explain:
        lines.extend(f"    - {c.explain()}" for c in d.components)
    return lines


def _step_temporary(category: str, label: str) -> bool:
    """The optimizer step's temporaries (``oomkit.estimate.training_sharding`` and
    ``oomkit.estimate.training``: "step temporaries (foreach)", "step temporaries of ...")."""
    return category == "optimizer" and label.startswith("step temporaries")


def _does_not_fit_lines(verdict: Verdict) -> list[str]:
    """The verdict's "does not fit" when the device totals alone fit: a reservation of the
    platform, or a runtime margin (the vLLM/SGLang KV pool against one full request)."""
    m = min(
        (x for x in verdict.margins if x.level == "does_not_fit"),
        key=lambda x: x.free_bytes - x.band_bytes,
        default=verdict.tightest,
    )
    if m is None:
        return ["Does not fit."]
    if m.what != "device memory":
        return [f"Does not fit: {m.what} on {m.device}, {format_bytes(-m.free_bytes)} short."]
    lines = [f"Does not fit on {m.device} once the platform's reservations are counted."]
    lines.extend(f"  - {label}: {format_bytes(b)}" for label, b in m.reservations)
    return lines


def _cpu_offload(est: Estimate) -> int:
    """Bytes of weights transformers' ``device_map='auto'`` left in host RAM (0: none)."""
    v = est.runtime_details.get("offloaded_to_cpu_bytes")
    return v if isinstance(v, int) and not isinstance(v, bool) and est.devices else 0


def render_estimate(
    est: Estimate,
    *,
    explain: bool = False,
    verdict: Verdict | None = None,
    on: str | None = None,
    after_verdict: tuple[str, ...] = (),
) -> str:
    """The text output; ``on``: the GPUs a training step runs on (the header names them);
    ``after_verdict``: lines printed under the verdict (Ollama 0.30+'s retry a tier lower)."""
    s = est.settings
    knobs = ", ".join(f"{k}={v}" for k, v in s.items() if v is not None and k != "runtime")
    head = f"{est.model.name} ({est.model.architecture}, {format_params(est.model.params)} params)"
    if est.runtime == "training":
        head += f" training on {on}" if on else " training"
    else:
        head += f" on {est.runtime}"
    lines = [head]
    if knobs:
        lines.append(f"settings: {knobs}")
    gen = est.runtime_details.get("generation")
    ollama_info = est.runtime_details.get("ollama")
    modelled = ollama_info.get("version_modelled") if isinstance(ollama_info, dict) else None
    if isinstance(modelled, str) and modelled:  # the release and the runner this model gets
        lines.append(f"modelled: {modelled}")
    elif isinstance(gen, dict) and gen.get("label"):
        lines.append(f"modelled: {gen['label']}")
    lines.append("")
    run_fails = est.fits is False or (verdict is not None and verdict.level == "does_not_fit")
    frac = est.runtime_details.get("mem_fraction_static") if est.runtime == "sglang" else None
    static = frac if isinstance(frac, float) else None
    reserved = {
        m.device: m.reservations
        for m in (verdict.margins if verdict is not None else ())
        if m.what == "device memory" and m.reservations
    }
    for d in est.devices:
        lines.extend(
            _device_block(
                d,
                "",
                explain=explain,
                run_fails=run_fails,
                static_fraction=static,
                reservations=reserved.get(d.device, ()),
            )
        )
    if est.host.components:
        lines.extend(_device_block(est.host, "(host RAM)", explain=explain))
    lines.append("")
    ollama = est.runtime_details.get("ollama")
    auto = ollama.get("num_gpu") if isinstance(ollama, dict) else None
    if est.fits is True and verdict is not None and verdict.level == "does_not_fit":
        # the verdict decides the exit code: the text never says less than it
        lines.extend(_does_not_fit_lines(verdict))
    elif est.fits is True and isinstance(auto, int):
        layers = est.runtime_details.get("offloaded_layers", f"{auto}/?")
        lines.append(
            f"Runs with {layers} layers on the GPU: Ollama offloads the rest to the CPU "
            "(slower; see `oomkit plan` for a configuration that fits entirely)."
        )
        if verdict is not None and verdict.level == "tight":
            lines.append(verdict.summary())
        else:
            lines.extend(_host_unchecked(verdict))
    elif est.fits is True and est.runtime == "transformers" and _cpu_offload(est) > 0:
        lines.append(
            f"Fits only by CPU offload: device_map='auto' keeps "
            f"{format_bytes(_cpu_offload(est))} of weights in host RAM (very slow generation); "
            "without a device_map (--device-map none, then model.to('cuda')) it does not fit."
        )
        if verdict is not None and verdict.level == "tight":
            lines.append(verdict.summary())
        else:
            lines.extend(_host_unchecked(verdict))
    elif verdict is not None and verdict.level in ("fits", "tight") and est.fits is True:
        # a tight run is never reported as plain "Fits."
        lines.append(verdict.summary())
        lines.extend(f"  - {n}" for n in verdict.notes)
    elif est.fits is True:
        lines.append("Fits.")
    elif est.fits is False and verdict is not None and verdict.level == "tight":
        # over a limit that is not one number (Apple's Metal working set by macOS release)
        lines.append(verdict.summary())
    elif est.fits is False:
        lines.append("Does not fit.")
        lines.extend(f"  - {b}" for b in est.blockers)
    elif verdict is not None and verdict.level == "does_not_fit":
        lines.extend(_does_not_fit_lines(verdict))
    elif not est.devices:
        lines.append("Host RAM unknown: pass --ram SIZE to check the fit.")
    else:
        lines.append("Capacity unknown: pass --gpu NAME or --vram SIZE to check the fit.")
    lines.extend(after_verdict)
    if est.assumptions:
        lines.append("Assumptions:")
        lines.extend(f"  - {a}" for a in est.assumptions)
    return "\n".join(lines)


def _host_unchecked(verdict: Verdict | None) -> list[str]:
    """A line for the host RAM need no --ram checked (the verdict line carries it otherwise)."""
    if verdict is None or verdict.host_unchecked_bytes is None:
        return []
    from oomkit.estimate.verdict_summary import host_unchecked_phrase

    phrase = host_unchecked_phrase(verdict.host_unchecked_bytes)
    return [phrase[0].upper() + phrase[1:] + "."]
