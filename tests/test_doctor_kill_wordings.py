"""Issue 9 after heldout28: host-RAM kills as posters word them (``parse_wordings_kills``), the
shell's bare ``Killed`` (``parse_other``: where it may sit, what confidence it gets), failures
whose line states another reason (``not_memory_reason``), SYCL's Plugin Interface codes, and the
runtimes' own OOM formats that the brief listed, each built from the runtime's format string."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_wordings_kills import KILLS_NEAR_MISSES, kill_match
from recognition_cases import recognition_tests

_KILLS = (
    # a script or tool named with the kill
    "baichuan build.py killed",
    "webui.sh get's killed on TensorRT SDXL conversion",
    "convert_checkpoint.py was killed after loading the shards",
    "quantize.py (python) gets killed at layer 40",
    # a title that opens with the kill and the activity
    "[BUG]Killed while packing model",
    "Killed during quantization of the 70B model",
    "[Question] killed when exporting to ONNX",
    # the shell's word quoted mid-sentence, capitalised as the shell prints it
    'the measurement pass bombs with a "Killed." and nothing else',
    "Both stopped (Killed) without any error message.",
    "the script halts with an error `4441 Killed` message.",
    # a verb of showing before the word
    "Why does the model quantization prompt KILLED at the end?",
    "the export displays Killed after the last layer",
)

(
    test_kill_wordings_are_recognised,
    test_kill_wordings_are_recognised_inside_a_log,
    test_kill_near_misses_stay_silent,
) = recognition_tests(_KILLS, KILLS_NEAR_MISSES)


@pytest.mark.parametrize("text", _KILLS)
def test_each_kill_wording_is_the_kill_grammar_s_and_reads_host_ram(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "host_ram", text


def test_the_kill_grammar_alone_is_silent_on_its_neighbours() -> None:
    assert [t for t in KILLS_NEAR_MISSES if kill_match(t, t.lower())] == []


def test_a_bare_killed_ends_a_log_and_gets_the_dmesg_question() -> None:
    log = "Loading checkpoint shards: 100%|##########| 3/3\nConverting layer 31/32\nKilled\n"
    d = diagnose_text(log)
    assert d.cause == "host_ram"
    # any SIGKILL prints it: below the asking threshold, with the fact that decides it
    assert d.confidence == pytest.approx(0.55)
    assert "dmesg" in d.explanation


def test_a_bare_killed_before_a_code_fence_and_a_comment_still_counts() -> None:
    log = "Total time of converting 52.1 s\nKilled\n```\nThe machine has 32 GB of RAM."
    assert [e.format for e in parse_log(log).events] == ["linux_killed"]


def test_a_bare_killed_the_program_kept_running_after_is_not_an_oom() -> None:
    # the shell reports the end of the job: output of the same program after it means the
    # program printed the word itself
    log = "Killed\nRestarting the server\nLoading model weights\nModel loaded, serving on port 8000"
    assert not diagnose_text(log).oom_found


@pytest.mark.parametrize(
    "log",
    [
        # rich / tqdm redraw the bar with "\r" and no newline: the shell's word lands after it
        "Exporting Model To TensorRT Engine ---------- 0:02:25Killed",
        "Packing model.layers: 100%|##########| 80/80Killed",
    ],
)
def test_killed_glued_after_a_progress_bar_counts(log: str) -> None:
    assert [e.format for e in parse_log(log).events] == ["linux_killed"]


def test_killed_inside_a_word_does_not_count() -> None:
    assert not diagnose_text("status: unKilled").oom_found


@pytest.mark.parametrize(
    "text",
    [
        # cudaErrorInvalidValue prints "invalid argument"; EINVAL the same: a bad size or pointer
        "The kernel's allocation fails with an invalid argument when the tensor is empty.",
        "cudaMalloc failed: invalid argument",
        "hipMalloc failed with hipErrorInvalidValue",
        # a kill with a non-memory sender or reason
        "The job got killed by the scheduler because it hit the time limit.",
        "the process gets killed when I press ctrl+c",
    ],
)
def test_a_failure_with_another_stated_reason_is_not_an_oom(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


@pytest.mark.parametrize(
    "text",
    [
        "cudaMalloc failed: out of memory",
        "memory allocation failed: invalid argument while out of memory",
        "the job got killed by the OOM killer after the time limit was raised",
        "the process gets killed because it runs out of memory",
    ],
)
def test_a_line_that_names_the_memory_is_never_vetoed(text: str) -> None:
    assert diagnose_text(text).oom_found, text


@pytest.mark.parametrize(
    ("text", "fmt", "cause"),
    [
        (
            "RuntimeError: Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY)"
            " -6 (PI_ERROR_OUT_OF_HOST_MEMORY)",
            "level_zero_out_of_host_memory",
            "host_ram",
        ),
        (
            "RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)"
            " -5 (PI_ERROR_OUT_OF_RESOURCES)",
            "level_zero_out_of_device_memory",
            None,
        ),
    ],
)
def test_sycl_plugin_interface_codes(text: str, fmt: str, cause: str | None) -> None:
    assert [e.format for e in parse_log(text).events] == [fmt]
    if cause is not None:
        assert diagnose_text(text).cause == cause


# The runtimes' own formats the issue-9 brief named, each from its format string with realistic
# numbers (no corpus record): each must be read by its specific parser, not the generic fallback.
_RUNTIME_FORMATS = (
    # TensorRT-LLM cpp/include/tensorrt_llm/common/cudaUtils.h check(): "CUDA runtime error in
    # %s: %s (%s:%d)"
    (
        "[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] CUDA "
        "runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory "
        "(/src/cpp/tensorrt_llm/runtime/tllmBuffers.h:125)",
        "trtllm_runtime_oom",
    ),
    # TGI server/text_generation_server/models/flash_causal_lm.py warmup: "Not enough memory to
    # handle {n} prefill tokens. You need to decrease `--max-batch-prefill-tokens`"
    (
        'Error: Warmup(Generation("Not enough memory to handle 8192 prefill tokens. You need to '
        'decrease `--max-batch-prefill-tokens`"))',
        "tgi_warmup_prefill",
    ),
    # MLX mlx/backend/metal/allocator.cpp MetalAllocator::malloc
    (
        "[metal::malloc] Attempting to allocate 21474836480 bytes which is greater than the "
        "maximum allowed buffer size of 17179869184 bytes.",
        "mlx_max_buffer_size",
    ),
    # Metal MTLCommandBufferError kIOGPUCommandBufferCallbackErrorOutOfMemory (MLX, ggml-metal)
    (
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] "
        "Command buffer execution failed: Insufficient Memory "
        "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
        "metal_command_buffer",
    ),
    # Intel XPU (PyTorch c10/xpu XPUCachingAllocator, IPEX): "XPU out of memory. Tried to allocate"
    (
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 15.11 GiB. Of the allocated memory 12.65 GiB is allocated by PyTorch, and "
        "1.40 GiB is reserved by PyTorch but unallocated.",
        "pytorch_partial",
    ),
    # Unified Runtime ur_result_t 39
    (
        "RuntimeError: Native API failed. Native API returns: 39 "
        "(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
        "level_zero_out_of_device_memory",
    ),
    # ONNX Runtime onnxruntime/core/framework/bfc_arena.cc AllocateRawInternal
    (
        "Status Message: /onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:376 void* "
        "onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*, bool, "
        "onnxruntime::WaitNotificationFn) Failed to allocate memory for requested buffer of "
        "size 2147483648",
        "onnxruntime_bfc_arena",
    ),
    # torch-directml: "Could not allocate tensor with N bytes. There is not enough GPU video
    # memory available!"
    (
        "RuntimeError: Could not allocate tensor with 4915840 bytes. There is not enough GPU "
        "video memory available!",
        "directml_alloc_tensor_failed",
    ),
    # PyTorch on ROCm: the caching allocator's message with HIP in place of CUDA
    (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 23.98 GiB of which 1.02 GiB is free.",
        "pytorch_new_hip",
    ),
)


@pytest.mark.parametrize(("text", "fmt"), _RUNTIME_FORMATS)
def test_runtime_formats_are_read_by_their_own_parser(text: str, fmt: str) -> None:
    assert fmt in {e.format for e in parse_log(text).events}, text


@pytest.mark.parametrize(
    "text",
    [
        "vmmem is using all memory and WSL crashes",
        "VmmemWSL takes 15 GB and the training runs out of memory",
    ],
)
def test_wsl_vmmem_is_host_ram(text: str) -> None:
    # WSL 2's VM is the Windows process "vmmem" / "VmmemWSL": its memory is the host's RAM
    assert diagnose_text(text).cause == "host_ram", text
