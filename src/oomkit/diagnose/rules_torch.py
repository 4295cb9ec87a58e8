"""Diagnosis of PyTorch OOMs (CUDA/HIP/XPU, legacy, cudaMallocAsync, MPS, CPU, driver).

:func:`analyze_torch` dispatches on the event's kind: the caching allocator's message is read by
:mod:`oomkit.diagnose.rules_torch_allocator`, MPS by ``rules_torch_mps``; host-RAM, driver-level
and library-handle failures are answered here, and :func:`_augment` adds what the surrounding log
knows (CUDA-graph pools, vLLM headroom, DeepSpeed's growing allocation).
"""

from __future__ import annotations

import re
from itertools import pairwise

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.rules_torch_allocator import allocator
from oomkit.diagnose.rules_torch_describe import (
    _PHASE_ONLY,
    _numberless,
)
from oomkit.diagnose.rules_torch_fixes import (
    _batch_fixes,
    _fb,
)
from oomkit.diagnose.rules_torch_mps import _mps
from oomkit.diagnose.swap_fix import swap_command, swap_gib
from oomkit.units import GiB

__all__ = ["analyze_torch"]

# A host allocation this large in one piece is a data/activation tensor, not a weight shard.
_LARGE_HOST_TENSOR = 8 * GiB

# cuDNN's algorithm search named in the failing call: cudnn.torch / PyTorch 0.x
# (cudnnFindConvolutionForwardAlgorithm[Ex]), CNTK CuDnnConvolutionEngine (expr=finder(calgo, ...))
_CUDNN_FIND = re.compile(r"cudnnFind\w{0,40}Algorithm|expr=finder\(")


def _cudnn_find(e: OomEvent) -> Analysis:
    """cuDNN could not allocate while *searching* for a convolution algorithm.

    The search (``cudnnFindConvolution*Algorithm[Ex]``; cudnn.torch with ``cudnn.benchmark``,
    CNTK's ``FindBestAlgo(batchSize, ...)`` which resizes its workspace for the minibatch before
    calling ``finder``) runs every candidate algorithm on the layer's real input and output and
    gives each the workspace it asks for; those workspaces, like the tensors, grow with batch x
    channels x height x width. So the failing allocation is a per-step buffer sized by the input
    (``batch_or_activations``), and turning the search off (a fixed algorithm, no workspace) or a
    smaller batch/image is the lever. Handle creation (``Could not create cudnn handle``) and a
    bare status with no call named stay with the generic library rule.
    """
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=f"{e.detail} in cuDNN's algorithm search: it runs each convolution "
        "algorithm on this layer's real tensors and allocates the workspace each one asks for, "
        "and those workspaces grow with the batch and the image size. The search, not the "
        "model's resident memory, needed the memory that was not there.",
        fixes=(
            generic(
                "Reduce the batch size or the input resolution",
                "the search's workspaces and the layer's tensors scale with batch x H x W.",
                ("batch_size = max(1, batch_size // 2)",),
            ),
            generic(
                "Do not benchmark algorithms (use a fixed one, no search workspace)",
                "the search allocates the largest workspaces of all.",
                ("torch.backends.cudnn.benchmark = False", "cudnn.benchmark = false  -- Lua"),
            ),
        ),
    )


def analyze_torch(e: OomEvent, ctx: LogContext) -> Analysis:
    """Diagnose one PyTorch event (any ``kind`` emitted by parse_torch)."""
    if e.kind == "mps_oom":
        return _mps(e)
    if e.kind == "cpu_oom":
        return Analysis(
            cause="host_ram",
            confidence=0.85,
            explanation=f"PyTorch's CPU allocator could not get {_fb(e.requested_bytes)} of host "
            f"RAM ({e.detail}).",
            fixes=(
                Fix(
                    title="Free or add host RAM (or swap / pagefile)",
                    why=f"the failing host allocation is {_fb(e.requested_bytes)}; the "
                    "swapfile below holds it (swap_fix).",
                    commands=(
                        "free -h",
                        swap_command(swap_gib(e.requested_bytes, 16), chmod=False),
                    ),
                    expected_saving_bytes=e.requested_bytes,
                ),
                *(
                    (
                        Fix(
                            title="Process the input in smaller batches or tiles",
                            why=f"one host tensor of {_fb(e.requested_bytes)} is a batch of "
                            "data or activations (a weight shard is rarely that large); halving "
                            "the batch/frames per step halves it.",
                            commands=("batch_size = max(1, batch_size // 2)",),
                            expected_saving_bytes=(e.requested_bytes or 0) // 2,
                        ),
                    )
                    if (e.requested_bytes or 0) >= _LARGE_HOST_TENSOR
                    and ctx.frame_phase != "model_load"
                    else ()
                ),
                generic(
                    "Load weights lazily and straight to the GPU",
                    "avoids a full fp32 copy of the model in RAM.",
                    (
                        "from_pretrained(name, low_cpu_mem_usage=True, device_map='auto', "
                        "torch_dtype=torch.bfloat16)",
                    ),
                ),
            ),
        )
    if e.kind == "cuda_error_oom" and ctx.frame_phase in _PHASE_ONLY:
        return _numberless(
            e,
            ctx,
            "A CUDA call outside PyTorch's caching allocator ran out of memory; the message "
            "carries no numbers.",
        )
    if e.kind == "cuda_error_oom":
        return Analysis(
            cause="unknown",
            confidence=0.2,
            explanation="A CUDA call outside PyTorch's caching allocator (context creation, a "
            "kernel launch, cuBLAS/cuDNN/NCCL workspace) ran out of memory. The message carries "
            "no numbers. Likely: memory still held from an earlier model or run in this process "
            "(leak/accumulation) or another process on the GPU.",
            fixes=(
                generic(
                    "Check who holds the GPU",
                    "the driver-level error means memory was full before this call.",
                    ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
                ),
                generic(
                    "Release the previous model before loading the next",
                    "drop references, collect, and return the cache to the driver.",
                    ("del model; import gc; gc.collect(); torch.cuda.empty_cache()",),
                ),
            ),
        )
    if e.kind == "library_alloc_failed" and _CUDNN_FIND.search(e.text):
        return _cudnn_find(e)
    if e.kind == "library_alloc_failed":
        return Analysis(
            cause="other_process_holding_memory",
            confidence=0.35,
            explanation=f"{e.detail}: a CUDA library could not allocate its handle/workspace, "
            "which happens when the GPU is already full, most often because of another process "
            "(or a stale one from an earlier run).",
            fixes=(
                generic(
                    "Find and stop other processes on the GPU",
                    "cuBLAS/cuDNN need a few hundred MiB of free memory at first use.",
                    (
                        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                        "kill <pid>",
                    ),
                ),
                *_batch_fixes(e, None)[:1],
            ),
        )
    return _augment(e, ctx, allocator(e, ctx))


