"""Training options of ``oomkit estimate MODEL --train ...`` and their handling.

``training_options`` adds the options to a click command and hands them to it as one
``training`` argument (a :class:`TrainOptions`), whose ``to_settings`` builds
:class:`~oomkit.spec.settings.TrainingSettings`. ``oomkit.cli.train_run.run_training`` runs the
training estimator and prints the result; ``oomkit.cli.option_scope`` refuses inference options
with ``--train`` and training options without it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from oomkit.cli.args_command import ARGS_META, ArgsCommand, typed_flag
from oomkit.cli.params import TRAIN_SEQ
from oomkit.errors import InvalidSettingError
from oomkit.spec.settings import (
    FSDP_STRATEGIES,
    MIXED_PRECISION,
    OPTIMIZERS,
    TRAIN_METHODS,
    TrainingSettings,
)

__all__ = [
    "ARGS_META",
    "EMIT_CHOICES",
    "ArgsCommand",
    "TrainOptions",
    "check_gpu_count",
    "precision_for_gpus",
    "seq_for_model",
    "training_options",
    "typed_flag",
]

F = TypeVar("F", bound=Callable[..., Any])


#: what ``estimate --train ... --emit X`` prints (the option itself is the estimate command's)
EMIT_CHOICES = ("deepspeed", "fsdp", "torchrun", "accelerate")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainOptions:
    """The raw training options as click parsed them (``method`` None: no ``--train``)."""

    method: str | None
    optimizer: str
    optimizer_impl: str
    #: None: not given (bf16, fp16 where a GPU has no native bf16: :func:`precision_for_gpus`)
    mixed_precision: str | None
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
        from oomkit.estimate.training_precision import check_pure_fp16

        check_pure_fp16(self.mixed_precision, self.master_weights, flags=True)
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
            mixed_precision=self.mixed_precision or "bf16",
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


def check_gpu_count(gpus: int, named: int, gpu: str) -> None:
    """``--gpus N`` against the GPUs ``--gpu`` names (``8xh100``: one node of 8, the
    data-parallel world): N must be 1 (the default) or that count, else the one-line usage
    error (exit 2). One check for ``estimate --train`` and ``plan --train`` (and the web API,
    which runs them): ``plan`` took ``--gpu 4xa100-80gb --gpus 8`` and printed a launch for 8
    GPUs priced on 4, where ``estimate`` refused it."""
    if named > 1 and gpus not in (1, named):
        raise click.UsageError(f"--gpus {gpus} disagrees with --gpu '{gpu}' ({named} GPUs)")


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


def precision_for_gpus(
    settings: TrainingSettings, training: TrainOptions, devices: Sequence[Any], note: str | None
) -> tuple[TrainingSettings, str | None]:
    """The settings in fp16 mixed precision when ``--mixed-precision`` was not given and a GPU
    has no native bf16 (compute capability below 8.0: T4, V100, RTX 20xx;
    :mod:`oomkit.hardware.native_bf16`), and ``note`` joined with the note saying so. A pure
    16-bit run (``--no-master-weights``) keeps bf16: pure fp16 has no loss scaling that works
    (:meth:`TrainOptions.to_settings` refuses it)."""
    if training.mixed_precision is not None or not settings.master_weights:
        return settings, note
    from oomkit.hardware.native_bf16 import native_bf16

    old = next((d for d in devices if not native_bf16(d)), None)
    if old is None:
        return settings, note
    cc = getattr(old, "compute_capability", None) or "?"
    said = (
        f"fp16 mixed precision (the default on this GPU): {old.name} (compute capability {cc}) "
        "has no native bf16 (emulated or refused before 8.0); --mixed-precision bf16 to price bf16"
    )
    notes = "; ".join(n for n in (note, said) if n)
    return dataclasses.replace(settings, mixed_precision="fp16"), notes


def _fused_experts_unquantized(version: str | None) -> bool:
    """``--transformers-version``: whether bitsandbytes leaves fused MoE experts unquantized
    (the transformers generation ``v5-fused-experts``, from 5.0.0)."""
    if version is None:
        return True
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


#: transformers ``OptimizerNames`` (training_args.py; TRL's SFTConfig/GRPOConfig inherit
#: ``optim`` from TrainingArguments) -> (oomkit's optimizer, its implementation or None), so
#: the ``optim="..."`` oomkit plan prints, or a Trainer config's, is accepted by
#: ``--optimizer``. The Trainer builds ``adamw_torch``/``adamw_torch_fused`` as
#: ``torch.optim.AdamW`` (``fused=True`` for the latter), ``adamw_bnb_8bit``/``adamw_8bit``
#: as bitsandbytes ``AdamW`` with ``optim_bits=8``, the ``paged_*`` names with
#: ``is_paged=True`` (states in CUDA unified memory, which the driver evicts to host RAM
#: under pressure: oomkit counts them under host, not in the GPU's peak), ``adamw_torch_8bit``
#: as torchao's ``AdamW8bit``, ``adafactor`` as transformers' Adafactor, ``lion_32bit`` as
#: bitsandbytes Lion, ``sgd`` as ``torch.optim.SGD`` (momentum 0). Names oomkit has no layout
#: for (``paged_lion_*``, ``ademamix*``, ``galore_*``, ``adamw_torch_4bit``) stay refused.
OPTIMIZER_ALIASES: dict[str, tuple[str, str | None]] = {
    "adamw_torch": ("adamw", None),
    "adamw_torch_fused": ("adamw", "fused"),
    "adamw_bnb_8bit": ("adamw8bit", None),
    "adamw_8bit": ("adamw8bit", None),
    "paged_adamw_32bit": ("paged_adamw", None),
    "paged_adamw_8bit": ("paged_adamw8bit", None),
    "adamw_torch_8bit": ("torchao_adamw8bit", None),
    "lion_32bit": ("lion", None),
}


def resolve_optimizer(name: str, impl: str) -> tuple[str, str]:
    """``(optimizer, optimizer_impl)`` for ``--optimizer`` given as oomkit's name or the HF
    Trainer's (:data:`OPTIMIZER_ALIASES`).

    >>> resolve_optimizer("adamw_torch_fused", "foreach")
    ('adamw', 'fused')
    >>> resolve_optimizer("paged_adamw_8bit", "foreach")
    ('paged_adamw8bit', 'foreach')
    """
    if name not in OPTIMIZER_ALIASES:
        return name, impl
    optimizer, alias_impl = OPTIMIZER_ALIASES[name]
    return optimizer, alias_impl or impl


_OPTIONS: tuple[Callable[[F], F], ...] = (
    click.option("--train", "train_method", type=click.Choice(TRAIN_METHODS),
                 help="Estimate a training step: full fine-tuning, LoRA or QLoRA"),
    click.option("--optimizer", "train_optimizer",
                 type=click.Choice((*OPTIMIZERS, *OPTIMIZER_ALIASES)),
                 default="adamw", show_default=True,
                 help="Training optimizer; the HF Trainer/TRL optim names (adamw_torch, "
                      "adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit, ...) are aliases"),
    click.option("--optimizer-impl", "train_optimizer_impl",
                 type=click.Choice(("foreach", "fused", "forloop")), default="foreach",
                 show_default=True, help="torch optimizer implementation (step temporaries)"),
    click.option("--mixed-precision", "train_mixed_precision", type=click.Choice(MIXED_PRECISION),
                 default=None,
                 help="Compute dtype (no = fp32) [default: bf16; fp16 on a GPU without native "
                      "bf16: compute capability below 8.0, T4, V100, RTX 20xx]"),
    click.option("--master-weights/--no-master-weights", "train_master_weights", default=True,
                 show_default=True,
                 help="fp32 master weights under mixed precision (--no-master-weights: pure "
                 "bf16 like torchtune)"),
    click.option("--micro-batch", "train_micro_batch", type=int, default=1, show_default=True,
                 help="Sequences per GPU per forward"),
    click.option("--seq", "train_seq", type=TRAIN_SEQ, default=None,
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
        raw["optimizer"], raw["optimizer_impl"] = resolve_optimizer(
            raw["optimizer"], raw["optimizer_impl"]
        )
        kwargs["training"] = TrainOptions(**raw)
        return fn(*args, **kwargs)

    out: Any = wrapper
    for opt in reversed(_OPTIONS):
        out = opt(out)
    return out  # type: ignore[no-any-return]
