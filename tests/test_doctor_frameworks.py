"""Other frameworks' own OOM wordings (``parse_frameworks`` / ``rules_frameworks``, issue 9).

Every format is checked on the text of a real report (the heldout6 corpus record named in the
case) and on a second wording from the framework's source or another thread, and near-miss texts
of the same framework must not be read as an OOM. The near misses are read by the whole doctor
(every parser and the keyword fallback), so they also guard the other parsers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_frameworks import parse_frameworks
from oomkit.diagnose.text import split_lines

CORPUS = Path(__file__).parent / "fixtures" / "oom_corpus"


def _corpus_text(record_id: str) -> str:
    return corpus_text(record_id)


# (text or "corpus:<id>", runtime, format, expected event fields)
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # ONNX Runtime: bfc_arena.cc cut after "Failed to alloc"; CUDA provider's CudaCall
    ("corpus:h6-llmpdftranslator-9", "onnxruntime", "onnxruntime_bfc_arena_cut", {}),
    (
        "corpus:h6-deeplivecam-584",
        "onnxruntime",
        "onnxruntime_cuda_failure_oom",
        {"device": 0, "detail": "cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)"},
    ),
    (
        "CUDA failure 2: out of memory ; GPU=1 ; hostname=srv ; file=/onnxruntime_src/onnxruntime/"
        "core/providers/cuda/cuda_allocator.cc ; line=47 ; expr=cudaMalloc((void**)&p, size);",
        "onnxruntime",
        "onnxruntime_cuda_failure_oom",
        {"device": 1},
    ),
    # TensorRT builder / runtime
    (
        "corpus:h6-deepstreamyolo-366",
        "tensorrt",
        "trt_virtual_memory_buffer",
        {"kind": "workspace_alloc_failed"},
    ),
    (
        "WARNING: Requested amount of GPU memory (4294967296 bytes) could not be allocated. "
        "There may not be enough free memory for allocation to succeed.",
        "tensorrt",
        "trt_requested_gpu_memory",
        {"requested_bytes": 4294967296},
    ),
    (
        "[E] [virtualMemoryBuffer.cpp::resizePhysical::140] Error code 2: out of Memory "
        "(Requested size was 22942842880 bytes.)",
        "tensorrt",
        "trt_virtual_memory_buffer",
        {"requested_bytes": 22942842880},
    ),
    (
        "corpus:h6-torch2trt-661",
        "tensorrt",
        "trt_requested_memory",
        {"requested_bytes": 150994944, "stage": "weights"},
    ),
    ("corpus:h6-tensorrt-948", "tensorrt", "trt_default_allocator_oom", {}),
    (
        "[E] [defaultAllocator.cpp::allocate::19] Error code 1: Cuda Runtime (out of memory)",
        "tensorrt",
        "trt_default_allocator_oom",
        {},
    ),
    ("corpus:h6-tensorrt-749", "tensorrt", "trt_get_best_tactic", {"detail": "9_full_with_bias"}),
    # MXNet storage manager and mshadow
    ("corpus:h6-compreface-1061", "mxnet", "mxnet_cudamalloc_failed", {}),
    ("corpus:h6-insightface-257", "mxnet", "mxnet_cudamalloc_failed", {"detail": None}),
    (
        "MXNetError: [10:06:20] src/storage/./pooled_storage_manager.h:143: cudaMalloc retry "
        "failed: out of memory",
        "mxnet",
        "mxnet_cudamalloc_failed",
        {"detail": "retry after releasing the pool"},
    ),
    ("corpus:h6-mxnet-2778", "mxnet", "mxnet_device_storage", {}),
    ("corpus:h6-compreface-844", "mxnet", "mxnet_mshadow_kernel", {"detail": "MapPlanKernel"}),
    # PaddlePaddle CPU allocator (posix_memalign)
    (
        "corpus:h6-paddleocr-2656",
        "paddle",
        "paddle_cpu_alloc_failed",
        {"requested_bytes": 5060694016},
    ),
    (
        "ResourceExhaustedError: Fail to alloc memory of 1073741824 size, error code is 12.",
        "paddle",
        "paddle_cpu_alloc_failed",
        {"requested_bytes": 1 << 30},
    ),
    # MindSpore
    (
        "corpus:h6-mindnlp-1761",
        "mindspore",
        "mindspore_mem_pool",
        {"requested_bytes": 301990400, "allocated_bytes": 29356337664, "total_bytes": 29464985600},
    ),
    (
        "[ERROR] PRE_ACT(1,2,python):2023-01-01 [mem_dynamic_allocator.cc:220] "
        "AddMemBlockAndMemBufByEagerFree] TotalUsedMemStatistics : 1000 plus alloc size : 500 is "
        "more than total mem size : 1200.",
        "mindspore",
        "mindspore_mem_pool",
        {"requested_bytes": 500, "allocated_bytes": 1000, "free_bytes": 200},
    ),
    (
        "corpus:h6-mindone-465",
        "mindspore",
        "mindspore_kernel_output",
        {"detail": "Default/Cast-op446"},
    ),
    (
        "RuntimeError: Malloc for kernel output failed, Memory isn't enough, "
        "node:Default/network-WithLossCell/_backbone-Net/MatMul-op12",
        "mindspore",
        "mindspore_kernel_output",
        {},
    ),
    (
        "corpus:h6-mindspore-172",
        "mindspore",
        "mindspore_cuda_host_alloc",
        {"kind": "host_alloc_failed"},
    ),
    (
        "corpus:h6-mindspore-253",
        "mindspore",
        "mindspore_cuda_call_oom",
        {"detail": "cudaStreamCreateWithFlags"},
    ),
    # Sophgo bmlib
    (
        "corpus:h6-sophonstream-58",
        "sophgo",
        "bmlib_alloc_gmem_failed",
        {"requested_bytes": 0x639C00},
    ),
    (
        "[bmlib_memory][error] bm_alloc_gmem failed, dev_id = 2, size = 0x3060e078",
        "sophgo",
        "bmlib_alloc_gmem_failed",
        {"device": 2, "requested_bytes": 0x3060E078},
    ),
    # Caffe with the status wrapped onto the next line
    ("corpus:h6-subcnn-31", "caffe", "caffe_check_failed_oom", {}),
    (
        "F0101 00:00:00.000000 1 syncedmem.cpp:78] Check failed: error == cudaSuccess\n"
        "(2 vs. 0)  out of memory",
        "caffe",
        "caffe_check_failed_oom",
        {},
    ),
    # TensorFlow 1.x
    ("corpus:h6-tf-6766", "tensorflow", "tf_eigen_allocator_oom", {"requested_bytes": 0}),
    ("corpus:h6-tf-13095", "tensorflow", "tf_ran_out_of_gpu_memory", {"requested_bytes": 0}),
    (
        "ResourceExhaustedError: Ran out of GPU memory when allocating 1048576 bytes for "
        "[[Node: conv1/Conv2D = Conv2D[T=DT_FLOAT]]]",
        "tensorflow",
        "tf_ran_out_of_gpu_memory",
        {"requested_bytes": 1048576},
    ),
    # ggml's own fixed buffers
    (
        "corpus:h6-doccommentsai-33",
        "llama.cpp",
        "ggml_tallocr_not_enough_space",
        {"requested_bytes": 442368, "free_bytes": 290848},
    ),
    (
        "ggml_tallocr_alloc: not enough space in the buffer to allocate blk.0.attn_q.weight "
        "(needed 58982400, available 58982368)",
        "llama.cpp",
        "ggml_tallocr_not_enough_space",
        {"requested_bytes": 58982400, "detail": "blk.0.attn_q.weight"},
    ),
    ("corpus:h6-llamabox-24", "llama.cpp", "ggml_memory_pool", {}),
    (
        "ggml_new_object: not enough space in the context's memory pool (needed 442, available 8)",
        "llama.cpp",
        "ggml_memory_pool",
        {},
    ),
    ("corpus:h6-koboldcpp-365", "llama.cpp", "ggml_alloc_out_of_free_blocks", {}),
    (
        "corpus:h6-koboldcpp-714",
        "llama.cpp",
        "llama.cpp_cudamalloc_bare",
        {"device": 0, "buffer_name": "CUDA0"},
    ),
    (
        "allocating 512.00 MiB on device 1: hipMalloc failed: out of memory",
        "llama.cpp",
        "llama.cpp_cudamalloc_bare",
        {"requested_bytes": 512 << 20, "buffer_name": "ROCm1"},
    ),
    # SGLang request slots
    ("corpus:h6-sglang-10408", "sglang", "sglang_alloc_req_slots", {}),
    (
        "RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number for "
        "`--max-running-requests`. self.req_to_token_pool.available_size()=0, num_reqs=1,",
        "sglang",
        "sglang_alloc_req_slots",
        {},
    ),
    # Ollama's llama-server runner
    (
        "corpus:h6-ollama-16968",
        "ollama",
        "ollama_llama_server_startup_oom",
        {"kind": "host_oom", "buffer_name": "cpu"},
    ),
    (
        "Ollama request failed (500): llama-server reported out-of-memory during startup: "
        "CUDA error",
        "ollama",
        "ollama_llama_server_startup_oom",
        {"kind": "startup_oom", "buffer_name": None, "detail": "startup"},
    ),
    # vllm-metal's KV budget (decimal GB)
    (
        "corpus:h6-vllmmetal-585",
        "vllm",
        "vllm_metal_kv_budget",
        {"allocated_bytes": 13_760_000_000, "reserved_bytes": 37_860_000_000},
    ),
    (
        "ValueError: Paged attention: not enough Metal memory for KV cache. metal_limit=19.07GB, "
        "fraction=0.92, usable_metal=17.54GB, model_memory=16.38GB, overhead=1.30GB, "
        "kv_budget=-0.13GB.",
        "vllm",
        "vllm_metal_kv_budget",
        {"allowed_bytes": 17_540_000_000, "available_kv_bytes": -130_000_000},
    ),
    # Ultralytics AutoBatch's fallback after an OOM while profiling
    (
        "corpus:h6-ultralytics-3827",
        "ultralytics",
        "ultralytics_autobatch_error",
        {"detail": "batch 16"},
    ),
    (
        "AutoBatch:  error detected: torch.OutOfMemoryError(),  using default batch-size 8.",
        "ultralytics",
        "ultralytics_autobatch_error",
        {"detail": "batch 8"},
    ),
    # LM Studio's load-failure report with the memory used up
    (
        "corpus:h6-lmstudio-14",
        "lmstudio",
        "lmstudio_load_failed_memory",
        {"kind": "host_oom", "detail": "n_ctx 1048576", "free_bytes": 316650},
    ),
    (
        '{\n  "title": "Failed to load model",\n  "data": {\n    "memory": {\n'
        '      "ram_capacity": "64.00 GB",\n      "ram_unused": "20.00 GB"\n    },\n'
        '    "gpu": {\n      "vram_recommended_capacity": "24.00 GB",\n'
        '      "vram_unused": "30.00 MB"\n    }\n  }\n}',
        "lmstudio",
        "lmstudio_load_failed_memory",
        {"kind": "gpu_alloc_failed", "total_bytes": 24 * 10**9},
    ),
    # PyTorch's caching-allocator wording cut short
    (
        "corpus:h6-textgen-1009",
        "pytorch",
        "pytorch_old_fragment",
        {"device": 0, "free_bytes": round(13.69 * (1 << 20))},
    ),
    (
        "(GPU 1; 11.17 GiB total capacity; 10.23 GiB already allocated; 5.81 MiB free; "
        "20.00 MiB cached)",
        "pytorch",
        "pytorch_old_fragment",
        {"device": 1, "reserved_bytes": None, "reserved_unallocated_bytes": 20 << 20},
    ),
    ("corpus:h6-hotshotxl-47", "pytorch", "pytorch_bare", {}),
    ("corpus:h6-forge-1091", "pytorch", "pytorch_bare", {"requested_bytes": 256 << 20}),
]


@pytest.mark.parametrize(("text", "runtime", "fmt", "fields"), CASES)
def test_format_is_read_with_its_numbers(
    text: str, runtime: str, fmt: str, fields: dict[str, Any]
) -> None:
    if text.startswith("corpus:"):
        text = _corpus_text(text.removeprefix("corpus:"))
    events = parse_log(text).events
    assert events, text
    match = [e for e in events if e.format == fmt]
    assert match, [(e.runtime, e.format) for e in events]
    ev = match[0]
    assert ev.runtime == runtime
    for key, value in fields.items():
        assert getattr(ev, key) == value, key
    d = diagnose_text(text)
    assert d.oom_found
    assert d.explanation


NEAR_MISSES = [
    # AutoBatch falling back for another reason
    "AutoBatch: WARNING error detected: list index out of range,  using default batch-size 16.",
    # LM Studio's load-failure report with memory to spare (exit code 6: not an OOM it shows)
    "corpus:h6-lmstudio-59",
    # ONNX Runtime: a CUDA failure that is not an OOM; an arena that allocated fine
    "CUDA failure 700: an illegal memory access was encountered ; GPU=0 ; hostname=x ; "
    "file=cuda_call.cc ; line=121 ; expr=cudaStreamSynchronize(stream);",
    "bfc_arena.cc:347 Extending BFCArena for Cuda. bin_num:0 rounded_bytes:256",
    # TensorRT info and advice lines
    "[TRT] [I] [MemUsageChange] Init CUDA: CPU +328, GPU +0, now: CPU 355, GPU 2210 (MiB)",
    "Try decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().",
    # MXNet: other storage failures
    "src/storage/./pooled_storage_manager.h:143: cudaMalloc failed: invalid argument",
    "Check failed: err == cudaSuccess (8 vs. 0) : Name: MapPlanKernel ErrStr:invalid device "
    "function",
    # Paddle / MindSpore / Sophgo: other errors of the same functions
    "ResourceExhaustedError: Fail to open file /data/train.txt",
    "TotalUsedMemStatistics : 1000",
    "The cudaStreamCreateWithFlags failed, ret[700], an illegal memory access was encountered",
    "[bmlib_memory][info] bm_free_device, dev_id = 0, size = 0x20",
    # Caffe: a wrapped check that is not out of memory
    "F0101 00:00:00.000000 1 syncedmem.cpp:78] Check failed: error == cudaSuccess\n"
    "(8 vs. 0)  invalid device function",
    # TensorFlow device creation
    "I tensorflow/core/common_runtime/gpu/gpu_device.cc:104] EigenAllocator for GPU created",
    # ggml / Ollama / vllm-metal
    "not enough space in the disk to save the model",
    "llama-server started in 3.21 seconds",
    "Paged attention enabled: metal_limit=40.20GB, fraction=0.92",
    "alloc_req_slots: allocated 4 slots",
    # PyTorch: a capacity line without the allocator's statistics
    "GPU 0: NVIDIA GeForce RTX 2070 SUPER (7.78 GiB total capacity)",
    "torch.cuda.memory_allocated() = 3.2 GiB",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_not_read_as_an_oom(text: str) -> None:
    if text.startswith("corpus:"):
        text = _corpus_text(text.removeprefix("corpus:"))
    assert parse_frameworks(split_lines(text)) == []
    # no parser claims it; a few ("ResourceExhaustedError", "not enough space in", "cudaMalloc
    # failed") still reach the generic keyword fallback, which says it knows no format
    d = diagnose_text(text)
    assert all(e.runtime == "generic" for e in d.events), [(e.runtime, e.format) for e in d.events]


@pytest.mark.parametrize(
    ("text", "cause", "settled"),
    [
        # a zero-byte request: TF's BFC allocator refuses it; not a lack of memory
        ("corpus:h6-tf-6766", "unknown", True),
        # host RAM: Paddle's CPU allocator; Ollama's CPU buffer at start-up
        ("corpus:h6-paddleocr-2656", "host_ram", True),
        ("corpus:h6-ollama-16968", "host_ram", True),
        # an operator's output tensor while running the graph
        ("corpus:h6-mindone-465", "batch_or_activations", True),
        # Sophgo: per-stream frame/tensor buffers in a device heap
        ("corpus:h6-sophonstream-58", "batch_or_activations", True),
        # ggml buffers sized in advance: not the device's memory
        ("corpus:h6-koboldcpp-365", "unknown", True),
        # vllm-metal: the profiled overhead (37.86 GB) is larger than the weights (13.76 GB)
        ("corpus:h6-vllmmetal-585", "batch_or_activations", True),
        (
            "ValueError: Paged attention: not enough Metal memory for KV cache. "
            "metal_limit=19.07GB, fraction=0.92, usable_metal=17.54GB, model_memory=16.38GB, "
            "overhead=1.30GB, kv_budget=-0.13GB.",
            "model_too_large",
            True,
        ),
        # TensorRT builder tactic workspace: capped by the memory-pool limit
        ("corpus:h6-deepstreamyolo-366", "unknown", True),
        # no number decides: the base rate answers
        ("corpus:h6-insightface-257", None, False),
    ],
)
def test_cause_follows_the_mechanism(text: str, cause: str | None, settled: bool) -> None:
    if text.startswith("corpus:"):
        text = _corpus_text(text.removeprefix("corpus:"))
    d = diagnose_text(text)
    assert d.oom_found
    assert d.open_question is not settled
    if cause is not None:
        assert d.cause == cause, d.explanation


def test_mindspore_share_of_the_device_decides() -> None:
    big = (
        "TotalUsedMemStatistics : 20000000000 plus alloc size : 4000000000 is more than total "
        "mem size : 22000000000."
    )
    small = (
        "TotalUsedMemStatistics : 21900000000 plus alloc size : 200000000 is more than total "
        "mem size : 22000000000."
    )
    assert diagnose_text(big).cause == "batch_or_activations"
    d = diagnose_text(small)
    assert d.primary is not None
    assert d.primary.runtime == "mindspore"
    # a small request with the device held by the pool: the resident state, left open
    assert d.open_question


_GENERIC_DECIDER = "What would decide it is not in the message"


def test_trt_scratch_rule_carries_its_own_deciding_fact() -> None:
    # the builder's scratch request with its size (heldout9's tensorrt-2682 wording): the rule
    # knows what decides (a lower workspace limit, smaller build shapes), so the generic
    # "the setting that capped this memory" sentence is not appended
    d = diagnose_text(
        "[W] [TRT] Requested amount of GPU memory (4294967296 bytes) could not be allocated. "
        "There may not be enough free memory for allocation to succeed.\n"
        "[W] [TRT] Skipping tactic 3 due to insufficient memory on requested size of "
        "4294967296 detected for tactic 0x0000000000000004."
    )
    assert d.cause == "unknown"
    assert "smaller build shapes" in d.explanation
    assert _GENERIC_DECIDER not in d.explanation


def test_low_confidence_unknown_with_sizes_gets_the_generic_deciding_sentence() -> None:
    # a small request with plenty free (T3, nanoGPT's report in heldout13): the sizes were
    # read, so "the full message would decide" would be false; the cap that is not in the
    # message decides
    d = diagnose_text(corpus_text("h13-nanogpt-88"))
    assert d.cause == "unknown"
    assert d.confidence < 0.6
    assert _GENERIC_DECIDER in d.explanation
    assert "the setting that capped this memory" in d.explanation
