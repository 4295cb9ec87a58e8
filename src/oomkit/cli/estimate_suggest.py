"""What ``oomkit estimate`` prints past the breakdown: the changes that make it fit
(``plan``'s search), the command for the estimated configuration (``--emit``), and the
library's ignored-field note in the CLI's flag names."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.planner.core import Plan
    from oomkit.spec.hardware import Hardware

__all__ = ["emit_for_estimate", "flag_names", "render_suggestions", "suggest", "suggestion_dict"]


def flag_names(est: Estimate) -> Estimate:
    """``est`` with the library's "ignored by RUNTIME: field, ..." note in the CLI's flags
    (``prompt_logprobs`` -> ``--prompt-logprobs``), as the stderr warning names them."""
    from oomkit.cli.estimate_args import FLAG_NAMES

    prefix = f"ignored by {est.runtime}: "

    def flags(fields: str) -> str:
        return ", ".join(dict.fromkeys(FLAG_NAMES.get(f, f) for f in fields.split(", ")))

    notes = tuple(
        prefix + flags(a[len(prefix) :]) if a.startswith(prefix) else a for a in est.assumptions
    )
    return est if notes == est.assumptions else dataclasses.replace(est, assumptions=notes)


def emit_for_estimate(
    runtime: str, model: str, est: Estimate, settings: InferenceSettings, offline: bool
) -> tuple[str, tuple[str, ...]]:
    """The command for the estimated configuration: the settings as estimated (defaults
    resolved), in ``runtime``'s flags (``same``: the estimated runtime), and the lines to run
    before it (converting a checkpoint directory for llama.cpp / Ollama)."""
    from oomkit.api import load_model
    from oomkit.estimate.registry import normalize_runtime
    from oomkit.planner.commands import emit_command, prepare_lines
    from oomkit.planner.lmstudio import command_target

    target = est.runtime if runtime == "same" else normalize_runtime(runtime)
    # -r lmstudio / --emit lmstudio: llama.cpp's memory, LM Studio's `lms load` line
    program = command_target(settings.runtime if runtime == "same" else runtime, target)
    s = est.settings
    resolved = dataclasses.replace(
        settings,
        runtime=target,
        quant=str(s["quant"]) if s.get("quant") else settings.quant,
        ctx=int(str(s["ctx"])) if s.get("ctx") else settings.ctx,
    )
    util = s.get("gpu_memory_utilization")
    if isinstance(util, float) and settings.gpu_memory_utilization is None:
        resolved = dataclasses.replace(resolved, gpu_memory_utilization=util)
    fa = s.get("flash_attn")
    opt_in = ("koboldcpp", "llama-cpp-python")  # flash attention off unless asked
    if program in opt_in and isinstance(fa, bool) and settings.flash_attn is None:
        resolved = dataclasses.replace(resolved, flash_attn=fa)  # its opt-in default, as estimated
    ngl = s.get("n_gpu_layers")
    if program == "llama-cpp-python" and isinstance(ngl, int) and settings.n_gpu_layers is None:
        resolved = dataclasses.replace(resolved, n_gpu_layers=ngl)  # Llama(n_gpu_layers=0)
    spec = load_model(model, offline=True if offline else None)
    if target != est.runtime:
        # only what both runtimes share carries over (context, parallel sequences); a GGUF
        # quant means nothing to vLLM and a vLLM format nothing to llama.cpp
        gguf = ("llama.cpp", "ollama")
        if (target in gguf) != (est.runtime in gguf):
            resolved = dataclasses.replace(resolved, quant=None, gpu_memory_utilization=None)
        from oomkit.cli.output import print_warning

        print_warning(
            f"--emit {target}: the command carries the context over from this {est.runtime} "
            f"estimate, not its memory; run `oomkit estimate -r {target}` for {target}'s numbers"
        )
    kind = est.devices[0].device.split(":")[0] if est.devices else "cuda"
    return (
        emit_command(program, resolved, spec, model, device_kind=kind),
        prepare_lines(target, resolved, spec, model),
    )


def suggest(
    model: str, settings: InferenceSettings, hardware: Hardware, est: Estimate, offline: bool
) -> tuple[Plan, ...]:
    """The changes that make it fit, searched by ``plan``'s rule: a compiled pooling run (vLLM
    #49672 / PR #49749, estimate/vllm_compiled_pooling.py) is at best tight, so the search runs
    eager as ``plan --pooling`` does (cli/plan.py) and names ``--enforce-eager`` as a change."""
    from oomkit.estimate.vllm_compiled_pooling import DETAIL
    from oomkit.planner.core import suggest_changes

    eager = bool(est.runtime_details.get(DETAIL))
    if eager:
        settings = dataclasses.replace(settings, enforce_eager=True)
    plans = suggest_changes(model, settings, hardware, offline=True if offline else None)
    if not eager:
        return plans
    flag = "--enforce-eager (no torch.compile: its pooling profile is not modelled)"
    return tuple(dataclasses.replace(p, changes=(flag, *p.changes)) for p in plans)


def _peak(est: Estimate) -> int:
    return max((d.total_bytes for d in est.devices), default=0)


def suggestion_dict(est: Estimate, p: Plan) -> dict[str, object]:
    return {
        "changes": list(p.changes),
        "settings": dict(p.estimate.settings),
        "saving_bytes": _peak(est) - _peak(p.estimate),
        "host_bytes": p.estimate.host.total_bytes,
        "command": p.command,
    }


def render_suggestions(est: Estimate, plans: tuple[Plan, ...]) -> str:
    """The changes that make it fit, best first, each with its saving and command."""
    from oomkit.units import format_bytes

    if not plans:
        return "Nothing the planner can change makes it fit: see `oomkit plan MODEL` for why."
    from oomkit.planner.training_host import host_overflows

    lines = ["To make it fit (each keeps 1 GiB free per GPU; best first):"]
    ram = host_overflows(est)  # the GPUs fit: say what each change leaves in RAM
    for i, p in enumerate(plans, 1):
        saving = _peak(est) - _peak(p.estimate)
        saves = f"  [saves ~{format_bytes(saving)} on the fullest GPU]" if saving > 0 else ""
        if ram:
            host, asked = p.estimate.host.total_bytes, est.host.total_bytes
            saves = f"  [host RAM {format_bytes(host)}, asked {format_bytes(asked)}]"
        lines.append(f"  {i}. {p.summary}{saves}")
        lines.extend(f"     {c}" for c in p.command.splitlines())
    return "\n".join(lines)
