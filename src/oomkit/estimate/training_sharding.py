"""Where model states live per GPU: DDP, DeepSpeed ZeRO-1/2/3, PyTorch FSDP, CPU offload.

Each :class:`Term` says in which phases of a step it is live (``forward``, ``backward``,
``step``), so :mod:`oomkit.estimate.training` can take the peak over phases.

Sources modelled:

* ZeRO paper (Rajbhandari et al. 2020, Figure 1): stage 1 partitions optimizer states (fp32
  master + Adam states), stage 2 also gradients, stage 3 also parameters, over ``N`` data-parallel
  ranks.
* DeepSpeed ``runtime/zero/stage_1_and_2.py``: with ``contiguous_gradients`` (default True)
  ``backward()`` allocates ``ipg_buffer`` of ``reduce_bucket_size`` elements (two with
  ``overlap_comm``) for the gradient reduction (stage 3: the IPG bucket of the same size); stage 2
  copies each reduced gradient into ``grads_in_partition`` (``copy_grads_in_partition``: one
  buffer of the whole partition, allocated at the first reduction, freed by
  ``_release_ipg_buffers`` in ``step()``); the step converts the gradient partition to fp32.
* DeepSpeed ``runtime/zero/stage3.py`` (checked at v0.19.5-27, edaa722; the same since v0.6.0,
  PR #1453), ``_setup_for_real_optimizer``: ``grad_partitions_flat_buffer = torch.zeros(sum of
  partition_numel, dtype=gradient_accumulation_dtype, device=self.device)`` holds every 16-bit
  gradient partition from optimizer setup on (all phases; on the CPU with ``offload_optimizer``,
  ``self.device`` is ``cpu``), and the IPG bucket (``torch.empty(reduce_bucket_size)`` per
  communication dtype, ``contiguous_gradients``) is allocated there too and reused, never freed.
  ``step()`` walks the optimizer sub-groups (``_create_fp16_sub_groups``: parameters of a param
  group packed until ``sub_group_size`` elements, ``stage3_sub_group_size`` default 1e9 in
  ``runtime/zero/config.py``): ``_prepare_fp32_grad_for_sub_group`` upcasts ONE sub-group's
  gradients (``self.flatten(averaged_gradients[i]).to(fp32)``: a flattened 16-bit copy and the
  fp32 one) and ``_release_sub_group`` sets that fp32 grad to None before the next (since v0.3.13,
  PR #834). DeepSpeed's own ``estimate_zero3_model_states_mem_needs`` counts
  ``18 * total_params / total_gpus`` + ``4 * largest_layer_params`` (16 bytes of 16-bit params
  and grads, fp32 master and Adam moments, + 2 without a stated term); this module counts 16 P/N
  + (4 + e) x the largest sub-group at the step.
* DeepSpeed ``runtime/zero/stage3.py`` ``estimate_zero3_model_states_mem_needs``:
  ``largest_layer_memory = 4 * largest_layer_params`` (16-bit params and grads of the largest
  module gathered at once), plus the prefetch bucket (``stage3_prefetch_bucket_size``).
  Bucket sizes are the values HF Trainer/accelerate write for ``"auto"``
  (``transformers/integrations/deepspeed.py``: ``reduce_bucket_size = hidden_size²``,
  ``stage3_prefetch_bucket_size = 0.9 x hidden_size²``), which :mod:`oomkit.emit.training_configs`
  also writes.
* PyTorch FSDP (``torch/distributed/fsdp``, docs "FullyShardedDataParallel"): flat parameters
  sharded over the shard group (all ranks for FULL_SHARD/SHARD_GRAD_OP, the node for
  HYBRID_SHARD); one unit gathered at a time plus one prefetched (``BackwardPrefetch.BACKWARD_PRE``,
  ``limit_all_gathers``); the root unit (embeddings, final norm, lm_head under the transformer
  auto-wrap policy) is not resharded after forward; SHARD_GRAD_OP keeps every unit gathered from
  forward until its backward; the unsharded gradient of the current unit exists until its
  reduce-scatter. ``CPUOffload(offload_params=True)`` keeps parameters, gradients and the
  optimizer step on the CPU.
* DDP ``Reducer`` (torch/csrc/distributed/c10d/reducer.cpp): with the default
  ``gradient_as_bucket_view=False`` the buckets are a second copy of all gradients.
* Autocast (``torch.amp``) caches the 16-bit cast of each fp32 weight for the forward; the matmuls
  save it for backward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from oomkit.estimate.breakdown import InputValue
from oomkit.estimate.training_states import ModelStates, trainable_tensors
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings
from oomkit.spec.tensors import model_tensors

__all__ = [
    "ALL_PHASES",
    "Term",
    "deepspeed_buckets",
    "engine_name",
    "shard_group",
    "state_terms",
    "zero3_largest_sub_group",
]

ALL_PHASES: frozenset[str] = frozenset({"forward", "backward", "step"})
_FWD_BWD: frozenset[str] = frozenset({"forward", "backward"})
_STEP: frozenset[str] = frozenset({"step"})
_BWD_STEP: frozenset[str] = frozenset({"backward", "step"})
_ZERO_SRC = "ZeRO (Rajbhandari et al. 2020) Fig. 1; deepspeed/runtime/zero/stage_1_and_2.py"
_Z3_SRC = "deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs"
_Z3_STEP_SRC = (
    "deepspeed/runtime/zero/stage3.py step(): _prepare_fp32_grad_for_sub_group / "
    "_release_sub_group, one sub-group at a time (v0.3.13+)"
)
_Z3_BUF_SRC = (
    "deepspeed/runtime/zero/stage3.py _setup_for_real_optimizer: grad_partitions_flat_buffer "
    "(v0.6.0+) and the IPG bucket, allocated once"
)
#: DeepSpeed's ``stage3_sub_group_size`` default (runtime/zero/config.py
#: ``sub_group_size: int = Field(pp_int(1e9))``); HF Trainer has no "auto" for it
STAGE3_SUB_GROUP_SIZE = 1_000_000_000
_FSDP_SRC = "PyTorch FSDP docs (ShardingStrategy, BackwardPrefetch); torch/distributed/fsdp"


@dataclass(frozen=True, slots=True, kw_only=True)
class Term:
    """One memory term on a GPU (or the host), live during ``phases``."""

    category: str
    label: str
    n_bytes: int
    formula: str
    source: str
    phases: frozenset[str] = ALL_PHASES
    on_host: bool = False
    inputs: Mapping[str, InputValue] = field(default_factory=dict)


def engine_name(settings: TrainingSettings) -> str:
    """``"deepspeed"``, ``"fsdp"``, ``"ddp"`` or ``"single"``."""
    if settings.zero:
        return "deepspeed"
    if settings.fsdp and settings.fsdp_strategy != "NO_SHARD":
        return "fsdp"
    return "ddp" if settings.data_parallel > 1 else "single"


def shard_group(settings: TrainingSettings) -> int:
    """Ranks one copy of the sharded states is split over (1 when nothing is sharded)."""
    engine = engine_name(settings)
    if engine == "deepspeed":
        return settings.data_parallel
    if engine == "fsdp":
        if settings.fsdp_strategy == "HYBRID_SHARD":
            return max(1, settings.gpus // settings.tp)
        return settings.data_parallel
    return 1


def deepspeed_buckets(spec: ModelSpec) -> dict[str, int]:
    """Bucket sizes (elements) HF Trainer writes for ``"auto"`` (integrations/deepspeed.py)."""
    h = spec.hidden_size
    return {
        "reduce_bucket_size": h * h,
        "stage3_prefetch_bucket_size": int(0.9 * h * h),
        "stage3_param_persistence_threshold": 10 * h,
        "stage3_sub_group_size": STAGE3_SUB_GROUP_SIZE,
    }


def _module_params(spec: ModelSpec) -> tuple[int, int, int]:
    """(largest single module's params, one decoder layer's params, root-unit params)."""
    by_module: dict[str, int] = {}
    per_layer: dict[int, int] = {}
    root = 0
    for t in model_tensors(spec):
        stem = t.name.rpartition(".")[0]
        by_module[stem] = by_module.get(stem, 0) + t.n_params
        if t.layer is None:
            root += t.n_params
        else:
            per_layer[t.layer] = per_layer.get(t.layer, 0) + t.n_params
    return max(by_module.values()), max(per_layer.values(), default=0), root


def _div(x: int, n: int) -> int:
    return -(-x // n)


def zero3_largest_sub_group(
    partitions: Sequence[int], sub_group_size: int = STAGE3_SUB_GROUP_SIZE
) -> int:
    """Elements of the largest ZeRO-3 optimizer sub-group of one rank.

    ``partitions``: each trainable parameter's partition (``partition_numel``, ``ceil(numel /
    N)``) in parameter order. As ``DeepSpeedZeroOptimizer_Stage3._create_fp16_sub_groups``: a
    group not over ``sub_group_size`` is one sub-group; else parameters are packed until the
    running count reaches ``sub_group_size`` (so a sub-group may pass it by its last
    parameter's partition).
    """
    total = sum(partitions)
    if sub_group_size <= 0 or sub_group_size >= total:
        return total
    largest = run = 0
    for numel in partitions:
        run += numel
        if run >= sub_group_size:
            largest, run = max(largest, run), 0
    return max(largest, run)


def state_terms(spec: ModelSpec, settings: TrainingSettings, st: ModelStates) -> list[Term]:
    """Weights, gradients and optimizer terms on one GPU (and the host), by engine.

    Gradients produced during backward are not here: :mod:`oomkit.estimate.training` walks the
    layers for them. The full local gradient term is live at the optimizer step (and all through
    forward/backward with gradient accumulation).
    """
    engine = engine_name(settings)
    n = shard_group(settings)
    tp = settings.tp
    e = st.compute_elem
    terms: list[Term] = []
    trainable_w = _div(st.trainable_weights_bytes, tp)
    frozen = _div(st.frozen_weights_bytes, tp)
    grads = _div(st.gradients_bytes, tp)
    opt = _div(st.optimizer_bytes, tp)
    master = _div(st.master_bytes, tp)
    fp32_grad = _div(st.fp32_grad_copy_bytes, tp)
    temp = _div(st.step_temporary_bytes, tp)
    # gradients live all step long with accumulation, or when zero_grad keeps them (zero-filled)
    accum = settings.grad_accum > 1 or not settings.zero_grad_set_to_none
    grad_phases = ALL_PHASES if accum else _STEP
    largest, layer_params, root_params = _module_params(spec)
    lora = settings.method != "full"
    inputs: dict[str, InputValue] = {"shard_group": n, "tp": tp, "engine": engine}

    def add(
        cat: str,
        label: str,
        b: int,
        formula: str,
        src: str,
        *,
        phases: frozenset[str] = ALL_PHASES,
        on_host: bool = False,
        inputs: Mapping[str, InputValue] = inputs,
    ) -> None:
        if b > 0:
            terms.append(
                Term(
                    category=cat,
                    label=label,
                    n_bytes=b,
                    formula=formula,
                    source=src,
                    phases=phases,
                    on_host=on_host,
                    inputs=inputs,
                )
            )

    if engine in ("single", "ddp"):
        add("weights", "trainable weights", trainable_w, st.formula["weights"], "model dtype")
        add("weights", "frozen base weights", frozen, st.formula.get("frozen", ""), "PEFT/bnb")
        if st.compute_copy_bytes:
            add(
                "weights",
                "autocast 16-bit weight copies",
                _div(st.compute_copy_bytes, tp),
                f"P x {e} (torch.amp weight-cast cache, saved for backward)",
                "torch.amp autocast",
                phases=_FWD_BWD,
            )
        add(
            "gradients",
            "gradients",
            grads,
            st.formula["gradients"],
            "autograd .grad",
            phases=grad_phases,
        )
        if engine == "ddp":
            add(
                "gradients",
                "DDP reducer buckets",
                grads,
                "= gradient bytes (gradient_as_bucket_view=False)",
                "torch/csrc/distributed/c10d/reducer.cpp",
                phases=frozenset({"backward", "step"}),
            )
        _optimizer(add, st, opt, temp, settings, shard=1)
        return terms
    if engine == "deepspeed":
        z = settings.zero
        buckets = deepspeed_buckets(spec)
        w_div = n if z == 3 else 1
        host_w = settings.offload_params and z == 3
        add(
            "weights",
            f"16-bit params{' (partition)' if z == 3 else ''}",
            _div(trainable_w, w_div),
            f"{st.formula['weights']} / {w_div}",
            _ZERO_SRC,
            on_host=host_w,
        )
        add(
            "weights",
            "frozen base weights",
            _div(frozen, w_div),
            f"frozen / {w_div}",
            _ZERO_SRC,
            on_host=host_w,
        )
        g_div = n if z >= 2 else 1
        off = settings.offload_optimizer
        if z == 3:  # one flat buffer from optimizer setup on, on self.device (cpu if offloaded)
            add(
                "gradients",
                "16-bit gradient partition buffer (grad_partitions_flat_buffer)",
                _div(grads, n),
                f"{st.formula['gradients']} / {n}, resident all step",
                _Z3_BUF_SRC,
                on_host=off,
            )
        else:
            # stage 2 (contiguous_gradients): copy_grads_in_partition allocates the whole
            # grads_in_partition buffer at the first reduction in backward; step() frees it
            # (_release_ipg_buffers). With cpu_offload it returns first (the gradients go to the
            # CPU fp32 buffer). Stage 1: autograd's .grad, produced along backward.
            add(
                "gradients",
                f"16-bit gradients{' (partition)' if z >= 2 else ''}",
                _div(grads, g_div),
                f"{st.formula['gradients']} / {g_div}"
                + (", whole from the first reduction in backward" if z == 2 else ""),
                _ZERO_SRC,
                phases=_BWD_STEP if z == 2 and not (accum or off) else grad_phases,
            )
        if n > 1:  # stage_1_and_2.backward() allocates it; stage3 once at optimizer setup
            add(
                "gradients",
                "reduce bucket (ipg_buffer)" if z < 3 else "reduce bucket (IPG bucket buffer)",
                buckets["reduce_bucket_size"] * e,
                "reduce_bucket_size x e (contiguous_gradients)",
                _ZERO_SRC if z < 3 else _Z3_BUF_SRC,
                phases=frozenset({"backward"}) if z < 3 else ALL_PHASES,
            )
        add(
            "optimizer",
            "fp32 master weights (partition)",
            _div(master, n),
            f"4P / {n}",
            _ZERO_SRC,
            on_host=off,
        )
        _optimizer(add, st, opt, 0, settings, shard=n, on_host=off)
        if z == 3 and not off and fp32_grad:
            sub = _z3_sub_group(spec, settings, n, buckets["stage3_sub_group_size"])
            add(
                "optimizer",
                "fp32 gradient of one optimizer sub-group at step",
                sub * (4 + e),
                f"largest sub-group x (4 fp32 grad + {e} flattened 16-bit copy during the upcast)",
                _Z3_STEP_SRC,
                phases=_STEP,
                inputs={**inputs, "sub_group_elements": sub,
                        "stage3_sub_group_size": buckets["stage3_sub_group_size"]},
            )  # fmt: skip
        else:  # stage_1_and_2 upcasts a param group's whole partition; offload: fp32 on the CPU
            add(
                "optimizer",
                "fp32 gradient partition at step",
                _div(fp32_grad, n),
                f"4P / {n}",
                _ZERO_SRC,
                phases=_STEP,
                on_host=off,
            )
        if z == 3:
            pe = (1 if lora else 2) * largest * e
            add(
                "weights",
                "ZeRO-3 gathered params + grads of the largest module",
                pe,
                "4 x largest_layer_params (16-bit params and grads; LoRA: params only)",
                _Z3_SRC,
                phases=_FWD_BWD,
                inputs={"largest_layer_params": largest},
            )
            add(
                "weights",
                "ZeRO-3 prefetch bucket",
                buckets["stage3_prefetch_bucket_size"] * e,
                "stage3_prefetch_bucket_size x e",
                _Z3_SRC,
                phases=_FWD_BWD,
            )
        return terms
    # FSDP
    host = settings.offload_params
    strat = settings.fsdp_strategy
    add(
        "weights",
        "sharded trainable params",
        _div(trainable_w, n),
        f"{st.formula['weights']} / {n}",
        _FSDP_SRC,
        on_host=host,
    )
    add("weights", "sharded frozen base", _div(frozen, n), f"frozen / {n}", _FSDP_SRC, on_host=host)
    add(
        "gradients",
        "sharded gradients",
        _div(grads, n),
        f"{st.formula['gradients']} / {n}",
        _FSDP_SRC,
        phases=grad_phases,
        on_host=host,
    )
    if host:
        # CPUOffload steps on CPU parameters, and torch's optimizers pick foreach only for
        # CUDA-like devices (torch/optim/optimizer.py _default_to_fused_or_foreach): the CPU
        # step is the for-loop one, one tensor's temporaries, not a copy of every state
        fused = settings.optimizer_impl == "fused"  # fused=True has a CPU kernel (torch 2.4+)
        one = 0 if fused else _div(st.step_temporary_one_tensor_bytes, tp)
        _optimizer(add, st, opt, one, settings, shard=n, on_host=True,
                   impl="fused" if fused else "forloop on the CPU")  # fmt: skip
    else:
        _optimizer(add, st, opt, temp, settings, shard=n)
    unit_e = e if settings.mixed_precision != "no" else 4
    if lora and settings.method == "qlora":
        unit_e = 1  # NF4 storage gathered as stored (about half a byte + scales per param)
    root = _div(root_params * unit_e, tp)
    unit = _div(layer_params * unit_e, tp)
    add(
        "weights",
        "FSDP root unit gathered (embeddings, norm, lm_head)",
        root,
        "root params x e (root is not resharded after forward)",
        _FSDP_SRC,
        phases=_FWD_BWD,
    )
    if strat == "SHARD_GRAD_OP":
        gathered = unit * spec.num_hidden_layers
        formula = "every layer unit x e (SHARD_GRAD_OP keeps them from forward to backward)"
    else:
        gathered = 2 * unit
        formula = "2 x layer unit x e (current + prefetched)"
    add("weights", "FSDP gathered layer units", gathered, formula, _FSDP_SRC, phases=_FWD_BWD)
    g_unit = _div(layer_params * (unit_e if not lora else 0), tp)
    add(
        "gradients",
        "FSDP unsharded gradients of one unit",
        g_unit,
        "layer unit params x e before reduce-scatter",
        _FSDP_SRC,
        phases=frozenset({"backward"}),
    )
    return terms


def _z3_sub_group(spec: ModelSpec, settings: TrainingSettings, n: int, size: int) -> int:
    """Largest ZeRO-3 sub-group on one rank over HF Trainer's two param groups (weight decay:
    matrices; none: biases and norms, ``Trainer.get_decay_parameter_names``)."""
    tp = settings.tp
    parts = [
        (len(t.shape) > 1, _div(_div(t.n_params, tp), n)) for t in trainable_tensors(spec, settings)
    ]
    return max(
        zero3_largest_sub_group([p for d, p in parts if d], size),
        zero3_largest_sub_group([p for d, p in parts if not d], size),
    )


_Add = Callable[..., None]


def _optimizer(
    add: _Add,
    st: ModelStates,
    opt: int,
    temp: int,
    settings: TrainingSettings,
    *,
    shard: int,
    on_host: bool = False,
    impl: str | None = None,
) -> None:
    fn = add
    paged = st.optimizer_paged
    label = f"{settings.optimizer} states" + (" (paged, unified memory)" if paged else "")
    src = "optimizer state layout (oomkit.estimate.training_states)"
    fn(
        "optimizer",
        label,
        _div(opt, shard),
        f"{st.formula['optimizer']} / {shard}",
        src,
        on_host=on_host or paged,
    )
    if not settings.optimizer_in_backward:
        fn(
            "optimizer",
            f"step temporaries ({impl or settings.optimizer_impl})",
            _div(temp, shard),
            "state-sized temporaries of step(): _foreach_sqrt in _multi_tensor_adamw over all "
            "tensors; one tensor at a time in a for-loop implementation",
            "torch/optim/adamw.py",
            phases=_STEP,
            on_host=on_host,
        )
