"""Causes for the wordings of ``parse_backends`` (DirectML, MNN, TensorRT-LLM CUDA checks, CANN)
and of ``parse_accel`` (Neuron, RKNN, QNN and MUSA status codes).

Each message names at most the size of the one buffer that failed, so the cause is decided
only where the wording itself says what the buffer holds (MNN's STATIC buffers are an op's
parameters); otherwise the analysis says which numbers would decide. See
docs/doctor-causes.md ("GPU backends' one-line allocation failures").
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["analyze_backends"]

_BIG_TENSOR = 2 << 30  # a single tensor above the largest weight tensors of common models
_BATCH = generic(
    "Lower the batch size or the input size",
    "activations scale with the batch and the image/sequence size.",
    ("batch size 1, smaller resolution or shorter inputs",),
)
_SMALLER_MODEL = generic(
    "Use a smaller or more quantised model",
    "the model's parameters are placed when the session is created.",
    ("a lower-bit or smaller checkpoint",),
)


def _directml(e: OomEvent) -> Analysis:
    """torch-directml names only the tensor that failed: no total, no free, no process use."""
    x = e.requested_bytes
    head = f"DirectML could not allocate a tensor of {size_text(x)} in GPU video memory."
    if x is not None and x >= _BIG_TENSOR:
        return Analysis(
            cause="batch_or_activations",
            confidence=0.45,
            explanation=head + f" One tensor of {size_text(x)} is an activation (an image or "
            "attention batch), not a weight tensor.",
            fixes=(_BATCH,),
        )
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=head + " The message gives no total, free or in-use memory, so whether the "
        "weights, the image size (hires fix, upscale) or another program filled the card cannot "
        "be told from it. Task Manager's dedicated GPU memory before the run would decide.",
        fixes=(_BATCH,),
    )


def _mnn(e: OomEvent) -> Analysis:
    where = "host RAM" if e.kind == "host_oom" else "device memory"
    return Analysis(
        cause="host_ram" if e.kind == "host_oom" else "model_too_large",
        confidence=0.5,
        explanation=f"MNN could not acquire a STATIC buffer ({e.detail}) in {where}: STATIC "
        "buffers hold an op's parameters and are placed when the session is created, so the "
        "model's weights did not fit. Another program holding the memory would show in "
        "`oomkit gpus` before the load.",
        fixes=(_SMALLER_MODEL,),
    )


def _trtllm(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=f"TensorRT-LLM's CUDA check failed: {e.detail} returned out of memory. The "
        "message carries no sizes; the runtime buffers (sized by max_batch_size, max_num_tokens "
        "and the beam width) and the KV pool (kv_cache_free_gpu_mem_fraction) are allocated "
        "after the engine's weights, so the free memory after the engine loads "
        "(`[MemUsageChange]` lines) and those settings would decide.",
        fixes=(
            generic(
                "Lower max_batch_size / max_num_tokens or kv_cache_free_gpu_mem_fraction",
                "the runtime buffers and the KV pool are sized from them.",
                ("kv_cache_free_gpu_mem_fraction=0.5",),
            ),
        ),
    )


def _ascend(e: OomEvent) -> Analysis:
    req = f" {size_text(e.requested_bytes)} of" if e.requested_bytes else ""
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=f"The Ascend NPU's Graph Engine could not allocate{req} device memory "
        "(CANN EL0004). The message gives no total or in-use memory; `npu-smi info` before the "
        "run and whether it fails at load or in a step would decide.",
        fixes=(_BATCH,),
    )


def _accel(e: OomEvent) -> Analysis:
    """Neuron's NRT_RESOURCE / NRT_FAIL_HOST_MEM_ALLOC and RKNN's RKNN_ERR_MALLOC_FAIL
    (``parse_accel``): a status code and the call that failed, no sizes."""
    if e.format == "neuron_nrt_host_alloc":
        return Analysis(
            cause="host_ram",
            confidence=0.6,
            explanation="The Neuron runtime could not allocate host memory "
            "(NRT_FAIL_HOST_MEM_ALLOC): the instance's RAM, which also holds the model while it "
            "loads, ran out. `free -h` during the load would confirm.",
            fixes=(_SMALLER_MODEL,),
        )
    where = {
        "neuron": "the Neuron device's HBM (NRT_RESOURCE)",
        "rknn": "the RKNN runtime's buffers (RKNN_ERR_MALLOC_FAIL; the NPU shares the board's RAM)",
        "qnn": "a Qualcomm QNN backend's context or graph (QNN_..._ERROR_MEM_ALLOC)",
        "musa": "the Moore Threads GPU's memory (musaErrorMemoryAllocation)",
    }.get(e.runtime, "the accelerator's memory")
    call = f" in {e.detail}" if e.detail else ""
    return Analysis(
        cause="unknown",
        confidence=0.3,
        open_question=True,
        explanation=f"An allocation in {where} failed{call}. The status carries no sizes: "
        "whether the weights (at load) or a step's tensors (batch, sequence length) fill it "
        "would decide, with the device's memory before the run.",
        fixes=(_BATCH, _SMALLER_MODEL),
    )


def analyze_backends(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the wordings of ``parse_backends``, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    fmt = e.format or ""
    if fmt == "directml_alloc_tensor_failed":
        return _directml(e)
    if fmt == "mnn_static_acquire_failed":
        return _mnn(e)
    if fmt == "trtllm_cuda_runtime_oom":
        return _trtllm(e)
    if fmt == "cann_el0004_alloc_failed":
        return _ascend(e)
    if fmt in {
        "neuron_nrt_resource",
        "neuron_nrt_host_alloc",
        "rknn_malloc_fail",
        "qnn_mem_alloc",
        "musa_error_memory_allocation",
    }:
        return _accel(e)
    return None
