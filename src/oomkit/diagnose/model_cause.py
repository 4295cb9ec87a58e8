"""The model the user names (or the log prints) decides between "model too large" and "batch".

A PyTorch OOM message says how much the process holds, never what it holds: 23 GiB allocated on
a 24 GiB card is the weights of a 13B model or the activations of a large batch on a 1B model,
and the message alone does not tell (``docs/doctor-causes.md``; on bare messages the doctor
answers the base rate's guess at low confidence). The model's weight bytes are that missing
fact, and oomkit can compute them: the transformers estimate of the named model at the dtype
that loads (``--quant``, else the checkpoint's ``torch_dtype``), on one GPU without offload.

Two readings follow from arithmetic alone, and the rest stays open:

* **Weights larger than the whole device** (``W > total``): the model cannot load on this GPU
  at this dtype whatever the batch: ``model_too_large`` (confidence 0.85). Skipped when the log
  or the settings name a quantized load that the dtype above would not reflect (a 4-bit load of
  a bf16 checkpoint), because then the weight bytes are not known.
* **Weights a small share and most of what is held is something else** (``W <= 0.5 x total``
  and ``held - W >= 0.25 x total``), outside training: the memory beyond the weights belongs to
  this run's batch/sequence (activations, KV cache, logits): ``batch_or_activations`` (0.6).
  Growth across repeated OOMs still outranks it (``rules._with_growth``). Training is excluded:
  there gradients and optimizer states (8-16 bytes per parameter under AdamW) sit beyond the
  weights, and the weights alone do not say whether they fit.

Anything between is left as the rules and the base rate had it, with the weight figure added to
the explanation, so the user sees the fact either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.fixes import generic, size_text

if TYPE_CHECKING:
    from oomkit.diagnose.events import LogContext, OomEvent
    from oomkit.diagnose.fixes import Fix
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = ["ModelFacts", "batch_levers_first", "model_facts", "with_model_facts"]

#: the runtimes whose messages carry a process's holding but not what it holds
_TORCH_FAMILY = frozenset({"pytorch", "mps"})
#: a quantized load the checkpoint dtype would not reflect (bitsandbytes, GPTQ/AWQ, QLoRA)
_QUANTIZED_LOAD = re.compile(
    r"load_in_(?:4|8)bit|bitsandbytes|BitsAndBytesConfig|\bbnb\b|qlora|\bgptq\b|\bawq\b|nf4",
    re.IGNORECASE,
)
_TOO_LARGE_CONFIDENCE = 0.85
_BATCH_CONFIDENCE = 0.6
_WEIGHTS_SMALL_SHARE = 0.5
#: a --gpu/--vram within this share of the message's total is the same card (driver-reported
#: totals differ from catalog ones by a few percent)
_SAME_CARD = 0.05
#: fixes that shrink only the stored weights (bitsandbytes keeps activations in the compute
#: dtype): the titles of model_fixes_hf's int8/NF4 fixes and the rules' generic one
_WEIGHT_ONLY_FIXES = ("Load in 8-bit", "Load in 4-bit", "Load the weights quantized")
_BEYOND_WEIGHTS_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What the named model weighs on one GPU, and where the name came from."""

    name: str
    weights_bytes: int
    dtype: str
    #: "--model" (the user) or "the log" (a model name the catalog resolved)
    named_by: str
    #: the device's capacity the user stated (``--gpu``/``--vram``), else ``None``; the
    #: message's own total wins when it has one (the device that failed)
    capacity_bytes: int | None = None
    #: the weight bytes are those of the load (no unreflected quantization in the log)
    dtype_known: bool = True


#: the title of PyTorch's expandable-segments fix (rules_torch_fixes._frag_fix)
_FRAG_RULE = "Let the allocator grow segments"


