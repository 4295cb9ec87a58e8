"""What a PyTorch allocator message says, in words, and the readings that rest on who holds the
card (other processes the message lists; the cudaMallocAsync pool), for
:mod:`oomkit.diagnose.rules_torch`."""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.engine_levers import engine_batch_fixes
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.rules_torch_fixes import _batch_fixes, _fb, _model_fixes
from oomkit.units import GiB

__all__ = ["cap_not_crossed"]

_UNACCOUNTED_MIN = 2 * GiB  # above usual CUDA context + library overhead (0.3-1 GiB)
_GAP_SHARE = 0.10
_STATED_LARGE = 2 * GiB  # one tensor this large is an activation (rules_torch _LARGE_TENSOR)


def _others(e: OomEvent, t: int) -> Analysis:
    total_others = sum(p.used_bytes or 0 for p in e.other_processes)
    parts = ", ".join(f"process {p.pid} holds {_fb(p.used_bytes)}" for p in e.other_processes)
    fixes = [
        Fix(
            title=f"Stop or move process {p.pid}",
            why=f"process {p.pid} holds {_fb(p.used_bytes)} of GPU {e.device}; ending it frees "
            "that memory for this job.",
            commands=(
                "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                f"kill {p.pid}",
            ),
            expected_saving_bytes=p.used_bytes,
        )
        for p in e.other_processes
    ]
    fixes.append(
        generic(
            "Run on a GPU nobody else uses",
            "pick an idle device from nvidia-smi.",
            ("nvidia-smi", "CUDA_VISIBLE_DEVICES=<idle index> python train.py"),
        )
    )
    share = total_others / t if t else 0.0
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.85 if share >= 0.25 else 0.65,
        explanation=f"Other processes hold {_fb(total_others)} of the {_fb(t)} card ({parts}).",
        fixes=tuple(fixes),
    )


def _share_text(part: int, whole: int) -> str:
    """``part`` as a whole percentage of ``whole`` ("under 1%" rather than "0%")."""
    pct = 100 * part // max(1, whole)
    return f"{pct}%" if pct else "under 1%"


def _describe(e: OomEvent) -> str:
    x, t, f = e.requested_bytes, e.total_bytes, e.free_bytes
    where = "the GPU" if e.device is None else f"GPU {e.device}"
    s = f"PyTorch asked for {_fb(x)} on {where}" if x is not None else f"PyTorch ran out on {where}"
    if t is not None:
        s += f" ({_fb(t)} total, {_fb(f)} free)"
    s += "."
    p, a, r = e.process_in_use_bytes, e.allocated_bytes, e.reserved_unallocated_bytes
    if p is not None:
        who = (
            f"This process (PID {e.self_pid}, listed as 'Process {e.self_pid}' because NVML "
            "sees host PIDs)"
            if e.self_pid
            else "This process"
        )
        s += f" {who} holds {_fb(p)}"
        if a is not None and r is not None:
            s += f": {_fb(a)} allocated by PyTorch, {_fb(r)} reserved but unallocated, " + (
                f"{_fb(p - a - r)} outside PyTorch (CUDA context, libraries)"
                if p >= a + r  # PyTorch's own figures: in use >= allocated + reserved
                else f"together {_fb(a + r - p)} more than it holds (the figures do not add up)"
            )
        s += "."
    elif a == 0 and r == 0:
        s += " PyTorch holds no memory on this device (nothing allocated or reserved)."
    elif a is not None and r is not None:
        s += f" PyTorch has {_fb(a)} allocated and {_fb(r)} reserved but unallocated."
    if e.reserved_bytes == 0 and a == 0:
        s += " PyTorch holds no memory on this device (nothing allocated or reserved)."
    elif e.reserved_bytes is not None and a is not None:
        s += f" PyTorch has {_fb(a)} allocated and {_fb(e.reserved_bytes)} reserved " + (
            f"({_fb(e.reserved_bytes - a)} cached)."
            if e.reserved_bytes != a
            else "(nothing cached)."
        )
    for o in e.other_processes:
        s += f" Process {o.pid} holds {_fb(o.used_bytes)}."
    if e.allowed_bytes is not None and (e.total_bytes is None or e.allowed_bytes < e.total_bytes):
        s += f" A per-process cap of {_fb(e.allowed_bytes)} is set."
    elif e.allowed_bytes is not None:
        s += " The per-process limit is the whole device (no fraction set)."
    if e.private_pool_bytes:
        s += f" {_fb(e.private_pool_bytes)} sits in private pools (CUDA graphs)."
    return s


