"""PyTorch caching-allocator OOMs: what the message's numbers say (doctor-causes.md section 2).

The arithmetic follows oom-messages.md §1.1 and memory-formulas.md §4.9: with request X, total T,
free F, this process P, other processes O, allocated A and reserved-but-unallocated R,
non-PyTorch memory in this process is P - A - R, memory nobody accounts for is T - F - P - O, and
fragmentation is when R >= X (the space exists but not contiguously) and R is a real share of
what PyTorch reserved. :func:`allocator` reads one allocator event; ``rules_torch`` dispatches
the other PyTorch kinds and adds what the surrounding log knows.
"""

from __future__ import annotations

from dataclasses import replace

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.engine_levers import engine_batch_fixes
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.parse_torch_frames import VLLM_PROFILE_RUN
from oomkit.diagnose.rules_siblings import siblings_on_first_gpu
from oomkit.diagnose.rules_stated_state import save_phase
from oomkit.diagnose.rules_torch_describe import (
    _async_pool,
    _describe,
    _numberless,
    _others,
    _share_text,
    cap_not_crossed,
)
from oomkit.diagnose.rules_torch_fixes import (
    _batch_fixes,
    _fb,
    _frag_fix,
    _graph_fixes,
    _model_fixes,
    _unaccounted_fix,
    _vllm_profile_fixes,
)
from oomkit.diagnose.rules_torch_small import _SMALL_CARD, _held_text, _small_card
from oomkit.diagnose.runtime_vocab import quoted_frame
from oomkit.diagnose.text import has_any
from oomkit.units import GiB, MiB

__all__ = ["allocator"]

_FRAG_SHARE = 0.10  # R must be at least this share of PyTorch's reserved memory
# ... and at least this share for fragmentation to *decide* (rule T7). When cudaMalloc fails, the
# caching allocator first frees every unsplit cached segment and retries
# (CUDACachingAllocator.cpp: release_cached_blocks before raising), so the R the message prints
# is the free pieces of segments that still hold live tensors: some always remain beside tensors
# of varying sizes, and 10-25% of the reserved bytes is that ordinary slack in the development
# corpus's OOMs whose lever was the batch, the model or a leak (h5-styleswin-11, h9-pyg-1113,
# h13-mprnet-32, h6-bertvits2pkg-9: no labelled fragmentation among them). PyTorch's own hint
# names fragmentation when "reserved memory is >> allocated memory": R >= 25% of reserved is
# reserved >= 4/3 x allocated. Between the two shares the cache is the second reading, named
# with its check (expandable_segments) in the explanation.
_FRAG_DOMINANT = 0.25
_OTHERS_SHARE = 0.10  # other processes must hold at least this share of the card
_UNACCOUNTED_MIN = 2 * GiB  # above usual CUDA context + library overhead (0.3-1 GiB)
_BIG_REQUEST_SHARE = 0.10
#: other processes below this share of the card (where ``_others`` reads them at 0.65, not 0.85)
#: beside this process holding more than half of it are a minor tenant
_MINOR_OTHERS_SHARE = 0.25
_SERVERS = frozenset({"vllm", "sglang", "tgi", "tensorrt-llm"})
#: engines whose command line has no graph-capture flag the rules spell (vLLM's
#: --enforce-eager / SGLang's --disable-cuda-graph): their own levers instead (docrt23)
_NO_GRAPH_FLAGS = frozenset({"tgi", "tensorrt-llm"})
# One tensor this large is an activation, not a weight: the largest weight tensors of common
# models are the embedding / lm_head (vocab x hidden: 128256 x 8192 x 2 bytes = 2.0 GiB for
# Llama-3-70B); per-layer matrices are <= 0.5 GiB (8192 x 28672 x 2). A forward/backward
# intermediate (batch x heads x seq^2 attention scores, batch x seq x vocab logits, image
# feature maps) reaches GiBs with the batch/resolution.
_LARGE_TENSOR = 2 * GiB
# ... and a request up to one per-layer matrix (<= 0.5 GiB, above) can be a weight being placed,
# however large a share of a small card it is: the card share alone reads it as an activation
# only above this size (heldout5's localmmchat: 512 MiB, a quarter of a 2 GiB card, was the model)
_LAYER_TENSOR = 512 * MiB
# (docpost27) A large request beside an inferred gap that exceeds everything this process's
# allocator holds. The caching allocator raises only after cudaMalloc failed with what the driver
# reports free (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc ->
# alloc_block, then release_cached_blocks and retry); T - free is what the whole device has in
# use, and this process's own share of it is what its allocator holds (or NVML's figure for it).
# When the rest is larger than this process's own memory and alone would cover the shortfall,
# the card was mostly full before this process's tensors: the job would have fitted it without
# the other tenant, whatever the size of its request (heldout46's aiter-2832: 6.5 GiB asked, 230
# of 252 GiB held elsewhere; heldout47's NeRF-LOAM-9: 5.5 of 23.7 GiB asked, 16.2 GiB held
# elsewhere beside this process's 1.9 GiB). Below that the request's size comes first as before.
_GAP_DOMINANT = (
    " The request ({x}) is large, but the memory held outside this process ({gap}) is more than "
    "this process's allocator holds ({held}) and alone would cover it: the card was mostly "
    "full before this job's tensors, so the other tenant is read first; if nothing else "
    "runs on the GPU (`oomkit gpus`), the request's size is the cause instead."
)
_DECIDE_PHASE = (
    " What decides between weights and activations: whether the job had already run steps "
    "(the traceback shows forward/backward) — the full traceback settles it."
)