def model_facts(
    spec: ModelSpec,
    settings: InferenceSettings | None,
    hardware: Hardware | None,
    *,
    named_by: str,
    text: str = "",
) -> ModelFacts | None:
    """The weight bytes of ``spec`` as transformers loads it on one GPU, or ``None`` when the
    estimator refuses the settings."""
    import dataclasses

    from oomkit.api import estimate
    from oomkit.errors import OomkitError
    from oomkit.spec.hardware import DeviceTarget
    from oomkit.spec.hardware import Hardware as Hw
    from oomkit.spec.settings import InferenceSettings as Settings

    quant = settings.quant if settings is not None else None
    user = dataclasses.replace(settings, runtime="transformers") if settings else None
    base = user or Settings(runtime="transformers")
    try:
        est = estimate(spec, base, Hw(devices=(DeviceTarget(name="GPU"),)))
    except (OomkitError, ValueError):
        return None
    weights = sum(
        c.n_bytes for c in est.devices[0].components if c.category == "weights" and c.n_bytes
    )
    if weights <= 0:
        return None
    cap = None
    if hardware is not None and hardware.devices:
        cap = hardware.devices[0].capacity_bytes
    return ModelFacts(
        name=spec.name,
        weights_bytes=weights,
        dtype=(quant or spec.torch_dtype or "bf16").lower(),
        named_by=named_by,
        capacity_bytes=cap,
        dtype_known=quant is not None or not _QUANTIZED_LOAD.search(text[:1_000_000]),
    )


#: fp32 loads, the only ones "Run in bf16/fp16" would shrink
_FP32 = frozenset({"fp32", "float32", "f32", "float"})


def _batch_first(e: OomEvent, fixes: tuple[Fix, ...], dtype: str) -> tuple[Fix, ...]:
    """The batch/input fixes sized by the shortfall, then inference mode, then the rule's own
    (without "Run in bf16/fp16" for a model that already loads in 16 bits or fewer)."""
    from oomkit.diagnose.fixes import generic
    from oomkit.diagnose.rules_torch_fixes import _batch_fixes

    need = None
    if e.requested_bytes is not None and e.free_bytes is not None:
        need = e.requested_bytes - e.free_bytes
    drop = ("Recompute",) if dtype in _FP32 else ("Recompute", "Run in bf16/fp16")
    batch = [f for f in _batch_fixes(e, need) if not f.title.startswith(drop)]
    fixes = tuple(f for f in fixes if not f.title.startswith(drop))  # outside training
    # the model decided the lever: PyTorch's expandable-segments setting, offered first while the
    # numbers left the cause open (rules_torch_allocator._with_expandable), follows unsized
    fixes = tuple(
        replace(f, expected_saving_bytes=None) if f.title.startswith(_FRAG_RULE) else f
        for f in fixes
    )
    grad = generic(
        "Run inference without autograd",
        "outside training, tensors kept for a backward pass that never comes hold activations "
        "of every layer; torch.inference_mode() keeps none.",
        ("with torch.inference_mode(): outputs = model(**inputs)",),
    )
    return (*batch, grad, *fixes)


def _training(ctx: LogContext) -> bool:
    return ctx.frame_phase in ("backward", "optimizer_step")


