"""Causes of the wordings of :mod:`oomkit.diagnose.parse_apps` (its docstring cites the sources).

Each message names the memory that ran out (host RAM for VideoHelperSuite's frame cap, the input
for detectron2's CPU retry and Caffe's blob allocation, the KV pool for TurboMind's session
truncation) or says the failure
is not a lack of device memory (Triton's per-block shared-memory limit, ONNX Runtime's buffer
check); the latter keep ``unknown`` with ``open_question=False`` so no base rate overrides them.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic

__all__ = ["analyze_apps"]


def _vhs(e: OomEvent) -> Analysis:
    return Analysis(
        cause="host_ram",
        confidence=0.7,
        explanation=f"VideoHelperSuite stopped after {e.detail}: it caps the decoded frames at "
        "what fits in the available host RAM plus free swap (each frame is held as float32 in "
        "system memory), so the video has more frames than RAM can hold at this resolution. "
        "The GPU is not involved.",
        fixes=(
            generic(
                "Load fewer frames",
                "the frames are held in host RAM; the cap and every-nth selection cut them.",
                ("frame_load_cap = 300", "select_every_nth = 2"),
            ),
            generic(
                "Load the video at a smaller size",
                "each frame takes width x height x 3 x 4 bytes of RAM.",
                ("force_size = 512x?", "custom_width / custom_height"),
            ),
            generic(
                "Process the video in meta-batches",
                "the Meta Batch Manager loads and processes a slice of frames at a time.",
                ("VHS Meta Batch Manager: frames_per_batch = 64",),
            ),
        ),
    )


def _detectron2(e: OomEvent) -> Analysis:
    return Analysis(
        cause="batch_or_activations",
        confidence=0.55,
        explanation=f"detectron2's retry_if_cuda_oom caught a CUDA OOM in {e.detail}, emptied "
        "the cache, failed again and fell back to the CPU. The functions it wraps work on one "
        "image's boxes or masks (pairwise IoU of proposals x ground-truth instances, mask "
        "pasting), so their memory grows with the image size and the number of objects per "
        "image, not with the model.",
        fixes=(
            generic(
                "Smaller images or fewer proposals per image",
                "the IoU matrix is proposals x instances; masks are instances x pixels.",
                (
                    "INPUT.MIN_SIZE_TRAIN=(640,)  INPUT.MAX_SIZE_TRAIN=1024",
                    "MODEL.RPN.POST_NMS_TOPK_TRAIN=1000",
                    "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE=256",
                ),
            ),
            generic(
                "Fewer images per batch",
                "the activations of every image in the batch stay on the GPU.",
                ("SOLVER.IMS_PER_BATCH=2",),
            ),
        ),
    )


def _turbomind_session(e: OomEvent) -> Analysis:
    n = e.kv_capacity_tokens
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.5,
        explanation=f"TurboMind's KV block pool (cache_max_entry_count of the memory left after "
        f"the weights) holds only {n} tokens, fewer than the configured session_len, so the "
        "session length was cut to it; longer requests and warm-up passes beyond it fail. If "
        "the weights leave far more memory than that pool, the estimate is wrong (compare "
        "`oomkit estimate MODEL` with the card).",
        fixes=(
            generic(
                f"Serve a shorter session: --session-len {n}",
                "the pool holds that many tokens; one request of that length fits.",
                (f"--session-len {n}",),
            ),
            generic(
                "Give the KV cache a larger share of the free memory",
                "the pool is cache_max_entry_count of what is free after the weights.",
                ("--cache-max-entry-count 0.9",),
            ),
            generic(
                "Quantize the KV cache",
                "8-bit KV halves the bytes per token (4-bit quarters them).",
                ("--quant-policy 8",),
            ),
        ),
    )


def _triton(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.6,
        explanation=f"A Triton kernel needs more on-chip memory per block than the GPU offers "
        f"({e.detail} bytes). This is a limit of the GPU's streaming multiprocessor that the "
        "kernel's tile size and pipeline stages exceed at compile time, not a lack of device "
        "memory: no batch or model size change frees it.",
        fixes=(
            generic(
                "Smaller tiles / fewer pipeline stages for this kernel",
                "shared memory per block is tile size x num_stages.",
                ("triton.Config({'BLOCK_M': 64, 'BLOCK_N': 64}, num_stages=2)",),
            ),
            generic(
                "Use a non-Triton backend for this op",
                "e.g. the framework's eager kernel or another attention backend.",
                ("torch.compile(model, mode='default')  # or disable the Triton kernel",),
            ),
        ),
        open_question=False,
    )


def _ort_space(e: OomEvent) -> Analysis:
    return Analysis(
        cause="unknown",
        confidence=0.6,
        explanation=f"ONNX Runtime's CreateTensor got a data buffer smaller than the tensor "
        f"shape needs ({e.detail}): an argument check (ORT_INVALID_ARGUMENT), not a failed "
        "allocation. The input's shape and the buffer passed with it disagree.",
        fixes=(
            generic(
                "Make the input buffer match the tensor shape",
                "bytes = product(shape) x element size; check dtype (fp16 vs fp32) and shape.",
                ("assert arr.nbytes == np.prod(shape) * arr.itemsize",),
            ),
        ),
        open_question=False,
    )


def _caffe() -> Analysis:
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation="Caffe's cudaMalloc failed (CUDA error 2) while allocating a blob. Caffe "
        "allocates each blob on its first use and keeps every layer's outputs and gradients "
        "for the whole net, so the first forward/backward pass allocates activations sized by "
        "the data layer's batch_size; the weights are a small part of it. If it fails already "
        "at batch size 1, the net (or another process, `oomkit gpus`) is the cause instead.",
        fixes=(
            generic(
                "Lower the data layer's batch_size, keep the effective batch with iter_size",
                "the blobs are linear in batch_size; iter_size accumulates gradients over "
                "several smaller batches.",
                ("batch_size: 8   # data layer in the train prototxt", "iter_size: 4   # solver"),
            ),
            generic(
                "Smaller input size",
                "every blob is linear in the input's height x width.",
                ("transform_param { crop_size: 224 }",),
            ),
        ),
    )


def analyze_apps(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the wordings of ``parse_apps``, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    fmt = e.format or ""
    if fmt == "vhs_memory_limit_frames":
        return _vhs(e)
    if fmt == "detectron2_retry_on_cpu":
        return _detectron2(e)
    if fmt == "turbomind_session_len_truncated":
        return _turbomind_session(e)
    if fmt == "triton_out_of_resources":
        return _triton(e)
    if fmt == "caffe_check_failed_oom":
        return _caffe()
    if fmt == "onnxruntime_not_enough_space":
        return _ort_space(e)
    return None
