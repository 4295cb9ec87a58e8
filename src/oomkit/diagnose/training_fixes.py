"""Fixes for a training OOM, each sized by the training estimator.

When the log shows a training run (:mod:`oomkit.diagnose.training_context`: HF Trainer,
accelerate, DeepSpeed, PEFT, torchtune lines, or a ``loss.backward()`` / ``optimizer.step()``
frame) and the model is known (``doctor --model``, or a model the log names that the catalog
resolves), :func:`training_fixes` rebuilds the failing run as
:class:`~oomkit.spec.settings.TrainingSettings` (what the log states; the rest at the
estimator's defaults, each default listed in every fix's ``why``), runs
:func:`oomkit.estimate.training.estimate_training` for it on the GPU the message shows
(``total capacity``), and once more per change. A fix's ``expected_saving_bytes`` is the
difference of the two per-GPU peaks; its ``why`` gives both peaks, the phase of each and whether
the new peak fits. The changes are the planner's training levers
(:data:`oomkit.planner.training.LEVERS`: gradient checkpointing, chunked cross-entropy, 8-bit
AdamW, ZeRO-3 / FSDP FULL_SHARD over the GPUs the job already has, optimizer states on the CPU,
LoRA, QLoRA) plus the largest micro-batch that fits (a binary search over the estimator, with
gradient accumulation raised to keep the effective batch), the next ZeRO stage, and a smaller
LoRA rank. Spreading the states over more GPUs than the log shows is a hardware change: labelled
and ranked last. Each fix names the option of the stack the log came from (Trainer arguments,
DeepSpeed JSON, accelerate config, PEFT; a torchtune run only torchtune overrides:
:mod:`oomkit.diagnose.training_commands`) and the ``oomkit estimate`` command that reproduces
its numbers with every setting the estimate used.

A torchtune run is sized as torchtune trains it: in its ``dtype`` with no fp32 master copy,
with ``optimizer_in_bwd`` the optimizer steps inside backward, so no fix raises gradient
accumulation (torchtune refuses the two together): a smaller ``batch_size`` is offered as what
it is, a smaller effective batch. Rule fixes for what the log shows is already in place
(checkpointing on, a 4-bit base, bf16) are dropped (:func:`already_done`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import Fix, size_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES, EstimatedFix, resolve_log_model
from oomkit.diagnose.training_commands import _cmds, _oomkit_cmd
from oomkit.diagnose.training_context import TrainingLogSetup, training_setup_from_log
from oomkit.diagnose.training_fixes_more import (
    lora_rank_fix,
    more_gpus_fix,
    offload_activations_fix,
    zero_next_fix,
)
from oomkit.diagnose.training_observed import ObservedRun, logged_a_step, observed_run

if TYPE_CHECKING:
    from oomkit.diagnose.events import OomEvent
    from oomkit.diagnose.rules import Finding, FixProvider
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import TrainingSettings

__all__ = [
    "training_fixes",
    "training_settings_from_log",
    "with_training_fixes",
]

_TRAINING_RUNTIMES = frozenset({"pytorch", "accelerate", "deepspeed"})
# the rules' own (generic or log-arithmetic) fixes that a sized training fix replaces
_SUPERSEDES: dict[str, tuple[str, ...]] = {
    "micro_batch": ("Cut the batch size",),
    "checkpointing": ("Recompute activations",),
    "lora": ("Load the weights quantized", "Spread or offload the model"),
    "qlora": ("Load the weights quantized", "Spread or offload the model"),
    "adam8bit": ("Spread or offload the model", "Use an 8-bit or paged optimizer"),
    "offload": ("Spread or offload the model",),
}
# least intrusive first (the planner's lever order, oomkit.planner.training), for ranking fixes
# that fit: no change to the model or the result first, then memory/speed trades, then methods
_ORDER = {
    "expandable": -1,  # an environment variable: no quality or speed cost
    "checkpointing": 0, "chunked_loss": 1, "adam8bit": 2, "zero_next": 3, "shard": 4,
    "micro_batch": 5, "offload_activations": 6, "offload": 6, "lora_rank": 7, "lora": 8,
    "qlora": 9, "more_gpus": 10,
}  # fmt: skip


def _fb(n: int | None) -> str:
    return size_text(n)


def _ph(phase: object) -> str:
    return str(phase).replace("_", " ")


def training_settings_from_log(
    setup: TrainingLogSetup, total_params: int | None = None
) -> tuple[TrainingSettings, tuple[str, ...]]:
    """The run as :class:`TrainingSettings` and the facts assumed because the log lacks them.

    ``total_params`` (the model's parameter count) reads a logged trainable-parameter count:
    at least half the model trainable is full fine-tuning, less is an adapter method.

    Raises:
        InvalidSettingError: a combination the estimator refuses (e.g. ZeRO with FSDP).
    """
    from oomkit.spec.settings import TrainingSettings

    d = TrainingSettings()
    assumed: list[str] = []

    def pick(value: object, default: object, label: str) -> object:
        if value is None:
            assumed.append(f"{label} {default}")
            return default
        return value

    method = setup.method
    if method is None and setup.trainable_params and total_params:
        method = "full" if setup.trainable_params * 2 >= total_params else "lora"
    method = str(pick(method, "full", "method"))
    fsdp = setup.fsdp_strategy is not None
    zero = setup.zero or 0
    gpus = setup.gpus if setup.gpus is not None else 1
    if setup.gpus is None and (zero or fsdp):
        assumed.append("1 GPU (the log does not give the world size)")
    gc = setup.grad_checkpointing
    in_bwd = bool(setup.optimizer_in_backward)
    if setup.master_weights is None and setup.framework == "torchtune":
        assumed.append("no fp32 master weights (torchtune trains in its dtype)")
    kwargs: dict[str, object] = {
        "method": method,
        "micro_batch": pick(setup.micro_batch, d.micro_batch, "micro-batch"),
        "seq": pick(setup.seq, d.seq, "sequence length"),
        "grad_checkpointing": "full"
        if gc
        else str(pick(None if gc is None else "none", "none", "gradient checkpointing")),
        "optimizer": pick(setup.optimizer, d.optimizer, "optimizer"),
        "mixed_precision": pick(setup.mixed_precision, d.mixed_precision, "mixed precision"),
        "zero": zero,
        "fsdp": fsdp,
        "fsdp_strategy": setup.fsdp_strategy or d.fsdp_strategy,
        "gpus": gpus,
        # FSDP's only CPU offload (CPUOffload(offload_params=True)) moves the parameters too
        "offload_optimizer": bool(setup.offload_optimizer) and not fsdp,
        "offload_params": bool(setup.offload_optimizer) and fsdp,
        "loss": setup.loss or d.loss,
        # the optimizer steps inside backward: nothing accumulates (torchtune refuses both)
        "grad_accum": 1 if in_bwd else setup.grad_accum or 1,
        "activation_offloading": bool(setup.activation_offloading),
        "optimizer_in_backward": in_bwd,
        # torchtune casts the model to its `dtype` and steps those parameters (no fp32 copy)
        "master_weights": setup.master_weights
        if setup.master_weights is not None
        else setup.framework != "torchtune",
    }
    if method != "full":
        kwargs["lora_rank"] = pick(setup.lora_rank, d.lora_rank, "LoRA rank")
        kwargs["lora_targets"] = setup.lora_targets
        if setup.lora_targets is None:
            assumed.append("LoRA targets: PEFT's defaults")
    return TrainingSettings(**kwargs), tuple(assumed)  # type: ignore[arg-type]


def _hardware(e: OomEvent, settings: TrainingSettings, hardware: Hardware | None) -> Hardware:
    """The user's GPUs, else the job's GPUs with the capacity the message states."""
    from oomkit.spec.hardware import DeviceTarget, Hardware

    if hardware is not None and hardware.devices:
        return hardware
    name = f"GPU {e.device}" if e.device is not None else "GPU"
    target = DeviceTarget(name=name, capacity_bytes=e.total_bytes)
    return Hardware(devices=(target,) * settings.gpus)


# --- the fixes -----------------------------------------------------------------------------------


class _Sizer:
    """Runs the estimator for the base run and each change; builds the fixes."""

    def __init__(
        self, spec: ModelSpec, base: TrainingSettings, hw: Hardware, assumed: Sequence[str],
        framework: str | None, model_ref: str, failed_phase: str | None = None,
        tt_model: str | None = None, observed: ObservedRun | None = None,
    ) -> None:  # fmt: skip
        from oomkit.estimate.training import estimate_training

        self.spec, self.base_settings, self.hw = spec, base, hw
        self.framework, self.model_ref, self.tt_model = framework, model_ref, tt_model
        self.observed = observed
        self.base = estimate_training(spec, base, hw)
        basis = f"oomkit's training estimate for {spec.name}"
        phases = self.base.runtime_details.get("phases")
        self.failed_key: str | None = None
        if failed_phase and isinstance(phases, dict):
            key = {"forward": "forward_end"}.get(failed_phase, failed_phase)
            if key in phases:
                self.failed_key = key
                basis += (f"; the log failed in the {failed_phase.replace('_', ' ')}, estimated "
                          f"at {_fb(phases[key])} allocated there")  # fmt: skip
        if assumed:
            basis += f"; not in the log, assumed: {', '.join(assumed)}"
        if observed is not None and observed.note:
            basis += f"; {observed.note}"
        self.basis = f"({basis})"
        # rule fixes the log already answers: batch 1 cannot be cut, bf16/fp16 is already on
        stated = " ".join(assumed)
        self.moot: tuple[str, ...] = (
            *(("Cut the batch size",) if base.micro_batch == 1 and "micro-batch" not in stated
              else ()),
            *(("Run in bf16/fp16",) if base.mixed_precision != "no" and "precision" not in stated
              else ()),
            # the log's numbers say checkpointing is already on (training_observed)
            *(("Recompute activations",) if observed is not None and observed.note
              and base.grad_checkpointing == "full" else ()),
        )  # fmt: skip

    def run(self, s: TrainingSettings, hw: Hardware | None = None) -> Estimate | None:
        from oomkit.errors import OomkitError
        from oomkit.estimate.training import estimate_training

        if self.framework == "torchtune" and s.zero:
            return None  # torchtune shards with FSDP, it has no DeepSpeed ZeRO
        try:
            return estimate_training(self.spec, s, hw or self.hw)
        except (OomkitError, ValueError):
            return None

    def fits(self, est: Estimate) -> bool | None:
        d = est.devices[0]
        if d.capacity_bytes is None:
            return None
        return d.total_bytes + HEADROOM_BYTES <= d.capacity_bytes

    def as_printed(self, s: TrainingSettings) -> TrainingSettings:
        """``s`` as the printed option trains it: outside torchtune the cross-entropy option is
        Liger's fused linear cross-entropy (``--use_liger_kernel``: no full logits at all,
        ``loss="fused"``), not torchtune's chunked one."""
        if self.framework != "torchtune" and s.loss == "chunked" and self.base_settings.loss != (
            "chunked"
        ):  # fmt: skip
            return dataclasses.replace(s, loss="fused")
        return s

    def _same_phase(self, est: Estimate, p0: object) -> str:
        """Both runs' allocation in one phase (the log's failing phase, else the base peak's)."""
        ph0 = self.base.runtime_details.get("phases")
        ph1 = est.runtime_details.get("phases")
        key = self.failed_key or p0
        if not (isinstance(ph0, dict) and isinstance(ph1, dict) and key in ph0 and key in ph1):
            return ""
        where = ", where the log failed" if self.failed_key else ""
        return (f"; same phase in both ({_ph(key)}{where}): {_fb(ph0[key])} -> "
                f"{_fb(ph1[key])} allocated")  # fmt: skip

    def fix(
        self, change: str, title: str, s: TrainingSettings, est: Estimate, *, hardware: bool = False
    ) -> EstimatedFix | None:
        d0, d1 = self.base.devices[0], est.devices[0]
        saving = d0.total_bytes - d1.total_bytes
        if saving <= 0:
            return None
        p0 = self.base.runtime_details.get("peak_phase", "?")
        p1 = est.runtime_details.get("peak_phase", "?")
        parts, key = [], p0
        cats0 = self.base.runtime_details.get("phase_categories")
        cats1 = est.runtime_details.get("phase_categories")
        if p0 != p1 and isinstance(cats0, dict) and isinstance(cats1, dict):
            key = p1  # one phase for both: a split across phases misleads (weights "grow")
        for cat, label in (
            ("weights", "weights"),
            ("gradients", "gradients"),
            ("optimizer", "optimizer states"),
            ("activations", "activations"),
        ):
            if key != p0 or p0 != p1:
                a, b = cats0[key].get(cat, 0), cats1[key].get(cat, 0)  # type: ignore[index]
            else:
                a, b = d0.category_bytes(cat), d1.category_bytes(cat)
            if a != b:
                parts.append(f"{label} {_fb(a)} -> {_fb(b)}")
        why = (f"per-GPU peak {_fb(d0.total_bytes)} ({p0}) -> {_fb(d1.total_bytes)} ({p1}), "
               f"saves {_fb(saving)}")  # fmt: skip
        # the category split exists only at each run's own peak: say which phases it compares
        if parts and p0 == p1:
            why += f"; at the {_ph(p0)} peak of both: {'; '.join(parts)}"
        elif p0 == p1:  # no tensor changes: the allocator's margin (expandable segments)
            why += f"; at the {_ph(p0)} peak of both: the same tensors, a smaller allocator margin"
        else:  # e.g. 8-bit AdamW changes no weights, whichever phase peaks
            why += f"; the peak moves (before: {_ph(p0)}, after: {_ph(p1)}; different phases)"
            if parts:
                where = f"in the {_ph(key)} of both" if key != p0 else "each at its own peak"
                why += f"; by category {where}: {'; '.join(parts)}"
        why += self._same_phase(est, p0)
        ok = self.fits(est)
        ob = self.observed
        if ob is not None and ob.shortfall is not None and ob.note is not None:
            # an inferred run: judged by what the log lacked, not by the estimate's own fit
            freed = self._freed_where_failed(est)
            if freed is not None:
                ok = freed >= ob.shortfall
                why += (f"; the log lacked {_fb(ob.shortfall)} where it failed and this frees "
                        f"{_fb(freed)} there")  # fmt: skip
        if ok is not None:
            left = (d1.capacity_bytes or 0) - d1.total_bytes
            cap = _fb(d1.capacity_bytes)
            if ok:
                why += f"; fits the {cap} GPU with {_fb(left)} left"
            elif left < 0:
                why += f"; still {_fb(-left)} over the {cap} GPU"
            else:
                why += f"; leaves only {_fb(left)} of the {cap} GPU (under the headroom)"
        verdict = "" if ok is None else ", fits" if ok else ", not enough alone"
        title = (f"{title}: saves {_fb(saving)} (peak {_fb(d0.total_bytes)} -> "
                 f"{_fb(d1.total_bytes)}{verdict})")  # fmt: skip
        return EstimatedFix(
            title=title,
            why=f"{why}. {self.basis}",
            commands=_cmds(change, s, self.framework, self.model_ref, self.tt_model),
            expected_saving_bytes=saving,
            hardware=hardware,
            fits=ok,
            order=_ORDER.get(change),
            supersedes=(*_SUPERSEDES.get(change, ()), *self.moot),
        )

    def _freed_where_failed(self, est: Estimate) -> int | None:
        ph0 = self.base.runtime_details.get("phases")
        ph1 = est.runtime_details.get("phases")
        key = self.failed_key
        if key is None or not (isinstance(ph0, dict) and isinstance(ph1, dict)):
            return None
        return int(ph0[key]) - int(ph1.get(key, 0))


