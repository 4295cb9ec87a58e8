"""``oomkit probe MODEL``: trace the real model on fake tensors and report its peak memory.

torch and transformers are imported only when the command runs; a missing one is a one-line
error (exit 1), as is a model whose code lives outside transformers (``trust_remote_code``).
"""

from __future__ import annotations

from typing import Any

import click

from oomkit.cli.output import print_json
from oomkit.units import format_bytes

__all__ = ["probe_command"]


#: probe() keyword -> the flag that sets it (errors name the flag)
_FLAGS: dict[str, str] = {
    "seq": "--seq",
    "batch": "--batch",
    "lora_rank": "--lora-rank",
    "lora_dropout": "--lora-dropout",
    "lora_targets": "--lora-targets",
    "dtype": "--dtype",
    "train": "--train",
    "optimizer_impl": "--optimizer-impl",
    "held_logits": "--held-logits",
    "compiled": "--compile",
    "gpus": "--gpus",
    "fsdp": "--fsdp",
    "fsdp_strategy": "--fsdp",
    "fsdp_version": "--fsdp-version",
}
#: options that only change a training step (click parameter names)
_TRAIN_ONLY: tuple[str, ...] = (
    "optimizer", "optimizer_impl", "keep_grads", "optimizer_in_backward", "chunked_loss",
    "held_logits", "offload_activations", "compiled", "grad_checkpointing",
    "no_mixed_precision", "first_step", "fsdp", "fsdp_version",
)  # fmt: skip
_LORA_ONLY: tuple[str, ...] = ("lora_rank", "lora_dropout", "lora_targets")


def _reject_unused(ctx: click.Context, train: str | None) -> None:
    """A training option without ``--train`` (a LoRA option without lora/qlora) is an error,
    as in ``oomkit estimate``: never silently ignored."""
    from click.core import ParameterSource

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)

    if train is None:
        bad = [n for n in (*_TRAIN_ONLY, *_LORA_ONLY) if given(n)]
        if bad:
            flag = _FLAGS.get(bad[0], "--" + bad[0].replace("_", "-"))
            raise click.UsageError(f"{flag} needs --train full|lora|qlora")
    elif train == "full":
        bad = [n for n in _LORA_ONLY if given(n)]
        if bad:
            flag = "--" + bad[0].replace("_", "-")
            raise click.UsageError(f"{flag} needs --train lora|qlora")


def _render(d: dict[str, object], step: tuple[str, ...] = ()) -> list[str]:
    mode = str(d["mode"])
    head = f"{d['model']}: {mode} probe, batch {d['batch']} x seq {d['seq']}, {d['dtype']}"
    if mode != "inference":
        head += f", {d['optimizer']}"
        if d["grad_checkpointing"]:
            head += ", gradient checkpointing"
        head += "".join(f", {s}" for s in step)
    rounded = " (CUDA allocator blocks)" if d["rounded_to_cuda_blocks"] else ""
    lines = [
        head,
        f"Peak allocated: {format_bytes(int(str(d['peak_bytes'])))}{rounded} "
        f"during {str(d['peak_phase']).replace('_', ' ')}",
        "At the peak:",
    ]
    cats = d["peak_by_category"]
    assert isinstance(cats, dict)
    for k, v in cats.items():
        if int(v) > 0:
            lines.append(f"  {k.replace('_', ' '):<16} {format_bytes(int(v)):>12}")
    phases = d["phase_peaks"]
    assert isinstance(phases, dict)
    shown = [f"{k.replace('_', ' ')} {format_bytes(int(v))}" for k, v in phases.items()]
    lines.append("Phase peaks: " + ", ".join(shown))
    mods = d["top_modules"]
    assert isinstance(mods, list)
    if mods:
        lines.append("Modules by memory added while running (forward):")
        lines.extend(
            f"  {m['module']:<40} +{format_bytes(int(m['increase_bytes']))} "
            f"(peak {format_bytes(int(m['peak_bytes']))})"
            for m in mods[:5]
        )
    notes = d["notes"]
    assert isinstance(notes, list)
    lines.extend(f"Note: {n}" for n in notes)
    lines.append(
        f"{d['parameter_count']:,} parameters ({d['trainable_parameter_count']:,} trainable); "
        f"{d['ops']} ops traced in {d['seconds']} s. Not counted: the CUDA context."
    )
    reserved = d.get("reserved_peak_bytes")
    if isinstance(reserved, int) and reserved:
        lines.insert(
            2,
            f"Peak reserved: {format_bytes(reserved)} (caching allocator replay, "
            "max_memory_reserved)",
        )
    return lines