def _async_pool(e: OomEvent, ctx: LogContext, base: str) -> Analysis | None:
    """``backend:cudaMallocAsync``: the card minus free minus allocated, when it is large.

    PyTorch's cudaMallocAsync backend sets the default pool's release threshold to UINT64_MAX
    ("retaining memory in the pool", c10/cuda/CUDAMallocAsyncAllocator.cpp `lazy_init_device`)
    and raises "would exceed allowed memory" as soon as cudaMallocAsync fails, without trimming
    the pool first (`mallocAsync`). Its message counts only live tensors (``Currently
    allocated``), so the gap T - F - A holds the pool's freed blocks that could not serve this
    request (stream-ordered reuse, block sizes) plus the CUDA context and any other process. A gap
    well above a context (>= 2 GiB and >= 10% of the card) that would cover the shortfall is read
    as memory the pool keeps but cannot hand out (fragmentation), with other processes as the
    competing reading. Serving engines and graph capture keep pools outside by design (as T5).
    """
    t, f, a, x = e.total_bytes, e.free_bytes, e.allocated_bytes, e.requested_bytes
    if e.format != "pytorch_cudamallocasync" or t is None or f is None or a is None or x is None:
        return None
    engine = ctx.frame_phase in {"warmup", "serving_step", "cuda_graph_capture"} or (
        ctx.runtime_hint in {"vllm", "sglang", "tgi", "tensorrt-llm"}
    )
    gap = t - f - a
    if engine or gap < max(_UNACCOUNTED_MIN, int(_GAP_SHARE * t)) or gap < x - f:
        return None
    return Analysis(
        cause="fragmentation",
        confidence=0.45,
        explanation=base + f" {_fb(t)} - {_fb(f)} free - {_fb(a)} in live tensors = {_fb(gap)} "
        "is held but not allocated. Under backend:cudaMallocAsync PyTorch keeps freed memory in "
        "the CUDA pool and raises this error without trimming it, so that memory is most likely "
        "pool blocks that could not serve this request; another process would look the same: "
        "run `oomkit gpus` (or nvidia-smi) to decide.",
        fixes=(
            Fix(
                title="Return the pool's free blocks to the driver before the large step",
                why=f"up to {_fb(gap)} is held outside live tensors; under cudaMallocAsync "
                "empty_cache() trims the pool.",
                commands=("torch.cuda.synchronize(); torch.cuda.empty_cache()",),
                expected_saving_bytes=gap,
            ),
            generic(
                "Use the native caching allocator with expandable segments",
                "it reuses freed memory across sizes without the stream-ordered pool's limits.",
                (
                    "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # not "
                    "backend:cudaMallocAsync",
                    "python main.py --disable-cuda-malloc   # ComfyUI",
                ),
            ),
            Fix(
                title="Find and stop what else holds the GPU",
                why=f"if nvidia-smi lists other processes, they hold part of the {_fb(gap)}.",
                commands=(
                    "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                ),
                expected_saving_bytes=None,
            ),
        ),
    )


# phase -> (cause, confidence) when the message has no numbers (section 3 of doctor-causes.md)
_PHASE_ONLY = {
    "model_load": ("model_too_large", 0.45),
    "kv_cache_alloc": ("kv_cache_or_context", 0.5),
    "forward": ("batch_or_activations", 0.4),
    "backward": ("batch_or_activations", 0.4),
    "cuda_graph_capture": ("batch_or_activations", 0.45),
    "warmup": ("batch_or_activations", 0.45),
    "serving_step": ("batch_or_activations", 0.4),
    "optimizer_step": ("model_too_large", 0.35),
    "checkpoint_save": ("model_too_large", 0.45),  # revfix18e: the save's gather
    "pin_memory": ("host_ram", 0.45),  # revfix18e: the DataLoader's pinned host pages
    "generate": ("kv_cache_or_context", 0.3),
}


#: (docpost19) the deciding fact of the phases whose allocation is not the batch's: the save's
#: gather (a sharded save sizes it per rank; steps that ran before it show the batch fit) and
#: the pin-memory thread's page-locked host pages (pinning off moves the batch to pageable RAM;
#: the host's free RAM and its locked-memory limit bound cudaHostAlloc)
_PHASE_DECIDES = {
    "checkpoint_save": "what would decide: whether the training steps before the save ran, "
    "and whether a sharded save (SHARDED_STATE_DICT, or a rank-0 CPU-offloaded gather) "
    "completes.",
    "pin_memory": "what would decide: whether it passes with DataLoader(pin_memory=False), and "
    "the host's free RAM (`free -h`) and locked-memory limit (`ulimit -l`).",
}


#: revfix18e: the DataLoader pins each batch in its pin-memory thread (page-locked host RAM,
#: cudaHostAlloc); every worker's prefetched batches wait there, so the levers are the pinning
#: and the batches in flight (num_workers x prefetch_factor)
_UNPIN = generic(
    "Pin less host memory in the DataLoader",
    "the pin-memory thread copies every prefetched batch into page-locked host RAM; turning "
    "pinning off, or fewer workers and prefetched batches, leaves less of it locked.",
    ("DataLoader(..., pin_memory=False)", "DataLoader(..., num_workers=2, prefetch_factor=2)"),
)
_HOLDERS = generic(
    "Check what else holds the GPU",
    "a pool sized from the free memory fails when something took memory after it was measured.",
    ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
)


def _kv_alloc_fixes(frame: str) -> tuple[Fix, ...]:
    """The first fixes of a numberless OOM in the KV cache's allocation: the runtime's own lever
    (revfix18e: a traceback in ``_allocate_kv_cache`` got gradient checkpointing first).

    vLLM sizes its block pool at start-up as ``total * gpu_memory_utilization`` minus the
    profiled weights and activation peak (``vllm/worker/worker.py``
    ``determine_num_available_blocks``; V1 ``gpu_worker.py`` ``determine_available_memory``),
    then allocates it in one ``torch.zeros`` per layer (``worker/cache_engine.py``
    ``_allocate_kv_cache``): a failure there means the share was more than the device had free
    by then (another process, memory outside PyTorch), so the share is the lever, not the
    context. SGLang sizes its pool by ``--mem-fraction-static`` (``mem_cache/memory_pool.py``);
    transformers' ``StaticCache`` by ``max_cache_len`` and the batch.
    """
    if "vllm" in frame:
        return (
            generic(
                "Give vLLM's KV pool a smaller share of the GPU",
                "the block pool is sized as gpu_memory_utilization of the card minus weights and "
                "activations; its allocation found less free than the profile assumed.",
                ("--gpu-memory-utilization 0.8", "--num-gpu-blocks-override 2048"),
            ),
        )
    if "sglang" in frame or "_buffer = " in frame:
        return (
            generic(
                "Give the KV pool a smaller share of the GPU",
                "the token pool is preallocated as --mem-fraction-static of the card.",
                ("--mem-fraction-static 0.8",),
            ),
        )
    if "exllamav2" in frame.lower():  # docrt23: ExLlamaV2Cache(model), not a transformers cache
        from oomkit.diagnose.runtime_vocab import cache_fixes

        return cache_fixes("exllamav2")
    return (
        generic(
            "Allocate the cache for fewer tokens",
            "a static cache is allocated for max_cache_len x batch at once.",
            ("max_cache_len=4096", "model.generate(..., max_new_tokens=256)"),
        ),
    )


def _numberless(e: OomEvent, ctx: LogContext, expl: str) -> Analysis:
    """A message without sizes: the traceback's phase is the only evidence left."""
    # (docpost19) a serving engine's own batch levers, not batch_size and checkpointing
    engine = engine_batch_fixes(e, ctx)
    fixes = (*engine, _HOLDERS) if engine else tuple(_batch_fixes(e, None) + _model_fixes())
    phase = ctx.frame_phase
    if phase in _PHASE_ONLY:
        cause, conf = _PHASE_ONLY[phase]
        return Analysis(
            cause=cause,
            confidence=conf,
            explanation=expl + f" The traceback places it in {phase.replace('_', ' ')} "
            f"({ctx.frame_text}), which is the only evidence; "
            + _PHASE_DECIDES.get(
                phase,
                "the full message (sizes) and `oomkit gpus` (other processes) would confirm it.",
            ),
            fixes=(
                (*_kv_alloc_fixes(ctx.frame_text or ""), _HOLDERS)
                if phase == "kv_cache_alloc"
                else (_UNPIN,)
                if phase == "pin_memory"
                else fixes
                if cause != "model_too_large"
                else tuple(_model_fixes()) + fixes[:1]
            ),
        )
    x = e.requested_bytes
    if x is not None and x >= _STATED_LARGE and phase not in {"model_load", "optimizer_step"}:
        # the request survived the cut: one tensor of >= 2 GiB is an activation whatever the
        # card (docs/doctor-causes.md section 2); weights load as many smaller tensors
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            explanation=expl + f" The request that survived is {_fb(x)}: one tensor that "
            "large is an activation (attention scores, an image or video batch), not a weight "
            "being loaded; the input size or batch is the lever. The traceback (forward vs "
            "model load) would confirm it.",
            fixes=fixes,
        )
    return Analysis(cause="unknown", confidence=0.2, explanation=expl, fixes=fixes)


def cap_not_crossed(e: OomEvent, x: int) -> bool:
    """Whether the message shows the per-process cap was not what failed: what the allocator
    holds plus the request stays under it (``c10/cuda/CUDACachingAllocator.cpp``:
    ``total_allocated_memory + size > allowed_memory_maximum``; ``CUDAMallocAsyncAllocator.cpp``:
    ``pytorch_used_bytes + nbytes > pytorch_memory_limits``)."""
    cap, a = e.allowed_bytes, e.allocated_bytes
    if cap is None or a is None:
        return False
    held = (
        e.reserved_bytes
        if e.reserved_bytes is not None
        else a + (e.reserved_unallocated_bytes or 0)
    )
    return held + x <= cap