def _micro_batch(z: _Sizer) -> list[Fix | None]:
    """The largest smaller micro-batch that fits AND divides ``micro-batch x accumulation``,
    with the accumulation that restores the effective batch (4 x 1 -> 2 x 2, not 4 x 1 -> 3 x 1:
    :mod:`oomkit.planner.effective_batch`); a torchtune step in backward cannot accumulate, so
    there the largest that fits, as a smaller effective batch."""
    from oomkit.diagnose.model_fixes import largest
    from oomkit.planner.effective_batch import accumulation_for, smaller_divisors

    s = z.base_settings
    if s.micro_batch < 2:
        return []
    in_bwd = s.optimizer_in_backward  # the step runs in backward: nothing can accumulate

    def with_mb(mb: int) -> TrainingSettings:
        accum = accumulation_for(s.micro_batch, s.grad_accum, mb)
        if in_bwd or accum is None:
            return dataclasses.replace(s, micro_batch=mb)
        return dataclasses.replace(s, micro_batch=mb, grad_accum=accum)

    def ok(mb: int) -> bool:
        est = z.run(with_mb(mb))
        return est is not None and z.fits(est) is True

    known = z.fits(z.base) is not None
    # ascending, so the search over their positions finds the largest divisor that fits
    divs = list(reversed(smaller_divisors(s.micro_batch, 1 if in_bwd else s.grad_accum)))
    if in_bwd:
        divs = list(range(1, s.micro_batch))
    i = largest(0, len(divs) - 1, lambda k: ok(divs[k])) if known else None
    if i is not None:
        mb = divs[i]
    elif known:
        mb = 1  # nothing fits alone: the smallest, named "not enough alone"
    else:  # no capacity to check against: the divisor nearest half
        mb = max((d for d in divs if 2 * d <= s.micro_batch), default=1)
    new = with_mb(mb)
    est = z.run(new)
    if est is None:
        return []
    if in_bwd:
        title = (f"Micro-batch {s.micro_batch} -> {mb}, no gradient accumulation (the "
                 f"optimizer steps in backward): the effective batch shrinks "
                 f"{s.micro_batch * s.gpus * s.nodes} -> {mb * s.gpus * s.nodes}")  # fmt: skip
        return [z.fix("micro_batch", title, new, est)]
    world = s.gpus * s.nodes
    b0 = s.micro_batch * s.grad_accum * world
    b1 = new.micro_batch * new.grad_accum * world
    eff = f"effective batch {b0} kept" if b0 == b1 else f"the effective batch changes: {b0} -> {b1}"
    title = (f"Micro-batch {s.micro_batch} -> {mb}, gradient accumulation {s.grad_accum} -> "
             f"{new.grad_accum} ({eff})")  # fmt: skip
    fix = z.fix("micro_batch", title, new, est)
    # a larger micro-batch that fits but does not divide: said, not offered (it changes the batch)
    above = largest(mb + 1, s.micro_batch - 1, ok) if known and mb + 1 < s.micro_batch else None
    if fix is not None and above is not None:
        per = "per GPU " if world > 1 else ""
        fix = dataclasses.replace(fix, why=f"micro-batch {above} would fit too, but it does not "
                                  f"divide the {s.micro_batch * s.grad_accum} sequences {per}per "
                                  f"step, so no accumulation keeps the effective batch; "
                                  f"{fix.why}")  # fmt: skip
    return [fix]


