"""Training options of ``oomkit estimate MODEL --train ...`` and their handling.

``training_options`` adds the options to a click command and hands them to it as one
``training`` argument (a :class:`TrainOptions`); ``run_training`` builds
:class:`~oomkit.spec.settings.TrainingSettings`, runs the training estimator and prints the
result (and, with ``--emit``, a config or launch command after it).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from oomkit.cli.params import COUNT
from oomkit.spec.settings import (
    FSDP_STRATEGIES,
    MIXED_PRECISION,
    OPTIMIZERS,
    TRAIN_METHODS,
    TrainingSettings,
)
from oomkit.spec.settings_lora import LORA_FIELDS

__all__ = [
    "ARGS_META",
    "INFERENCE_ONLY_OPTIONS",
    "ArgsCommand",
    "TrainOptions",
    "gpu_label",
    "reject_inference_options",
    "run_training",
    "training_options",
    "typed_flag",
]

F = TypeVar("F", bound=Callable[..., Any])

#: estimate parameters that only make sense for inference (click parameter names)
INFERENCE_ONLY_OPTIONS: tuple[str, ...] = (
    "runtime",
    "quant",
    "ctx",
    "parallel",
    "batch_size",
    "ubatch",
    "kv_dtype",
    "cache_type_k",
    "cache_type_v",
    "kv_unified",
    "swa_full",
    "flash_attn",
    "n_gpu_layers",
    "n_cpu_moe",
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enforce_eager",
    "prompt_logprobs",
    "llm_class",
    "pooling",
    *LORA_FIELDS,
    "runtime_version",
    "draft_model",
    "draft_quant",
    "draft_ngl",
    "draft_ctx",
    "draft_cache_type_k",
    "draft_cache_type_v",
    "draft_device",
    "backend",
    "device_map",  # transformers from_pretrained / generate() options
    "max_memory",
    "max_new_tokens",
    # plan's inference search options: the training planner read none of them, so
    # `plan --train --headroom 20GiB` answered as if 1 GiB were kept free
    "headroom",
    "min_ctx",
    "min_quant",
    "no_offload",
    "prefer",
)
#: plan's search options, refused with --train only when they differ from their defaults
_PLAN_SEARCH_OPTIONS = frozenset({"headroom", "min_ctx", "min_quant", "no_offload", "prefer"})
#: why an inference-only option means nothing to a training step, where "is an inference
#: option" alone does not say it
_WHY_NOT_TRAINING: dict[str, str] = {
    "runtime_version": (
        "it picks an inference runtime's generation and training has no runtime generations; "
        "for torch < 1.11 autograd use --softmax-saves-input"
    ),
}
#: the training option an inference option's user most likely meant
_TRAINING_COUNTERPART: dict[str, str] = {
    "parallel": "--micro-batch N (sequences per GPU per forward; --grad-accum for more)",
    "batch_size": "--micro-batch N (sequences per GPU per forward; --grad-accum for more)",
    "ubatch": "--micro-batch N (sequences per GPU per forward; --grad-accum for more)",
    "ctx": "--seq N (tokens per training sequence)",
    "quant": "--train qlora (a 4-bit frozen base)",
    "kv_dtype": "nothing: training keeps no KV cache",
    "cache_type_k": "nothing: training keeps no KV cache",
    "cache_type_v": "nothing: training keeps no KV cache",
    "headroom": (
        "--vram SIZE (the memory the step may use; the verdict keeps the band of real runs "
        "free itself)"
    ),
    "min_ctx": "--seq N (tokens per training sequence)",
    "min_quant": "--train qlora (a 4-bit frozen base)",
}

#: what ``estimate --train ... --emit X`` prints (the option itself is the estimate command's)
EMIT_CHOICES = ("deepspeed", "fsdp", "torchrun", "accelerate")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainOptions:
    """The raw training options as click parsed them (``method`` None: no ``--train``)."""

    method: str | None
    optimizer: str
    optimizer_impl: str
    mixed_precision: str
    master_weights: bool
    micro_batch: int
    seq: int | None
    grad_checkpointing: str
    zero: int
    fsdp: str | None
    gpus: int
    nodes: int
    sp: bool
    lora_rank: int
    lora_targets: str | None
    offload_optimizer: bool
    offload_params: bool
    chunked_loss: bool
    fused_loss: bool
    optimizer_in_backward: bool
    attn_implementation: str
    grad_accum: int
    fragmentation: float | None
    activation_offloading: bool = False
    #: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    expandable_segments: bool = False
    #: QLoRA prepared with PEFT's prepare_model_for_kbit_training (fp32 non-4-bit parameters)
    kbit_prep: bool = False
    #: torch < 1.11 autograd: softmax saved its input too (pytorch/pytorch#64000)
    softmax_saves_input: bool = False
    #: torch.compile of the layers and the loss (torchtune compile=True); no_compile_loss:
    #: the layers only
    compile: bool = False
    no_compile_loss: bool = False
    #: the transformers release of the run (QLoRA of an MoE: experts NF4 before 5.0)
    transformers_version: str | None = None
    #: the estimate command's ``--emit`` when --train is given: a config or launch command
    emit: str | None = None
    #: every dropout of the architecture at this p (None: the model config's own values)
    dropout: float | None = None

    def to_settings(self, *, tp: int | None, overhead_bytes: int | None) -> TrainingSettings:
        """Build validated settings (raises InvalidSettingError with a one-line message)."""
        loss = "fused" if self.fused_loss else ("chunked" if self.chunked_loss else "standard")
        targets = (
            tuple(t.strip() for t in self.lora_targets.split(",") if t.strip())
            if self.lora_targets
            else None
        )
        return TrainingSettings(
            method=self.method or "full",
            optimizer=self.optimizer,
            optimizer_impl=self.optimizer_impl,
            mixed_precision=self.mixed_precision,
            master_weights=self.master_weights,
            micro_batch=self.micro_batch,
            seq=self.seq if self.seq is not None else 2048,  # the model's: seq_for_model
            grad_checkpointing=self.grad_checkpointing,
            zero=self.zero,
            fsdp=self.fsdp is not None,
            fsdp_strategy=self.fsdp or "FULL_SHARD",
            gpus=self.gpus,
            nodes=self.nodes,
            tp=tp or 1,
            sp=self.sp,
            lora_rank=self.lora_rank,
            lora_targets=targets,
            offload_optimizer=self.offload_optimizer,
            offload_params=self.offload_params,
            loss=loss,
            optimizer_in_backward=self.optimizer_in_backward,
            attn_implementation=self.attn_implementation,
            dropout=self.dropout,
            fragmentation_fraction=self.fragmentation,
            expandable_segments=self.expandable_segments,
            kbit_prep=self.kbit_prep,
            overhead_bytes=overhead_bytes,
            grad_accum=self.grad_accum,
            activation_offloading=self.activation_offloading,
            softmax_saves_input=self.softmax_saves_input,
            compiled=self.compile,
            compiled_loss=self.compile and not self.no_compile_loss,
            fused_experts_unquantized=_fused_experts_unquantized(self.transformers_version),
        )


def seq_for_model(
    settings: TrainingSettings, spec: Any, training: TrainOptions, note: str | None
) -> tuple[TrainingSettings, str | None]:
    """The settings with the model's default ``--seq`` (GPT-2: its 1024-position table) when
    ``--seq`` was not given, and ``note`` joined with the note saying so."""
    from oomkit.estimate.transformers_layouts import default_training_seq

    seq, seq_note = default_training_seq(spec, training.seq)
    if seq == settings.seq:
        return settings, note
    notes = "; ".join(n for n in (note, seq_note) if n) or None
    return dataclasses.replace(settings, seq=seq), notes


def _fused_experts_unquantized(version: str | None) -> bool:
    """``--transformers-version``: whether bitsandbytes leaves fused MoE experts unquantized
    (the transformers generation ``v5-fused-experts``, from 5.0.0)."""
    if version is None:
        return True
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.generations import generation_effect, resolve_generation

    try:
        gen = resolve_generation("transformers", version)
    except InvalidSettingError:
        raise InvalidSettingError(
            "--transformers-version must be a transformers release such as 4.57 or 5.2 (or a "
            f"date such as 2025-06), got {version[:40]!r}",
            setting="--transformers-version",
        ) from None
    return bool(generation_effect(gen, "bnb_fused_experts_unquantized", True))


_OPTIONS: tuple[Callable[[F], F], ...] = (
    click.option("--train", "train_method", type=click.Choice(TRAIN_METHODS),
                 help="Estimate a training step: full fine-tuning, LoRA or QLoRA"),
    click.option("--optimizer", "train_optimizer", type=click.Choice(OPTIMIZERS),
                 default="adamw", show_default=True, help="Training optimizer"),
    click.option("--optimizer-impl", "train_optimizer_impl",
                 type=click.Choice(("foreach", "fused", "forloop")), default="foreach",
                 show_default=True, help="torch optimizer implementation (step temporaries)"),
    click.option("--mixed-precision", "train_mixed_precision", type=click.Choice(MIXED_PRECISION),
                 default="bf16", show_default=True, help="Compute dtype (no = fp32)"),
    click.option("--master-weights/--no-master-weights", "train_master_weights", default=True,
                 show_default=True,
                 help="fp32 master weights under mixed precision (--no-master-weights: pure "
                 "bf16 like torchtune)"),
    click.option("--micro-batch", "train_micro_batch", type=int, default=1, show_default=True,
                 help="Sequences per GPU per forward"),
    click.option("--seq", "train_seq", type=COUNT, default=None,
                 help="Tokens per sequence (4096, 32k as --ctx takes them) [default: 2048, or "
                 "a shorter learned position table: GPT-2 1024]"),
    click.option("--grad-checkpointing", "train_grad_checkpointing", is_flag=False,
                 flag_value="full", default="none",
                 type=click.Choice(("none", "full", "selective")),
                 help="Activation checkpointing (bare flag = full)"),
    click.option("--zero", "train_zero", type=click.IntRange(0, 3), default=0,
                 help="DeepSpeed ZeRO stage"),
    click.option("--fsdp", "train_fsdp", is_flag=False, flag_value="FULL_SHARD", default=None,
                 type=click.Choice(FSDP_STRATEGIES, case_sensitive=False),
                 help="PyTorch FSDP sharding strategy (bare flag = FULL_SHARD)"),
    click.option("--gpus", "train_gpus", type=int, default=1, show_default=True,
                 help="GPUs per node"),
    click.option("--nodes", "train_nodes", type=int, default=1, show_default=True,
                 help="Nodes"),
    click.option("--sp", "train_sp", is_flag=True, help="Sequence parallelism (with --tp)"),
    click.option("--lora-rank", "train_lora_rank", type=int, default=16, show_default=True,
                 help="LoRA rank r"),
    click.option("--lora-targets", "train_lora_targets",
                 help="LoRA target modules, e.g. q_proj,v_proj or all-linear (default: PEFT's)"),
    click.option("--offload-optimizer", "train_offload_optimizer", is_flag=True,
                 help="Optimizer states on the CPU (DeepSpeed ZeRO-Offload; FSDP: use "
                      "--offload-params)"),
    click.option("--offload-params", "train_offload_params", is_flag=True,
                 help="Parameters on the CPU (ZeRO-3; FSDP CPUOffload: parameters, "
                      "gradients and the optimizer step)"),
    click.option("--chunked-loss", "train_chunked_loss", is_flag=True,
                 help="Chunked cross-entropy (torchtune CEWithChunkedOutputLoss)"),
    click.option("--fused-loss", "train_fused_loss", is_flag=True,
                 help="Fused linear cross-entropy (Liger): no full logits"),
    click.option("--optimizer-in-backward", "train_optimizer_in_backward", is_flag=True,
                 help="Step each parameter during backward (torchtune optimizer_in_bwd)"),
    click.option("--attn-implementation", "train_attn_implementation",
                 type=click.Choice(("sdpa", "flash_attention_2", "eager")), default="sdpa",
                 show_default=True, help="Attention kernel"),
    click.option("--dropout", "train_dropout",
                 type=click.FloatRange(0.0, 1.0, max_open=True),
                 help="Dropout p of every dropout the architecture has (embedding, attention, "
                      "residual; default: the model config's, e.g. GPT-2 0.1): each saves a "
                      "1-byte mask per element for backward"),
    click.option("--grad-accum", "train_grad_accum", type=int, default=1, show_default=True,
                 help="Gradient accumulation steps"),
    click.option("--activation-offloading", "train_activation_offloading", is_flag=True,
                 help="Saved activations to host memory (torchtune enable_activation_offloading)"),
    click.option("--compile", "train_compile", is_flag=True,
                 help="torch.compile'd layers and loss (torchtune compile=True): pointwise "
                      "intermediates recomputed in backward"),
    click.option("--no-compile-loss", "train_no_compile_loss", is_flag=True,
                 help="With --compile: the loss runs eagerly (torchtune < 0.3 compiled the "
                      "model only)"),
    click.option("--softmax-saves-input", "train_softmax_saves_input", is_flag=True,
                 help="torch < 1.11 behaviour: softmax's backward also keeps its input, one "
                      "more heads x seq x seq tensor per eager attention layer "
                      "(pytorch/pytorch#64000, fixed in 1.11)"),
    click.option("--transformers-version", "train_transformers_version",
                 help="transformers release of the run (e.g. 4.57, 5.2; default: the newest): "
                      "QLoRA of an MoE quantizes the experts before 5.0 (one nn.Linear each) "
                      "and keeps them 16-bit from 5.0 (fused 3-D parameters, bitsandbytes#1849)"),
    click.option("--fragmentation", "train_fragmentation", type=float,
                 help="Allocator fragmentation margin as a fraction of the peak (default: the "
                      "smallest measured of the model's family, src/oomkit/data/"
                      "training_band.json)"),
    click.option("--expandable-segments", "train_expandable_segments", is_flag=True,
                 help="The run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the "
                      "allocator's margin and band are those measured with it (0.44-4.88% "
                      "of the allocated peak on an H200, against 0.59-33.84% without)"),
    click.option("--kbit-prep", "train_kbit_prep", is_flag=True,
                 help="QLoRA prepared with PEFT's prepare_model_for_kbit_training (the PEFT "
                      "docs' recipe): embeddings, norms and the head are upcast to fp32, the "
                      "residual stream runs in fp32 and the head is cast to 16 bits each "
                      "forward (+3.4 GiB for Llama-3.1-8B b1 s2048, measured on an H200)"),
)  # fmt: skip


def training_options(fn: F) -> F:
    """Add the training options to a click command; it receives them as ``training``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        raw = {k[len("train_") :]: kwargs.pop(k) for k in list(kwargs) if k.startswith("train_")}
        kwargs["training"] = TrainOptions(**raw)
        return fn(*args, **kwargs)

    out: Any = wrapper
    for opt in reversed(_OPTIONS):
        out = opt(out)
    return out  # type: ignore[no-any-return]


