"""Training / fine-tuning: the per-GPU peak of one step, and the phase where it occurs.

``estimate_training(spec, settings, hardware)`` models full fine-tuning, LoRA and QLoRA on one GPU,
DDP, DeepSpeed ZeRO-1/2/3 and PyTorch FSDP (FULL_SHARD / SHARD_GRAD_OP / HYBRID_SHARD / NO_SHARD),
with CPU offload, tensor/sequence parallelism, gradient checkpointing, 8-bit/paged optimizers and
chunked/fused cross-entropy. Sub-models:

* :mod:`oomkit.estimate.training_states` — bytes per trainable parameter (weights, master copy,
  gradients, optimizer states), LoRA adapters and the frozen (NF4) base;
* :mod:`oomkit.estimate.training_sharding` — where those bytes live per GPU for each engine;
* :mod:`oomkit.estimate.training_activations` — saved activations per layer and the loss term.
* :mod:`oomkit.estimate.training_compile` — what ``torch.compile`` saves instead (the min-cut
  partitioner's choice per decoder layer, the compiled cross-entropy).

A step has three phases; the estimate is the largest of them:

* ``forward`` (end of forward, during the loss): states + every layer's saved activations + the
  logits and the fp32 upcast;
* ``backward``: walked layer by layer from the loss: saved activations are freed as gradients
  appear; with full checkpointing each layer is recomputed (its full saved set) before its
  backward; the loss backward holds two fp32 B·S·V gradients;
* ``step`` (``optimizer.step()``): states + all gradients + the step's temporaries.

With activation offloading (torchtune) the forward keeps only its stash of the last saved
tensors on the GPU and the backward brings back one layer's saved set at a time.

Then the per-process overhead: the CUDA context (:mod:`oomkit.estimate.overhead`), NCCL buffers
when the job has more than one GPU (a ring communicator connects 2 peers per channel, each with
its own ~10 MiB of protocol buffers: NVIDIA/nccl #986, #1685; 16 channels, 32 on Hopper/Blackwell
NVLink), and the caching allocator's margin: what a run reserves beyond
``max_memory_allocated`` (allocations are rounded to 512 B / 2 MiB blocks in 2 MiB, 20 MiB or
request-sized segments, and under a full card the allocator frees only whole cached segments,
so a segment split for an earlier tensor cannot serve a larger request). This estimate has no
allocation trace to replay through the allocator model (``oomkit.inprocess.probe_allocator``
replays the FakeTensor probe's, which needs torch), so the fraction of the allocator peak is
measured, not modelled: the smallest gap of a real step of the model's allocator family
(:func:`oomkit.estimate.training_band.allocator_fraction`, ``src/oomkit/data/
training_band.json`` from ``python benchmarks/training_band.py`` over the H200 death boundaries
of ``benchmarks/gpu/results/training_boundary_*h200.json`` and the H100 steps of
``training_h100.json``, each measured against this estimate's own allocated peak: dense decoders
1.95%, Qwen2.5-1.5B's full step; MoE 3.51%, Qwen3-30B-A3B's QLoRA step; encoders 2.89%, BERT's;
with ``expandable_segments`` 0.44%, any model), and the spread above it is the verdict's band:
the smaller of a share of the peak (dense up to 33.84%, MoE up to 13.00%, expandable segments up
to 4.09%) and a multiple of ``largest_request_bytes`` (dense up to 2.48x), both measured.
``TrainingSettings.fragmentation_fraction`` overrides it.

``runtime_details`` reports ``peak_phase``, the three phase totals, and ``peak_allocated_bytes``
(what ``torch.cuda.max_memory_allocated`` would show: no context, no margin).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace

from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, InputValue
from oomkit.estimate.hf_attention import effective_attn_implementation
from oomkit.estimate.hf_weights import model_info
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.estimate.training_activations import (
    LayerActivations,
    LossActivations,
    dropout_note,
    largest_request_bytes,
    layer_activations,
    loss_activations,
    training_dropout,
)
from oomkit.estimate.training_band import allocator_family, allocator_fraction
from oomkit.estimate.training_compile import COMPILE_SOURCE
from oomkit.estimate.training_offload_optim import (
    fsdp_offload_note,
    zero_offload_note,
    zero_offload_optimizer,
)
from oomkit.estimate.training_sharding import (
    Term,
    engine_name,
    shard_group,
    state_terms,
)
from oomkit.estimate.training_states import (
    ModelStates,
    lora_adapted_roles,
    lora_adapter_params,
    model_states,
    optimizer_layout,
    trainable_tensors,
)
from oomkit.estimate.training_torchao import torchao_autotune_bytes
from oomkit.estimate.transformers_layouts import training_position_blocker
from oomkit.spec.hardware import DeviceTarget, Hardware, device_label
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings
from oomkit.spec.tensors import model_tensors
from oomkit.units import MiB

__all__ = ["DEFAULT_FRAGMENTATION_FRACTION", "estimate_training"]

#: the measured allocator fraction of a dense decoder (the family most runs are); each model
#: gets its own family's (:func:`_overhead`); see the module docstring
DEFAULT_FRAGMENTATION_FRACTION = allocator_fraction("dense")
_NCCL_BUFFER_PER_CHANNEL_PEER = 10 * MiB  # NVIDIA/nccl #1685: 10485760-byte buffers per channel
_KORTHIKANTI = "Korthikanti et al. 2022 (arXiv 2205.05198) adapted; HF modeling_llama.py"
_PHASE_NAMES = {"forward": "forward_end", "backward": "backward", "step": "optimizer_step"}
_OFFLOAD_STASH = 5  # torchtune OffloadActivations max_fwd_stash_size
_OFFLOAD_SOURCE = "torchtune training/_activation_offloading.py OffloadActivations (v0.4.0)"


def _kept(a: LayerActivations, mode: str) -> int:
    if mode == "full":
        return a.checkpoint_bytes
    if mode == "selective":
        return a.selective_bytes
    return a.saved_bytes


def _layer_grad_fraction(spec: ModelSpec, settings: TrainingSettings) -> tuple[list[int], int]:
    """Trainable parameters per layer and outside the layers (embeddings, lm_head, norms)."""
    per_layer = [0] * spec.num_hidden_layers
    outside = 0
    for t in trainable_tensors(spec, settings):
        if t.layer is None or t.layer >= spec.num_hidden_layers:
            outside += t.n_params
        else:
            per_layer[t.layer] += t.n_params
    return per_layer, outside


def _comp(
    cat: str, label: str, n: int, formula: str, source: str, inputs: dict[str, InputValue]
) -> Component:
    return Component(
        category=cat, label=label, n_bytes=n, formula=formula, inputs=inputs, source=source
    )


def _phase_components(
    spec: ModelSpec,
    settings: TrainingSettings,
    st: ModelStates,
    terms: Sequence[Term],
    acts: Sequence[LayerActivations],
    loss: LossActivations,
) -> dict[str, list[Component]]:
    """The live components of each phase at that phase's own peak (GPU terms only)."""
    mode = settings.grad_checkpointing
    kept = [_kept(a, mode) for a in acts]
    kept_total = sum(kept)
    inputs: dict[str, InputValue] = {
        "micro_batch": settings.micro_batch,
        "seq": settings.seq,
        "grad_checkpointing": mode,
        "layers": len(acts),
    }
    act_formula = {
        "none": "sum over layers of saved tensors per token x B·S",
        "full": "layers x B·S·h·e (layer inputs only)",
        "selective": "sum over layers of saved tensors without the core-attention S² part",
    }[mode]
    act_source = f"{_KORTHIKANTI}; {COMPILE_SOURCE}" if settings.compiled else _KORTHIKANTI
    saved_c = _comp("activations", "saved activations", kept_total, act_formula, act_source, inputs)
    offload = settings.activation_offloading
    if offload:
        # torchtune OffloadActivations: what stays on the GPU is the forward stash of the last
        # max_fwd_stash_size = 5 saved tensors (5 layer inputs under full checkpointing, less
        # than one layer's saved set without it); the rest waits in pinned host memory
        window = sum(kept[-_OFFLOAD_STASH:]) if mode == "full" else max(kept, default=0)
        saved_c = _comp(
            "activations", "saved activations still on the GPU (the rest offloaded to host)",
            min(window, kept_total), f"{act_formula}; offloaded but the forward stash",
            _OFFLOAD_SOURCE, {**inputs, "stash_tensors": _OFFLOAD_STASH},
        )  # fmt: skip
    gpu = [t for t in terms if not t.on_host]

    def static(phase: str) -> list[Component]:
        return [
            _comp(t.category, t.label, t.n_bytes, t.formula, t.source, dict(t.inputs))
            for t in gpu
            if phase in t.phases
        ]

    out: dict[str, list[Component]] = {}
    loss_inputs: dict[str, InputValue] = {"vocab": spec.vocab_size, "loss": settings.loss}
    out["forward"] = [
        *static("forward"),
        saved_c,
        _comp(
            "activations",
            "logits + loss (forward)",
            loss.saved_bytes + loss.forward_transient_bytes,
            loss.formula,
            "transformers loss_utils.ForCausalLMLoss; torch log_softmax"
            + (f"; {COMPILE_SOURCE}" if settings.compiled_loss else ""),
            loss_inputs,
        ),
    ]
    # backward: the loss backward, then a walk over the layers from the last one
    dyn_grad = sum(t.n_bytes for t in gpu if t.category == "gradients" and t.phases == {"step"})
    per_layer, outside = _layer_grad_fraction(spec, settings)
    total_train = max(1, sum(per_layer) + outside)
    best: list[Component] = [
        *static("backward"),
        saved_c,
        _comp(
            "activations",
            "logits + loss (backward)",
            loss.saved_bytes + loss.backward_transient_bytes,
            loss.formula,
            "torch nll_loss / log_softmax backward",
            loss_inputs,
        ),
    ]
    best_total = sum(c.n_bytes for c in best)
    done = outside
    remaining = kept_total
    for j in range(len(acts) - 1, -1, -1):
        a = acts[j]
        recompute = a.saved_bytes if mode == "full" else 0
        if settings.optimizer_in_backward:
            grads_now = dyn_grad * per_layer[j] // total_train + st.largest_grad_bytes
            g_label = "gradients of the current layer (optimizer in backward)"
        else:
            done += per_layer[j]
            grads_now = dyn_grad * done // total_train
            g_label = "gradients produced so far"
        comps = [
            *static("backward"),
            _comp(
                "activations",
                f"saved activations of layer {j} (brought back from host)"
                if offload
                else "saved activations (layers not yet back-propagated)",
                kept[j] if offload else remaining,
                act_formula,
                _OFFLOAD_SOURCE if offload else _KORTHIKANTI,
                inputs,
            ),
            _comp(
                "activations",
                f"layer {j} backward working set",
                recompute + a.backward_working_bytes,
                "recomputed layer (checkpointing) + activation gradients",
                _KORTHIKANTI,
                inputs,
            ),
            _comp(
                "gradients", g_label, grads_now, "trainable bytes x fraction done", "autograd", {}
            ),
        ]
        total = sum(c.n_bytes for c in comps)
        if total > best_total:
            best, best_total = comps, total
        remaining -= kept[j]
    tied = _tied_embedding_grad_bytes(spec, settings, st)
    if tied and not settings.optimizer_in_backward:
        # end of backward: a tied embedding's lm_head and lookup gradients and their sum
        end = [
            *static("backward"),
            _comp("gradients", "all gradients (end of backward)", dyn_grad,
                  "trainable bytes", "autograd", {}),
            _comp("gradients", "tied embedding: the two gradient contributions before summing",
                  tied, "2 x V·h x gradient bytes (AccumulateGrad sums them at the end)",
                  "autograd (tied weights)", {"vocab": spec.vocab_size}),
        ]  # fmt: skip
        if sum(c.n_bytes for c in end) > best_total:
            best = end
    step_now = _in_backward_step(spec, settings, st, saved_c)
    if step_now and sum(c.n_bytes for c in [*static("backward"), *step_now]) > best_total:
        best = [*static("backward"), *step_now]
    out["backward"] = best
    if settings.optimizer_in_backward:
        # torchtune optimizer_in_bwd: each parameter steps from its post-accumulate-grad hook,
        # so the full gradient set and a separate step phase never exist
        out["step"] = [
            c
            for c, t in zip(static("step"), [t for t in gpu if "step" in t.phases], strict=True)
            if not (t.category == "gradients" and t.phases == {"step"})
        ]
    else:
        out["step"] = static("step")
    return out


