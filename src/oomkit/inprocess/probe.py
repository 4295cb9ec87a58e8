"""The FakeTensor probe: trace a real model's forward (and backward + optimizer step) for memory.

The model is the real ``transformers`` class built from its ``config.json`` (or the user's own
``torch.nn.Module`` factory) under ``torch._subclasses.fake_tensor.FakeTensorMode``: every
tensor has its shape, dtype and device but no data, so nothing is allocated and every op only
computes output metadata. :class:`~oomkit.inprocess.probe_tracker.MemoryTracker` (a
``TorchDispatchMode``) records each storage the ops create and when autograd frees it, which
gives the peak of the allocated bytes, its phase, its breakdown and the modules active there.

What a probe is, exactly:

* inference: ``model.eval()``, ``torch.no_grad()``, one forward of ``batch x seq`` token ids
  with ``use_cache=True`` and ``logits_to_keep=1`` where the model accepts them (what
  ``generate()`` does for the prefill); parameters in ``dtype``;
* training (``train="full"``): fp32 parameters under ``torch.autocast(dtype)`` (HF Trainer
  ``bf16=True``; ``mixed_precision="no"`` keeps everything in ``dtype``) with CUDA's autocast
  op lists (:mod:`oomkit.inprocess.probe_autocast`: layer_norm, softmax, losses in fp32 as on
  a GPU, not the CPU lists), forward with
  ``labels`` so the model computes its own loss (HF ``ForCausalLMLoss`` upcasts the logits to
  fp32), the outputs dropped but the loss (HF Trainer ``compute_loss``), ``loss.backward()``,
  ``optimizer.step()``, ``optimizer.zero_grad(set_to_none=True)``. ``torch.optim`` optimizers
  run with ``foreach=True``, their default for CUDA tensors (``_default_to_fused_or_foreach``),
  since the probe's fake tensors live on the CPU device;
* ``train="lora"``: base frozen in ``dtype``, adapters (PEFT default targets unless given) in
  fp32, autocast to ``dtype``; ``train="qlora"``: the same over a bitsandbytes-like NF4 store
  (see :mod:`oomkit.inprocess.probe_model` for what is and is not modelled);
* gradient checkpointing: ``gradient_checkpointing_enable(use_reentrant=False)``.

Attention dropout in SDPA is traced as CUDA's fused kernels run it (no seq x seq mask; see
:func:`oomkit.inprocess.probe_autocast.cuda_sdpa_dropout`).

Not modelled: the CUDA context, cuBLAS/cuDNN workspaces, NCCL buffers, allocator
fragmentation beyond one fresh block per request, and kernels whose CUDA and CPU paths save
different tensors (the CPU fake path of ``scaled_dot_product_attention`` is the fused
flash-attention-for-CPU kernel, which saves ``q, k, v, out, logsumexp`` like CUDA's).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oomkit.errors import InvalidSettingError, OomkitError
from oomkit.inprocess.probe_calls import (
    accepts,
    call_model,
    enable_checkpointing,
    fake_inputs,
    output_cache,
    phase,
    tensors_in,
)
from oomkit.inprocess.probe_options import (
    check_probe_options,
    check_seq_positions,
    max_positions,
)

if TYPE_CHECKING:
    import torch
    from torch import nn

    from oomkit.inprocess.probe_step import StepOptions

__all__ = [
    "PROBE_OPTIMIZERS",
    "PROBE_TRAIN_MODES",
    "ProbeResult",
    "TorchMissingError",
    "check_probe_options",
    "check_seq_positions",
    "max_positions",
    "module_order_key",
    "ordered_modules",
    "probe",
]

PROBE_TRAIN_MODES: tuple[str, ...] = ("full", "lora", "qlora")
#: oomkit.inprocess.probe_step.STEP_OPTIMIZERS (kept here so the CLI need not import torch)
PROBE_OPTIMIZERS: tuple[str, ...] = (
    "adamw", "adamw8bit", "paged_adamw", "paged_adamw8bit", "adafactor", "sgd", "sgd_momentum",
    "torchao_adamw8bit",
)  # fmt: skip
_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
#: training steps the allocator replay runs (the reserve of a long run: each step finds the
#: segments the previous one cached; see oomkit.inprocess.probe_allocator.replay)
_STEPS_REPLAYED = 3


class TorchMissingError(OomkitError):
    """torch or transformers is not installed, so the probe cannot run."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one probe measured (bytes are allocator bytes, rounded when ``rounded``)."""

    model: str
    mode: str  # "inference" | "full" | "lora" | "qlora"
    batch: int
    seq: int
    dtype: str
    optimizer: str | None
    grad_checkpointing: bool
    rounded: bool
    peak_bytes: int
    peak_phase: str  # "forward" | "backward" | "optimizer_step"
    peak_by_category: Mapping[str, int]
    phase_peaks: Mapping[str, int]
    parameter_count: int
    trainable_parameter_count: int
    parameters_bytes: int
    gradients_bytes: int  # param.grad storages alive after backward
    optimizer_state_bytes: int  # optimizer.state tensors after the step
    #: training: bytes the forward allocated that are still alive when backward starts
    #: (saved for backward, and the loss)
    saved_activations_bytes: int
    top_modules: tuple[tuple[str, int, int], ...]  # (module, peak bytes, peak - entry)
    ops: int
    seconds: float
    notes: tuple[str, ...] = field(default=())
    #: the trace replayed through the caching allocator (:mod:`oomkit.inprocess.probe_allocator`):
    #: ``max_memory_reserved`` and ``max_memory_allocated`` of the whole run (setup included)
    reserved_peak_bytes: int | None = None
    allocator_allocated_peak_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "model": self.model,
            "mode": self.mode,
            "batch": self.batch,
            "seq": self.seq,
            "dtype": self.dtype,
            "optimizer": self.optimizer,
            "grad_checkpointing": self.grad_checkpointing,
            "rounded_to_cuda_blocks": self.rounded,
            "peak_bytes": self.peak_bytes,
            "peak_phase": self.peak_phase,
            "peak_by_category": dict(self.peak_by_category),
            "phase_peaks": dict(self.phase_peaks),
            "parameter_count": self.parameter_count,
            "trainable_parameter_count": self.trainable_parameter_count,
            "parameters_bytes": self.parameters_bytes,
            "gradients_bytes": self.gradients_bytes,
            "optimizer_state_bytes": self.optimizer_state_bytes,
            "saved_activations_bytes": self.saved_activations_bytes,
            "top_modules": [
                {"module": m, "peak_bytes": p, "increase_bytes": d} for m, p, d in self.top_modules
            ],
            "ops": self.ops,
            "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
            "reserved_peak_bytes": self.reserved_peak_bytes,
            "allocator_allocated_peak_bytes": self.allocator_allocated_peak_bytes,
        }


