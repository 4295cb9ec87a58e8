"""Parsers on real OOM texts (tests/fixtures/oom_logs, see PROVENANCE.md): exact numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.sizes import to_bytes
from oomkit.units import GiB, KiB, MiB

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"


def _log(name: str) -> str:
    return (LOGS / f"{name}.txt").read_text(encoding="utf-8")


def _g(x: str) -> int:
    v = to_bytes(x, "GiB", "pytorch")
    assert v is not None
    return v


def _m(x: str) -> int:
    v = to_bytes(x, "MiB", "pytorch")
    assert v is not None
    return v


# (fixture, runtime, format, expected event fields) - one case per message family/era
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # current torch format, own process hidden behind a host PID (container caveat)
    (
        "oom-torch-llava-next-2",
        "pytorch",
        "pytorch_new",
        {
            "requested_bytes": 224 * MiB,
            "total_bytes": _g("14.75"),
            "free_bytes": _m("7.06"),
            "process_in_use_bytes": _g("14.74"),
            "allocated_bytes": _g("14.04"),
            "reserved_unallocated_bytes": _m("580.33"),
            "self_pid": 130036,
            "other_processes": (),
            "device": 0,
        },
    ),
    # [rank0]: prefix, "this process" line
    (
        "oom-torch-llamacookbook-898-torchtune",
        "pytorch",
        "pytorch_new",
        {
            "requested_bytes": 424 * MiB,
            "total_bytes": _g("21.96"),
            "free_bytes": _m("163.12"),
            "process_in_use_bytes": _g("21.80"),
            "allocated_bytes": _g("20.30"),
            "reserved_unallocated_bytes": _g("1.15"),
        },
    ),
    # 2.1 "total capacty" typo
    (
        "oom-torch-lerf-73",
        "pytorch",
        "pytorch_2.1",
        {
            "requested_bytes": 3 * GiB,
            "total_bytes": _g("23.65"),
            "free_bytes": _g("1.66"),
            "process_in_use_bytes": _g("20.81"),
            "allocated_bytes": _g("12.09"),
            "reserved_unallocated_bytes": _g("4.84"),
        },
    ),
    (
        "oom-torch-neurolens-2",
        "pytorch",
        "pytorch_2.1",
        {
            "requested_bytes": _g("55.57"),
            "total_bytes": 12 * GiB,
            "free_bytes": _g("9.02"),
            "allocated_bytes": _m("984.52"),
            "reserved_unallocated_bytes": _m("463.48"),
            "process_in_use_bytes": None,
        },
    ),
    # HIP, no NVML process lines; device 7
    (
        "oom-hip-pytorch-175431-mostly-free",
        "pytorch",
        "pytorch_new_hip",
        {
            "requested_bytes": 2 * MiB,
            "device": 7,
            "total_bytes": _g("287.98"),
            "free_bytes": _g("203.49"),
            "allocated_bytes": _g("68.63"),
            "reserved_unallocated_bytes": _g("14.93"),
        },
    ),
    # legacy (<= 2.0)
    (
        "oom-torch-llama-82-7b-11gb",
        "pytorch",
        "pytorch_old",
        {
            "requested_bytes": 86 * MiB,
            "total_bytes": _g("10.92"),
            "allocated_bytes": _g("10.27"),
            "free_bytes": _m("37.06"),
            "reserved_bytes": _g("10.27"),
            "reserved_unallocated_bytes": None,
        },
    ),
    # legacy, "0 bytes free"
    (
        "oom-torch-ipassr-9-windows-shared",
        "pytorch",
        "pytorch_old",
        {
            "requested_bytes": _g("10.73"),
            "total_bytes": 8 * GiB,
            "free_bytes": 0,
            "allocated_bytes": _g("17.20"),
            "reserved_bytes": _g("19.15"),
        },
    ),
    # MPS: GB labels are binary
    (
        "oom-mps-pinokio-941",
        "pytorch",
        "mps",
        {
            "requested_bytes": 256,
            "allocated_bytes": 16 * GiB,
            "other_allocations_bytes": _g("3.31"),
            "allowed_bytes": _g("18.13"),
        },
    ),
    (
        "oom-mps-comfyui-7440",
        "pytorch",
        "mps",
        {
            "requested_bytes": _m("292.50"),
            "allocated_bytes": _g("9.57"),
            "other_allocations_bytes": _g("17.35"),
            "allowed_bytes": _g("27.20"),
        },
    ),
    ("oom-cublas-fastreid-624", "pytorch", "cublas_alloc_failed", {"line": 3}),
    ("oom-cudaerr-wan2gp-731-model-switch", "pytorch", "cuda_error_out_of_memory", {}),
    (
        "constructed-torch-mallocasync",
        "pytorch",
        "pytorch_cudamallocasync",
        {
            "requested_bytes": _g("1.50"),
            "allocated_bytes": _g("21.53"),
            "total_bytes": _g("23.64"),
            "free_bytes": _m("19.12"),
            "device": 0,
        },
    ),
    (
        "constructed-torch-xpu",
        "pytorch",
        "pytorch_new_xpu",
        {"requested_bytes": 2 * GiB, "allocated_bytes": _g("12.50")},
    ),
    (
        "constructed-torch-cpu-windows",
        "pytorch",
        "c10_cpu_allocator",
        {"requested_bytes": 6383992832},
    ),
    # wrapped over three [rank0]: lines, with another process
    (
        "constructed-torch-new-others-wrapped",
        "pytorch",
        "pytorch_new",
        {
            "requested_bytes": _g("1.16"),
            "process_in_use_bytes": _g("16.63"),
            "reserved_unallocated_bytes": 1 * GiB,
            "allocated_bytes": _g("15.03"),
        },
    ),
    # llama.cpp: cudaMalloc MiB + caller raw bytes merged into one event
    (
        "oom-lcpp-20431-weights-145gb",
        "llama.cpp",
        "llama.cpp_cudaMalloc",
        {
            "requested_bytes": _m("144817.04"),
            "device": 0,
            "buffer_name": "CUDA0",
            "stage": "weights",
        },
    ),
    (
        "oom-llamacpppython-ollama6860-small-gpu",
        "llama.cpp",
        "llama.cpp_cudaMalloc",
        {"requested_bytes": 144 * MiB, "device": 4, "buffer_name": "CUDA4", "stage": "compute"},
    ),
    ("oom-metal-lcpp-6114-command-r-ctx", "llama.cpp", "metal_command_buffer", {}),
    (
        "constructed-llamacpp-kv-fail",
        "llama.cpp",
        "llama.cpp_cudaMalloc",
        {"requested_bytes": 16384 * MiB, "stage": "kv_cache"},
    ),
    # Ollama
    (
        "oom-ollama-continue-11715-phi3mini",
        "ollama",
        "ollama_system_memory",
        {"requested_bytes": 5 * GiB, "free_bytes": _g("3.9")},
    ),
    (
        "oom-ollama-10920-deepseek-v25-arm",
        "ollama",
        "ollama_system_memory",
        {"requested_bytes": _g("164.8"), "free_bytes": _g("13.4")},
    ),
    (
        "constructed-ollama-new-engine",
        "ollama",
        "ollama_runner_terminated",
        {"detail": "cudaMalloc failed: out of memory"},
    ),
    # vLLM / SGLang / TGI
    (
        "oom-vllm-13061-maxseqlen-131072",
        "vllm",
        "vllm_kv_capacity",
        {"max_model_len": 131072, "kv_capacity_tokens": 81536},
    ),
    ("oom-vllm-rlswarm-118-4060ti", "vllm", "vllm_no_cache_blocks", {}),
    (
        "constructed-vllm-v1-kv",
        "vllm",
        "vllm_v1_kv_capacity",
        {
            "max_model_len": 131072,
            "needed_kv_bytes": 16 * GiB,
            "available_kv_bytes": _g("9.57"),
            "estimated_max_model_len": 78336,
        },
    ),
    (
        "constructed-vllm-startup",
        "vllm",
        "vllm_startup_free_memory",
        {
            "free_bytes": _g("10.21"),
            "total_bytes": _g("23.53"),
            "requested_bytes": _g("21.18"),
            "gpu_memory_utilization": 0.9,
        },
    ),
    (
        "measured-vllm-13882-qwen25-7b-rtx4060-8gb",
        "vllm",
        "vllm_profile_negative_kv",
        {"available_kv_bytes": -_g("1.05")},
    ),
    (
        "oom-sglang-4330-mem-fraction-trap",
        "sglang",
        "sglang_not_enough_memory",
        {"mem_fraction_static": None},
    ),
    (
        "constructed-sglang-current",
        "sglang",
        "sglang_not_enough_memory",
        {"mem_fraction_static": 0.84},
    ),
    ("oom-tgi-1067-awq-prefill", "tgi", "tgi_warmup_prefill", {"prefill_tokens": 4096}),
    # JAX / TF
    (
        "oom-jax-afprofile-12-111gb",
        "jax",
        "xla_resource_exhausted",
        {"requested_bytes": 111289565184},
    ),
    ("constructed-xla-human", "jax", "xla_resource_exhausted", {"requested_bytes": 16 * GiB}),
    ("oom-tf-segan-42", "tensorflow", "tf_oom_allocating_tensor", {"shape": (100, 4096, 32)}),
    (
        "oom-tf-azure-880",
        "tensorflow",
        "tf_oom_allocating_tensor",
        {"shape": (16, 112, 112, 147), "dtype": "float", "device": 0},
    ),
    # Linux
    (
        "oomkill-tranx-41",
        "linux",
        "linux_oom_killer",
        {
            "pid": 25315,
            "anon_rss_bytes": 31451456 * KiB,
            "total_vm_bytes": 53312244 * KiB,
            "shmem_rss_bytes": 12296 * KiB,
            "cgroup": False,
        },
    ),
    ("oomkill-dbgpt-63-wsl", "linux", "linux_killed", {}),
]


@pytest.mark.parametrize(("name", "runtime", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_parses_real_messages_exactly(
    name: str, runtime: str, fmt: str, expected: dict[str, Any]
) -> None:
    log = parse_log(_log(name))
    matching = [e for e in log.events if e.runtime == runtime and e.format == fmt]
    assert matching, [(e.runtime, e.format) for e in log.events]
    ev = matching[0]
    for key, value in expected.items():
        assert getattr(ev, key) == value, key


def test_llamacpp_context_from_load_log() -> None:
    # 15-GPU DeepSeek log: buffers per device, settings, KV type, then the compute OOM on CUDA0
    log = parse_log(_log("measured-iklcpp-p235-deepseek-r1-q2k-15x3090-32k-oom"))
    ctx = log.context
    assert ctx.n_ctx == 32768
    assert ctx.n_ubatch == 512
    assert ctx.flash_attn is False
    assert ctx.layers_offloaded == 62
    assert ctx.layers_total == 62
    assert ctx.quant == "Q2_K - Medium"
    assert ctx.model_name == "DeepSeek R1"
    assert ctx.kv_self_bytes == 2196 * MiB
    assert ctx.device_buffers("model")["CUDA14"] == _m("20681.56")
    assert ctx.device_buffers("KV")["CUDA0"] == 252 * MiB
    assert len(ctx.device_buffers("KV")) == 15
    assert log.events[0].requested_bytes == _m("8900.01")


def test_llamacpp_buffer_names_with_spaces_and_old_prefix() -> None:
    # 2024 llm_load_tensors lines without "model"; Vulkan device names with spaces
    ctx = parse_log(_log("measured-iklcpp-i503-qwen3-32b-q4km-7900xtx-vulkan")).context
    name = "AMD Radeon RX 7900 XTX (RADV NAVI31)"
    assert ctx.device_buffers("model")[name] == _m("18671.19")
    assert ctx.device_buffers("KV")[name] == 2244 * MiB
    assert ctx.device_buffers("compute")[name] == _m("306.75")
    assert ctx.device_buffers("output")["Vulkan_Host"] == _m("0.58")
    assert (ctx.type_k, ctx.type_v, ctx.n_ctx) == ("q8_0", "q8_0", 16896)


def test_llamacpp_flags_from_user_text() -> None:
    # "-c 24000" quoted by the user is the only statement of the context size
    assert parse_log(_log("oom-metal-lcpp-6114-command-r-ctx")).context.n_ctx == 24000


def test_ollama_offload_line() -> None:
    ctx = parse_log(_log("measured-ollama-6348-mistral7b-2.2gib-partial")).context
    assert ctx.ollama_required_full_bytes == _g("4.8")
    assert ctx.ollama_required_kv_bytes == 256 * MiB
    assert ctx.ollama_available_bytes == (_g("2.2"),)
    assert (ctx.ollama_layers_model, ctx.ollama_layers_offload) == (33, 12)
    assert ctx.n_ctx == 2048  # from the quoted llama server command line
    assert ctx.n_gpu_layers == 12


def test_vllm_profiling_lines() -> None:
    ctx = parse_log(_log("measured-vllm-10517-llama31-8b-3090-29k")).context
    assert ctx.total_gpu_memory_bytes == _g("23.58")
    assert ctx.gpu_memory_utilization == 0.9
    assert ctx.kv_cache_bytes == _g("2.89")
    assert ctx.num_gpu_blocks == 1478
    assert ctx.weights_bytes == to_bytes("14.9888", "GiB", "vllm")  # vLLM's "GB" is GiB
    v1 = parse_log(_log("measured-vllm-21348-qwen3-235b-a22b-fp8-tp4-h100")).context
    assert v1.kv_cache_bytes == _g("8.11")
    assert v1.kv_cache_tokens == 178880


def test_tf_bfc_warning_is_not_an_oom() -> None:
    # since docrec23 the warning alone is one memory-pressure report, never a failed allocation
    events = parse_log(_log("constructed-tf-bfc-warning")).events
    assert [(e.kind, e.format) for e in events] == [("memory_report", "tf_bfc_retry_warning")]


def test_linux_old_kernel_lines() -> None:
    events = parse_log(_log("constructed-linux-old-kernel")).events
    killed = [e for e in events if e.anon_rss_bytes is not None]
    assert killed[0].pid == 4242
    assert killed[0].anon_rss_bytes == 30123456 * KiB


def test_every_fixture_is_recognised() -> None:
    for path in sorted(LOGS.glob("oom-*.txt")) + sorted(LOGS.glob("oomkill-*.txt")):
        assert parse_log(path.read_text(encoding="utf-8")).events, path.name


def test_clean_text_yields_nothing() -> None:
    log = parse_log("INFO training step 10 loss 1.23\nall good, memory is fine\n")
    assert log.events == ()


_NEW_MSG = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req}. GPU 0 has a total "
    "capacity of 23.65 GiB of which 1.00 GiB is free. Including non-PyTorch memory, this "
    "process has 22.00 GiB memory in use. Of the allocated memory 20.00 GiB is allocated by "
    "PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated."
)
_ASYNC_MSG = (
    "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. "
    "(out of memory)\nCurrently allocated     : 22.50 GiB\nRequested               : 2.00 GiB\n"
    "Device limit            : 23.65 GiB\nFree (according to CUDA): 512.00 MiB\n"
    "PyTorch limit (set by user-supplied memory fraction)\n                        : {limit}\n"
)


def test_negative_request_is_not_a_size() -> None:
    """PyTorch's format_size takes a size_t: "-1.00 GiB" is a corrupted message, not a size."""
    (ev,) = parse_log(_NEW_MSG.format(req="-1.00 GiB")).events
    assert ev.requested_bytes is None
    assert ev.total_bytes == _g("23.65")
    (ok,) = parse_log(_NEW_MSG.format(req="2.00 GiB")).events
    assert ok.requested_bytes == 2 * GiB