def _levers(z: _Sizer) -> list[Fix | None]:
    """The planner's single levers (its micro-batch halving is replaced by the search above)."""
    from oomkit.planner import training as planner

    names = _lever_changes()
    titles = {
        "expandable": "The allocator's expandable segments (PYTORCH_CUDA_ALLOC_CONF)",
        "checkpointing": "Turn on gradient (activation) checkpointing",
        "chunked_loss": "Chunked / fused cross-entropy (no full fp32 logits)",
        "adam8bit": "8-bit AdamW (bitsandbytes)",
        "offload": "Optimizer states on the CPU (DeepSpeed ZeRO-Offload)",
        "lora": "LoRA instead of full fine-tuning",
        "qlora": "QLoRA: a 4-bit (NF4) frozen base with LoRA adapters",
    }
    out: list[Fix | None] = []
    for lever in planner.LEVERS:
        change = names.get(lever)
        if change is None or change in ("micro_batch", "zero_next"):  # their own makers
            continue
        step = lever(z.base_settings)
        if step is None:
            continue
        s = z.as_printed(step[1])
        est = z.run(s)
        if est is None:
            continue
        if change == "offload" and s.fsdp:
            title = "Parameters, gradients and optimizer step on the CPU (FSDP CPUOffload)"
        else:
            title = titles.get(change) or _shard_title(s)
        fix = z.fix(change, title, s, est)
        lg = z.observed.logits if z.observed is not None else None
        if change == "chunked_loss" and lg is not None and fix is not None:
            # the failing request is the logits: the loss over the vocabulary is the lever
            fix = dataclasses.replace(fix, order=-2, title=f"{fix.title}; the failing request "
                                      f"is {lg.describe(z.spec.vocab_size)}")  # fmt: skip
        out.append(fix)
    return out