def _by_category(comps: Sequence[Component]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in comps:
        out[c.category] = out.get(c.category, 0) + c.n_bytes
    return out


def _in_backward_step(
    spec: ModelSpec, settings: TrainingSettings, st: ModelStates, saved: Component
) -> list[Component]:
    """The update of the largest parameter inside backward (torchtune ``optimizer_in_bwd``).

    Its post-accumulate-grad hook runs the step while that gradient is alive. An untied output
    head's gradient is complete right after the loss backward, so every saved activation is
    still held; an embedding (tied or not) is complete only at the end of backward, when the
    saved activations are gone. The step's own temporaries are those of one tensor
    (``ModelStates.step_temporary_one_tensor_bytes``; torchao's compiled 8-bit step:
    :mod:`oomkit.estimate.training_torchao`, plus, for a tensor that steps last, its first
    call's autotuning: the run's first step is logged too).
    """
    temp = st.step_temporary_one_tensor_bytes
    if not settings.optimizer_in_backward or not temp:
        return []
    tensors = trainable_tensors(spec, settings)
    # of equal-sized embedding and head (untied), the head steps first, with more alive
    largest = max(tensors, key=lambda t: (t.n_params, t.name == "output.weight"))
    head = largest.name == "output.weight"
    how = "temporaries of one tensor's step"
    if settings.optimizer == "torchao_adamw8bit" and largest.name == "token_embd.weight":
        # the first step of a shape autotunes its kernel (training_torchao); the embedding, of
        # a shape of its own, steps last, with every state allocated. (An untied head of that
        # shape steps first, when few states exist, and the embedding reuses its kernel; a
        # layer's matrix first steps in the last layer's backward, before most states exist.)
        temp += torchao_autotune_bytes(largest.n_params, st.weight_elem)
        how += " + its first call's autotuning clones"
    tp = settings.tp
    out = [saved] if head else []
    out += [
        _comp("gradients", f"gradient of {largest.name} (its step runs in backward)",
              -(-st.largest_grad_bytes // tp), "largest trainable tensor x gradient bytes",
              "torchtune optimizer_in_bwd: register_post_accumulate_grad_hook", {}),
        _comp("optimizer", f"step temporaries of {largest.name} ({settings.optimizer})",
              -(-temp // tp), how,
              optimizer_layout(settings.optimizer).source, {}),
    ]  # fmt: skip
    return out


def _tied_embedding_grad_bytes(spec: ModelSpec, settings: TrainingSettings, st: ModelStates) -> int:
    """Transient bytes of a tied embedding's two gradient contributions (full fine-tuning)."""
    if settings.method != "full" or spec.is_encoder or st.trainable_params == 0:
        return 0
    if any(t.name == "output.weight" for t in model_tensors(spec)):
        return 0
    g_elem = st.gradients_bytes // st.trainable_params
    width = spec.word_embed_proj_dim or spec.hidden_size
    return 2 * spec.vocab_size * width * g_elem // settings.tp


def _overhead(
    device: DeviceTarget, settings: TrainingSettings, peak_alloc: int, family: str
) -> list[Component]:
    out: list[Component] = []
    if settings.overhead_bytes is not None:
        ctx, why = settings.overhead_bytes, "user override (--overhead)"
    else:
        ctx, why = cuda_context_bytes("training", device)
    out.append(_comp("overhead", "CUDA context", ctx, why, "oomkit.estimate.overhead", {}))
    if settings.world_size > 1 and device.backend == "cuda":
        arch = (device.architecture or "").lower()
        channels = 32 if arch in ("hopper", "blackwell") else 16
        comms = 1 + (settings.fsdp_strategy == "HYBRID_SHARD" and settings.fsdp) + (settings.tp > 1)
        nccl = comms * 2 * channels * _NCCL_BUFFER_PER_CHANNEL_PEER
        out.append(
            _comp(
                "overhead",
                "NCCL buffers",
                nccl,
                "communicators x 2 ring peers x channels x 10 MiB",
                "NVIDIA/nccl #986 (ring: 2 connections, linear in channels), #1685",
                {"communicators": comms, "channels": channels},
            )
        )
    frac = settings.fragmentation_fraction
    measured = frac is None
    if frac is None:
        frac = allocator_fraction(family)
    out.append(
        _comp(
            "overhead",
            "allocator fragmentation margin",
            int(peak_alloc * frac),
            "fraction x allocator peak (reserved - allocated)"
            + (f"; the smallest measured of a {family} model's steps" if measured else ""),
            "PyTorch CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp); "
            + ("benchmarks/training_band.py" if measured else "user override (--fragmentation)"),
            {"fraction": frac},
        )
    )
    return out


def estimate_training(spec: ModelSpec, settings: TrainingSettings, hardware: Hardware) -> Estimate:
    """Per-GPU peak of one training step (see the module docstring).

    Args:
        spec: the model.
        settings: the training run.
        hardware: target GPUs; the first ``settings.gpus`` devices (cycled) get the estimate.

    Returns:
        An :class:`Estimate` whose devices are the GPUs of one node (identical by symmetry) and
        whose ``host`` holds offloaded and paged states.

    Raises:
        InvalidSettingError: LoRA targets that do not exist in the model, or a ``tp`` its
            heads cannot be split by (:mod:`oomkit.estimate.training_tp`).
    """
    from oomkit.estimate.training_precision import check_pure_fp16
    from oomkit.estimate.training_tp import check_training_tp

    check_pure_fp16(settings.mixed_precision, settings.master_weights, flags=False)
    check_training_tp(spec, settings.tp, settings.gpus * settings.nodes)  # heads split by tp
    # the echo names the dropout the step runs (the config's largest p when not overridden)
    drop = training_dropout(spec, settings)
    echoed = replace(
        settings,
        dropout=max((drop.embedding, drop.attention, *drop.residual))
        if settings.dropout is None
        else settings.dropout,
    )
    impl, impl_note = effective_attn_implementation(spec.model_type, settings.attn_implementation)
    if impl != settings.attn_implementation:
        settings = replace(settings, attn_implementation=impl)
    # ZeRO-Offload steps with DeepSpeed's CPU optimizer: the HF Trainer's accelerate swaps a
    # bitsandbytes/paged/SGD optimizer for DeepSpeedCPUAdam (training_offload_optim)
    offload_opt = zero_offload_optimizer(settings)
    offload_note = zero_offload_note(settings.optimizer) if offload_opt else None
    if offload_opt is not None:
        settings = replace(settings, optimizer=offload_opt)
    st = model_states(spec, settings)
    # all-linear LoRA still freezes the norms: the explicit stems, not None ("everything trains")
    roles = None if settings.method == "full" else lora_adapted_roles(spec, settings.lora_targets)
    acts = layer_activations(spec, settings, trainable_roles=roles)
    loss = loss_activations(spec, settings)
    terms = state_terms(spec, settings, st)
    phases = _phase_components(spec, settings, st, terms, acts, loss)
    totals = {p: sum(c.n_bytes for c in comps) for p, comps in phases.items()}
    peak_phase = max(totals, key=lambda p: totals[p])
    peak_alloc = totals[peak_phase]
    targets = hardware.devices or (DeviceTarget(name="GPU (capacity unknown)"),)
    family = allocator_family(spec, settings.expandable_segments)
    devices = []
    for i in range(settings.gpus):
        target = targets[i % len(targets)]
        comps = (*phases[peak_phase], *_overhead(target, settings, peak_alloc, family))
        devices.append(
            DeviceUsage(
                device=device_label(target, i),  # mps:0 on a Mac, rocm:0 on AMD (was cuda:i)
                components=tuple(c for c in comps if c.n_bytes > 0),
                capacity_bytes=target.capacity_bytes,
                details={"peak_phase": _PHASE_NAMES[peak_phase]},
            )
        )
    host_terms = [t for t in terms if t.on_host]
    host = DeviceUsage(
        device="cpu",
        components=tuple(
            _comp(
                t.category,
                f"{t.label} (x{settings.gpus} GPUs)",
                t.n_bytes * settings.gpus,
                t.formula,
                t.source,
                dict(t.inputs),
            )
            for t in host_terms
        ),
        capacity_bytes=hardware.host_ram_bytes,
    )
    details: dict[str, object] = {
        "peak_phase": _PHASE_NAMES[peak_phase],
        "phases": {_PHASE_NAMES[p]: v for p, v in totals.items()},
        # each phase's allocation by category (weights, gradients, optimizer, activations):
        # a change compared across two runs in the same phase (the doctor's fixes)
        "phase_categories": {_PHASE_NAMES[p]: _by_category(c) for p, c in phases.items()},
        "peak_allocated_bytes": peak_alloc,
        "allocator_family": family,
        "largest_request_bytes": largest_request_bytes(spec, settings, st.largest_grad_bytes),
        "engine": engine_name(settings),
        "shard_group": shard_group(settings),
        "world_size": settings.world_size,
        "nodes": settings.nodes,
        "trainable_params": st.trainable_params,
    }
    if settings.method != "full":
        details["lora_adapted_linears"] = lora_adapter_params(spec, settings)[1]
    assumptions = (*_assumptions(spec, settings, st), *_hardware_notes(settings, targets))
    if impl_note:
        assumptions = (impl_note, *assumptions)
    if offload_note:
        assumptions = (offload_note, *assumptions)
    from oomkit.estimate.training_seq import past_max_note

    past_max = past_max_note(spec, settings.seq)  # RoPE: runs, untrained positions
    if past_max:
        assumptions = (past_max, *assumptions)
    # a sequence past a learned position table (GPT-2, OPT) fails at the first forward
    past_table = training_position_blocker(spec, settings.seq)
    return Estimate(
        model=model_info(spec),
        runtime="training",
        settings={k: _setting(v) for k, v in asdict(echoed).items()},
        devices=tuple(devices),
        host=host,
        runtime_details=details,
        assumptions=assumptions,
        blockers=(past_table,) if past_table else (),
    )


def _hardware_notes(settings: TrainingSettings, targets: Sequence[DeviceTarget]) -> list[str]:
    """What the GPUs cannot run as asked (the memory is the same; the run is not): bf16 on a
    card without native bf16 (Volta/Turing: emulated, and transformers before torch's emulation
    refused ``--bf16``: "Your setup doesn't support bf16/gpu"), FlashAttention-2 before Ampere
    (flash-attn: "FlashAttention only supports Ampere GPUs or newer")."""
    out: list[str] = []
    cuda = [t for t in targets if t.backend == "cuda" and t.compute_capability]
    no_bf16 = [t for t in targets if t.native_dtypes and "bf16" not in t.native_dtypes]
    if settings.mixed_precision == "bf16" and no_bf16:
        t = no_bf16[0]
        out.append(
            f"{t.name} has no native bf16 (compute capability {t.compute_capability or '?'}): "
            "bf16 runs emulated, far slower, or is refused; --mixed-precision fp16 needs the "
            "same memory"
        )
    old = [t for t in cuda if _capability(t.compute_capability) < (8, 0)]
    if settings.attn_implementation == "flash_attention_2" and old:
        out.append(
            f"flash_attention_2 needs an Ampere or newer GPU (compute capability 8.0+); "
            f"{old[0].name} is {old[0].compute_capability}: flash-attn refuses it, use sdpa"
        )
    return out


def _capability(cc: str | None) -> tuple[int, int]:
    """``"7.5"`` -> (7, 5); anything unreadable sorts as new (no note)."""
    major, _, minor = (cc or "").partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and minor.isdigit() else (99, 0)


def _setting(v: object) -> InputValue:
    if isinstance(v, tuple):
        return ",".join(str(x) for x in v)
    if v is None or isinstance(v, int | float | str | bool):
        return v
    return str(v)


def _assumptions(spec: ModelSpec, settings: TrainingSettings, st: ModelStates) -> tuple[str, ...]:
    out = [
        "steady-state step (optimizer states exist)"
        + ("; gradients set to None between steps" if settings.zero_grad_set_to_none else ""),
        f"attention: {settings.attn_implementation} "
        + (
            "(the S x S scores and their softmax are kept for backward)"
            if settings.attn_implementation == "eager"
            else "(fused kernels keep no S x S tensor)"
        ),
    ]
    if settings.method == "qlora" and spec.moe is not None:
        out.append(
            "QLoRA of an MoE: the fused expert tensors stay in "
            f"{settings.dtype} (transformers 5+ stores experts as 3-D parameters that "
            "bitsandbytes' Linear4bit replacement skips, bitsandbytes#1849); on transformers 4.x "
            "each expert was an nn.Linear and was quantized to NF4, far less"
        )
    if st.optimizer_paged:
        out.append(
            "paged optimizer states live in CUDA unified memory: evicted to host under pressure "
            "and not counted by torch.cuda.max_memory_allocated; shown under host"
        )
    fsdp_note = fsdp_offload_note(settings)
    if fsdp_note:
        out.append(fsdp_note)
    out.append(dropout_note(spec, settings))
    if any(t in ("mamba", "linear_attention") for t in spec.layer_types):
        out.append("SSM / linear-attention layer activations approximated as 4 x d_inner")
    if settings.tp > 1:
        out.append("tensor parallelism splits all parameters evenly (norms are replicated)")
    if settings.compiled:
        out.append(
            "torch.compile: pointwise intermediates (RMSNorm internals, SiLU) recomputed in "
            "backward by the min-cut partitioner; backward working set as eager"
            + ("; loss compiled (fused cross-entropy)" if settings.compiled_loss else "")
        )
    if settings.activation_offloading:
        out.append(
            "activation offloading: saved activations wait in pinned host RAM (not counted "
            "under host); the output head and the loss are not offloaded"
        )
    return tuple(out)