def _require_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise TorchMissingError(
            "The probe needs torch: pip install 'oomkit[torch]' (a CPU build is enough)."
        ) from None


def _require_transformers() -> None:
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise TorchMissingError(
            "Probing a model config needs transformers: pip install 'oomkit[torch]'."
        ) from None


def _torch_dtype(name: str) -> torch.dtype:
    import torch

    key = _DTYPES.get(name, name)
    dt = getattr(torch, key, None)
    if not isinstance(dt, torch.dtype) or key not in _DTYPES.values():
        raise InvalidSettingError(
            f"Unknown dtype '{name}' for the probe: use bf16, fp16 or fp32.", setting="dtype",
            value=name,
        )  # fmt: skip
    return dt


def probe(
    model_or_factory: str | Mapping[str, Any] | Callable[[], nn.Module] | nn.Module,
    inputs: Any = None,
    *,
    train: str | None = None,
    seq: int = 2048,
    batch: int = 1,
    dtype: str = "bf16",
    optimizer: str = "adamw",
    mixed_precision: bool = True,
    grad_checkpointing: bool = False,
    lora_rank: int = 16,
    lora_alpha: float | None = None,
    lora_dropout: float = 0.0,
    lora_targets: Sequence[str] | None = None,
    attn_implementation: str = "sdpa",
    round_to_cuda_blocks: bool = True,
    steady_state: bool = True,
    top: int = 10,
    step: StepOptions | None = None,
    gpus: int = 1,
    fsdp: bool = False,
    fsdp_strategy: str = "FULL_SHARD",
    fsdp_version: int = 2,
) -> ProbeResult:
    """Trace one inference forward or one training step of a model on fake tensors.

    Args:
        model_or_factory: a catalog name or local ``config.json`` path, a config dict, a
            zero-argument callable returning an ``nn.Module`` (called under the fake mode),
            or an ``nn.Module`` (its tensors are converted to fake tensors).
        inputs: the forward's inputs (tensor, tuple or dict; a callable is called under the
            fake mode); None: ``batch x seq`` token ids for a ``transformers`` model.
        train: None (inference), ``"full"``, ``"lora"`` or ``"qlora"``.
        dtype: the compute dtype (``bf16``/``fp16``/``fp32``).
        lora_dropout: PEFT ``lora_dropout`` (0: ``nn.Identity``, nothing saved; > 0 keeps a
            dropout mask and output per adapted layer).
        mixed_precision: training keeps fp32 trainable parameters (and optimizer states) and
            autocasts to ``dtype``; False: trainable parameters in ``dtype``.
        round_to_cuda_blocks: count each allocation as the CUDA caching allocator's block.
        steady_state: trace a step after the first (the optimizer's states already exist
            during the forward and backward, as in every step but the first); False: the
            first step, whose states appear inside ``optimizer.step()``.
        step: how the training loop runs its step (optimizer implementation, gradients kept
            between steps, optimizer in backward, chunked loss, held logits):
            :class:`oomkit.inprocess.probe_step.StepOptions`; None: today's HF Trainer.
        gpus, fsdp, fsdp_strategy: trace rank 0 of an FSDP run over ``gpus`` ranks
            (``FULL_SHARD`` or ``SHARD_GRAD_OP``): the real FSDP2 ``fully_shard`` per decoder
            layer and root over a fake process group (:mod:`oomkit.inprocess.probe_fsdp`);
            ``fsdp_version=1``: FSDP1 ``FullyShardedDataParallel`` (flat parameters) instead.

    Raises:
        TorchMissingError: torch (or, for configs, transformers) is not installed.
        UnsupportedModelError: the model needs remote code or is unknown to transformers.
        InvalidSettingError: a bad option.
    """
    t0 = time.perf_counter()
    check_probe_options(
        seq=seq, batch=batch, lora_rank=lora_rank, lora_dropout=lora_dropout,
        lora_targets=lora_targets,
    )  # fmt: skip
    from oomkit.inprocess.probe_fsdp import check_fsdp_options

    check_fsdp_options(
        gpus=gpus, fsdp=fsdp, fsdp_strategy=fsdp_strategy, train=train, version=fsdp_version
    )
    _require_torch()
    if fsdp:
        from oomkit.inprocess.probe_fsdp import fake_process_group, require_fsdp

        require_fsdp()
        if step is not None and (
            step.optimizer_in_backward or step.loss == "chunked" or step.compiled_layers
        ):
            raise InvalidSettingError(
                "fsdp is traced with the standard step only (no optimizer in backward, chunked "
                "loss or compiled layers: they call into FSDP units the probe does not shard "
                "for them)",
                setting="fsdp",
            )
    import warnings

    with (
        fake_process_group(gpus) if fsdp else contextlib.nullcontext() as mesh,
        warnings.catch_warnings(),
    ):
        # FSDP1 reads flat_param.data_ptr() to key its state (a FakeTensor warns: no data)
        warnings.filterwarnings("ignore", message=".*data pointer of FakeTensor")
        return _probe_body(
            model_or_factory, inputs, train=train, seq=seq, batch=batch, dtype=dtype,
            optimizer=optimizer, mixed_precision=mixed_precision,
            grad_checkpointing=grad_checkpointing, lora_rank=lora_rank, lora_alpha=lora_alpha,
            lora_dropout=lora_dropout, lora_targets=lora_targets,
            attn_implementation=attn_implementation, round_to_cuda_blocks=round_to_cuda_blocks,
            steady_state=steady_state, top=top, step=step, t0=t0, mesh=mesh,
            fsdp=(gpus, fsdp_strategy, fsdp_version),
        )  # fmt: skip


