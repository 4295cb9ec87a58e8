"""Causes of the events of :mod:`oomkit.diagnose.parse_limits` (issue 9).

* A buffer above an API's per-allocation limit (Vulkan ``maxBufferSize``, OpenCL
  ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, Intel's 4 GiB blocks, ggml Metal's ``maxBufferLength``) is not
  a lack of memory: the cause stays ``unknown``, and the lever is a smaller single buffer (ggml:
  fewer layers or a smaller context per buffer; frameworks: a smaller tensor).
* TVM's paged KV cache (MLC-LLM, WebLLM) with no free page: the running sequences' tokens fill
  the context window the cache was built for (``apache/tvm:src/runtime/relax_vm/
  paged_kv_cache.cc`` ``GetFreePage``; MLC's own advice: a shorter prompt, a larger
  ``context_window_size``, or a sliding window).
* Paddle 1.x's first chunk (``paddle/fluid/platform/gpu_info.cc`` ``GpuMaxChunkSize``): the
  allocator asks for ``FLAGS_fraction_of_gpu_memory_to_use`` of the device at once and fails when
  less than that is free, whoever holds the rest (another process, or this process's own first
  pool when a second one is created): the message cannot tell which.
* OpenVINO's GPU plugin over the device total and torch_npu's ACL allocation codes (207001,
  207018) carry no share of a batch or of the weights: cause ``unknown``, the levers named.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["analyze_limits"]


def _buffer_limit(e: OomEvent) -> Analysis:
    limit = f" (the limit is {size_text(e.allowed_bytes)})" if e.allowed_bytes else ""
    size = f"One buffer of {size_text(e.requested_bytes)}" if e.requested_bytes else "One buffer"
    ggml = e.runtime == "llama.cpp"
    return Analysis(
        cause="unknown",
        confidence=0.5,
        explanation=f"{size} is larger than {e.detail} allows in a single allocation{limit}: a "
        "per-buffer limit of the API, not the total memory, so free memory does not help. "
        + (
            "ggml's Metal backend of 2023 mapped the whole model file as one buffer; later builds "
            "split it into views under the limit."
            if ggml
            else "One tensor that large is a batch of data or an activation; making it smaller "
            "avoids the limit."
        ),
        fixes=(
            generic(
                "Update llama.cpp, or use a smaller quantization"
                if ggml
                else "Make the single tensor smaller",
                "the limit is per buffer: a smaller buffer fits whatever memory is free.",
                ("update to a build that maps the model in views", "a smaller quant (Q4_K_M)")
                if ggml
                else ("batch_size //= 2", "process the input in chunks / tiles"),
            ),
        ),
    )


def _paged_kv(e: OomEvent) -> Analysis:
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.6,
        explanation="TVM's paged KV cache (MLC-LLM / WebLLM) has no free page left: the tokens "
        "of the running sequences fill the context window the cache was created for, so a "
        "prompt plus its answer longer than that window (or several long sequences at once) "
        "cannot be placed.",
        fixes=(
            generic(
                "Shorten the prompt, or give the cache a longer window",
                "the cache holds context_window_size tokens; a larger window needs more memory.",
                ('"context_window_size": <larger>   # mlc-chat-config.json / engine config',),
            ),
            generic(
                "Use a sliding window",
                "a sliding-window model keeps only the last window of tokens in the cache.",
                ('"sliding_window_size": 4096',),
            ),
        ),
    )


def _paddle_chunk(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=False,  # the chunk is the pool's share, not a request: no base-rate guess
        explanation=f"PaddlePaddle's allocator asked for its first chunk of "
        f"{size_text(e.requested_bytes)} (FLAGS_fraction_of_gpu_memory_to_use of the device) "
        f"but only {size_text(e.free_bytes)} was free. Paddle 1.x grabs that share at once, so "
        "anything else on the GPU (another process, or a second allocator of this process) "
        "makes it fail; `oomkit gpus` shows who holds the rest.",
        fixes=(
            generic(
                "Let Paddle grow its pool instead of grabbing a share",
                "auto-growth allocates what is used; a smaller fraction asks for less at once.",
                (
                    "export FLAGS_allocator_strategy=auto_growth",
                    "export FLAGS_fraction_of_gpu_memory_to_use=0.5",
                ),
            ),
        ),
    )


def _openvino_total(e: OomEvent) -> Analysis:
    x, u, t = e.requested_bytes, e.process_in_use_bytes, e.total_bytes
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"OpenVINO's GPU plugin refused a buffer of {size_text(x)}: its engine "
        f"already holds {size_text(u)} and the device offers {size_text(t)} "
        "(engine::check_allocatable). Whether the weights or one step's buffers (a long prompt's "
        "attention, a large batch) fill it is not in the message: a shorter input that still "
        "fails means the model.",
        fixes=(
            generic(
                "Shorten the input or the batch",
                "the step's buffers grow with the tokens and the batch; the weights do not.",
                ("a shorter prompt / max_new_tokens", "batch_size //= 2"),
            ),
            generic(
                "Use int4/int8 weights",
                "compressed weights leave room on the GPU for the step's buffers.",
                ("optimum-cli export openvino --weight-format int4 ...",),
            ),
        ),
    )


def _npu_acl(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.3,
        explanation=f"An Ascend NPU call returned {e.detail}: the device (HBM) memory allocation "
        "failed. The message carries no sizes, so whether the model, the batch or another "
        "process on the card filled it cannot be told from it; `npu-smi info` shows what the "
        "card holds.",
        fixes=(
            generic(
                "Check what holds the NPU, then lower the batch or the sequence length",
                "activations grow with both; the weights do not.",
                ("npu-smi info", "batch_size //= 2"),
            ),
            generic(
                "Let the caching allocator grow in expandable segments",
                "torch_npu's allocator takes the same settings as PyTorch's.",
                ("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True",),
            ),
        ),
    )


def analyze_limits(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the events of ``parse_limits``, or ``None`` when ``e`` is not one of them."""
    del ctx  # these messages carry what decides them
    if e.kind == "buffer_limit" and e.detail:
        return _buffer_limit(e)
    if e.format == "tvm_paged_kv_full":
        return _paged_kv(e)
    if e.format == "paddle_enforce_available":
        return _paddle_chunk(e)
    if e.format == "openvino_gpu_available_memory":
        return _openvino_total(e)
    if e.format == "torch_npu_acl_oom":
        return _npu_acl(e)
    return None
