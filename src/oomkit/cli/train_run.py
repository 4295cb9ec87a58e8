"""``oomkit estimate MODEL --train ...``: builds the training settings, runs the training
estimator and its verdict, prints the result (with the changes that make a run that does not
fit, fit) and, with ``--emit``, a config or launch command after it."""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

import click

from oomkit.cli.train_options import (
    TrainOptions,
    check_gpu_count,
    precision_for_gpus,
    seq_for_model,
)

__all__ = ["gpu_label", "run_training"]


def run_training(
    model: str,
    training: TrainOptions,
    *,
    gpu: str | None,
    vram: int | None,
    ram: int | None,
    tp: int | None,
    overhead: int | None,
    offline: bool,
    explain: bool,
    as_json: bool,
    display: bool | None = None,
    os_name: str | None = None,
) -> int:
    """Estimate (or emit configs for) a training step; returns the exit code (0 fits, 4 tight,
    3 does not fit: the verdict's, as for inference)."""
    from oomkit.api import load_model
    from oomkit.cli.output import EXIT_NEGATIVE, EXIT_OK, EXIT_TIGHT, print_json
    from oomkit.cli.params import parse_gpu_list
    from oomkit.cli.render import render_estimate
    from oomkit.estimate.training import estimate_training
    from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes
    from oomkit.hardware.targets import hardware_for
    from oomkit.planner.training import platform_allocator, training_verdict

    settings = training.to_settings(tp=tp, overhead_bytes=overhead)
    # Windows: PyTorch ignores expandable_segments; priced with the default allocator
    settings, alloc_note = platform_allocator(settings, os_name)
    auto = gpu is not None and gpu.strip().lower() == "auto"
    if auto:
        # this machine's GPUs with their free memory, as inference's and plan's --gpu auto
        # (it read "Unknown GPU 'auto'" here; no GPU visible is now that one-line error)
        from oomkit.cli.gpu_choice import choose_hardware

        detected = choose_hardware("auto", vram_bytes=vram, host_ram_bytes=ram).hardware
        gpus: tuple[Any, ...] = detected.devices
    else:
        gpus = parse_gpu_list(gpu) if gpu is not None else ()
    if len(gpus) > 1:
        # `--gpu 8xh100` names the GPUs of one node: they are the data-parallel world
        check_gpu_count(training.gpus, len(gpus), gpu or "")
        settings = dataclasses.replace(settings, gpus=len(gpus))
    if auto:
        devices = detected.devices * (settings.gpus if len(gpus) == 1 else 1)
        hardware = dataclasses.replace(detected, devices=devices)
    else:
        hardware = hardware_for(
            gpus, vram_bytes=vram, host_ram_bytes=ram, n_devices=settings.gpus, os=os_name
        )
    spec = load_model(model, offline=True if offline else None)
    settings, alloc_note = seq_for_model(settings, spec, training, alloc_note)
    settings, alloc_note = precision_for_gpus(settings, training, hardware.devices, alloc_note)
    platform = Platform(
        os=os_name,
        display=display,
        segments=tuple(device_segment(d) for d in hardware.devices),
        unified_bytes=tuple(device_unified_bytes(d) for d in hardware.devices),
    )
    from oomkit.planner.trainer_names import trainer_options

    est = estimate_training(spec, settings, hardware)
    pinned = training.transformers_version is not None
    v = training_verdict(spec, settings, hardware, est, platform, transformers_pinned=pinned)
    changes = []
    refused = None
    if v.level == "does_not_fit":
        from oomkit.planner.training import runtime_levers, suggest_training_changes
        from oomkit.planner.training_method_floor import ram_refused

        changes = suggest_training_changes(
            spec, settings, hardware, platform=platform, transformers_pinned=pinned
        )
        # the CPU offload --ram refused: said with the RAM it needs, not dropped silently
        refused = ram_refused(
            spec, settings, hardware, platform,
            runtime_levers(spec, hardware, transformers_pinned=pinned),
        )  # fmt: skip
        if refused is not None and any(c.settings == refused.settings for c in changes):
            refused = None
    peak = max((d.total_bytes for d in est.devices), default=0)
    if as_json:
        from oomkit.serialize import estimate_to_dict

        doc: dict[str, Any] = {}
        for key, value in estimate_to_dict(est).items():
            doc[key] = value
            if key == "fits":  # as inference: "fits" the totals, "verdict" with the band
                doc["verdict"] = v.level
                notes = (alloc_note, *v.notes) if alloc_note else v.notes
                doc["verdict_details"] = dataclasses.replace(v, notes=notes).to_dict()
        if v.level == "does_not_fit":
            doc["suggestions"] = [
                {
                    "changes": list(c.changes),
                    "saving_bytes": peak - max(d.total_bytes for d in c.estimate.devices),
                    "peak_bytes": max(d.total_bytes for d in c.estimate.devices),
                    "verdict": c.level,
                    "host_bytes": c.estimate.host.total_bytes,
                    "trainer_options": list(trainer_options(c.settings)),
                }
                for c in changes
            ]
            if refused is not None:  # the offload --ram refused, with the RAM it needs
                doc["refused_for_host_ram"] = {
                    "changes": list(refused.changes),
                    "peak_bytes": max(d.total_bytes for d in refused.estimate.devices),
                    "host_bytes": refused.estimate.host.total_bytes,
                    "host_ram_bytes": hardware.host_ram_bytes,
                }
        if training.emit is not None:  # stdout holds one JSON document: the config goes in it,
            from oomkit.estimate.training_emit import emit_text  # as inference's "command"

            doc["command"] = emit_text(training.emit, spec, settings)
        print_json(doc)
    else:
        from oomkit.units import format_bytes

        click.echo(
            render_estimate(est, explain=explain, verdict=v, on=gpu_label(hardware, settings.gpus))
        )
        if alloc_note:
            click.echo(f"Note: {alloc_note}.")
        click.echo(f"Peak in: {est.runtime_details['peak_phase']}")
        if v.level == "does_not_fit":
            if not changes and est.blockers:  # not memory: no lever and no GPU lifts it
                click.echo("No training setting the planner knows makes it fit: see above.")
            elif not changes:  # more GPUs only where sharding lowers the peak, else a shorter --seq
                from oomkit.cli.plan_training import nothing_fits_lines

                where = [f"--gpu {shlex.quote(gpu)}"] if gpu else []
                for line in nothing_fits_lines(
                    spec, settings, hardware, platform, model, where, pinned
                ):
                    click.echo(line)
            else:
                click.echo("To make it fit (best first):")
            from oomkit.planner.training_host import host_overflows

            ram = host_overflows(est)  # the GPUs fit: what each change does to the RAM
            for i, c in enumerate(changes, 1):
                new_peak = max(d.total_bytes for d in c.estimate.devices)
                tight = " (tight: within the band of real runs)" if c.level == "tight" else ""
                saves = (
                    f"host RAM {format_bytes(c.estimate.host.total_bytes)}, asked "
                    f"{format_bytes(est.host.total_bytes)}"
                    if ram
                    else f"saves {format_bytes(peak - new_peak)}"
                )
                host = c.estimate.host.total_bytes
                if host and not ram:  # a CPU offload: the host RAM it needs
                    given = hardware.host_ram_bytes
                    of = (
                        f" of {format_bytes(given)}" if given else " (not checked: pass --ram SIZE)"
                    )
                    saves += f"; host RAM {format_bytes(host)}{of}"
                click.echo(
                    f"  {i}. {c.summary}: peak {format_bytes(new_peak)} per GPU ({saves}){tight}"
                )
                for line in trainer_options(c.settings):  # as the trainer spells the levers
                    click.echo(f"     set: {line}")
            if refused is not None:
                r_peak = max(d.total_bytes for d in refused.estimate.devices)
                click.echo(
                    f"Not offered: {refused.summary}: peak {format_bytes(r_peak)} per GPU, but "
                    f"it needs {format_bytes(refused.estimate.host.total_bytes)} of host RAM, "
                    "over --ram "
                    f"{format_bytes(hardware.host_ram_bytes or 0)}"
                )
        if training.emit is not None:  # "Also print": the estimate, then what --emit names
            from oomkit.estimate.training_emit import emit_heading, emit_text

            click.echo(emit_heading(training.emit))
            click.echo(emit_text(training.emit, spec, settings))
    if v.level == "does_not_fit":
        return EXIT_NEGATIVE
    return EXIT_TIGHT if v.level == "tight" else EXIT_OK


def gpu_label(hardware: Any, gpus: int = 1) -> str:
    """The GPUs of a training estimate's header ("2 x NVIDIA H100 80GB HBM3 (79.19 GiB)");
    ``gpus``: the job's GPUs per node when one card is named for all of them (``--gpu rtx-4090
    --gpus 2`` read "training on NVIDIA GeForce RTX 4090" above two device sections)."""
    from oomkit.cli.bars import device_list

    devices = tuple(hardware.devices)
    if len(devices) == 1 and gpus > 1:
        devices *= gpus
    return device_list(devices) or "a GPU of unknown capacity"