def reject_inference_options(
    ctx: click.Context, training: TrainOptions, *, inference_ok: tuple[str, ...] = ()
) -> None:
    """``--train`` with an inference-only option, or a training option without ``--train``
    (``inference_ok``: training options this inference run reads too, e.g. transformers'
    ``--attn-implementation``)."""
    from click.core import ParameterSource

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)

    def changed(name: str) -> bool:
        """Given with a value other than the default: the web API sends plan's defaults
        (``prefer: quality``) with every body, and asking for the default changes nothing."""
        if not given(name):
            return False
        param = next((p for p in ctx.command.params if p.name == name), None)
        return param is None or ctx.params.get(name) != param.get_default(ctx)

    if training.method is not None:
        bad = [
            n
            for n in INFERENCE_ONLY_OPTIONS
            if (changed(n) if n in _PLAN_SEARCH_OPTIONS else given(n))
        ]
        if bad:
            flag = typed_flag(ctx, bad[0])
            why = _WHY_NOT_TRAINING.get(bad[0])
            if why is not None:
                raise click.UsageError(f"{flag} cannot be used with --train: {why}")
            meant = _TRAINING_COUNTERPART.get(bad[0])
            hint = f"; for training use {meant}" if meant else ""
            raise click.UsageError(
                f"{flag} is an inference option; it cannot be used with --train{hint}"
            )
        lora = [n for n in ("train_lora_rank", "train_lora_targets") if given(n)]
        if lora and training.method == "full":  # full fine-tuning has no adapters to size
            flag = "--" + lora[0][len("train_") :].replace("_", "-")
            raise click.UsageError(f"{flag} sizes LoRA adapters: use --train lora or qlora")
        return
    train_given = [
        p.name
        for p in ctx.command.params
        if p.name and p.name.startswith("train_") and given(p.name) and p.name not in inference_ok
    ]
    if train_given:
        flag = "--" + train_given[0][len("train_") :].replace("_", "-")
        if train_given[0] == "train_expandable_segments":
            # the planner's transformers note names the setting: say why it is not priced here
            raise click.UsageError(
                f"{flag} needs --train full|lora|qlora: expandable segments are measured for "
                "training steps only; for inference (generate()) no band with them is measured, "
                "so the verdict keeps the caching allocator's term"
            )
        if train_given[0] == "train_attn_implementation":  # from_pretrained's, for inference
            raise click.UsageError(
                f"{flag} needs --train full|lora|qlora or --runtime transformers"
            )
        raise click.UsageError(f"{flag} needs --train full|lora|qlora")