def _lever_changes() -> dict[object, str]:
    from oomkit.planner import training as planner

    return {
        planner._expandable: "expandable",
        planner._checkpointing: "checkpointing",
        planner._chunked_loss: "chunked_loss",
        planner._adam8bit: "adam8bit",
        planner._zero2: "zero_next",
        planner._shard: "shard",
        planner._micro_batch: "micro_batch",
        planner._offload: "offload",
        planner._lora: "lora",
        planner._qlora: "qlora",
    }


def _combination(z: _Sizer) -> list[Fix | None]:
    """The planner's minimal stack of levers that fits (:func:`planner.training._combination`),
    when it takes more than one change."""
    from oomkit.planner import training as planner

    if z.fits(z.base) is not False:
        return []

    def run(s: TrainingSettings) -> Estimate | None:
        est = z.run(s)
        return est if est is not None and z.fits(est) else None

    combo = planner._combination(z.base_settings, run)
    if combo is None or len(combo.changes) < 2:
        return []
    names = _lever_changes()
    keys: list[str] = []
    for i in combo.levers:  # by position: a name depends on the settings it was made from
        key = names.get(planner.LEVERS[i])
        if key is not None and key not in keys:
            keys.append(key)
    s, est = combo.settings, combo.estimate
    if (printed := z.as_printed(s)) != s and (again := z.run(printed)) is not None and z.fits(
        again
    ):  # fmt: skip
        s, est = printed, again
    accum = (f"micro-batch {s.micro_batch}, no accumulation" if s.optimizer_in_backward
             else f"micro-batch {s.micro_batch} x {s.grad_accum} accumulation steps")  # fmt: skip
    short = {
        "expandable": "expandable segments",
        "checkpointing": "gradient checkpointing",
        "chunked_loss": "fused cross-entropy" if s.loss == "fused" else "chunked cross-entropy",
        "adam8bit": "8-bit AdamW",
        "shard": f"{'FULL_SHARD' if s.fsdp else 'ZeRO stage 3'} over the {s.gpus * s.nodes} GPUs",
        "zero_next": f"ZeRO stage 2 over the {s.gpus * s.nodes} GPUs",
        "micro_batch": accum,
        "offload": "parameters and optimizer on the CPU"
        if s.fsdp
        else "optimizer states on the CPU",
        "lora": "LoRA",
        "qlora": "QLoRA",
    }
    title = "Combine " + " + ".join(short[k] for k in keys)
    fix = z.fix("combined", title, s, est)
    if fix is None:
        return []
    cmds: list[str] = []
    for key in keys:
        cmds.extend(c for c in _cmds(key, s, z.framework, z.model_ref, z.tt_model)[:-1]
                    if c not in cmds)  # fmt: skip
    cmds.append(_oomkit_cmd(s, z.model_ref))
    sup = (*(p for k in keys for p in _SUPERSEDES.get(k, ())), *z.moot)
    order = max(_ORDER[k] for k in keys)
    return [dataclasses.replace(fix, commands=tuple(cmds), supersedes=sup, order=order)]