def _probe_body(
    model_or_factory: str | Mapping[str, Any] | Callable[[], nn.Module] | nn.Module,
    inputs: Any, *, train: str | None, seq: int, batch: int, dtype: str, optimizer: str,
    mixed_precision: bool, grad_checkpointing: bool, lora_rank: int, lora_alpha: float | None,
    lora_dropout: float, lora_targets: Sequence[str] | None, attn_implementation: str,
    round_to_cuda_blocks: bool, steady_state: bool, top: int, step: StepOptions | None,
    t0: float, mesh: Any, fsdp: tuple[int, str, int],
) -> ProbeResult:  # fmt: skip
    """:func:`probe` once its options are checked (inside the fake process group for FSDP)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from oomkit.inprocess import probe_model as pm

    if train is not None and train not in PROBE_TRAIN_MODES:
        raise InvalidSettingError(
            f"Unknown training mode '{train}': use full, lora or qlora.", setting="train",
            value=train,
        )  # fmt: skip
    compute = _torch_dtype(dtype)
    training = train is not None
    master = training and mixed_precision and train == "full"
    weight_dtype = torch.float32 if master else compute
    notes: list[str] = []
    fake = FakeTensorMode(allow_non_fake_inputs=False)
    config: dict[str, Any] | None = None
    name = "custom"
    if isinstance(model_or_factory, (str, Mapping)):
        _require_transformers()
        config = pm.load_config_dict(model_or_factory)
        name = (
            model_or_factory
            if isinstance(model_or_factory, str)
            else str((config.get("architectures") or [config.get("model_type", "config")])[0])
        )
        if inputs is None:
            check_seq_positions(config, seq, model=name)
    with fake:
        if config is not None:
            model = pm.build_from_config(
                config, dtype=weight_dtype, attn_implementation=attn_implementation
            )
        elif isinstance(model_or_factory, torch.nn.Module):
            model = model_or_factory
            model._apply(  # type: ignore[no-untyped-call]
                lambda t: fake.from_tensor(t) if not fake.is_our_fake(t) else t
            )
            name = type(model).__name__
        elif callable(model_or_factory):
            built = model_or_factory()
            if not isinstance(built, torch.nn.Module):
                raise InvalidSettingError(
                    "The probe's factory must return a torch.nn.Module.", setting="model"
                )
            model = built
            name = type(model).__name__
        else:
            raise InvalidSettingError(
                "probe() takes a model name, a config dict, a Module or a Module factory.",
                setting="model",
            )
        built_attn = getattr(getattr(model, "config", None), "_attn_implementation", None)
        if config is not None and built_attn and built_attn != attn_implementation:
            notes.append(
                f"{name} has no '{attn_implementation}' attention in transformers: "
                f"traced with '{built_attn}'"
            )
        model_type = str((config or {}).get("model_type") or getattr(
            getattr(model, "config", None), "model_type", ""
        ))  # fmt: skip
        base_params = sum(p.numel() for p in model.parameters())
        if train == "qlora":
            n4 = pm.apply_nf4(model, compute)
            notes.append(f"{n4} linear layers stored as NF4 + double-quant absmax (bnb layout)")
        if train in ("lora", "qlora"):
            targets = pm.lora_target_names(model_type, lora_targets)
            adapter = torch.float32 if mixed_precision else compute
            n_lora = pm.apply_lora(
                model, targets, rank=lora_rank, alpha=lora_alpha or 2.0 * lora_rank,
                adapter_dtype=adapter, dropout=lora_dropout,
            )  # fmt: skip
            notes.append(f"LoRA r={lora_rank} on {n_lora} layers ({', '.join(targets)})")
        if mesh is not None:
            from oomkit.inprocess.probe_fsdp import shard_model

            gpus, strategy, version = fsdp
            gathered = compute if training and mixed_precision else None
            model, n_units = shard_model(
                model, mesh, strategy=strategy, param_dtype=gathered, version=version
            )
            api = "FSDP2 fully_shard" if version == 2 else "FSDP1 FullyShardedDataParallel"
            notes.append(
                f"{api} {strategy} over {gpus} ranks (fake process group): "
                f"{n_units} layer units + root; rank 0 traced"
            )
        if callable(inputs) and not isinstance(inputs, torch.Tensor):
            inputs = inputs()
        if inputs is None:
            cfg: Any = getattr(model, "config", None)
            vocab = int(getattr(cfg, "vocab_size", 0) or 0)
            if vocab <= 0 and hasattr(cfg, "get_text_config"):  # a multimodal config (Gemma 3)
                vocab = int(getattr(cfg.get_text_config(), "vocab_size", 0) or 0)
            if vocab <= 0:
                raise InvalidSettingError(
                    "Give inputs= for a model without a config.vocab_size.", setting="inputs"
                )
            own = getattr(getattr(model, "config", None), "to_dict", None)
            if config is None and callable(own):
                check_seq_positions(own(), seq, model=name)
            ids = torch.randint(0, vocab, (batch, seq), dtype=torch.long)
            inputs = {"input_ids": ids}
        else:
            inputs = fake_inputs(fake, inputs)
    return _run(
        model, inputs, fake=fake, name=str(name), train=train, optimizer=optimizer,
        compute=compute, mixed=training and mixed_precision,
        grad_checkpointing=grad_checkpointing, rounded=round_to_cuda_blocks, batch=batch,
        seq=seq, dtype=dtype, top=top, notes=notes, t0=t0, lm_inputs=config is not None,
        steady_state=steady_state, base_params=base_params, step=step,
    )  # fmt: skip


def _run(
    model: nn.Module, inputs: Any, *, fake: Any, name: str, train: str | None, optimizer: str,
    compute: torch.dtype, mixed: bool, grad_checkpointing: bool, rounded: bool, batch: int,
    seq: int, dtype: str, top: int, notes: list[str], t0: float, lm_inputs: bool,
    steady_state: bool, base_params: int, step: StepOptions | None,
) -> ProbeResult:  # fmt: skip
    import torch

    from oomkit.inprocess import probe_model as pm
    from oomkit.inprocess.probe_allocator import replay
    from oomkit.inprocess.probe_autocast import cuda_autocast_policy, cuda_sdpa_dropout
    from oomkit.inprocess.probe_step import StepOptions
    from oomkit.inprocess.probe_tracker import MemoryTracker

    tracker = MemoryTracker(round_to_cuda_blocks=rounded)
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad] if train else []
    tracker.track_all(params, "parameters")
    param_bytes = tracker.live_bytes
    tracker.track_all(model.buffers(), "buffers")
    tracker.track_all(tensors_in(inputs), "inputs")
    handles = tracker.module_hooks(model)
    grads_bytes = 0
    state_bytes = 0
    saved_bytes = 0
    try:
        policy = cuda_autocast_policy() if mixed else contextlib.nullcontext()
        with fake, tracker, pm.moe_grouped_mm_fallback(), policy, cuda_sdpa_dropout():
            if train is None:
                model.eval()
                extra: dict[str, Any] = {}
                if lm_inputs and accepts(model, "use_cache"):
                    extra["use_cache"] = True
                if lm_inputs and accepts(model, "logits_to_keep"):
                    extra["logits_to_keep"] = 1
                with torch.no_grad(), phase(tracker, "forward"):
                    out = call_model(model, inputs, extra)
                cache = output_cache(out)
                for t in tensors_in(cache):
                    tracker.set_role(t, "kv_cache")
                for t in tensors_in(out):
                    if tracker._storage_alloc(t) is not None:
                        alloc = tracker._storage_alloc(t)
                        if alloc is not None and alloc.role is None:
                            tracker.set_role(t, "outputs")
                del out, cache
            else:
                from oomkit.inprocess.probe_step import train_step

                model.train()
                if grad_checkpointing:
                    enable_checkpointing(model, name)
                if step is not None and step.compiled_layers and grad_checkpointing:
                    # AOT's compiled function under the non-reentrant checkpoint's hooks kept
                    # its whole saved set in this trace: not a faithful model, so eager
                    notes.append(
                        "compiled layers not traced with activation checkpointing (eager trace)"
                    )
                elif step is not None and step.compiled_layers:
                    from oomkit.inprocess.probe_compile import compile_decoder_layers

                    n_compiled = compile_decoder_layers(model)
                    notes.append(f"{n_compiled} decoder layers compiled (min-cut partition)")
                extra = {}
                if lm_inputs and isinstance(inputs, Mapping) and "input_ids" in inputs:
                    if accepts(model, "labels") and "labels" not in inputs:
                        extra["labels"] = inputs["input_ids"]
                    if accepts(model, "use_cache"):
                        extra["use_cache"] = False
                autocast = (
                    torch.autocast("cpu", dtype=compute) if mixed else contextlib.nullcontext()
                )
                done = train_step(
                    model, inputs, tracker=tracker, trainable=trainable, optimizer=optimizer,
                    opts=step or StepOptions(), steady_state=steady_state, autocast=autocast,
                    notes=notes,
                    forward=lambda: call_model(model, inputs, extra),
                )  # fmt: skip
                grads_bytes = done.gradients_bytes
                state_bytes = done.optimizer_state_bytes
                saved_bytes = done.saved_activations_bytes
    finally:
        for h in handles:
            h.remove()
    peaks = replay(
        tracker.events, skip=tracker.forgotten, cublas_workspace=train is not None,
        repeat_from=tracker.step_start if train is not None else None, repeats=_STEPS_REPLAYED,
        streams=tracker.stream_of,
    )  # fmt: skip
    mods = ordered_modules(tracker.module_peaks)
    n_trainable = sum(p.numel() for p in trainable)
    # the model's own count (a 4-bit store's packed bytes are not parameters) + adapters
    n_params = base_params + (n_trainable if train in ("lora", "qlora") else 0)
    return ProbeResult(
        model=name,
        mode=train or "inference",
        batch=batch,
        seq=seq,
        dtype=dtype,
        optimizer=optimizer if train else None,
        grad_checkpointing=grad_checkpointing,
        rounded=rounded,
        peak_bytes=tracker.peak_bytes,
        peak_phase=tracker.peak_phase,
        peak_by_category=tracker.peak_by_category(),
        phase_peaks={k: v for k, v in tracker.phase_peaks.items() if k not in ("idle",)},
        parameter_count=n_params,
        trainable_parameter_count=n_trainable,
        parameters_bytes=param_bytes,
        gradients_bytes=grads_bytes,
        optimizer_state_bytes=state_bytes,
        saved_activations_bytes=saved_bytes,
        top_modules=tuple((m, p, d) for m, (p, d) in mods[:top]),
        ops=tracker.ops,
        seconds=time.perf_counter() - t0,
        notes=tuple(notes),
        reserved_peak_bytes=peaks.reserved_peak_bytes,
        allocator_allocated_peak_bytes=peaks.allocated_peak_bytes,
    )


def module_order_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``name`` in natural order: its digit runs compare as numbers, so ``layers.2`` comes
    before ``layers.10`` (a string sort put ``layers.10`` right after ``layers.1``).

    >>> sorted(["layers.10", "layers.2", "layers.1", "norm"], key=module_order_key)
    ['layers.1', 'layers.2', 'layers.10', 'norm']
    """
    import re

    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part
    )


def ordered_modules(
    module_peaks: Mapping[str, tuple[int, int]],
) -> list[tuple[str, tuple[int, int]]]:
    """The modules by the memory they add (largest first), equal ones in natural order of
    their names (``layers.0``, ``layers.1``, ..., ``layers.10``)."""
    return sorted(module_peaks.items(), key=lambda kv: (-kv[1][1], module_order_key(kv[0])))