def _decide_phase(ctx: LogContext) -> str:
    """What decides between weights and activations: the phase, unless the traceback already
    shows the model's forward call (:attr:`LogContext.module_call`), which places the failing
    request in that pass and leaves only when it failed (first step or after some)."""
    if ctx.module_call is None:
        return _DECIDE_PHASE
    return (
        f" The traceback shows the model's forward call ({ctx.module_call}): the weights were "
        "loaded and the failing request is a tensor of that pass. What decides between "
        "resident memory and the step's activations: whether earlier steps (or earlier "
        "inputs) ran — a failure on the first one says the model leaves no room for one "
        "step; a later one, a larger input or memory kept across steps (--when "
        "first-step|later)."
    )


def allocator(
    e: OomEvent, ctx: LogContext, *, others_minor: bool = False, gap_minor: bool = False
) -> Analysis:
    """The reading of one caching-allocator event, with PyTorch's own fragmentation fix first
    wherever the cached-but-free memory covers the shortfall (:func:`_with_expandable`)."""
    return _with_expandable(e, _allocator(e, ctx, others_minor=others_minor, gap_minor=gap_minor))


def _with_expandable(e: OomEvent, result: Analysis) -> Analysis:
    """Add ``expandable_segments:True`` when the reserved-but-unallocated memory covers what the
    request lacked (free + cached >= request), whatever cause the numbers give.

    Mechanism (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.1+): with expandable segments, the
    retry after a failed allocation (``release_cached_blocks`` -> ``release_blocks``) unmaps the
    physical pages of every free block, including free blocks inside segments that still hold
    live tensors (``unmap_block``), and a segment grows by mapping pages at its end; so the
    cached-but-free bytes (in 2 MiB pages) join the free memory for one contiguous request. The
    message that prints "reserved by PyTorch but unallocated" prints PyTorch's own hint to set
    it; the setting costs nothing, so it is offered first even where the numbers say the cache
    is ordinary slack (if it does not help, the other fixes are the lever).
    """
    x, f, r = e.requested_bytes, e.free_bytes, e.reserved_unallocated_bytes
    if x is None or f is None or r is None or r <= 0 or e.kind == "xpu_oom":
        return result
    short = x - f
    if short <= 0 or r < short:
        return result
    fix = _frag_fix(e, r)
    if any(g.title == fix.title for g in result.fixes):
        return result
    if result.open_question:
        # the numbers leave the cause open: PyTorch's own check is the first, free thing to try
        return replace(result, fixes=(fix, *result.fixes))
    # a phase or the numbers decided the lever (the save's gather, the batch, the graphs): that
    # lever ranks first; the cache setting follows, unsized (it recovers up to r, if the
    # cached pieces were what was missing)
    return replace(
        result, fixes=(*result.fixes, replace(fix, expected_saving_bytes=None, why=fix.why))
    )