def _shard_title(s: TrainingSettings) -> str:
    n = s.gpus * s.nodes
    if s.fsdp:
        return f"Fully shard parameters, gradients and optimizer states over the {n} GPUs " \
               f"(fully sharded data parallel, {s.fsdp_strategy})"  # fmt: skip
    return f"Partition parameters, gradients and optimizer states over the {n} GPUs " \
           f"(DeepSpeed ZeRO stage {s.zero})"  # fmt: skip


def _not_fp32(e: OomEvent, s: TrainingSettings, params: int | None) -> bool:
    """The message's own numbers say the weights are not fp32 (docrt23: "Run in bf16/fp16" was
    offered a run whose PyTorch allocation, 21.71 GiB, is below an 8B model's fp32 weights,
    29.92 GiB): one unsharded GPU holds every weight, so less allocated than 4 bytes a parameter
    means 16-bit (or quantized) weights already."""
    if e.allocated_bytes is None or not params or s.gpus * s.nodes != 1:
        return False
    return e.allocated_bytes < 4 * params


def training_fixes(
    spec: ModelSpec,
    setup: TrainingLogSetup,
    e: OomEvent,
    hardware: Hardware | None = None,
    *,
    model_ref: str | None = None,
    completed_steps: int | None = None,
) -> list[Fix]:
    """Estimator-sized fixes for a training OOM (see the module docstring); pure.

    Args:
        spec: the model that was trained.
        setup: what the log says about the run (:func:`training_setup_from_log`).
        e: the primary OOM event (its ``total_bytes`` is the GPU capacity when ``hardware``
            is not given).
        hardware: the user's GPUs (``doctor --gpu/--vram``), else the message's.
        model_ref: the model name for the ``oomkit estimate`` commands (default ``spec.name``).
        completed_steps: steps the log shows completed before the OOM (the run is checked
            against the message's numbers: :mod:`oomkit.diagnose.training_observed`).

    Returns:
        Fixes with ``expected_saving_bytes`` from two training estimates; empty when the log's
        settings are a combination the estimator refuses.
    """
    from oomkit.errors import OomkitError

    try:
        from oomkit.estimate.hf_weights import model_info

        params = model_info(spec).params
        settings, assumed = training_settings_from_log(setup, params)
        hw = _hardware(e, settings, hardware)
        ob = observed_run(spec, settings, setup, assumed, e, hw, completed_steps)
        z = _Sizer(spec, ob.settings, hw, ob.assumed, setup.framework, model_ref or spec.name,
                   setup.phase, setup.torchtune_model, ob)  # fmt: skip
        if _not_fp32(e, ob.settings, params):
            z.moot = (*z.moot, "Run in bf16/fp16")
    except (OomkitError, ValueError):
        return []
    found: list[Fix | None] = []
    makers = (_micro_batch, _levers, zero_next_fix, offload_activations_fix, lora_rank_fix,
              _combination, more_gpus_fix)  # fmt: skip
    for make in makers:
        found.extend(make(z))
    return [f for f in found if f is not None]