#: ``ctx.meta`` key of the raw arguments (:class:`ArgsCommand`)
ARGS_META = "oomkit.raw_args"


class ArgsCommand(click.Command):
    """A click command that keeps its raw arguments in ``ctx.meta`` (:func:`typed_flag`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGS_META] = tuple(args)
        return super().parse_args(ctx, args)


def typed_flag(ctx: click.Context, name: str) -> str:
    """The spelling of parameter ``name`` the user typed (``--batch`` for ``--parallel``), from
    the raw arguments when the command kept them; else its first long name."""
    param = next((p for p in ctx.command.params if p.name == name), None)
    default = "--" + name.replace("_", "-")
    if param is None:
        return default
    names = [*param.opts, *param.secondary_opts]
    for arg in reversed(ctx.meta.get(ARGS_META, ())):  # the last one given is the one used
        if arg == "--":
            continue
        head = str(arg).split("=", 1)[0]
        if head in names:
            return head
    return next((n for n in names if n.startswith("--")), default)


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
        if training.gpus not in (1, len(gpus)):
            raise click.UsageError(
                f"--gpus {training.gpus} disagrees with --gpu '{gpu}' ({len(gpus)} GPUs)"
            )
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
    platform = Platform(
        os=os_name,
        display=display,
        segments=tuple(device_segment(d) for d in hardware.devices),
        unified_bytes=tuple(device_unified_bytes(d) for d in hardware.devices),
    )
    from oomkit.planner.trainer_names import trainer_options

    est = estimate_training(spec, settings, hardware)
    v = training_verdict(spec, settings, hardware, est, platform)
    changes = []
    if v.level == "does_not_fit":
        from oomkit.planner.training import suggest_training_changes

        changes = suggest_training_changes(spec, settings, hardware, platform=platform)
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
            elif not changes:
                click.echo("No training setting the planner knows makes it fit: more GPUs needed.")
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
                click.echo(
                    f"  {i}. {c.summary}: peak {format_bytes(new_peak)} per GPU ({saves}){tight}"
                )
                for line in trainer_options(c.settings):  # as the trainer spells the levers
                    click.echo(f"     set: {line}")
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
    from oomkit.units import format_bytes

    devices = tuple(hardware.devices)
    if len(devices) == 1 and gpus > 1:
        devices *= gpus
    counts: dict[str, int] = {}
    for target in devices:
        cap = target.capacity_bytes
        label = f"{target.name} ({format_bytes(cap)})" if cap else target.name
        counts[label] = counts.get(label, 0) + 1
    if not counts:
        return "a GPU of unknown capacity"
    return ", ".join(f"{n} x {label}" if n > 1 else label for label, n in counts.items())
