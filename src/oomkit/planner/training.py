"""What to change when a training step does not fit: the usual levers, least intrusive first.

Each lever is one change to the user's :class:`TrainingSettings`, checked with the training
estimator (no second formula). Single changes that fit come first, in the order people reach
for them (they cost nothing in quality and little in speed first); when no single change is
enough, the levers are stacked in that order until the step fits.

Order (:func:`plan_levers`): the allocator's expandable segments (an environment variable) →
PyTorch's fused AdamW step (no foreach temporaries) → QLoRA's embeddings, norms and head left
16-bit (no ``prepare_model_for_kbit_training``) → gradient checkpointing → the trainer's loss
lever (the HF Trainer: Liger's fused linear cross-entropy, ``use_liger_kernel=True``; torchtune:
its chunked cross-entropy) → 8-bit AdamW → shard the model states
(ZeRO-2, then ZeRO-3 / FSDP when there are several GPUs) → a smaller micro-batch that divides
the effective batch (gradient accumulation keeps it) → optimizer states to the CPU → LoRA → QLoRA.

"Fits" is the verdict's (:mod:`oomkit.estimate.verdict`, with the training band of
:mod:`oomkit.estimate.training_band`): a change whose verdict is "does not fit" is never
suggested, and changes the verdict calls "fits" come before those it calls "tight" (each group
in lever order). When every change found is "tight", the lever stack that clears the band is
searched too and put first. :func:`training_verdict` is the verdict of a run with its "safe
margin": the first change, in this order, that the verdict calls "fits".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.training_offload_optim import zero_offload_optimizer
from oomkit.estimate.verdict import Platform, Verdict, verdict
from oomkit.planner.effective_batch import accumulation_for, next_divisor
from oomkit.planner.training_host import host_overflows, host_side_changes
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings

__all__ = [
    "EXPANDABLE_UNSUPPORTED_OS",
    "RuntimeLevers",
    "TrainingChange",
    "plan_levers",
    "platform_allocator",
    "runtime_levers",
    "suggest_training_changes",
    "training_verdict",
]

#: the ``--os`` values whose PyTorch builds ignore ``expandable_segments:True``: c10/cuda's
#: CMakeLists.txt defines ``PYTORCH_C10_DRIVER_API_SUPPORTED`` only ``if(NOT WIN32)``, and
#: without it ``CUDAAllocatorConfig::expandable_segments()`` (c10/cuda/CUDAAllocatorConfig.h)
#: warns "expandable_segments not supported on this platform" and returns false: the default
#: allocator runs (the warning from a Windows wheel, "C:\actions-runner\...\c10/cuda/
#: CUDAAllocatorConfig.h:28": ladaapp/lada#51; pytorch/pytorch#122057)
EXPANDABLE_UNSUPPORTED_OS = frozenset({"windows"})

Lever = Callable[[TrainingSettings], tuple[str, TrainingSettings] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingChange:
    """A change (or a stack of changes) that makes the step fit, with its estimate."""

    changes: tuple[str, ...]
    settings: TrainingSettings
    estimate: Estimate
    #: the verdict's level for this change: "fits" or "tight"
    level: str = "fits"
    #: the positions in the levers searched (:func:`plan_levers`, the doctor's :data:`LEVERS`)
    #: of the levers applied, in order (the micro-batch lever
    #: once per halving); names depend on the settings, these do not
    levers: tuple[int, ...] = ()

    @property
    def summary(self) -> str:
        return " + ".join(self.changes)


def _expandable(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """The caching allocator's expandable segments: no quality or speed cost, and the memory a
    step needs beyond its allocated peak fell from 1.95-33.84% to 0.44-4.09% on the H200 steps
    (``benchmarks/gpu/results/training_boundary_h200_expandable.json``)."""
    if s.expandable_segments:
        return None
    return (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (--expandable-segments)",
        dataclasses.replace(s, expandable_segments=True),
    )


def platform_allocator(
    settings: TrainingSettings, os_name: str | None
) -> tuple[TrainingSettings, str | None]:
    """``settings`` as the allocator runs them on ``os_name``: on Windows PyTorch ignores
    ``expandable_segments:True`` (:data:`EXPANDABLE_UNSUPPORTED_OS`), so the step is priced with
    the default allocator, and the one-line note says why (None: nothing changed)."""
    if not settings.expandable_segments or (os_name or "").lower() not in EXPANDABLE_UNSUPPORTED_OS:
        return settings, None
    note = (
        "--expandable-segments ignored on Windows: PyTorch's Windows builds lack the CUDA driver "
        'API it needs (c10 warns "expandable_segments not supported on this platform" and keeps '
        "the default allocator), so this is priced with the default allocator"
    )
    return dataclasses.replace(settings, expandable_segments=False), note


def _no_expandable(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """:func:`_expandable` where PyTorch ignores it (:data:`EXPANDABLE_UNSUPPORTED_OS`)."""
    return None


def _no_kbit_upcast(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """QLoRA without ``prepare_model_for_kbit_training``: every parameter but the 4-bit linears
    stays 16-bit (reentrant checkpointing then needs ``model.enable_input_require_grads()``,
    which the prep would have called): 3.43 GiB less for Llama-3.1-8B b1 s2048 on the H200
    (``training_boundary_qlora_h200.json``); the adapters still train in the same dtype.

    This is not TRL's ``peft_module_casting_to_bf16`` (which SFTTrainer runs after the prep
    under bf16): that casts the embeddings and head back to bf16 but keeps every ``norm``
    module fp32, and a Llama-style RMSNorm returns ``weight * x.to(input_dtype)``, fp32 again
    with an fp32 weight, so its residual stream stays fp32: it saves the fp32 embeddings/head
    and the head's cast, not the stream (0.50 of the 3.43 GiB above; not measured, not
    modelled). The label says what is modelled, so it is not offered as TRL's cast."""
    if not s.kbit_prep:
        return None
    return (
        "embeddings, norms and head left in bf16: no prepare_model_for_kbit_training "
        "(reentrant checkpointing then needs model.enable_input_require_grads(); drop --kbit-prep)",
        dataclasses.replace(s, kbit_prep=False),
    )