def with_model_facts(
    result: Analysis,
    facts: ModelFacts | None,
    e: OomEvent,
    ctx: LogContext,
    *,
    training: bool = False,
) -> Analysis:
    """``result``, decided by the model's weight bytes where the arithmetic settles it (see the
    module docstring); a rule that settled the cause with confidence >= 0.5 is kept."""
    from oomkit.diagnose.priors import is_open

    if facts is None or e.runtime not in _TORCH_FAMILY:
        return result
    load_only = ctx.frame_phase == "model_load" and not (training or _training(ctx))
    whole = _model_sized_request(result, facts, e, load_only=load_only)
    if whole is not None:
        return whole
    if result.confidence >= 0.5 and not is_open(result):
        return result
    if result.cause not in ("unknown", "model_too_large", "batch_or_activations"):
        return result
    # the message's total is the device that failed; a --gpu/--vram of another size is the
    # user's what-if (the fixes are sized on it), not the card whose OOM is being explained
    total = e.total_bytes or facts.capacity_bytes
    if not total:
        return result
    w = facts.weights_bytes
    who = "you named" if facts.named_by == "--model" else "the log names"
    given = facts.capacity_bytes
    other = (
        f" (the message's; not the {size_text(given)} GPU given with --gpu/--vram)"
        if given and e.total_bytes and abs(given - e.total_bytes) > _SAME_CARD * e.total_bytes
        else ""
    )
    fact = (
        f" The model {who}, {facts.name}, weighs {size_text(w)} at {facts.dtype} "
        f"(oomkit's transformers estimate) on a {size_text(total)} device{other}."
    )
    if w > total and facts.dtype_known:
        return Analysis(
            cause="model_too_large",
            confidence=_TOO_LARGE_CONFIDENCE,
            explanation=result.explanation + fact + " Its weights alone are larger than the "
            "whole device: it cannot load here at this dtype whatever the batch, so the weights "
            "are the cause (quantize, or spread it over more memory).",
            fixes=result.fixes,
            open_question=False,
        )
    held = e.allocated_bytes or e.process_in_use_bytes or e.reserved_bytes
    in_training = training or _training(ctx)
    if (
        held is not None
        and not in_training
        and facts.dtype_known
        and w <= _WEIGHTS_SMALL_SHARE * total
        and held - w >= _BEYOND_WEIGHTS_SHARE * total
    ):
        return Analysis(
            cause="batch_or_activations",
            confidence=_BATCH_CONFIDENCE,
            explanation=result.explanation + fact + f" This process holds {size_text(held)}: "
            f"{size_text(held - w)} beyond the weights is this run's batch and sequence "
            "(activations, KV cache, logits), so the batch or the input length is the lever.",
            fixes=_batch_first(e, result.fixes, facts.dtype),
            open_question=False,
        )
    return replace(result, explanation=result.explanation + fact)


#: bytes per parameter of the dtypes a whole-model buffer is kept in (16-bit weights, fp32
#: master weights); the named model's parameter count is its weight bytes over its dtype's
_PARAM_BYTES = {
    "float16": 2,
    "fp16": 2,
    "f16": 2,
    "half": 2,
    "bfloat16": 2,
    "bf16": 2,
    "float32": 4,
    "fp32": 4,
    "f32": 4,
    "float": 4,
}
#: a request within this share of N x 2 or N x 4 bytes is a buffer of the whole model (the
#: estimate and the checkpoint differ by tied embeddings and buffers, under 2%; ZeRO pads the
#: flat buffer to a multiple of the world size, a few bytes)
_WHOLE_MODEL_TOLERANCE = 0.03
#: below this a request the size of a (tiny) model is as likely one activation
_WHOLE_MODEL_MIN = 512 * 1024 * 1024
_WHOLE_MODEL_CONFIDENCE = 0.75
_WHOLE_MODEL_OVERRIDES = frozenset(
    {"batch_or_activations", "unknown", "fragmentation", "model_too_large"}
)


def _whole_model_fixes(x: int, fixes: tuple[Fix, ...], *, load_only: bool) -> tuple[Fix, ...]:
    """Offloading the whole-model buffer (it leaves the GPU: saves the request) and sharding it,
    then the rule's fixes without the batch cuts (no batch shrinks a buffer of the weights).

    ``load_only``: the traceback is a model load and nothing in the log trains; there is no
    optimizer state to offload or shard, so the rule's load fixes (a quantized load sized by
    the estimate, ``device_map`` offload) are the fixes."""
    from oomkit.diagnose.fixes import Fix as FixCls

    rest = tuple(f for f in fixes if not f.title.startswith(_BATCH_CUTS))
    if load_only:
        return rest

    offload = FixCls(
        title="Offload the optimizer state / fp32 master weights to the CPU",
        why=f"the {size_text(x)} whole-model buffer then lives in host RAM, not on the GPU.",
        commands=(
            '"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}',
            "LowLevelZeroPlugin(stage=2, cpu_offload=True)   # ColossalAI",
        ),
        expected_saving_bytes=x,
    )
    shard = generic(
        "Shard the parameters and optimizer state (ZeRO-3 / FSDP)",
        "each of N GPUs then keeps 1/N of every whole-model buffer.",
        ('"zero_optimization": {"stage": 3}   # DeepSpeed', "FSDP(model)   # PyTorch"),
    )
    return (offload, shard, *rest)