def _allocator(
    e: OomEvent, ctx: LogContext, *, others_minor: bool = False, gap_minor: bool = False
) -> Analysis:
    x, t, f = e.requested_bytes, e.total_bytes, e.free_bytes
    a, r, p = e.allocated_bytes, e.reserved_unallocated_bytes, e.process_in_use_bytes
    bogus = ""
    if p is not None and a is not None and p < a:
        # NVML cannot attribute per-process memory under WSL and in some containers and reports
        # 0 bytes (or garbage): a process cannot hold less than its own PyTorch allocations
        bogus = (
            f" (NVML reported {_fb(p)} for this process, less than PyTorch alone holds: under "
            "WSL and in some containers it cannot attribute memory per process, so that figure "
            "is ignored.)"
        )
        e = replace(e, process_in_use_bytes=None)
        p = None
    if r is None and e.reserved_bytes is not None and a is not None:
        r = max(0, e.reserved_bytes - a)  # legacy: reserved minus allocated = cached
    if e.ignored_sizes:
        bogus += (
            f" (The message states {e.ignored_sizes}: no allocator prints such a size, so it "
            "is ignored; the message looks corrupted or edited.)"
        )
    base = _describe(e) + bogus
    phase = ctx.frame_phase
    if x is None or t is None:
        missing = (
            "The numbers that decide the cause are missing or impossible."
            if e.ignored_sizes
            else "The message is cut short: the numbers that decide the cause are missing."
        )
        return _numberless(e, ctx, f"{base} {missing}")
    free = f or 0
    # 1. a per-process cap, not the hardware, is the limit -- only when the request would cross
    # it: both allocators check it against what they hold (the caching allocator's reserved
    # memory, CUDAMallocAsyncAllocator's pytorch_used_bytes) plus the request, and otherwise the
    # device's own allocation is what failed
    if e.allowed_bytes is not None and free >= x and not cap_not_crossed(e, x):
        # the cap is the budget this job was given: read the budget like a card (T2 / small
        # request) to say what filled it
        cap = e.allowed_bytes
        big = x >= _BIG_REQUEST_SHARE * cap
        # a serving engine's fraction is the budget for its weights and caches; elsewhere
        # (a test harness, a user's own limit) the cap itself is the finding
        server = phase in {"serving_step", "warmup"} or ctx.runtime_hint in _SERVERS
        return Analysis(
            cause=("batch_or_activations" if big else "model_too_large") if server else "unknown",
            confidence=0.5 if server else 0.6,
            explanation=base + f" {_fb(free)} is free on the device, so the cap of {_fb(cap)} "
            "set by set_per_process_memory_fraction() (a server's memory fraction) is what "
            "failed."
            + (" Within that budget " if server else " If it is the budget the job needs, ")
            + (
                f"one request of {_fb(x)} ({100 * x // max(cap, 1)}% of it) is an activation."
                if big
                else f"the request is small and what stays resident ({_fb(a)} allocated: "
                "weights, adapters, caches) fills it."
            )
            + " A larger fraction would decide it.",
            fixes=(
                Fix(
                    title="Raise or remove the per-process memory fraction",
                    why="the hardware has room; the cap does not.",
                    commands=("torch.cuda.set_per_process_memory_fraction(1.0)",),
                    expected_saving_bytes=free,
                ),
            ),
        )
    # 2. one request larger than the whole card: a shape/batch problem, not memory pressure
    if x > t:
        usable = free + (r or 0)
        cause = "model_too_large" if phase == "model_load" else "batch_or_activations"
        expl = base + (
            f" The single request ({_fb(x)}) is larger than the whole GPU ({_fb(t)}): no "
            "setting of the allocator can satisfy it; the tensor must get smaller."
        )
        if a is not None and a > t:
            expl += (
                f" PyTorch reports {_fb(a)} allocated on a {_fb(t)} card: the driver is "
                "spilling into system memory (Windows WDDM shared memory or unified memory)."
            )
        return Analysis(
            cause=cause,
            confidence=0.85,
            explanation=expl,
            # the load phase decides before the size: a tensor that large while loading is a
            # weight (an embedding, a fused layer), which no batch setting shrinks
            fixes=tuple(_model_fixes() if phase == "model_load" else _batch_fixes(e, x - usable)),
        )
    # 3. plenty free yet the allocation failed: not a capacity problem
    if free >= 2 * x and free >= GiB:
        return Analysis(
            cause="unknown",
            confidence=0.55,
            explanation=base + f" The driver still reports {_fb(free)} free, more than the "
            f"{_fb(x)} requested: the failure is not capacity (a MIG/cgroup/per-process limit, "
            "another device, or an allocator/driver bug).",
            fixes=(
                generic(
                    "Check for a memory limit and update the driver/runtime",
                    "look for set_per_process_memory_fraction, MIG slices or container limits; "
                    "a known allocator bug may be fixed in a newer release.",
                    ("nvidia-smi -q -d MEMORY", "pip install -U torch"),
                ),
                *((_frag_fix(e, r),) if r else ()),
            ),
        )
    others = sum(o.used_bytes or 0 for o in e.other_processes)
    # 4. other processes hold a real share of the card
    if not others_minor and others >= max(x - free, 0) and others >= _OTHERS_SHARE * t:
        if p is not None and 2 * p > t and others < _MINOR_OTHERS_SHARE * t:
            return _minor_others(e, ctx, p, others)
        siblings = siblings_on_first_gpu(e, t, others)
        if siblings is not None:
            return replace(siblings, explanation=base + " " + siblings.explanation)
        an = _others(e, t)
        return Analysis(
            cause=an.cause,
            confidence=an.confidence,
            explanation=base + " " + an.explanation,
            fixes=an.fixes + ((_frag_fix(e, r),) if r and r >= x else ()),
        )
    # 4b. this process holds far more than PyTorch reserved: non-PyTorch allocations
    # (fragmentation wins when PyTorch's own cache could serve the request: rules T5/T7 of
    # docs/doctor-causes.md)
    frag = r is not None and a is not None and r >= x and r >= _FRAG_SHARE * (a + r)
    # (CUDA-graph capture and serving engines hold graph pools, NCCL and cuBLAS workspaces
    # outside the caching allocator by design: their own rules below decide those)
    engine = phase == "cuda_graph_capture" or ctx.runtime_hint in {"vllm", "sglang"}
    if p is not None and a is not None and r is not None and not frag and not engine:
        outside = p - a - r
        if outside >= max(_UNACCOUNTED_MIN, int(_OTHERS_SHARE * t)) and outside >= x - free:
            return Analysis(
                cause="other_process_holding_memory",
                confidence=0.5,
                explanation=base + f" {_fb(outside)} of this process's memory is outside "
                "PyTorch's allocator (CUDA context and libraries take 0.3-1 GiB): another "
                "framework or library in the same process (TensorRT, cupy, JAX/TF, NCCL "
                "buffers, a custom CUDA extension) holds the memory PyTorch needs. "
                "torch.cuda.memory_snapshot() vs nvidia-smi for this PID decides which.",
                fixes=(
                    Fix(
                        title="Release the non-PyTorch allocations in this process",
                        why=f"{_fb(outside)} is held outside PyTorch's allocator; freeing it "
                        "(or limiting that library's pool) covers the request.",
                        commands=(
                            "python -c 'import torch; print(torch.cuda.mem_get_info())'",
                            "XLA_PYTHON_CLIENT_PREALLOCATE=false   # if JAX shares the process",
                            "TF_FORCE_GPU_ALLOW_GROWTH=true        # if TensorFlow does",
                        ),
                        expected_saving_bytes=outside,
                    ),
                ),
            )
    # cudaMallocAsync reports only allocated bytes; its pool's cached memory is invisible, so
    # "unaccounted" memory is not evidence of another process there: the pool's own reading
    pool = _async_pool(e, ctx, base)
    if pool is not None:
        return pool
    held_known = (p is not None or a is not None or e.reserved_bytes is not None) and (
        e.format != "pytorch_cudamallocasync"
    )
    held = (
        p
        if p is not None
        else ((a or 0) + (r or 0) if e.reserved_bytes is None else e.reserved_bytes)
    )
    # a message cut before "free": the allocator raises only after cudaMalloc failed, so less
    # than the request was free; the request bounds it
    free_at_most = f if f is not None else x
    unaccounted = t - free_at_most - held - others
    # (as for named processes in T4: they are the cause only if what they hold would have
    # covered the shortfall; a request larger than all of it fails without them too)
    if (
        held_known
        and not gap_minor
        and unaccounted >= max(_UNACCOUNTED_MIN, int(_OTHERS_SHARE * t))
        and unaccounted >= x - free_at_most
    ):
        if 2 * held > t and unaccounted < _MINOR_OTHERS_SHARE * t:
            return _minor_gap(e, ctx, held, unaccounted)
        who = (
            "processes NVML does not show (another container, the display server)"
            if p is not None
            else "other processes or non-PyTorch allocations (this message format cannot "
            "tell them apart)"
        )
        others_fix = _unaccounted_fix(e, unaccounted)
        # (docpost27) the gap larger than all this process's allocator holds: the card is mostly
        # someone else's, so the request's size no longer comes first (the mirror of _minor_gap)
        gap_dominant = unaccounted > held
        large = phase not in {"model_load", "optimizer_step"} and (
            x >= _BIG_REQUEST_SHARE * t or x >= _LARGE_TENSOR
        )
        if large and not gap_dominant:
            # the gap is inferred (nobody is named) while the request's size is stated: one
            # tensor this large is an activation, read first as in T7 (docs/doctor-causes.md)
            return Analysis(
                cause="batch_or_activations",
                confidence=0.45,
                explanation=base + f" One request of {_fb(x)} ({100 * x // t}% of the card) "
                f"is a large activation; {_fb(unaccounted)} of the card is also held outside "
                "this process's allocator (not named by the message: another process, the "
                "display, or non-PyTorch memory), so `oomkit gpus` decides whether freeing it "
                "alone would have been enough.",
                fixes=(*_batch_fixes(e, max(0, x - free_at_most))[:1], others_fix),
            )
        return Analysis(
            cause="other_process_holding_memory",
            confidence=0.45,
            explanation=base
            + (
                f" {_fb(t)} - {_fb(free)} free"
                if f is not None
                else (
                    " IPEX's XPU message has no free field (SYCL cannot query it); the "
                    "allocation failed after the cache was emptied, so less than the request "
                    "was free: "
                    if e.kind == "xpu_oom"
                    else " The message is cut before the free memory, which was below the request: "
                )
                + f"{_fb(t)} - at most {_fb(x)} free"
            )
            + f" - {_fb(held)} held by this "
            f"process's allocator = {_fb(unaccounted)} is held by {who}. Run `oomkit gpus` "
            "(or nvidia-smi) to see the other processes on this GPU."
            + (
                _GAP_DOMINANT.format(x=_fb(x), gap=_fb(unaccounted), held=_fb(held))
                if large and gap_dominant
                else ""
            ),
            fixes=(
                others_fix,
                *(_batch_fixes(e, max(0, x - free_at_most))[:1] if large and gap_dominant else ()),
            ),
        )
    # 5. fragmentation: the bytes exist inside PyTorch's cache but not contiguously
    reserved = (a or 0) + (r or 0)
    cache_covers = r is not None and r >= x and reserved > 0 and r >= _FRAG_SHARE * reserved
    if cache_covers and r is not None and (x >= _BIG_REQUEST_SHARE * t or x >= _LARGE_TENSOR):
        # the caching allocator serves a request from one cached block; a tensor this large
        # fits only a block freed by a tensor at least as large, so the cached pieces are
        # the second reading and the activation's size the first (docs/doctor-causes.md T7)
        return Analysis(
            cause="batch_or_activations",
            confidence=0.5,
            explanation=base + f" {_fb(r)} reserved-but-unallocated could hold the "
            f"{_fb(x)} request if it were one block, but one request of {_fb(x)} "
            f"({100 * x // t}% of the card) is a large activation, and PyTorch serves it "
            "from one cached block that only an earlier tensor as large leaves behind. "
            "The batch (sequence length, resolution) is the lever; if "
            "expandable_segments:True alone fixes the run, the cause was fragmentation "
            "instead.",
            fixes=(*_batch_fixes(e, max(0, x - free))[:1], _frag_fix(e, r)),
        )
    if r is not None and r >= x and reserved and r >= _FRAG_DOMINANT * reserved:
        # 0.6, not 0.8 (doccause8): the printed cache is what is left after the allocator freed
        # every unsplit segment and retried, i.e. free pieces of segments that still hold live
        # tensors, and pieces of the small pool (2 MiB segments for requests under 1 MiB) never
        # serve a larger request; so the bytes are split, but whether a cache setting recovers
        # them or the step simply holds too much is what expandable_segments decides. All four
        # corpus messages read here at 0.8 were labelled otherwise by their threads (batch 3,
        # unknown 1: fewer frames, a smaller batch fixed them).
        return Analysis(
            cause="fragmentation",
            confidence=0.6 if r >= 2 * x else 0.55,
            explanation=base + f" {_fb(r)} reserved-but-unallocated >= the {_fb(x)} request and "
            f"is {100 * r // reserved}% of what PyTorch reserved: the space exists but is split "
            "into pieces too small for this request. What would decide: the same run with "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (if it passes, fragmentation was "
            "the cause; if it still fails, the step holds too much: a smaller batch or input).",
            fixes=(_frag_fix(e, r), *_batch_fixes(e, None)[:1]),
        )
    if f is None:
        # no free field (IPEX's XPU message, a message cut short): not "0 bytes free" (which
        # sized the batch cut at x / 1 byte); the allocator raised after the device refused,
        # so at most the request and at most what no allocator here holds was free
        free_bound = min(x, max(0, t - held - others))
        short = x - free_bound
        tail = (
            f" The message states no free memory; at most {_fb(free_bound)} was free (the card "
            f"less what is held), so the {_fb(x)} request was short by at least {_fb(short)}"
            if short
            else f" The message states no free memory, so how short the {_fb(x)} request "
            "fell is not known"
        )
    else:
        short = max(0, x - free)
        tail = (
            f" Only {_fb(free)} is free for a {_fb(x)} request (short by {_fb(short)})"
            if short
            else f" {_fb(free)} is free, not less than the {_fb(x)} request, yet it failed"
        )
    tail += (
        "."
        if r is None
        else "; PyTorch holds no cached-but-free memory to cover it either."
        if r == 0
        else f"; cached-but-free memory ({_fb(r)}) cannot cover it either."
        if r < x
        else f"; the cached-but-free memory ({_fb(r)}) would cover it if it were one block, "
        f"but at {_share_text(r, (a or 0) + r)} of what PyTorch reserved it is the caching "
        "allocator's ordinary slack beside live tensors, not what decides; if "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True alone fixes the run, fragmentation "
        "was the cause instead."
    )
    if phase == "model_load":
        return Analysis(
            cause="model_too_large",
            confidence=0.7,
            explanation=base + tail + f" The traceback is in model loading ({ctx.frame_text}).",
            fixes=tuple(_model_fixes()),
        )
    if phase == "kv_cache_alloc":
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.65,
            explanation=base + tail + f" It failed allocating the KV cache ({ctx.frame_text}): "
            "the cache is sized for the maximum context (and batch), after the weights loaded.",
            fixes=(
                generic(
                    "Size the cache for a shorter context",
                    "the KV cache is linear in max_seq_len x batch.",
                    (
                        "max_seq_len=8192   # ExLlamaV2 config / -l",
                        "--max-model-len 8192   # vLLM",
                    ),
                ),
                generic(
                    "Quantize the cache",
                    "8-bit / 4-bit cache takes half / a quarter of fp16.",
                    ("ExLlamaV2Cache_Q4(model)", "--kv-cache-dtype fp8"),
                ),
            ),
        )
    if phase == "warmup" and has_any(ctx.frame_text or "", VLLM_PROFILE_RUN):
        return Analysis(
            cause="batch_or_activations",
            confidence=0.6,
            explanation=base + tail + f" It failed in vLLM's memory profile at start-up "
            f"({ctx.frame_text}): the weights were loaded and the profile run pushes one dummy "
            "batch of max_num_batched_tokens tokens (and a sampler pass over max_num_seqs "
            "rows) through the model before the KV cache is sized; its activations do not fit "
            "next to the weights. CUDA graphs are captured later (compile_or_warm_up_model), so "
            "--enforce-eager does not change this step.",
            fixes=_vllm_profile_fixes(),
        )
    if phase == "warmup":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.6,
            explanation=base + tail + f" It failed during the server's warmup ({ctx.frame_text}),"
            " which runs the largest prefill batch the settings allow: activations for that "
            "many tokens do not fit next to the weights.",
            fixes=(
                generic(
                    "Warm up (and serve) smaller prefill batches",
                    "prefill activation memory is linear in the batched tokens.",
                    (
                        "--max-batch-prefill-tokens 2048   # TGI",
                        "--max-num-batched-tokens 2048   # vLLM",
                    ),
                ),
            ),
        )
    if phase == "cuda_graph_capture":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.65,
            explanation=base + tail + " It failed while capturing CUDA graphs "
            f"({ctx.frame_text}): each captured batch size keeps its activations in a private "
            "pool, on top of the weights and KV cache the engine already placed.",
            fixes=_graph_fixes(e, short),
        )
    if ctx.runtime_hint == "vllm" and (
        ctx.num_gpu_blocks or ctx.kv_cache_bytes is not None or ctx.weights_bytes is not None
    ):
        planned = (
            f" vLLM planned weights + KV within gpu_memory_utilization={ctx.gpu_memory_utilization}"
            if ctx.gpu_memory_utilization
            else " vLLM had already profiled memory and sized its KV cache"
        )
        return Analysis(
            cause="batch_or_activations",
            confidence=0.6,
            explanation=base + tail + planned + ", so the weights fit; what ran out is the "
            "headroom left for activations, the sampler and CUDA graphs.",
            fixes=_graph_fixes(e, short),
        )
    if phase == "checkpoint_save":  # revfix18e: the save's gather, not the batch
        return save_phase(base + tail, ctx.frame_text)
    if phase == "serving_step":
        from oomkit.diagnose.runtime_vocab import engine_family, headroom_fix

        family = engine_family(e, ctx)
        # the engine's own levers (docrt23: a TGI log got only vLLM/SGLang graph flags, which
        # the runtime routing drops): its batched tokens and what its KV pool leaves free
        own = (*engine_batch_fixes(e, ctx), *headroom_fix(family)) if family != "vllm" else ()
        return Analysis(
            cause="batch_or_activations",
            confidence=0.55,
            explanation=base + tail + " It failed while the engine served requests "
            f"({quoted_frame(ctx.frame_text)}): the weights and the KV pool were placed at "
            "start-up and fit, so what ran out is the headroom for one step's activations "
            "(batched tokens), the sampler and CUDA graphs. If it fails with a single short "
            "request, the resident model is the cause instead.",
            fixes=own if family in _NO_GRAPH_FLAGS else (*_graph_fixes(e, short), *own),
        )
    if phase in {"forward", "backward"}:
        # a traceback cut at nn.Module.__call__ names the pass by the caller's line
        # (``outputs = model(**batch)``), which says more than module.py's frame
        where = ctx.module_call if phase == "forward" and ctx.module_call else ctx.frame_text
        return Analysis(
            cause="batch_or_activations",
            confidence=0.6,
            explanation=base + tail + f" The failing allocation is an activation/gradient in "
            f"the {phase} pass ({where}).",
            fixes=engine_batch_fixes(e, ctx) or tuple(_batch_fixes(e, short) + _model_fixes()[:1]),
        )
    if phase == "optimizer_step":
        return Analysis(
            cause="model_too_large",
            confidence=0.55,
            explanation=base + tail + " It failed in optimizer.step(): optimizer states "
            "(AdamW: 8 bytes per parameter in fp32) are allocated on the first step.",
            fixes=(
                generic(
                    "Use an 8-bit or paged optimizer",
                    "8-bit AdamW states take a quarter of fp32 states.",
                    ("optim='paged_adamw_8bit'   # transformers TrainingArguments",),
                ),
                *_model_fixes(),
            ),
        )
    if phase == "generate":
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.45,
            explanation=base + tail + " It failed inside generate(): the KV cache grows with "
            "batch x (prompt + new tokens).",
            fixes=(
                generic(
                    "Generate with fewer sequences or fewer new tokens",
                    "KV cache memory is linear in batch size and total sequence length.",
                    ("model.generate(..., max_new_tokens=256)",),
                ),
                *_model_fixes()[:1],
            ),
        )
    # under the driver's system-memory fallback (Windows WDDM, unified memory) the device holds
    # more than its capacity: the request's share is of what it holds, not of the card
    t_eff = max(t, (a or 0) + (r or 0))
    spill = (
        f" PyTorch holds {_fb(t_eff)} on a {_fb(t)} card: the driver spills into system memory."
        if t_eff > t
        else ""
    )
    if x >= _LARGE_TENSOR or (x >= _BIG_REQUEST_SHARE * t_eff and x > _LAYER_TENSOR):
        return Analysis(
            cause="batch_or_activations",
            confidence=0.55,
            explanation=base + tail + f" One request of {_fb(x)} ({100 * x // t}% of the card) "
            "is larger than a weight tensor of common models: a large activation (batch, "
            "sequence length or resolution).",
            fixes=engine_batch_fixes(e, ctx) or tuple(_batch_fixes(e, short)),
        )
    if t <= _SMALL_CARD and phase not in {"forward", "backward"}:
        return _small_card(e, base + tail + spill, x, t, held, held_known, free)
    # a small request on a full device says only that something resident fills it: weights, or
    # activations of the step in flight; with no phase that is an open question (the base rate,
    # oomkit.diagnose.priors, answers it)
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        open_question=True,
        explanation=base + tail + spill + f" The request is a minor share ({100 * x / t_eff:.1f}%"
        f" of what the device holds) while {_held_text(held, held_known or held > 0, t, free)}: "
        "what stays resident (weights, optimizer states, persistent buffers) fills the GPU "
        "before this step." + _decide_phase(ctx),
        fixes=tuple(_model_fixes() + _batch_fixes(e, None)),
    )


