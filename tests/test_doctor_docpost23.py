"""docpost23 (issue #9, heldout45-47 retired): the unrecognised records' mechanisms and the native
C++/CUDA libraries' check macros (parse_native_cuda), with their near misses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from doctor_corpus import load, part_files


def _record(part: str, rid: str) -> dict[str, object]:
    return next(r for r in load(part_files(part)) if r.get("id") == rid)


@pytest.mark.parametrize(
    ("part", "rid"),
    [
        ("heldout45", "h45-Gensyn-ai-Rl-Swarm_Guide-19"),  # bash's job line, colon spaced
        ("heldout46", "h46-ollama-13283"),  # Ollama's layout error capitalised in a title
        ("heldout46", "h46-GLM-5.3-Flash-EXL3-2x-DGX-Sparks-39"),  # vLLM's guard elided
        ("heldout46", "h46-vllm-omni-2865"),  # a KV profile of 0.0 GiB
        ("heldout47", "h47-instant-ngp-1310"),  # "without being able to allocate memory"
        ("heldout47", "h47-SpleeterGui-80"),  # "a low memory error"
        ("heldout47", "h47-Wan2GP-1393"),  # WanGP's "unsufficient RAM"
    ],
)
def test_retired_records_now_recognised(part: str, rid: str) -> None:
    assert diagnose_text(str(_record(part, rid)["text"])).oom_found


@pytest.mark.parametrize(
    ("text", "runtime", "fmt"),
    [
        (
            "RuntimeError: [Open3D Error] (void open3d::core::__OPEN3D_CUDA_CHECK(cudaError_t, "
            "const char*, int)) /o/cpp/open3d/core/CUDAUtils.cpp:310: /o/cpp/open3d/core/"
            "MemoryManagerCUDA.cpp:25 CUDA runtime error: out of memory",
            "open3d",
            "open3d_cuda_check_oom",
        ),
        (
            "Could not allocate memory: /x/tiny-cuda-nn/include/tiny-cuda-nn/gpu_memory.h:109 "
            "cudaMalloc(&rawptr, n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory",
            "tiny-cuda-nn",
            "tcnn_gpu_memory_oom",
        ),
        (
            "ORUtils/MemoryBlock.h(217) : cudaSafeCall() Runtime API error : out of memory.",
            "cuda",
            "cuda_safecall_oom",
        ),
        (
            "out of memory at /home/u/torch/extra/cutorch/lib/THC/generic/THCStorage.cu:40",
            "torch7",
            "thc_out_of_memory_at",
        ),
        (
            "[W dml_heap_allocator.cc:120] DML allocator out of memory!",
            "directml",
            "directml_heap_allocator_oom",
        ),
        (
            "terminate called after throwing an instance of 'thrust::system::system_error'\n"
            "  what():  parallel_for failed: cudaErrorMemoryAllocation: out of memory",
            "thrust",
            "thrust_oom",
        ),
        (
            "  what():  std::bad_alloc: cudaErrorMemoryAllocation: out of memory",
            "thrust",
            "thrust_oom",
        ),
        (
            "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMemoryAllocation: out of "
            "memory",
            "cupy",
            "cupy_cuda_runtime_error",
        ),
    ],
)
def test_native_check_macros_name_their_library(text: str, runtime: str, fmt: str) -> None:
    # main read Open3D's line as lmdeploy TurboMind's, thrust's and CuPy's as PyTorch's, and the
    # rest as a bare keyword hit
    p = diagnose_text(text).primary
    assert p is not None
    assert (p.runtime, p.format) == (runtime, fmt)


def test_turbomind_keeps_its_own_lines() -> None:
    for text in (
        "[TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/allocator.h:2",
        "[Bug] CUDA runtime error: out of memory",
    ):
        p = diagnose_text(text).primary
        assert p is not None
        assert p.runtime == "lmdeploy"


def test_the_retired_open3d_record_is_no_longer_lmdeploy() -> None:
    r = _record("heldout47", "h47-gaussian-opacity-fields-55")
    d = diagnose_text(str(r["text"]))
    assert d.primary is not None
    assert d.primary.runtime == "open3d"
    assert d.cause != "kv_cache_or_context"  # TurboMind's KV reading no longer applies


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("Was a low memory error. I have 8Gb of RAM", "host_ram"),
        ("it is likely that you have unsufficient RAM, reduce perc_reserved_mem_max", "host_ram"),
        ("./train.sh: line 12 : 4411 Killed                  python train.py", "host_ram"),
    ],
)
def test_wordings_read_as_host_ram(text: str, cause: str) -> None:
    assert diagnose_text(text).cause == cause


@pytest.mark.parametrize(
    "text",
    [
        "Use the low memory profile to avoid a low memory error on 8 GB cards.",
        "There was no low memory error this time, the run finished.",
        "The allocator is able to allocate memory from the pool without a lock.",
        "Without being able to allocate memory up front, the planner streams the tensors.",
        "Free memory on device 0 is reported by nvidia-smi, which is less than desired.",
        "INFO Available KV cache memory: 0.50 GiB",
        "Memory layout of the KV cache follows the model's attention heads.",
        "cudaSafeCall() Runtime API error : CUDA driver version is insufficient for CUDA runtime.",
        "parallel_for failed: cudaErrorInvalidDeviceFunction: invalid device function",
    ],
)
def test_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        # the GPU ruled out in English, as device_ruled_out reads it in Chinese (显存没问题)
        ("the process extract-mesh always be killed, the gpu memery is enough.", "host_ram"),
        ("python train.py got Killed, the VRAM is fine.", "host_ram"),
        # a shortage keeps the device's veto
        ("the process was killed, the gpu memory is not enough.", "batch_or_activations"),
    ],
)
def test_gpu_memory_said_enough_does_not_veto_a_kill(text: str, cause: str) -> None:
    assert diagnose_text(text).cause == cause


def test_retired_sdfstudio_kill_reads_host_ram() -> None:
    r = _record("heldout47", "h47-sdfstudio-99")
    assert diagnose_text(str(r["text"])).cause == "host_ram"