#: the rules' unsized eager-mode fix (rules_torch_fixes._graph_fixes)
_SKIP_GRAPHS = "Skip CUDA-graph capture: --enforce-eager"


def _augment(e: OomEvent, ctx: LogContext, an: Analysis) -> Analysis:
    """Add what the surrounding log knows: CUDA-graph pools, vLLM headroom, growth over time."""
    fixes = list(an.fixes)
    cause, conf, expl = an.cause, an.confidence, an.explanation
    if e.private_pool_bytes:
        # one eager-mode fix (revfix21b: the rules' "Skip CUDA-graph capture" said the same
        # thing unsized): this one is sized by the pools the message names
        fixes = [f for f in fixes if f.title != _SKIP_GRAPHS]
        fixes.append(
            Fix(
                title="Do not capture CUDA graphs (or capture fewer sizes)",
                why=f"{_fb(e.private_pool_bytes)} sits in CUDA-graph private pools; eager mode "
                "releases it and captures nothing more (slower decoding).",
                commands=(
                    "--enforce-eager   # vLLM",
                    "--disable-cuda-graph   # SGLang (or --cuda-graph-max-bs 8: fewer sizes)",
                    "torch.compile(model, mode='default')   # not 'reduce-overhead'",
                ),
                expected_saving_bytes=e.private_pool_bytes,
            )
        )
    util, t, x, f = ctx.gpu_memory_utilization, e.total_bytes, e.requested_bytes, e.free_bytes
    assumed = ""
    if util is None and ctx.runtime_hint == "vllm" and ctx.frame_phase == "cuda_graph_capture":
        # vLLM captures its graphs after sizing the KV cache (gpu_worker.py
        # `compile_or_warm_up_model` after `determine_available_memory`, releases before 0.20:
        # oomkit.estimate.vllm_cudagraph), so they live in the 1 - gpu_memory_utilization
        # headroom; a lower utilization keeps the graphs. The log does not state it: vLLM's
        # default (EngineArgs.gpu_memory_utilization = 0.9) is assumed.
        util, assumed = 0.9, " (vLLM's default 0.9: the log does not state it)"
    if ctx.runtime_hint == "vllm" and util and t and x is not None and f is not None:
        short = max(0, x - f)
        new = int((util - short / t) * 100) / 100 - 0.01
        if 0.1 < new < util:
            graphs = (
                " CUDA graphs are captured after the KV cache is sized, in that headroom: this "
                "keeps them (and their speed); if a later capture size fails again, lower it "
                "by another 0.01-0.02 or capture fewer sizes."
                if ctx.frame_phase == "cuda_graph_capture"
                else ""
            )
            fixes.append(
                Fix(
                    title=f"Leave vLLM more non-KV headroom: --gpu-memory-utilization {new:.2f}",
                    why=f"vLLM gives {util:.2f}{assumed} of the GPU to weights+KV and the rest to "
                    f"everything else; this allocation was short by {_fb(short)}.{graphs}",
                    commands=(f"--gpu-memory-utilization {new:.2f}", "--max-num-seqs 128"),
                    expected_saving_bytes=int((util - new) * t),
                )
            )
    ma = ctx.deepspeed_allocated_bytes
    rising = all(b > a for a, b in pairwise(ma))
    grows = len(ma) >= 3 and rising and ma[-1] * 2 >= ma[0] * 3
    if grows and cause in {"model_too_large", "batch_or_activations"}:
        cause, conf = "leak_or_accumulation", 0.5
        expl += (
            f" DeepSpeed's allocated memory (MA) grew at every report, from {_fb(ma[0])} to "
            f"{_fb(ma[-1])} over {len(ma)} reports: something keeps tensors alive across steps."
        )
        fixes.insert(
            0,
            generic(
                "Stop keeping tensors across steps",
                "accumulate Python floats, not graph-attached tensors; detach what you store.",
                ("total_loss += loss.item()", "history.append(out.detach().cpu())"),
            ),
        )
    return Analysis(
        cause=cause,
        confidence=conf,
        explanation=expl,
        fixes=tuple(fixes),
        open_question=an.open_question if cause == an.cause else False,
    )