def test_zero_total_capacity_is_no_device() -> None:
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 0 bytes total "
        "capacity; 20.00 GiB already allocated; 0 bytes free; 21.00 GiB reserved in total by "
        "PyTorch)"
    )
    (ev,) = parse_log(text).events
    assert ev.total_bytes is None
    assert ev.free_bytes == 0  # a full card is real: only the capacity is impossible
    assert ev.requested_bytes == 2 * GiB


def test_mallocasync_no_limit_marker_is_not_a_cap() -> None:
    """17179869184.00 GiB is format_size(UINT64_MAX): PyTorch's "no fraction set"."""
    (ev,) = parse_log(_ASYNC_MSG.format(limit="17179869184.00 GiB")).events
    assert ev.format == "pytorch_cudamallocasync"
    assert ev.allowed_bytes is None
    assert ev.total_bytes == _g("23.65")
    (capped,) = parse_log(_ASYNC_MSG.format(limit="12.00 GiB")).events
    assert capped.allowed_bytes == 12 * GiB  # a real set_per_process_memory_fraction cap stays


def test_doctor_does_not_reason_about_impossible_sizes() -> None:
    from oomkit.diagnose.doctor import diagnose_text

    neg = diagnose_text(_NEW_MSG.format(req="-1.00 GiB"))
    assert "states -1.00 GiB requested: no allocator prints such a size" in neg.explanation
    assert "more than the -1.00 GiB" not in neg.explanation
    assert all("-1.00 GiB" not in f.why for f in neg.fixes)
    assert neg.events[0].to_dict()["ignored_sizes"] == "-1.00 GiB requested"
    zero = diagnose_text(_NEW_MSG.format(req="2.00 GiB").replace("23.65 GiB", "0 bytes"))
    assert "states 0 bytes total capacity" in zero.explanation
    assert "0 bytes card" not in zero.explanation
    assert "larger than the whole GPU" not in zero.explanation
    ok = diagnose_text(_NEW_MSG.format(req="2.00 GiB"))
    assert "ignored_sizes" not in ok.events[0].to_dict()  # only present when something was
    nolimit = diagnose_text(_ASYNC_MSG.format(limit="17179869184.00 GiB"))
    assert "17179869184" not in nolimit.explanation
    assert "per-process cap" not in nolimit.explanation
