"""What a memory-use report says, when no allocation is known to have failed (issue 9).

:mod:`oomkit.diagnose.parse_wordings_usage` reads reports such as "GPU memory accumulates ~1GB
per inference iteration", "uses 23 GB of 24 GB" or "memory usage spikes to 34 GB" as one
``memory_report`` event. Nothing failed in the text, so this rule says what the numbers do and do
not show, names the causes of ``docs/doctor-causes.md`` that produce that shape, stays at low
confidence and asks the one fact that would decide:

* **growth per unit of work** (``memory_growth_report``): memory that rises with every
  iteration, request or load is the shape of ``leak_or_accumulation`` (tensors, states or a
  history kept alive across iterations, a model loaded again without freeing the last one), but
  two other mechanisms look the same from outside: PyTorch's caching allocator keeps freed blocks
  reserved (``nvidia-smi`` shows the reserve, not live tensors: ``docs/source/notes/cuda.rst``,
  "the unused memory managed by the allocator will still show as if used in nvidia-smi"), and a
  KV / prefix cache grows with the requests it serves until its budget. Read as accumulation,
  0.35, asking whether ``torch.cuda.memory_allocated()`` (not ``nvidia-smi``) rises step after
  step and whether it levels off;
* **used near the capacity**, **a spike to a size** and **a use called excessive**: the report
  states a level, not what holds it; the cause stays ``unknown`` (0.2) with the stated figures,
  and the question asks what the memory holds (weights, KV cache, activations of one input) and
  whether it ends in an out-of-memory error.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.parse_wordings_usage import UsageNumbers, usage_numbers
from oomkit.units import format_bytes

__all__ = ["analyze_usage"]

_MEASURE = generic(
    "Measure what holds the memory",
    "live tensors and the allocator's reserve differ; only a measurement across steps tells "
    "growth from a reserve that settles.",
    (
        "print(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())  # every step",
        "torch.cuda.memory._record_memory_history(); ...; "
        "torch.cuda.memory._dump_snapshot('snap.pickle')",
        "nvidia-smi --query-gpu=memory.used,memory.total --format=csv -l 5",
    ),
)
_NO_ALIVE = generic(
    "Stop keeping tensors alive across iterations",
    "accumulate Python numbers, detach what you keep, free the previous model or state.",
    (
        "total_loss += loss.item()",
        "history.append(out.detach().cpu())",
        "del model; gc.collect(); torch.cuda.empty_cache()",
    ),
)
_SHRINK = generic(
    "Shrink the batch/context, or load a smaller/quantized model",
    "the levers that lower the level a run holds (N: a shorter context than now).",
    (
        "batch_size //= 2",
        "-c <N>   # llama.cpp",
        "--max-model-len <N>   # vLLM",
        "4-bit quantization",
    ),
)


def _fb(n: int | None) -> str:
    return "?" if n is None else format_bytes(n)


def _pressure(nums: UsageNumbers) -> Analysis:
    if nums.free_bytes is not None:
        what = (
            f"Forge warns that only {_fb(nums.free_bytes)} of VRAM is free for this diffusion "
            "iteration (under its 1536 MB safe value): the weights it keeps on the GPU leave "
            "the sampler too little, and the driver may start to use shared memory"
        )
    else:
        what = (
            f"DeepSpeed counted {nums.unit_of_work} PyTorch allocator cache flush(es) in one "
            "step: a cudaMalloc failed, the caching allocator freed its cached blocks and "
            "retried (num_alloc_retries), so the step runs at the edge of the card"
        )
    return Analysis(
        cause="unknown",
        confidence=0.25,
        explanation=f"No out-of-memory error is in the text: {what}. A warning of memory "
        "pressure, not a failure; what holds the memory is not in it. What would decide: "
        "whether the run later fails with an out-of-memory error (paste it), and what the "
        "memory holds at the peak (weights, optimizer state, one step's activations).",
        fixes=(_MEASURE, _SHRINK),
        open_question=False,
    )


def analyze_usage(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The reading of a ``memory_report`` event (``None`` for any other event)."""
    del ctx  # the report's own sentence is all this rule reads
    if e.kind != "memory_report":
        return None
    nums = usage_numbers(e.text)
    family = nums.family if nums is not None else (e.detail or "excessive")
    head = "No out-of-memory error is in the text: it reports memory use"
    if family == "growth":
        amount = f" by {_fb(nums.growth_bytes)}" if nums and nums.growth_bytes else ""
        unit = nums.unit_of_work if nums and nums.unit_of_work else "iteration"
        per = unit if unit in {"without bound", "over time"} else f"per {unit}"
        return Analysis(
            cause="leak_or_accumulation",
            confidence=0.35,
            explanation=f"{head} that grows{amount} {per}. Growth with every unit of work is "
            "the shape of accumulation (tensors, states or a history kept alive across "
            "iterations, a model loaded again without freeing the last one); a caching "
            "allocator's reserve (nvidia-smi shows reserved memory, not live tensors) and a "
            "KV/prefix cache that fills up to its budget look the same from outside. What "
            "would decide: does torch.cuda.memory_allocated() (not nvidia-smi) rise step after "
            "step, and does it level off or end in an out-of-memory error?",
            fixes=(_MEASURE, _NO_ALIVE),
            open_question=False,
        )
    if family == "pressure" and nums is not None:
        return _pressure(nums)
    if family == "near_full" and nums is not None:
        used = (
            f"{_fb(nums.used_bytes)} used of {_fb(nums.total_bytes)}"
            if nums.used_bytes is not None
            else f"{_fb(nums.free_bytes)} left of {_fb(nums.total_bytes)}"
        )
        level = f" at {used} (near the capacity)"
    elif family == "spike" and nums is not None and nums.spike_bytes is not None:
        level = f" that spikes to (or by) {_fb(nums.spike_bytes)}"
    else:
        level = " that it calls excessive"
    return Analysis(
        cause="unknown",
        confidence=0.2,
        explanation=f"{head}{level}, not a failed allocation; the level alone does not say "
        "what holds the memory (the weights, a KV cache sized by the context, one large "
        "input's activations, or a caching allocator's reserve that nvidia-smi counts as "
        "used). What would decide: what the memory holds when it peaks (the model's size vs "
        "the card, the context and batch), and whether the run then fails with an "
        "out-of-memory error (paste it here).",
        fixes=(_MEASURE, _SHRINK),
        open_question=False,
    )
