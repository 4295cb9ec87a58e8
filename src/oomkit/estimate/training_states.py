"""Model states of a training run: which parameters train, and bytes per parameter they carry.

Pure functions over :class:`~oomkit.spec.model.ModelSpec` x
:class:`~oomkit.spec.settings.TrainingSettings`; the sharding across GPUs is applied by
:mod:`oomkit.estimate.training_sharding`.

Sources modelled:

* Mixed-precision layout (ZeRO paper, Rajbhandari et al. 2020, section 3.1: "2Ψ + 2Ψ + KΨ" with
  K = 12 for Adam: fp32 master copy, momentum and variance); DeepSpeed additionally keeps an fp32
  copy of the gradient partition for the step (``deepspeed/runtime/zero/stage_1_and_2.py``
  ``single_partition_of_fp32_groups[i].grad``; stage3.py ``fp32_partitioned_groups_flat[i].grad``):
  DeepSpeed's own ``estimate_zero2_model_states_mem_needs`` counts ``4 x P + 16 x P / N``.
* PyTorch optimizers create their states ``torch.zeros_like(p)``, i.e. in the parameter's dtype
  (``torch/optim/adamw.py`` ``_init_group``): pure-bf16 training (torchtune ``dtype: bf16``) keeps
  bf16 Adam states.
* ``torch.optim.AdamW`` default ``foreach`` implementation (``_multi_tensor_adamw``):
  ``exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)`` allocates one more state-sized
  tensor list during ``step()``; the for-loop implementation (``_single_tensor_adamw``,
  transformers' old ``AdamW``) one parameter's worth; ``fused=True`` none.
* bitsandbytes 8-bit optimizers (``bitsandbytes/optim/optimizer.py``
  ``Optimizer2State.init_state``):
  uint8 ``state1``/``state2`` + fp32 ``absmax1``/``absmax2`` per 256-element block
  (blockwise quantization); parameters with fewer than ``min_8bit_size`` = 4096 elements keep fp32
  states. Paged variants allocate states with ``cudaMallocManaged`` (``F.get_paged``): the driver
  pages them to host memory under pressure and PyTorch's allocator never sees them.
* transformers ``Adafactor`` (``optimization.py``): factored second moment, ``exp_avg_sq_row``
  [rows] + ``exp_avg_sq_col`` [cols] for matrices, full ``exp_avg_sq`` for vectors; no first moment
  by default (``beta1=None``).
* Lion (Chen et al. 2023, lion-pytorch): one momentum state.
* torchao ``AdamW8bit`` (``torchao_adamw8bit``): 8-bit block-quantised states and the fp32
  buffer Inductor allocates in its per-parameter compiled step (the first call's autotuning is
  added where the step runs in backward: :mod:`oomkit.estimate.training`)
  (:mod:`oomkit.estimate.training_torchao`).
* LoRA (PEFT ``tuners/lora/layer.py``): ``lora_A`` [r, in] + ``lora_B`` [out, r] per adapted linear;
  ``get_peft_model(autocast_adapter_dtype=True)`` keeps adapters in fp32 over a bf16/fp16 base.
  Default targets: PEFT ``utils/constants.py``
  ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`` (``q_proj``, ``v_proj`` for Llama-family
  models). QLoRA stores the frozen base in NF4 with double quant (bitsandbytes ``Linear4bit``), the
  storage math of :mod:`oomkit.quant.hf_formats`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from oomkit.errors import InvalidSettingError, close_matches
from oomkit.estimate.training_torchao import (
    TORCHAO_SOURCE,
    torchao_state_bytes,
    torchao_step_temporary_bytes,
)
from oomkit.quant.hf_formats import hf_weights_bytes, is_quantizable_linear
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.settings import TrainingSettings
from oomkit.spec.tensors import is_parameter, model_tensors
from oomkit.units import ceil_div

__all__ = [
    "HF_MODULE_ROLES",
    "PEFT_DEFAULT_TARGETS",
    "ModelStates",
    "OptimizerLayout",
    "lora_adapted_roles",
    "lora_adapter_params",
    "lora_target_roles",
    "model_states",
    "optimizer_layout",
    "trainable_tensors",
]

#: HF module names users pass to ``target_modules`` -> GGUF tensor role stems of
#: :mod:`oomkit.spec.tensors` (Llama, GPT-2/NeoX/Falcon fused, BERT, Phi, Mixtral experts).
HF_MODULE_ROLES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "q_proj": ("attn_q",),
        "query": ("attn_q",),
        "k_proj": ("attn_k",),
        "key": ("attn_k",),
        "v_proj": ("attn_v",),
        "value": ("attn_v",),
        "o_proj": ("attn_output",),
        "out_proj": ("attn_output",),
        "output_proj": ("attn_output",),
        "dense": ("attn_output",),
        "query_key_value": ("attn_qkv",),
        "c_attn": ("attn_qkv",),
        "qkv_proj": ("attn_qkv",),
        "Wqkv": ("attn_qkv",),
        "gate_proj": ("ffn_gate", "ffn_gate_exps", "ffn_gate_shexp"),
        "w1": ("ffn_gate", "ffn_gate_exps"),
        "up_proj": ("ffn_up", "ffn_up_exps", "ffn_up_shexp"),
        "w3": ("ffn_up", "ffn_up_exps"),
        "fc1": ("ffn_up",),
        "c_fc": ("ffn_up",),
        "down_proj": ("ffn_down", "ffn_down_exps", "ffn_down_shexp"),
        "w2": ("ffn_down", "ffn_down_exps"),
        "fc2": ("ffn_down",),
        "lm_head": ("output",),
        "q_a_proj": ("attn_q_a",),
        "q_b_proj": ("attn_q_b",),
        "kv_a_proj_with_mqa": ("attn_kv_a_mqa",),
        "kv_b_proj": ("attn_k_b", "attn_v_b"),
    }
)

#: PEFT ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`` (peft/utils/constants.py), by
#: ``model_type``; a model type not listed falls back to ``q_proj``/``v_proj`` or the fused QKV.
PEFT_DEFAULT_TARGETS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "llama": ("q_proj", "v_proj"),
        "mistral": ("q_proj", "v_proj"),
        "mixtral": ("q_proj", "v_proj"),
        "qwen2": ("q_proj", "v_proj"),
        "gemma": ("q_proj", "v_proj"),
        "gemma2": ("q_proj", "v_proj"),
        "stablelm": ("q_proj", "v_proj"),
        "opt": ("q_proj", "v_proj"),
        "gptj": ("q_proj", "v_proj"),
        "gpt_neo": ("q_proj", "v_proj"),
        "phi": ("q_proj", "v_proj", "fc1", "fc2"),
        "phi3": ("qkv_proj",),
        "gpt2": ("c_attn",),
        "gpt_neox": ("query_key_value",),
        "falcon": ("query_key_value",),
        "bloom": ("query_key_value",),
        "bert": ("query", "value"),
        "roberta": ("query", "value"),
        "xlm-roberta": ("query", "value"),
    }
)

_BNB_BLOCK = 256  # bitsandbytes blockwise optimizer blocksize (F.optimizer_update_8bit_blockwise)
_BNB_MIN_8BIT_SIZE = 4096  # Optimizer8bit min_8bit_size default


@dataclass(frozen=True, slots=True, kw_only=True)
class OptimizerLayout:
    """How an optimizer stores its state (``state_bytes`` is per trainable tensor set)."""

    name: str
    states: int  # number of full-size states per parameter (0 for SGD, 2 for Adam)
    eight_bit: bool
    paged: bool
    factored: bool  # Adafactor
    #: state-sized temporaries ``step()`` allocates (over all tensors with torch's foreach
    #: implementation, one tensor at a time in a for-loop implementation)
    step_temporaries: int
    loop_only: bool  # the optimizer has no foreach/fused implementation (per-tensor loop)
    source: str


_OPTIMIZERS: Mapping[str, OptimizerLayout] = MappingProxyType(
    {
        "adamw": OptimizerLayout(
            name="adamw", states=2, eight_bit=False, paged=False, factored=False,
            step_temporaries=1, loop_only=False,
            source="torch/optim/adamw.py _init_group (exp_avg, exp_avg_sq zeros_like(p)); "
            "_multi_tensor_adamw _foreach_sqrt temporary",
        ),
        "adamw8bit": OptimizerLayout(
            name="adamw8bit", states=2, eight_bit=True, paged=False, factored=False,
            step_temporaries=0, loop_only=False,
            source="bitsandbytes/optim/optimizer.py Optimizer2State.init_state (uint8 states "
            "+ fp32 absmax per 256; fp32 below min_8bit_size=4096)",
        ),
        "paged_adamw": OptimizerLayout(
            name="paged_adamw", states=2, eight_bit=False, paged=True, factored=False,
            step_temporaries=0, loop_only=False,
            source="bitsandbytes PagedAdamW: fp32 states in cudaMallocManaged pages",
        ),
        "paged_adamw8bit": OptimizerLayout(
            name="paged_adamw8bit", states=2, eight_bit=True, paged=True, factored=False,
            step_temporaries=0, loop_only=False,
            source="bitsandbytes PagedAdamW8bit: 8-bit blockwise states in cudaMallocManaged",
        ),
        "torchao_adamw8bit": OptimizerLayout(
            name="torchao_adamw8bit", states=2, eight_bit=True, paged=False, factored=False,
            step_temporaries=0, loop_only=True, source=TORCHAO_SOURCE,
        ),
        "sgd": OptimizerLayout(
            name="sgd", states=0, eight_bit=False, paged=False, factored=False,
            step_temporaries=0, loop_only=False, source="torch/optim/sgd.py (momentum=0: no state)",
        ),
        "sgd_momentum": OptimizerLayout(
            name="sgd_momentum", states=1, eight_bit=False, paged=False, factored=False,
            step_temporaries=0, loop_only=False, source="torch/optim/sgd.py momentum_buffer",
        ),
        "adafactor": OptimizerLayout(
            name="adafactor", states=1, eight_bit=False, paged=False, factored=True,
            step_temporaries=2, loop_only=True,
            source="transformers/optimization.py Adafactor (exp_avg_sq_row/col, beta1=None)",
        ),
        "lion": OptimizerLayout(
            name="lion", states=1, eight_bit=False, paged=False, factored=False,
            step_temporaries=1, loop_only=True,
            source="Chen et al. 2023 Lion; lion-pytorch exp_avg",
        ),
    }
)  # fmt: skip


def optimizer_layout(name: str) -> OptimizerLayout:
    """The :class:`OptimizerLayout` of ``name`` (validated by ``TrainingSettings``)."""
    return _OPTIMIZERS[name]


def _roles_for(module: str) -> tuple[str, ...]:
    roles = HF_MODULE_ROLES.get(module)
    if roles is None:
        raise InvalidSettingError(
            f"Invalid lora target '{module}': not a projection oomkit knows. "
            f"Did you mean {', '.join(close_matches(module, HF_MODULE_ROLES)) or 'q_proj'}? "
            "Use HF module names (q_proj,v_proj,...) or all-linear.",
            setting="lora_targets",
            value=module,
        )
    return roles


def lora_target_roles(spec: ModelSpec, targets: Sequence[str] | None) -> frozenset[str] | None:
    """GGUF role stems LoRA adapts (None means ``all-linear``: every projection but lm_head).

    ``targets`` None -> PEFT's default for ``spec.model_type``.
    """
    if targets is not None and any(t.lower() in ("all-linear", "all_linear") for t in targets):
        return None
    names = targets if targets is not None else PEFT_DEFAULT_TARGETS.get(spec.model_type)
    if names is None:
        layout = {t.role.split(".")[0] for t in model_tensors(spec)}
        names = ("qkv_proj",) if "attn_qkv" in layout else ("q_proj", "v_proj")
    out: set[str] = set()
    for n in names:
        out.update(_roles_for(n))
    return frozenset(out)


def lora_adapted_roles(spec: ModelSpec, targets: Sequence[str] | None) -> frozenset[str]:
    """The role stems whose weights get an adapter, spelled out (``all-linear`` included).

    The activation model reads None as "every weight trains" (full fine-tuning: the norm
    weights' inputs are saved too); LoRA on every linear still leaves the norms and embeddings
    frozen, so it gets the explicit set of linear stems instead.
    """
    roles = lora_target_roles(spec, targets)
    if roles is not None:
        return roles
    return frozenset(_stem(t) for t in model_tensors(spec) if _is_lora_target(t, None))


def _stem(t: TensorInfo) -> str:
    return t.role.rpartition(".")[0] or t.role


def _is_lora_target(t: TensorInfo, roles: frozenset[str] | None) -> bool:
    if not t.name.endswith(".weight") or len(t.shape) < 2:
        return False
    if roles is None:
        return is_quantizable_linear(t) and not t.name.startswith("output.")
    return _stem(t) in roles


def _lora_params(t: TensorInfo, rank: int) -> int:
    shape = t.shape
    count = 1
    for d in shape[:-2]:
        count *= d
    return count * rank * (shape[-2] + shape[-1])


def lora_adapter_params(spec: ModelSpec, settings: TrainingSettings) -> tuple[int, int]:
    """(adapter parameters, adapted linears) for ``settings.lora_rank`` and targets.

    Each adapted ``[out, in]`` linear gets ``r x (in + out)`` parameters (PEFT ``lora_A``,
    ``lora_B``); stacked experts ``[E, out, in]`` count as E linears.
    """
    roles = lora_target_roles(spec, settings.lora_targets)
    params = 0
    n = 0
    for t in _parameter_tensors(spec):
        if _is_lora_target(t, roles):
            params += _lora_params(t, settings.lora_rank)
            n += 1
    if n == 0:
        raise InvalidSettingError(
            f"Invalid lora targets for '{spec.name}': none of "
            f"{', '.join(settings.lora_targets or ('(PEFT default)',))} exists in this "
            "architecture. Name its projections or pass all-linear.",
            setting="lora_targets",
        )
    return params, n


def _parameter_tensors(spec: ModelSpec) -> list[TensorInfo]:
    n = spec.num_hidden_layers
    return [t for t in model_tensors(spec) if is_parameter(t) and (t.layer is None or t.layer < n)]


def trainable_tensors(spec: ModelSpec, settings: TrainingSettings) -> tuple[TensorInfo, ...]:
    """Tensors that carry gradients and optimizer state (LoRA: synthetic adapter tensors)."""
    if settings.method == "full":
        return tuple(_parameter_tensors(spec))
    roles = lora_target_roles(spec, settings.lora_targets)
    out: list[TensorInfo] = []
    r = settings.lora_rank
    for t in _parameter_tensors(spec):
        if not _is_lora_target(t, roles):
            continue
        lead = t.shape[:-2]
        a_shape = (*lead, r, t.shape[-1])
        b_shape = (*lead, t.shape[-2], r)
        out.append(TensorInfo(name=t.name + ".lora_A", shape=a_shape, role="lora", layer=t.layer))
        out.append(TensorInfo(name=t.name + ".lora_B", shape=b_shape, role="lora", layer=t.layer))
    return tuple(out)


def _state_bytes(layout: OptimizerLayout, tensors: Sequence[TensorInfo], elem: int) -> int:
    """Optimizer state bytes for ``tensors`` with ``elem`` bytes per full-precision state."""
    if layout.states == 0:
        return 0
    total = 0
    for t in tensors:
        n = t.n_params
        if layout.name == "torchao_adamw8bit":
            total += torchao_state_bytes(n, elem)
        elif layout.factored:
            total += (t.shape[-2] + t.shape[-1]) * 4 if len(t.shape) >= 2 else n * 4
        elif layout.eight_bit and n >= _BNB_MIN_8BIT_SIZE:
            total += layout.states * (n + 4 * ceil_div(n, _BNB_BLOCK))
        elif layout.eight_bit:
            total += layout.states * n * 4
        else:
            total += layout.states * n * elem
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStates:
    """Unsharded model states of one model replica (bytes), before ZeRO/FSDP division."""

    trainable_params: int
    frozen_weights_bytes: int  # LoRA/QLoRA frozen base (0 for full fine-tuning)
    trainable_weights_bytes: int  # trainable params in their stored dtype
    compute_copy_bytes: int  # 16-bit working copy of fp32-stored params (autocast / DeepSpeed)
    master_bytes: int  # fp32 master copy held by the optimizer (DeepSpeed)
    gradients_bytes: int
    optimizer_bytes: int  # optimizer states (paged ones included)
    optimizer_paged: bool
    step_temporary_bytes: int  # foreach temporary during optimizer.step()
    #: temporaries of the step of the largest trainable tensor alone (what a per-parameter
    #: step, e.g. torchtune's optimizer in backward, holds at that tensor's update)
    step_temporary_one_tensor_bytes: int
    fp32_grad_copy_bytes: int  # DeepSpeed fp32 gradient partition at the step
    largest_grad_bytes: int  # gradient of the largest trainable tensor
    compute_elem: int  # bytes per element of activations
    weight_elem: int  # bytes per element of trainable params as stored
    formula: Mapping[str, str]


def _compute_elem(settings: TrainingSettings) -> int:
    return 4 if settings.mixed_precision == "no" else 2


def model_states(spec: ModelSpec, settings: TrainingSettings) -> ModelStates:
    """Bytes of weights, gradients and optimizer states of one unsharded replica.

    Layout by engine (``e`` = 2 under bf16/fp16, 4 without mixed precision):

    * DeepSpeed (``zero`` >= 1), mixed precision: e-byte params and grads, fp32 master (4) and
      fp32 states, fp32 gradient partition at the step (4).
    * PyTorch (single GPU, DDP, FSDP) with ``master_weights``: fp32 params and grads with
      16-bit compute (autocast or FSDP ``MixedPrecision``), fp32 states.
    * ``master_weights=False`` (torchtune ``dtype: bf16``): e-byte params, grads and states.
    * LoRA: the base is frozen (``dtype`` or NF4 for QLoRA); adapters are fp32 when
      ``master_weights`` (PEFT ``autocast_adapter_dtype``), else e bytes.

    Returns:
        Unsharded bytes per replica; tensor parallelism divides them later.
    """
    e = _compute_elem(settings)
    layout = optimizer_layout(settings.optimizer)
    mixed = settings.mixed_precision != "no"
    deepspeed = settings.zero > 0
    tensors = trainable_tensors(spec, settings)
    p_train = sum(t.n_params for t in tensors)
    largest = max((t.n_params for t in tensors), default=0)
    formula: dict[str, str] = {}
    frozen = 0
    if settings.method != "full":
        base = _parameter_tensors(spec)
        fmt = "nf4" if settings.method == "qlora" else ("fp32" if not mixed else settings.dtype)
        # transformers >= 5 fuses MoE experts into 3-D nn.Parameters that bitsandbytes'
        # Linear4bit replacement never touches (bitsandbytes#1849): they stay in ``dtype``
        fused_raw = settings.fused_experts_unquantized
        # prepare_model_for_kbit_training upcasts every 16-bit parameter but Params4bit
        kept = "fp32" if settings.kbit_prep else settings.dtype
        frozen = hf_weights_bytes(
            fmt, base, dtype=kept, double_quant=True, fused_experts_unquantized=fused_raw
        )
        formula["frozen"] = (
            "NF4 + double-quant absmax per 64 (bitsandbytes Linear4bit), embeddings/norms/lm_head "
            f"in {kept}"
            + (" (prepare_model_for_kbit_training upcast)" if settings.kbit_prep else "")
            + (
                (
                    f"; fused MoE experts stay {kept} (transformers 5+: not nn.Linear)"
                    if fused_raw
                    else "; MoE experts quantized too (transformers 4.x: one nn.Linear each)"
                )
                if spec.moe is not None
                else ""
            )
            if settings.method == "qlora"
            else f"frozen base P x bytes({fmt})"
        )
    if settings.method != "full":
        w_elem = 4 if (settings.master_weights or not mixed) else e
        compute_copy = 0
        master = 0
        g_elem = w_elem
        s_elem = w_elem
        fp32_grad = 0
    elif not mixed:
        w_elem, g_elem, s_elem, compute_copy, master, fp32_grad = 4, 4, 4, 0, 0, 0
    elif deepspeed:
        w_elem, g_elem, s_elem = e, e, 4
        compute_copy = 0
        master = 4 * p_train
        fp32_grad = 4 * p_train
    elif settings.master_weights:
        # fp32 params/grads; the 16-bit copy used by the matmuls (autocast cache / FSDP
        # MixedPrecision unsharded param) is counted with the gathered weights
        w_elem, g_elem, s_elem = 4, 4, 4
        compute_copy = e * p_train
        master = 0
        fp32_grad = 0
    else:
        w_elem, g_elem, s_elem, compute_copy, master, fp32_grad = e, e, e, 0, 0, 0
    opt = _state_bytes(layout, tensors, s_elem)
    temp = 0
    n_tmp = layout.step_temporaries
    temp_one = 0
    if n_tmp and not deepspeed:
        impl = "forloop" if layout.loop_only else settings.optimizer_impl
        if impl != "fused":  # a foreach over one tensor allocates what a for-loop does
            temp_one = n_tmp * largest * (4 if layout.factored else s_elem)
        if impl == "foreach":  # e.g. _foreach_sqrt over every exp_avg_sq at once
            temp = n_tmp * p_train * s_elem
        elif impl == "forloop":  # one parameter at a time (fp32 math in Adafactor)
            temp = temp_one
    if layout.name == "torchao_adamw8bit":  # compiled per-parameter step, one fp32 buffer
        temp = temp_one = max(
            (torchao_step_temporary_bytes(t.n_params) for t in tensors), default=0
        )
    formula["weights"] = f"P_trainable x {w_elem}"
    formula["gradients"] = f"P_trainable x {g_elem}"
    formula["optimizer"] = _optimizer_formula(layout, s_elem)
    return ModelStates(
        trainable_params=p_train,
        frozen_weights_bytes=frozen,
        trainable_weights_bytes=p_train * w_elem,
        compute_copy_bytes=compute_copy,
        master_bytes=master,
        gradients_bytes=p_train * g_elem,
        optimizer_bytes=opt,
        optimizer_paged=layout.paged,
        step_temporary_bytes=temp,
        step_temporary_one_tensor_bytes=temp_one,
        fp32_grad_copy_bytes=fp32_grad,
        largest_grad_bytes=largest * g_elem,
        compute_elem=e,
        weight_elem=w_elem,
        formula=formula,
    )


def _optimizer_formula(layout: OptimizerLayout, elem: int) -> str:
    if layout.states == 0:
        return "no state"
    if layout.factored:
        return "sum over matrices (rows + cols) x 4 (factored second moment)"
    if layout.name == "torchao_adamw8bit":
        return (
            "2 x (n + 4 x n/256 + 1024) per tensor >= 4096 elements with n % 256 == 0, "
            f"else 2 x n x {elem}"
        )
    if layout.eight_bit:
        return "2 x (n + 4 x ceil(n/256)) per tensor >= 4096 elements, else 2 x n x 4"
    return f"{layout.states} x P_trainable x {elem}"