@click.command("probe")
@click.argument("model")
@click.option(
    "--train", type=click.Choice(["full", "lora", "qlora"]), default=None,
    help="Trace forward + backward + optimizer step (default: one inference forward).",
)  # fmt: skip
@click.option("--seq", type=click.IntRange(min=1), default=2048, show_default=True)
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--dtype", type=click.Choice(["bf16", "fp16", "fp32"]), default="bf16", show_default=True
)
@click.option(
    "--optimizer", type=click.Choice(["adamw", "adamw8bit", "paged_adamw", "paged_adamw8bit",
                                      "adafactor", "sgd", "sgd_momentum"]),
    default="adamw", show_default=True,
)  # fmt: skip
@click.option(
    "--optimizer-impl", type=click.Choice(["foreach", "forloop", "fused"]), default="foreach",
    show_default=True, help="torch.optim implementation (forloop: foreach=False, adamw_hf).",
)  # fmt: skip
@click.option(
    "--keep-grads", is_flag=True,
    help="zero_grad(set_to_none=False): gradients stay allocated between steps (torch < 2.0).",
)  # fmt: skip
@click.option(
    "--optimizer-in-backward", is_flag=True,
    help="Step each parameter as its gradient is ready (torchtune optimizer_in_bwd).",
)  # fmt: skip
@click.option(
    "--chunked-loss", is_flag=True,
    help="Output head and cross-entropy in 8 chunks (torchtune CEWithChunkedOutputLoss).",
)  # fmt: skip
@click.option(
    "--held-logits", type=click.Choice(["none", "compute", "fp32"]), default="none",
    show_default=True, help="Logits the loop keeps through backward (fp32: torchtune 2024).",
)  # fmt: skip
@click.option(
    "--offload-activations", is_flag=True,
    help="Saved tensors to host memory (torchtune enable_activation_offloading).",
)  # fmt: skip
@click.option(
    "--compile", "compiled", is_flag=True,
    help="torch.compile'd decoder layers (min-cut partition) and compiled chunked loss "
         "(torchtune compile=True).",
)  # fmt: skip
@click.option("--grad-checkpointing", is_flag=True, help="Non-reentrant activation checkpointing.")
@click.option("--lora-rank", type=click.IntRange(min=1), default=16, show_default=True)
@click.option(
    "--lora-dropout", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0,
    show_default=True, help="PEFT lora_dropout (> 0 saves a mask per adapted layer).",
)  # fmt: skip
@click.option(
    "--lora-targets", default=None,
    help="Comma-separated module names (default: PEFT's for the architecture); 'all-linear'.",
)  # fmt: skip
@click.option(
    "--no-mixed-precision", is_flag=True,
    help="Train with parameters and optimizer states in --dtype (no fp32 master copy).",
)  # fmt: skip
@click.option(
    "--attn", "attn_implementation", type=click.Choice(["sdpa", "eager"]), default="sdpa",
    show_default=True, help="Attention implementation the model is built with.",
)  # fmt: skip
@click.option(
    "--first-step", is_flag=True,
    help="Trace the first step (optimizer states created inside it) instead of a later one.",
)  # fmt: skip
@click.option(
    "--fsdp", "fsdp", is_flag=False, flag_value="FULL_SHARD", default=None,
    type=click.Choice(["FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD"],
                      case_sensitive=False),
    help="Trace rank 0 of an FSDP2 run over --gpus ranks (fake process group; bare flag = "
         "FULL_SHARD; FULL_SHARD and SHARD_GRAD_OP are traced).",
)  # fmt: skip
@click.option(
    "--gpus", type=int, default=1, show_default=True, help="Ranks the --fsdp run shards over."
)
@click.option(
    "--fsdp-version", type=click.Choice(["1", "2"]), default="2", show_default=True,
    help="2: fully_shard (FSDP2, per-parameter shards); 1: FullyShardedDataParallel (flat "
         "parameters, e.g. torchtune before July 2024).",
)  # fmt: skip
@click.option("--exact-bytes", is_flag=True, help="Do not round to CUDA allocator blocks.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def probe_command(
    ctx: click.Context, model: str, train: str | None, seq: int, batch: int, dtype: str,
    optimizer: str,
    optimizer_impl: str, keep_grads: bool, optimizer_in_backward: bool, chunked_loss: bool,
    held_logits: str, offload_activations: bool, compiled: bool, grad_checkpointing: bool,
    lora_rank: int, lora_dropout: float, lora_targets: str | None,
    no_mixed_precision: bool, attn_implementation: str, first_step: bool, fsdp: str | None,
    gpus: int, fsdp_version: str, exact_bytes: bool, as_json: bool,
) -> None:  # fmt: skip
    """Trace MODEL (catalog name or config.json) on fake tensors: real peak, no GPU.

    \b
    Builds the transformers model from its config under FakeTensorMode (nothing is
    allocated), runs one forward (or a training step) and reports the allocator peak
    by category, its phase and the modules that add the most. Needs oomkit[torch].
    """
    from oomkit.cli.flags import with_flag_names
    from oomkit.errors import InvalidSettingError
    from oomkit.inprocess.probe import _require_torch, check_probe_options, probe
    from oomkit.inprocess.probe_fsdp import check_fsdp_options

    _reject_unused(ctx, train)
    if fsdp is None and ctx.get_parameter_source("fsdp_version") not in (
        click.core.ParameterSource.DEFAULT,
        None,
    ):
        raise click.UsageError("--fsdp-version needs --fsdp")
    targets = (
        tuple(t.strip() for t in lora_targets.split(",")) if lora_targets is not None else None
    )
    try:
        check_probe_options(  # before torch: a seq of 10^23 overflows torch.randint
            seq=seq, batch=batch, lora_rank=lora_rank, lora_dropout=lora_dropout,
            lora_targets=targets,
        )  # fmt: skip
        check_fsdp_options(
            gpus=gpus, fsdp=fsdp is not None, fsdp_strategy=(fsdp or "FULL_SHARD").upper(),
            train=train, version=int(fsdp_version),
        )  # fmt: skip
        _require_torch()  # a one-line error before the step options import torch
        result = _probe(
            model, train=train, seq=seq, batch=batch, dtype=dtype, optimizer=optimizer,
            grad_checkpointing=grad_checkpointing, lora_rank=lora_rank, lora_targets=targets,
            lora_dropout=lora_dropout, mixed_precision=not no_mixed_precision,
            attn_implementation=attn_implementation, round_to_cuda_blocks=not exact_bytes,
            steady_state=not first_step, optimizer_impl=optimizer_impl, keep_grads=keep_grads,
            optimizer_in_backward=optimizer_in_backward, chunked_loss=chunked_loss,
            held_logits=held_logits, offload_activations=offload_activations, compiled=compiled,
            probe=probe, gpus=gpus, fsdp=fsdp is not None,
            fsdp_strategy=(fsdp or "FULL_SHARD").upper(), fsdp_version=int(fsdp_version),
        )  # fmt: skip
    except InvalidSettingError as e:
        raise with_flag_names(e, _FLAGS) from None
    doc = result.to_dict()
    if as_json:
        print_json(doc)
        return
    step = tuple(
        label
        for label, on in (
            (f"--optimizer-impl {optimizer_impl}", optimizer_impl != "foreach"),
            ("--keep-grads", keep_grads),
            ("--optimizer-in-backward", optimizer_in_backward),
            ("--chunked-loss", chunked_loss),
            (f"--held-logits {held_logits}", held_logits != "none"),
            ("--offload-activations", offload_activations),
            ("--compile", compiled),
            (f"FSDP{fsdp_version} {(fsdp or '').upper()} rank 0 of {gpus}", fsdp is not None),
        )
        if on
    )
    for line in _render(doc, step):
        click.echo(line)


def _probe(
    model: str, *, optimizer_impl: str, keep_grads: bool, optimizer_in_backward: bool,
    chunked_loss: bool, held_logits: str, offload_activations: bool, compiled: bool, probe: Any,
    **kw: Any,
) -> Any:  # fmt: skip
    from oomkit.inprocess.probe_step import StepOptions

    return probe(
        model,
        step=StepOptions(
            optimizer_impl=optimizer_impl, zero_grad_set_to_none=not keep_grads,
            optimizer_in_backward=optimizer_in_backward,
            loss="chunked" if chunked_loss else "standard", held_logits=held_logits,
            offload_activations=offload_activations,
            compiled_layers=compiled, compiled_loss=compiled and chunked_loss,
        ),
        **kw,
    )  # fmt: skip