#: fixes that shrink activations only
_BATCH_CUTS = ("Cut the batch", "Halve the batch", "Recompute")


def _model_sized_request(
    result: Analysis, facts: ModelFacts, e: OomEvent, *, load_only: bool = False
) -> Analysis | None:
    """A single request the size of every parameter of the named model: the model, not a batch.

    Mechanism. No activation of a step is the size of the whole model, but several buffers of a
    load or of a sharded optimizer are exactly that: DeepSpeed ZeRO-1/2 (``stage_1_and_2.py``)
    flattens each parameter group into one contiguous 16-bit tensor
    (``flatten_dense_tensors_aligned``) and keeps its fp32 master copy as one flat partition
    (``single_partition_of_fp32_groups``: all of it when the data-parallel world is one GPU);
    ColossalAI's low-level ZeRO and FSDP's flat parameters do the same, and a full-model
    ``.to(device)`` of a flattened module moves one such tensor. So a request equal to the
    named model's parameter count x 2 bytes (a 16-bit copy) or x 4 bytes (an fp32 master copy),
    within 3%, is the model's weights or optimizer state being placed: ``model_too_large`` at
    0.75, even where the request's size alone (larger than the card, or a large share of it)
    read as an activation. Only for 16/32-bit dtypes (a quantized load's bytes per parameter is
    not one number) and requests of 512 MiB or more (a tiny model's size is also a common
    activation size). What would decide otherwise: the traceback (a forward/backward frame that
    allocates it).
    """
    x = e.requested_bytes
    per = _PARAM_BYTES.get(facts.dtype)
    if x is None or per is None or not facts.dtype_known or x < _WHOLE_MODEL_MIN:
        return None
    if result.cause not in _WHOLE_MODEL_OVERRIDES:
        return None
    if result.cause == "model_too_large" and result.confidence >= _WHOLE_MODEL_CONFIDENCE:
        return None
    params = facts.weights_bytes / per
    for width, what in ((2, "a 16-bit copy"), (4, "an fp32 copy")):
        size = params * width
        if abs(x - size) <= _WHOLE_MODEL_TOLERANCE * size:
            return Analysis(
                cause="model_too_large",
                confidence=_WHOLE_MODEL_CONFIDENCE,
                explanation=result.explanation + f" The request, {size_text(x)}, is the size "
                f"of every parameter of {facts.name} at {width} bytes ({params / 1e9:.2f}B "
                f"parameters x {width} = {size_text(int(size))}): one buffer holding the whole "
                f"model, {what} of its weights (a ZeRO/FSDP flat parameter or fp32 master "
                "buffer, or a full-model .to(device)), not an activation. The model's weights "
                "or optimizer state do not fit: shard them over more GPUs (ZeRO-3/FSDP), "
                "offload them to the CPU, or train a smaller/quantized model or an adapter.",
                fixes=_whole_model_fixes(x, result.fixes, load_only=load_only),
                open_question=False,
            )
    return None


def batch_levers_first(fixes: tuple[Fix, ...], cause: str) -> tuple[Fix, ...]:
    """``fixes`` with weight-only quantization after the sized batch fixes when the cause is the
    batch: the estimators size an 8-/4-bit load larger than the batch cut that covers the
    shortfall, so by saving alone "quantize" would lead a diagnosis that says the weights are
    not the lever (--model llama-3.2-1b on a 10 GiB holding)."""
    if cause != "batch_or_activations":
        return fixes
    # sized ones only: an unsized (generic) fix keeps its place, _prune_generic keeps the first
    weights = [
        f
        for f in fixes
        if f.title.startswith(_WEIGHT_ONLY_FIXES) and f.expected_saving_bytes is not None
    ]
    if not weights or len(weights) == len(fixes):
        return fixes
    rest = [f for f in fixes if f not in weights]
    # rank() puts sized, non-hardware fixes first: the weight fixes go right after them
    i = next(
        (k for k, f in enumerate(rest) if f.expected_saving_bytes is None or f.hardware),
        len(rest),
    )
    return (*rest[:i], *weights, *rest[i:])