def _checkpointing(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    if s.grad_checkpointing == "full":
        return None
    return "gradient checkpointing (--grad-checkpointing)", dataclasses.replace(
        s, grad_checkpointing="full"
    )


def _chunked_loss(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    if s.loss != "standard":
        return None
    return "chunked cross-entropy (--chunked-loss)", dataclasses.replace(s, loss="chunked")


def _fused_loss(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """The HF Trainer's loss lever: Liger's fused linear cross-entropy
    (``TrainingArguments(use_liger_kernel=True)``, transformers ``training_args.py``
    ``use_liger_kernel``; ``LigerFusedLinearCrossEntropyLoss`` in liger-kernel
    ``src/liger_kernel/transformers/model/llama.py``): the logits are never materialised. The
    Trainer has no chunked cross-entropy, so :func:`_chunked_loss` (torchtune's
    ``CEWithChunkedOutputLoss``) is not its lever: the planner tried only that one, and answered
    "nothing fits, more GPUs" for Llama-3.1-8B QLoRA s8192 on a 12 GB card where
    ``--fused-loss`` with checkpointing fits."""
    if s.loss == "fused":
        return None
    return (
        "Liger's fused linear cross-entropy: no full logits (use_liger_kernel=True; --fused-loss)",
        dataclasses.replace(s, loss="fused"),
    )


def _torchtune_chunked_loss(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """:func:`_chunked_loss` for a torchtune run (the planner's ``optimizer_in_backward`` runs
    are torchtune's, :mod:`oomkit.planner.trainer_names`): named as torchtune takes it."""
    step = _chunked_loss(s)
    if step is None:
        return None
    return (
        "chunked cross-entropy: torchtune's CEWithChunkedOutputLoss (--chunked-loss)",
        step[1],
    )


def _fused_step(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """PyTorch's fused AdamW step (``torch.optim.AdamW(fused=True)``; the HF Trainer's
    ``optim="adamw_torch_fused"``, transformers ``OptimizerNames.ADAMW_TORCH_FUSED``): one
    kernel per parameter group, so none of the foreach step's state-sized temporaries
    (``_multi_tensor_adamw``'s ``_foreach_sqrt`` over every ``exp_avg_sq``, torch/optim/adamw.py;
    :mod:`oomkit.estimate.training_states`). Same update, no quality cost. DeepSpeed (ZeRO)
    steps with its own optimizer, and torchtune's in-backward step is per parameter: neither
    has the temporaries."""
    if s.optimizer != "adamw" or s.optimizer_impl != "foreach" or s.zero:
        return None
    if s.optimizer_in_backward:
        return None
    return (
        'fused AdamW step: no foreach temporaries (optim="adamw_torch_fused"; '
        "--optimizer-impl fused)",
        dataclasses.replace(s, optimizer_impl="fused"),
    )


def _adam8bit(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """8-bit AdamW states: a GPU lever only while the states are on the GPU. Under ZeRO-Offload
    the HF Trainer's accelerate swaps it for DeepSpeedCPUAdam, and FSDP CPU offload steps it on
    the CPU (:mod:`oomkit.estimate.training_offload_optim`): no GPU saving either way."""
    if s.optimizer not in ("adamw", "paged_adamw") or s.offload_optimizer or s.offload_params:
        return None
    return "8-bit AdamW (--optimizer adamw8bit)", dataclasses.replace(s, optimizer="adamw8bit")


def _zero2(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """ZeRO-2 before ZeRO-3: it partitions the gradients and optimizer states but keeps the
    parameters whole, so no all-gather per layer in forward and backward (ZeRO paper section
    7: stage 3 moves 1.5x the data of stages 1-2; the DeepSpeed and HF Trainer docs: "ZeRO-2 is
    faster than ZeRO-3"). Jumping from DDP to ZeRO-3 planned Llama-3.1-8B on 4 x A100 80GB
    with ZeRO-3 where ZeRO-2 fits with 24 GiB free."""
    if s.gpus * s.nodes < 2 or s.fsdp or s.zero >= 2 or s.offload_params:
        return None
    return "ZeRO-2 (--zero 2)", dataclasses.replace(s, zero=2)


def _shard(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    if s.gpus * s.nodes < 2 or s.zero == 3 or (s.fsdp and s.fsdp_strategy == "FULL_SHARD"):
        return None
    if s.fsdp:
        return "FSDP FULL_SHARD", dataclasses.replace(s, fsdp_strategy="FULL_SHARD")
    return "ZeRO-3 (--zero 3)", dataclasses.replace(s, zero=3)


def _micro_batch(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """The next smaller micro-batch that keeps ``micro-batch x accumulation`` (the divisor
    rule, :mod:`oomkit.planner.effective_batch`); applied again until a step fits, it stops at
    the largest divisor that fits. Halving did not keep it: 3 x 2 -> 1 x 4 trained on 4
    sequences per step where the user asked for 6."""
    if s.micro_batch < 2:
        return None
    if s.optimizer_in_backward:
        # the step runs inside backward, so nothing can accumulate (torchtune refuses
        # optimizer_in_bwd with gradient_accumulation_steps > 1): a smaller batch, no make-up
        mb = s.micro_batch // 2
        return (
            f"micro-batch {mb}, no accumulation: the effective batch changes "
            f"{s.micro_batch * s.gpus * s.nodes} -> {mb * s.gpus * s.nodes} (--micro-batch {mb})",
            dataclasses.replace(s, micro_batch=mb),
        )
    d = next_divisor(s.micro_batch, s.grad_accum)
    accum = accumulation_for(s.micro_batch, s.grad_accum, d) if d is not None else None
    if d is None or accum is None:
        return None
    return (
        f"micro-batch {d} x {accum} accumulation steps, effective batch "
        f"{d * accum * s.gpus * s.nodes} kept (--micro-batch {d} --grad-accum {accum})",
        dataclasses.replace(s, micro_batch=d, grad_accum=accum),
    )


def _offload(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """ZeRO-Offload's optimizer states on the CPU; under FSDP, whose only CPU offload is
    ``CPUOffload(offload_params=True)`` (parameters, gradients and the step: the FSDP docs),
    that one (an optimizer-only offload there changed nothing and is now refused).

    LoRA/QLoRA: the optimizer states are the adapters' (megabytes); what the CPU can take is
    the sharded frozen base, with FSDP FULL_SHARD and ``CPUOffload(offload_params=True)``:
    bitsandbytes' FSDP-QLoRA guide (docs/source/fsdp_qlora.md, with Answer.AI's fsdp_qlora)
    trains "up to 70B parameters on a dual 24GB GPU system" that way, through accelerate's
    FSDP config (``fsdp_offload_params``, ``fsdp_cpu_ram_efficient_loading``) and
    ``bnb_4bit_quant_storage`` in the compute dtype. FSDP, not DeepSpeed's ZeRO-3
    ``offload_param``, is the documented path for a 4-bit base, so a ZeRO run switches engine
    (the label says so). Several GPUs only: the guide's setup."""
    if s.offload_optimizer or s.offload_params:
        return None
    if s.method != "full":
        return _offload_adapters(s)
    if s.fsdp:
        return (
            "parameters, gradients and optimizer step on the CPU (--offload-params, FSDP "
            "CPUOffload)",
            dataclasses.replace(s, offload_params=True),
        )
    zero = s.zero or 2
    step = dataclasses.replace(s, offload_optimizer=True, zero=zero)
    kept = zero_offload_optimizer(step)
    if kept is not None:
        # ZeRO-Offload steps with DeepSpeedCPUAdam (accelerate swaps a client optimizer such as
        # bitsandbytes' 8-bit AdamW for it; raw DeepSpeed refuses one): the plan names the
        # optimizer that runs, not one the offload path replaces or refuses
        return (
            f"optimizer states on the CPU (--offload-optimizer, ZeRO-Offload), with DeepSpeed's "
            f"CPU AdamW in place of {s.optimizer} (--optimizer {kept})",
            dataclasses.replace(step, optimizer=kept, optimizer_impl="foreach"),
        )
    return "optimizer states on the CPU (--offload-optimizer, ZeRO-Offload)", step


def _offload_adapters(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """:func:`_offload` for LoRA/QLoRA: FSDP FULL_SHARD with parameter offload."""
    if s.gpus * s.nodes < 2 or s.optimizer_in_backward:
        return None
    instead = f" instead of ZeRO-{s.zero}" if s.zero else ""
    base = "4-bit base" if s.method == "qlora" else "frozen base"
    return (
        f"FSDP FULL_SHARD{instead} with the {base} offloaded to the CPU (--fsdp "
        "--offload-params: accelerate's fsdp_offload_params, fsdp_cpu_ram_efficient_loading)",
        dataclasses.replace(s, zero=0, fsdp=True, fsdp_strategy="FULL_SHARD", offload_params=True),
    )


#: bf16's relative spacing is 2**-7 (7 stored mantissa bits), so round-to-nearest drops an
#: update below half of it: 2**-8 of the weight
_BF16_LOST_UPDATE = "~0.4%"


def _pure_bf16(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """A full fine-tune in pure bf16: parameters, gradients and optimizer states all bf16, no
    fp32 master copy (:func:`oomkit.estimate.training_states.model_states`: 2 + 2 + 4 bytes per
    parameter with AdamW, 2 + 2 + 2 with 8-bit AdamW, where mixed precision keeps 4 + 4 + 8 and
    a 2-byte compute copy). It is torchtune's default: its memory-optimisation tutorial
    (docs/source/tutorials/memory_optimizations.rst, "Model Precision") says ``dtype=bf16``
    puts model and optimizer parameters in bfloat16, "the default setting for our recipes",
    and that torchtune has no mixed precision at all; the HF Trainer runs it when the model is
    loaded with ``from_pretrained(..., dtype=torch.bfloat16)`` (``bf16=True`` then only
    autocasts: the optimizer steps the bf16 parameters).

    The cost is numeric, not speed: each update is rounded to bf16, whose spacing is 2**-7 of
    the weight, so an update below about 0.4% of it rounds away (small learning rates late in
    a schedule stall). torchao's optimizers round stochastically instead
    (``torchao.optim.AdamW8bit(..., bf16_stochastic_round=True)``, torchao/optim/README.md),
    which keeps those updates in expectation. The label says so.

    Only where the spelling exists: a single GPU or DDP (DeepSpeed's ZeRO optimizers always
    keep fp32 master partitions, and accelerate's FSDP upcasts low-precision parameters to
    fp32 under mixed precision), bf16 (pure fp16 has no loss scaling to protect the
    gradients), full fine-tuning (LoRA's adapters are a rounding error of the memory)."""
    if s.method != "full" or not s.master_weights or s.mixed_precision != "bf16":
        return None
    if s.zero or s.fsdp or s.offload_optimizer or s.offload_params:
        return None
    return (
        "pure bf16: no fp32 master weights (--no-master-weights): an update under "
        f"{_BF16_LOST_UPDATE} of a weight rounds away (torchao's optimizers with "
        "bf16_stochastic_round=True keep it on average)",
        dataclasses.replace(s, master_weights=False),
    )


def _lora(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    if s.method != "full":
        return None
    return "LoRA instead of full fine-tuning (--train lora)", dataclasses.replace(
        s, method="lora", offload_optimizer=False, offload_params=False
    )


def _qlora(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    if s.method == "qlora" or s.mixed_precision == "no":
        return None
    return "QLoRA: a 4-bit frozen base (--train qlora)", dataclasses.replace(
        s, method="qlora", offload_optimizer=False, offload_params=False
    )


def _no_runtime_lever(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """A runtime lever where the model is not known (a no-op keeps the positions)."""
    return None


@dataclass(frozen=True, slots=True)
class RuntimeLevers:
    """The levers of :mod:`oomkit.planner.training_runtime_levers` for one model and its GPUs
    (built once per plan: :func:`_combination` finds a lever by identity). No defaults: a
    function default would put its address in the generated ``__init__`` (the code cache must
    build the same method in every process); :data:`NO_RUNTIME_LEVERS` is the empty pair."""

    attention: Lever
    transformers_v4: Lever


#: the runtime levers where the model is not known: two no-ops that keep the positions
NO_RUNTIME_LEVERS = RuntimeLevers(_no_runtime_lever, _no_runtime_lever)


def runtime_levers(
    spec: ModelSpec, hardware: Hardware, *, transformers_pinned: bool = False
) -> RuntimeLevers:
    """The attention-kernel lever for ``spec`` on ``hardware``'s GPUs and, where the user did
    not pin a transformers release (``transformers_pinned``), transformers 4.x for an MoE."""
    from oomkit.planner.training_runtime_levers import (
        attention_lever,
        flash_attn_gpus,
        transformers_v4_lever,
    )

    return RuntimeLevers(
        attention=attention_lever(spec.model_type, flash_attn_gpus(hardware.devices)),
        transformers_v4=transformers_v4_lever(spec.moe is not None, transformers_pinned),
    )


LEVERS: tuple[Lever, ...] = (
    _expandable,
    _no_kbit_upcast,
    _checkpointing,
    _chunked_loss,
    _adam8bit,
    _zero2,
    _shard,
    _micro_batch,
    _offload,
    _lora,
    _qlora,
)


Accept = Callable[[Estimate], "str | None"]


def _no_pure_bf16(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
    """:func:`_pure_bf16` on a GPU without native bf16 (compute capability below 8.0:
    :mod:`oomkit.hardware.native_bf16`): bf16 there is emulated or refused, and pure fp16 has
    no working loss scaling, so no pure 16-bit run is offered (a no-op keeps the positions)."""
    return None


def plan_levers(
    settings: TrainingSettings,
    platform: Platform | None = None,
    *,
    bf16: bool = True,
    runtime: RuntimeLevers | None = None,
) -> tuple[Lever, ...]:
    """The planner's levers for a run of ``settings`` on ``platform``: :data:`LEVERS` (the
    doctor's, by position) with the fused AdamW step after the allocator, and the loss lever of
    the trainer that runs it: Liger's fused cross-entropy for the HF Trainer, torchtune's
    chunked one for a torchtune run (``optimizer_in_backward``); no expandable segments where
    PyTorch ignores them (Windows: :data:`EXPANDABLE_UNSUPPORTED_OS`); no pure bf16 where a
    GPU has no native bf16 (``bf16`` False). ``runtime``: the model and GPUs, for the levers
    of :mod:`oomkit.planner.training_runtime_levers`: the attention kernel after the fused step
    (it changes no result), transformers 4.x for an MoE QLoRA before the CPU offload."""
    torchtune = settings.optimizer_in_backward
    loss = _torchtune_chunked_loss if torchtune else _fused_loss
    windows = platform is not None and (platform.os or "").lower() in EXPANDABLE_UNSUPPORTED_OS
    rt = runtime or NO_RUNTIME_LEVERS
    out: list[Lever] = []
    for x in LEVERS:
        if x is _expandable:
            out += [_no_expandable if windows else _expandable, _fused_step, rt.attention]
        elif x is _offload:
            out += [_pure_bf16 if bf16 else _no_pure_bf16, rt.transformers_v4, _offload]
        else:
            out.append(loss if x is _chunked_loss else x)
    return tuple(out)


def suggest_training_changes(
    spec: ModelSpec,
    settings: TrainingSettings,
    hardware: Hardware,
    *,
    limit: int = 3,
    platform: Platform | None = None,
    only_fits: bool = False,
    transformers_pinned: bool = False,
) -> list[TrainingChange]:
    """Up to ``limit`` changes that make the step fit ``hardware``: "fits" before "tight",
    least intrusive first within each (``only_fits``: the "fits" ones alone;
    ``transformers_pinned``: the user named ``--transformers-version``, so no release lever)."""
    from oomkit.estimate.training import estimate_training

    def run(s: TrainingSettings) -> Estimate | None:
        try:
            return estimate_training(spec, s, hardware)
        except InvalidSettingError:  # a combination the engines refuse
            return None

    def level(est: Estimate) -> str:
        return verdict(est, platform).level

    def accept_fits(est: Estimate) -> str | None:
        lv = level(est)
        return lv if lv == "fits" else None

    def accept_any(est: Estimate) -> str | None:
        lv = level(est)
        return lv if lv in ("fits", "tight") else None

    accept: Accept = accept_fits if only_fits else accept_any
    from oomkit.hardware.native_bf16 import native_bf16

    bf16 = all(native_bf16(d) for d in hardware.devices)
    rt = runtime_levers(spec, hardware, transformers_pinned=transformers_pinned)
    levers = plan_levers(settings, platform, bf16=bf16, runtime=rt)
    out = _changes(settings, run, accept, levers)
    asked = run(settings)
    if asked is not None and host_overflows(asked):
        # the GPUs fit, the RAM does not: take the offload back before any GPU saving
        out = [*host_side_changes(settings, run, accept), *out]
    if not only_fits and out:
        # the stack of levers the verdict calls "fits" (host RAM included when --ram is given),
        # ranked among the singles by its levers: checkpointing + CPU offload before QLoRA.
        # Searched only when every single change was "tight", a 70B full fine-tune on 8 x H100
        # was offered QLoRA first where checkpointing + offload fits at 15.7 GiB per GPU
        clear = _combination(settings, run, accept_fits, levers)
        if clear is not None and all(c.settings != clear.settings for c in out):
            out.insert(min(len(out), _rank(clear, out)), clear)
    out.sort(key=lambda c: c.level != "fits")  # stable: lever order within each level
    return out[:limit]


def _changes(
    settings: TrainingSettings,
    run: Callable[[TrainingSettings], Estimate | None],
    accept: Accept,
    levers: tuple[Lever, ...] = LEVERS,
) -> list[TrainingChange]:
    out: list[TrainingChange] = []
    for i, lever in enumerate(levers):
        step = lever(settings)
        found: TrainingChange | None = None
        while step is not None:
            est = run(step[1])
            lv = None if est is None else accept(est)
            if est is not None and lv is not None and (found is None or lv == "fits"):
                found = TrainingChange(
                    changes=(step[0],), settings=step[1], estimate=est, level=lv, levers=(i,)
                )
            if found is not None and found.level == "fits":
                break
            # the micro-batch steps down again (the next divisor of the effective batch)
            # until one fits clear of the band (the largest
            # "tight" one stays the offer when none does): halving once, then jumping to
            # QLoRA, hid `--micro-batch 2` (LoRA b8 s2048 on a 24 GiB card: 4.3 GiB free)
            step = lever(step[1]) if lever is _micro_batch else None
        if found is not None:
            out.append(found)
    combo = _combination(settings, run, accept, levers)
    if combo is not None and len(combo.changes) > 1:
        # a cheaper pair (e.g. LoRA + checkpointing) beats a single drastic lever (QLoRA)
        out.insert(min(len(out), _rank(combo, out)), combo)
    return out


def training_verdict(
    spec: ModelSpec,
    settings: TrainingSettings,
    hardware: Hardware,
    est: Estimate,
    platform: Platform | None = None,
    transformers_pinned: bool = False,
) -> Verdict:
    """The verdict of ``est`` (the estimate of ``settings``); when "tight", its safe margin is
    the first change in :func:`suggest_training_changes`' order that the verdict calls "fits"."""
    v = verdict(est, platform)
    if v.level != "tight":
        return v
    found = suggest_training_changes(spec, settings, hardware, limit=1, platform=platform,
                                     only_fits=True,
                                     transformers_pinned=transformers_pinned)  # fmt: skip
    if not found:
        return v
    from oomkit.units import format_bytes

    c = found[0]
    peak = max(d.total_bytes for d in c.estimate.devices)
    change = f"{c.summary}: peak {format_bytes(peak)} per GPU, clear of the band"
    return dataclasses.replace(v, safe_change=change)


def _totals_fit(est: Estimate) -> str | None:
    return "fits" if est.fits else None


def _apply(
    settings: TrainingSettings, levers: list[Lever]
) -> tuple[tuple[str, ...], TrainingSettings]:
    names: list[str] = []
    last: Lever | None = None
    for lever in levers:
        step = lever(settings)
        if step is not None:
            if lever is last:  # the micro-batch stepped down again: one change, named by its result
                names[-1] = step[0]
            else:
                names.append(step[0])
            settings = step[1]
            last = lever
    return tuple(names), settings


def _combination(
    settings: TrainingSettings,
    run: Callable[[TrainingSettings], Estimate | None],
    accept: Accept | None = None,
    levers: tuple[Lever, ...] = LEVERS,
) -> TrainingChange | None:
    """The levers stacked in order until ``accept`` takes the step (default: its totals fit,
    as ``oomkit.diagnose.training_fixes`` asks), the micro-batch stepped down (divisors of the
    effective batch) until it does or is 1, then every lever that is not needed removed again
    (last first, one step at a time): a
    minimal combination. Halving once only made ``plan --train`` answer "nothing fits, more
    GPUs needed" for Llama-3.1-8B QLoRA b4 s4096 on a 12 GiB card, where b1 with checkpointing
    and chunked cross-entropy fits with 2.2 GiB free."""
    if accept is None:
        accept = _totals_fit
    used: list[Lever] = []
    done = False
    for lever in levers:
        while not done and lever(_apply(settings, used)[1]) is not None:
            used.append(lever)
            est = run(_apply(settings, used)[1])
            done = est is not None and accept(est) is not None
            if lever is not _micro_batch:
                break
        if done:
            break
    if not done:
        return None
    for i in reversed(range(len(used) - 1)):
        trial = used[:i] + used[i + 1 :]
        est = run(_apply(settings, trial)[1])
        if est is not None and accept(est) is not None:
            used = trial
    names, final = _apply(settings, used)
    est = run(final)
    lv = None if est is None else accept(est)
    if est is None or lv is None:
        return None
    return TrainingChange(
        changes=names,
        settings=final,
        estimate=est,
        level=lv,
        levers=tuple(levers.index(x) for x in used),
    )


_NO_LEVER = 1 << 20  # a change with no lever ranks after every lever


def _rank(combo: TrainingChange, singles: list[TrainingChange]) -> int:
    """Where a combination goes among the single changes: before the first single change that
    comes later in the lever order than every lever of the combination (by their positions in
    :data:`LEVERS`: a name such as "micro-batch 4 x 2 ..." or "FSDP FULL_SHARD" depends on the
    settings, and a table of names made from other settings put such a combination last)."""
    last = max(combo.levers, default=_NO_LEVER)
    for k, c in enumerate(singles):
        if min(c.levers, default=_NO_LEVER) > last:
            return k
    return len(singles)