def _minor_others(e: OomEvent, ctx: LogContext, mine: int, others: int) -> Analysis:
    """Other processes that hold a minor share beside a process that holds most of the card:
    the reading of what this process holds, with the others as the second one.

    Mechanism. Freeing the other processes would cover a small shortfall, but when they hold
    less than a quarter of the card (:data:`_MINOR_OTHERS_SHARE`) and this process more than
    half, the card is full because of this process's own weights, caches and activations:
    with the others gone, the next step of the same size (or a slightly larger input) fails
    again. So the numbers are read as if the others were fixed background (like the CUDA
    context), the others are named, and the
    "stop the other process" fix stays in the list; the reading of this process's holding
    decides (its own rule, or the open model-vs-batch question and the base rate).
    """
    inner = allocator(e, ctx, others_minor=True)
    named = _others(e, e.total_bytes or 1)
    note = (
        f" Other processes hold {_fb(others)} of the card, a minor share beside this "
        f"process's {_fb(mine)}: stopping them would cover this request, but what fills the "
        "card is this process's own memory, so it is read first."
    )
    return replace(
        inner,
        explanation=inner.explanation + note,
        fixes=inner.fixes + tuple(f for f in named.fixes if not f.generic),
    )


def _minor_gap(e: OomEvent, ctx: LogContext, mine: int, gap: int) -> Analysis:
    """An inferred gap (memory no allocator in the message accounts for) under a quarter of the
    card, beside a process that holds more than half of it: the reading of what this process
    holds, with the gap as the second one.

    Mechanism, as :func:`_minor_others` for named processes (the same thresholds), and weaker
    evidence still: the gap T - F - held is inferred, not listed, and part of it is this very
    process (its CUDA context and the cuDNN/cuBLAS handles and workspaces it allocates outside
    the caching allocator, 0.3-1 GiB and more with ``cudnn.benchmark``), the rest the display or
    another job. When this process holds more than half of the card and the gap less than a
    quarter (:data:`_MINOR_OTHERS_SHARE`), the card is full because of
    this process's own weights, caches and activations: freeing the gap, were it another job,
    would cover this request, and the next step of the same size would fail again. So the gap
    is named with its check (`oomkit gpus`) and its fix kept, and what this process holds is
    read first (its phase and request size; the model-vs-batch question and the base rate).
    """
    inner = allocator(e, ctx, gap_minor=True)
    note = (
        f" {_fb(gap)} of the card is held outside this process's allocator (another process, "
        f"the display, or this process's CUDA context and library workspaces), a minor share "
        f"beside the {_fb(mine)} this process holds: what fills the card is this process's own "
        "memory, so "
        "it is read first; `oomkit gpus` shows whether another process holds the rest."
    )
    return replace(
        inner,
        explanation=inner.explanation + note,
        fixes=(*inner.fixes, _unaccounted_fix(e, gap)),
    )
