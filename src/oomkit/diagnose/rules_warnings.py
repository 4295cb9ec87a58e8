"""What a runtime's memory-pressure warning says, and ExLlamaV2's page shortfall (issue 9).

:mod:`oomkit.diagnose.parse_wordings_warnings` reads the warnings users paste alone: TensorFlow's
BFC retry warning ("... ran out of memory trying to allocate 2.15GiB. The caller indicates that
this is not a failure ..."), gperftools' ``tcmalloc: large alloc N bytes == 0x...`` and
TensorFlow's "Allocation of N exceeds 10% of system memory", and TensorRT's builder workspace
warning. None of them is a failed allocation, so the confidence stays low, the stated size is
repeated, and the explanation names the fact that would decide (the error that followed, the
memory at the peak). The host-allocation reports (tcmalloc, TF's CPU allocator) name the host
RAM as the memory under pressure (``host_ram``, 0.3); the BFC and TensorRT warnings leave the
cause ``unknown`` (0.2). Jan's pre-load check and Forge's load plan state a need above the free
VRAM: ``model_too_large`` at 0.5 / 0.45, with both sizes.

ExLlamaV2's "Job requires N pages (only M available) and cannot be enqueued" is a failure: the
request (prompt plus ``max_new_tokens``) needs more KV-cache pages than the whole paged cache
holds (``turboderp/exllamav2:exllamav2/generator/dynamic.py``), so it is the cache size
(``cache_size`` / ``max_seq_len``) against the request: ``kv_cache_or_context``.

llama.cpp's "warning: failed to mlock N-byte buffer ...: Cannot allocate memory" (docpost30) is
``mlock(2)``'s ``ENOMEM``, the locked-memory limit (``RLIMIT_MEMLOCK``), not a lack of RAM (see
``parse_wordings_warnings``): the cause is ``unknown``, settled (nothing ran out), at 0.3.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.parse_wordings_warnings import JAN_RESERVE_BYTES, WARNING_FORMATS
from oomkit.units import format_bytes

__all__ = ["analyze_warning"]

_PASTE = generic(
    "Paste the error that ended the run, if any",
    "a warning is not the failure: the line that stopped the run names the allocation that "
    "failed and its numbers.",
    ("oomkit doctor < full_log.txt",),
)
_SHRINK = generic(
    "Shrink the batch/input, or the data kept in memory",
    "the levers that lower what one step or one load holds.",
    ("batch_size //= 2", "load the data lazily (a generator / tf.data) instead of all at once"),
)
_TF_GROWTH = generic(
    "Let TensorFlow take GPU memory as it needs it, or cap it",
    "by default TF maps nearly all GPU memory at start; growth or a limit makes other users "
    "and the retry warnings visible.",
    ("tf.config.experimental.set_memory_growth(gpu, True)",),
)
_SMALLER = generic(
    "Pick a smaller quantization or model, or a shorter context",
    "the requirement is the file plus the KV cache at the context: both shrink.",
    ("a Q4_K_M / Q3 GGUF of the same model", "ctx_size 4096"),
)
_CPU = generic(
    "Run it on the CPU backend when the GPU is this small",
    "with little VRAM, the system RAM is the memory that can hold the model.",
    ("Settings > Llama.cpp > backend: CPU (or -ngl 0)",),
)
_TRT_WORKSPACE = generic(
    "Raise the builder's workspace limit if the GPU has room",
    "only the tactics' scratch space is capped; a larger pool lets the builder try them.",
    (
        "config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 4 << 30)",
        "trtexec --memPoolSize=workspace:4096",
    ),
)
_SMALLER_CKPT = generic(
    "Load a smaller or quantized checkpoint (fp8 / NF4 / GGUF Q4-Q8)",
    "the weights are what does not fit the free VRAM.",
    ("flux1-dev-fp8.safetensors or a Q4_K_S / Q8_0 GGUF", "--always-offload-from-vram"),
)
_MLOCK_LIMIT = generic(
    "Raise the locked-memory limit, or load without --mlock",
    "mlock fails with ENOMEM when the lock is above RLIMIT_MEMLOCK; without the lock the model "
    "still loads (its pages may be swapped out under pressure).",
    (
        "ulimit -l unlimited  # or LimitMEMLOCK=infinity in the systemd unit",
        "docker run --ulimit memlock=-1:-1 ...",
        "drop --mlock (llama-cpp-python: use_mlock=False)",
    ),
)
_EXL_CACHE = generic(
    "Give the paged cache more tokens, or ask for fewer",
    "the job needs more pages than the cache holds: raise the cache size (VRAM permitting) or "
    "lower the prompt / max_new_tokens.",
    (
        "ExLlamaV2Cache(model, max_seq_len=16384)  # or tabbyAPI cache_size",
        "max_new_tokens smaller; trim the prompt",
    ),
)


def _size(n: int | None) -> str:
    return "an unstated size" if n is None else format_bytes(n)


def _jan(e: OomEvent) -> Analysis:
    req, vram = e.requested_bytes or 0, e.total_bytes or 0
    usable = max(0, vram - JAN_RESERVE_BYTES)
    return Analysis(
        cause="model_too_large",
        confidence=0.5,
        explanation=f"Jan's pre-load check: the model needs {format_bytes(req)} (the GGUF file "
        f"plus the KV cache at the context) and the GPU has {format_bytes(vram)}, of which Jan "
        f"counts {format_bytes(usable)} as usable (it keeps "
        f"{format_bytes(JAN_RESERVE_BYTES)} back): the model does not fit in VRAM, so it must be "
        "split with the CPU (slow) or refused. What would decide whether it runs at all: the "
        "system RAM beside the VRAM (the requirement must fit RAM + VRAM less the reserve).",
        fixes=(_SMALLER, _CPU),
        open_question=False,
    )


def _forge(e: OomEvent) -> Analysis:
    need, free = e.requested_bytes, e.free_bytes
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=f"Forge's load plan: the model plus one inference need {_size(need)} and "
        f"the GPU has {_size(free)} free, so Forge keeps part of the model in CPU memory "
        "('CPU Swap Loaded', LOW_VRAM): no error, but every step moves weights over PCIe. What "
        "would decide: the model's size against the card (a quantized checkpoint fits where "
        "the full one does not) and what else holds VRAM.",
        fixes=(_SMALLER_CKPT, _PASTE),
        open_question=False,
    )


def analyze_warning(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The reading of a warning or ExLlamaV2 page event (``None`` for any other event)."""
    del ctx  # the warning's own line is all this rule reads
    if e.format == "exllamav2_job_pages":
        tokens = f" ({e.kv_capacity_tokens} tokens)" if e.kv_capacity_tokens else ""
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.7,
            explanation=f"ExLlamaV2's dynamic generator refused a job that {e.detail}: the "
            f"request (prompt plus max_new_tokens) needs more KV-cache pages than the whole "
            f"paged cache holds{tokens}. The cache size, not free VRAM, is the limit here.",
            fixes=(_EXL_CACHE,),
            open_question=False,
        )
    if e.format == "llama.cpp_mlock_limit":
        return Analysis(
            cause="unknown",
            confidence=0.3,
            explanation=f"llama.cpp could not mlock (pin in RAM) a {_size(e.requested_bytes)} "
            "buffer of the mapped model: mlock returned ENOMEM ('Cannot allocate memory'), which "
            "Linux gives when the lock is above the locked-memory limit (RLIMIT_MEMLOCK, "
            "`ulimit -l`), not when RAM runs out (a shortage while locking is EAGAIN). llama.cpp "
            "warns and loads on without the lock, so this line is no out-of-memory failure: the "
            "error that ended the run, if any, decides.",
            fixes=(_MLOCK_LIMIT, _PASTE),
            open_question=False,
        )
    if e.format not in WARNING_FORMATS:
        return None
    if e.format == "jan_model_support_check":
        return _jan(e)
    if e.format == "forge_memory_plan":
        return _forge(e)
    size = _size(e.requested_bytes)
    if e.format == "tf_bfc_retry_warning":
        what = (
            f"TensorFlow's BFC allocator could not serve {size} from its pool and the caller "
            "retried (it says this is not a failure): the GPU pool is near its limit"
        )
        fixes: tuple[Fix, ...] = (_PASTE, _SHRINK, _TF_GROWTH)
    elif e.format == "tensorrt_workspace_warning":
        what = (
            "TensorRT's builder skipped tactics that need more scratch memory than its "
            "workspace limit; the engine still builds, perhaps slower. The limit is the "
            "builder's setting (setMemoryPoolLimit(kWORKSPACE) / --memPoolSize=workspace:N), "
            "not the GPU running out"
        )
        fixes = (_TRT_WORKSPACE, _PASTE)
    elif e.format == "tcmalloc_large_alloc":
        what = (
            f"tcmalloc reports one host allocation of {size} that succeeded (it reports every "
            "allocation over its threshold, 1 GiB by default): a large load into host RAM, "
            "which a later step or the OS OOM killer may not survive"
        )
        fixes = (_PASTE, _SHRINK)
    else:
        what = (
            f"TensorFlow's CPU allocator warns that one host allocation of {size} is over 10% "
            "of the system memory; it succeeded"
        )
        fixes = (_PASTE, _SHRINK)
    # tcmalloc and TF's CPU allocator report host allocations: the only memory the warning is
    # about is the host RAM (read at low confidence: the allocation itself succeeded)
    host = e.format in {"tcmalloc_large_alloc", "tf_cpu_large_alloc"}
    return Analysis(
        cause="host_ram" if host else "unknown",
        confidence=0.3 if host else 0.2,
        explanation=f"No out-of-memory error is in the text: {what}. A warning of memory "
        "pressure, not a failure. What would decide: the error that ended the run (paste it), "
        "and what the memory holds at the peak (the data loaded, the batch, the model).",
        fixes=fixes,
        open_question=False,
    )