def with_training_fixes(
    text: str,
    fallback: FixProvider,
    *,
    model: ModelSpec | None = None,
    hardware: Hardware | None = None,
    runtime: str | None = None,
) -> FixProvider:
    """A fix provider: training fixes when ``text`` is a training run, else ``fallback``'s.

    A training run whose model is unknown gets no estimator fixes (the rules' own stand): the
    inference estimate would not size a training step.
    """

    def training_or_inference(finding: Finding) -> list[Fix]:
        e = finding.primary
        explicit = runtime is not None and runtime.strip().lower() not in (
            "transformers",
            "pytorch",
        )
        if e is None or explicit or e.runtime not in _TRAINING_RUNTIMES or (
            finding.cause == "host_ram"
        ):  # fmt: skip
            return list(fallback(finding))
        setup = training_setup_from_log(text, finding.context.frame_phase)
        if not setup.is_training:
            return list(fallback(finding))
        spec = model or resolve_log_model(setup.model_name) or resolve_log_model(
            finding.context.model_name
        )  # fmt: skip
        if spec is None:
            return []
        ref = setup.model_name if model is None and setup.model_name else spec.name
        steps = finding.context.completed_steps or (1 if logged_a_step(text) else None)
        return training_fixes(spec, setup, e, hardware, model_ref=ref, completed_steps=steps)

    return training_or_inference
