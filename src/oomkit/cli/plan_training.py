"""``oomkit plan MODEL --train ...``: the training run as asked or the changes that make it
fit, each with its verdict, per-GPU peak, launch command and the estimate command that checks
it."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click

from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, print_json
from oomkit.cli.train_options import TrainOptions, precision_for_gpus, seq_for_model
from oomkit.planner.training_method_floor import METHOD_NAMES, method_floor

if TYPE_CHECKING:
    from oomkit.estimate.verdict import Platform
    from oomkit.planner.training import TrainingChange
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import TrainingSettings

__all__ = ["nothing_fits_lines", "plan_training", "size_arg"]


def size_arg(n_bytes: int) -> str:
    """A byte count as ``--vram`` reads it back exactly (``40GiB``, else ``N B``)."""
    return f"{n_bytes >> 30}GiB" if n_bytes % (1 << 30) == 0 else f"{n_bytes}B"


def _where_for_gpus(where: list[str], hardware: Hardware, gpus: int) -> list[str]:
    """The ``--gpu`` words of a ``check:`` command on ``gpus`` GPUs per node: where more than
    one card is named, their count goes with the suggestion (estimate refuses ``--gpus 4``
    beside ``--gpu 2x4090``, ``check_gpu_count``), as ``--gpu 4x<card>`` of the smallest card
    named, the one the per-GPU peak is checked against; a card with no catalog key
    (``--gpu auto``) as its capacity, ``--vram``."""
    named = [d for d in hardware.devices if d.backend != "cpu"]
    if len(named) < 2 or len(named) == gpus:
        return where
    smallest = min(named, key=lambda d: d.capacity_bytes or 0)
    rest = [w for w in where if not w.startswith(("--gpu ", "--vram "))]
    if smallest.key is not None:
        card = f"--gpu {gpus}x{smallest.key}"
        vram = [w for w in where if w.startswith("--vram ")]
        return [card, *vram, *rest]
    if smallest.capacity_bytes is None:
        return where
    return [f"--vram {size_arg(smallest.capacity_bytes)}", *rest]


def nothing_fits_lines(
    spec: ModelSpec,
    settings: TrainingSettings,
    hardware: Hardware,
    platform: Platform | None,
    model: str | None = None,
    where: list[str] | None = None,
    transformers_pinned: bool = False,
) -> list[str]:
    """What to say when no training lever fits (:mod:`oomkit.planner.training_floor`): more
    GPUs only where ZeRO-3 / FSDP sharding brings the per-GPU peak under the GPU, else the
    largest ``--seq`` that fits with every lever; ``model``: the ``check:`` command is added."""
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.breakdown import Estimate
    from oomkit.estimate.training import estimate_training
    from oomkit.estimate.verdict import verdict
    from oomkit.hardware.native_bf16 import native_bf16
    from oomkit.planner.seq_cap import capped_words, model_max_seq
    from oomkit.planner.training import plan_levers, runtime_levers
    from oomkit.planner.training_floor import nothing_fits
    from oomkit.units import format_bytes

    def peak_of(c: TrainingChange) -> int:
        return max((d.total_bytes for d in c.estimate.devices), default=0)

    def run(s: TrainingSettings) -> Estimate | None:
        try:
            return estimate_training(spec, s, hardware)
        except InvalidSettingError:  # a combination the engines refuse
            return None

    def accept(est: Estimate) -> str | None:
        # clear of the band: the advice after "nothing fits" is a setting to run, not a gamble
        level = verdict(est, platform).level
        return level if level == "fits" else None

    cap = min((d.capacity_bytes or 0 for d in hardware.devices), default=0)
    longest = model_max_seq(spec)
    # the planner's own levers (the attention kernel, a transformers release among them): the
    # floor searched without them said "more GPUs" where flash_attention_2 fits one card
    rt = runtime_levers(spec, hardware, transformers_pinned=transformers_pinned)
    bf16 = all(native_bf16(d) for d in hardware.devices)
    found = nothing_fits(settings, lambda s: plan_levers(s, platform, bf16=bf16, runtime=rt),
                         run, accept, longest.tokens if longest else None)  # fmt: skip
    head = (
        "Nothing fits: no training lever oomkit knows brings the per-GPU peak under "
        f"{format_bytes(cap)}"
    )
    if found.sharded is not None:
        c = found.sharded
        lines = [
            f"{head} on {settings.gpus * settings.nodes} GPU(s); more GPUs lower it only by "
            f"sharding the states and gradients (plain DDP keeps a full replica on every GPU, "
            f"and each GPU its own activations): on {c.settings.gpus * c.settings.nodes} GPUs "
            f"(--gpus {c.settings.gpus}), {c.summary}: peak {format_bytes(peak_of(c))} per GPU."
        ]
    elif found.seq is not None:
        c = found.seq
        seq = (
            capped_words(longest, found.memory_seq)
            if longest is not None and found.memory_seq is not None
            else str(c.settings.seq)
        )
        lines = [
            f"{head}, and more GPUs would not: ZeRO-3 / FSDP shard the parameters, gradients and "
            "optimizer states, not a sequence's activations (plain DDP replicates everything). "
            f"The largest --seq that fits is {seq}: {c.summary}: peak "
            f"{format_bytes(peak_of(c))} per GPU."
        ]
    else:
        return [f"{head}, nor does a shorter --seq or more GPUs."]
    s = c.settings
    if model is not None:
        from oomkit.diagnose.training_commands import oomkit_estimate_command

        words = _where_for_gpus(where or [], hardware, s.gpus)
        check = " ".join([oomkit_estimate_command(s, shlex.quote(model)), *words])
        lines.append(f"  check: {check}")
    return lines


def _method_switch(
    spec: ModelSpec,
    settings: TrainingSettings,
    hardware: Hardware,
    platform: Platform | None,
    plans: list[TrainingChange],
    pinned: bool,
) -> dict[str, object] | None:
    """Why the first plan trains another method than the one asked
    (:mod:`oomkit.planner.training_method_floor`): what the asked method needs, with its host
    RAM when that is what ``--ram`` refused (None: the first plan keeps the method)."""
    from oomkit.planner.training import runtime_levers
    from oomkit.units import format_bytes

    if not plans or plans[0].settings.method == settings.method:
        return None
    rt = runtime_levers(spec, hardware, transformers_pinned=pinned)
    floor = method_floor(spec, settings, hardware, platform, rt)
    asked = METHOD_NAMES[settings.method]
    world = settings.gpus * settings.nodes
    if floor is None:
        message = (
            f"{asked} does not fit on {world} GPU(s) with any lever oomkit knows; "
            f"{METHOD_NAMES[plans[0].settings.method]} instead:"
        )
        return {"asked": settings.method, "message": message, "needs": None}
    peak = max((d.total_bytes for d in floor.estimate.devices), default=0)
    host = floor.estimate.host.total_bytes
    ram = hardware.host_ram_bytes
    needs = f"{floor.summary}: peak {format_bytes(peak)} per GPU"
    if host:
        over = f", over --ram {format_bytes(ram)}" if ram is not None and host > ram else ""
        needs += f" and {format_bytes(host)} of host RAM{over}"
    message = (
        f"{asked} does not fit: it needs {needs}; {METHOD_NAMES[plans[0].settings.method]} instead:"
    )
    return {
        "asked": settings.method,
        "message": message,
        "needs": {
            "changes": list(floor.changes),
            "peak_bytes": peak,
            "host_bytes": host,
            "host_ram_bytes": ram,
        },
    }


def plan_training(
    model: str,
    training: TrainOptions,
    hardware: object,
    *,
    tp: int | None,
    offline: bool,
    as_json: bool,
    where: list[str] | None = None,
    os_name: str | None = None,
) -> int:
    """``plan MODEL --train ...``: the run as asked if the verdict calls it "fits", else the
    changes that make it fit (oomkit.planner.training: never one the verdict calls "does not
    fit", "fits" before "tight"; a "tight" run as asked comes after the changes that clear the
    band), each with its verdict, per-GPU peak and launch command, and the ``oomkit estimate
    --train`` command with the plan's flags (``check``): the launch line carries none of them
    (LoRA, checkpointing, ZeRO are the training script's or config's), so without it "add --emit
    deepspeed to the estimate command with these flags" named no flags."""
    import dataclasses

    from oomkit.api import load_model
    from oomkit.estimate.training import estimate_training
    from oomkit.planner.train_launch import training_launch
    from oomkit.planner.trainer_names import trainer_options
    from oomkit.planner.training import (
        TrainingChange,
        platform_allocator,
        suggest_training_changes,
    )
    from oomkit.serialize import SCHEMA_VERSION
    from oomkit.spec.hardware import Hardware
    from oomkit.units import format_bytes

    assert isinstance(hardware, Hardware)
    settings = training.to_settings(tp=tp, overhead_bytes=None)
    # Windows: PyTorch ignores expandable_segments (no lever, priced with the default allocator)
    settings, alloc_note = platform_allocator(settings, os_name)
    n_gpus = len([d for d in hardware.devices if d.backend != "cpu"])
    if n_gpus > 1 and training.gpus in (1, n_gpus):
        settings = dataclasses.replace(settings, gpus=n_gpus)
    spec = load_model(model, offline=True if offline else None)
    settings, alloc_note = seq_for_model(settings, spec, training, alloc_note)
    settings, alloc_note = precision_for_gpus(settings, training, hardware.devices, alloc_note)
    from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes, verdict

    platform = Platform(
        os=os_name,
        segments=tuple(device_segment(d) for d in hardware.devices),
        unified_bytes=tuple(device_unified_bytes(d) for d in hardware.devices),
    )
    est = estimate_training(spec, settings, hardware)
    level = verdict(est, platform).level
    pinned = training.transformers_version is not None
    asked = TrainingChange(changes=("as asked",), settings=settings, estimate=est, level=level)
    if level in ("fits", "unknown") and est.fits is not False:
        plans = [asked]
    elif level == "tight":
        clear = suggest_training_changes(
            spec, settings, hardware, platform=platform, only_fits=True, transformers_pinned=pinned
        )
        plans = [*clear, asked]
    else:
        plans = suggest_training_changes(
            spec, settings, hardware, platform=platform, transformers_pinned=pinned
        )

    def launch_fields(s: TrainingSettings) -> dict[str, str | None]:
        launch = training_launch(spec, s)
        return {
            "command": launch.command,
            "launcher": launch.launcher,
            "config_file": launch.config_file,
            "config": launch.config,
        }

    def peak(p: TrainingChange) -> int:
        return max((d.total_bytes for d in p.estimate.devices), default=0)

    def check(s: TrainingSettings) -> str:
        from oomkit.diagnose.training_commands import oomkit_estimate_command

        base = oomkit_estimate_command(s, shlex.quote(model))
        return " ".join([base, *(where or [])])

    switched = _method_switch(spec, settings, hardware, platform, plans, pinned)
    nothing: list[str] = []
    if not plans and not est.blockers:  # memory: whether more GPUs or a shorter --seq would fit
        nothing = nothing_fits_lines(spec, settings, hardware, platform, model, where, pinned)
    check_line = nothing[1].removeprefix("  check: ") if len(nothing) > 1 else None
    from oomkit.estimate.training_seq import past_max_note

    # a --seq past the model's trained maximum: planned as asked, and said
    notes = [n for n in (alloc_note, past_max_note(spec, settings.seq)) if n]
    if as_json:
        print_json(
            {
                "schema_version": SCHEMA_VERSION,
                "model": spec.name,
                "training": True,
                "fits": bool(plans),
                **(
                    {"nothing_fits": {"message": nothing[0], "check_command": check_line}}
                    if nothing
                    else {}
                ),
                **({"notes": notes} if notes else {}),
                **({"method_change": switched} if switched else {}),
                "plans": [
                    {
                        "changes": list(p.changes),
                        "method": p.settings.method,
                        "verdict": p.level,
                        "settings": dataclasses.asdict(p.settings),
                        "peak_bytes": peak(p),
                        "host_bytes": p.estimate.host.total_bytes,
                        "peak_phase": p.estimate.runtime_details.get("peak_phase"),
                        **launch_fields(p.settings),
                        "trainer_options": list(trainer_options(p.settings)),
                        "check_command": check(p.settings),
                    }
                    for p in plans
                ],
            }
        )
    else:
        cap = min((d.capacity_bytes or 0 for d in hardware.devices), default=0)
        world = settings.gpus * settings.nodes  # --gpus 4 with one card named read "on 1 GPU(s)"
        click.echo(f"{spec.name}: {settings.method} fine-tuning on {world} GPU(s)")
        for note in notes:
            click.echo(f"Note: {note}.")
        if not plans and est.blockers:  # not memory: no lever and no GPU lifts it
            click.echo(f"Nothing fits: {est.blockers[0]}.")
        for line in nothing:
            click.echo(line)
        if switched:
            click.echo(str(switched["message"]))
        for i, p in enumerate(plans):
            head = "Plan" if i == 0 else f"Alternative {i}"
            if p.settings.method != settings.method:  # the method the user asked is not this one
                head += f" ({METHOD_NAMES[p.settings.method]}, not {METHOD_NAMES[settings.method]})"
            phase = p.estimate.runtime_details.get("peak_phase")
            tight = "; tight: within the band of real runs" if p.level == "tight" else ""
            click.echo(
                f"{head}: {' + '.join(p.changes)}: peak {format_bytes(peak(p))} per GPU "
                f"of {format_bytes(cap)} (in {phase}{tight})"
            )
            host = p.estimate.host.total_bytes
            if host:  # CPU offload: the RAM it needs, checked only against a given --ram
                ram = hardware.host_ram_bytes
                of = f" of {format_bytes(ram)}" if ram else " (not checked: pass --ram SIZE)"
                click.echo(f"  host RAM: {format_bytes(host)}{of}")
            launch = training_launch(spec, p.settings)
            click.echo(f"  run: {launch.command}")
            for line in trainer_options(p.settings):  # the levers as the trainer spells them
                click.echo(f"  set: {line}")
            click.echo(f"  check: {check(p.settings)}")
            if launch.config_file and launch.config:
                click.echo(f"  {launch.config_file}:")
                click.echo("\n".join(f"    {x}" for x in launch.config.splitlines()))
    return EXIT_OK if plans else EXIT_NEGATIVE
