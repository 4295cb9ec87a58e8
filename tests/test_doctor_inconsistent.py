"""Messages whose own numbers contradict each other are refused, not diagnosed.

Each message below is a real wording with one number edited into an impossible value; the
unedited twin (a real message of the same family) must still be diagnosed, so the check is on
the contradiction and not on the wording.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from oomkit.diagnose.doctor import diagnose_text

_NEW = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.65 GiB of which {free} is free. Of the allocated memory 20.10 GiB is "
    "allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated."
)
_OLD = (
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total "
    "capacity; 3.00 GiB already allocated; {free} free; 4.00 GiB reserved in total by PyTorch)"
)
_ASYNC = (
    "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
    "Currently allocated     : 20.00 GiB\nRequested               : 2.00 GiB\n"
    "Device limit            : 23.65 GiB\nFree (according to CUDA): {free}\n"
    "PyTorch limit (set by user-supplied memory fraction): 17179869184.00 GiB"
)
_VULKAN = (
    "ggml_vulkan: Device memory allocation of size {n} failed.\n"
    "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"
)
_BUFFER = "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size {n}"
_TRITON = (
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: {req}, "
    "Hardware limit: 101376. Reducing block sizes or `num_stages` may help."
)

_V0_KV = (
    "ValueError: The model's max seq len ({mml}) is larger than the maximum number of tokens "
    "that can be stored in KV cache (5000). Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine."
)
_V1_KV = (
    "ValueError: To serve at least one request with the models's max seq len (131072), "
    "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
    "({avail} GiB). Based on the available memory, the estimated maximum model length is {est}."
)
_OLLAMA = "Error: model requires more system memory ({req} GiB) than is available (9.9 GiB)"
_OLLAMA_LARGE = (
    'Error: model request too large for system" requested="{req} GiB" available="9.0 GiB"'
)

# (impossible message, what the refusal must name, the same message with a possible value)
CASES = [
    (_V0_KV.format(mml=1000), "max seq len 1000 is not larger", _V0_KV.format(mml=32768)),
    (
        _V1_KV.format(avail="20.00", est=163840),
        "16.00 GiB of KV cache needed is less than the 20.00 GiB",
        _V1_KV.format(avail="10.00", est=81920),
    ),
    (_OLLAMA.format(req="5.0"), "5.0 GiB required is less", _OLLAMA.format(req="15.0")),
    (
        _OLLAMA_LARGE.format(req="5.0"),
        "5.0 GiB required is less",
        _OLLAMA_LARGE.format(req="12.0"),
    ),
    (_NEW.format(free="40.00 GiB"), "40.00 GiB free of a 23.65 GiB", _NEW.format(free="1.00 GiB")),
    (_OLD.format(free="30.00 GiB"), "30.00 GiB free of a 23.65 GiB", _OLD.format(free="1.00 GiB")),
    (
        _ASYNC.format(free="99.00 GiB"),
        "99.00 GiB free of a 23.65 GiB",
        _ASYNC.format(free="1.00 GiB"),
    ),
    (_VULKAN.format(n=0), "allocation of 0 bytes", _VULKAN.format(n=1610612736)),
    (_BUFFER.format(n=0), "allocation of 0 bytes", _BUFFER.format(n=292926534144)),
    (_TRITON.format(req=1000), "required 1000 is within", _TRITON.format(req=212992)),
]


@pytest.mark.parametrize(("bad", "named", "good"), CASES)
def test_contradiction_is_named_not_diagnosed(bad: str, named: str, good: str) -> None:
    d = diagnose_text(bad)
    assert d.oom_found
    assert d.cause == "unknown"
    assert d.confidence == 0.0
    assert "inconsistent" in d.explanation
    assert named in d.explanation
    assert d.fixes == ()
    ok = diagnose_text(good)
    assert ok.primary is not None
    assert ok.primary.inconsistent is None
    assert "inconsistent" not in ok.explanation


def test_rounding_of_two_units_is_not_a_contradiction() -> None:
    # a nearly idle card: free printed in MiB, total in GiB, both rounded
    text = _NEW.replace("23.65 GiB of which {free}", "1.00 GiB of which 1023.99 MiB").format()
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.inconsistent is None


def test_allocated_above_total_is_real_not_refused() -> None:
    """Windows' sysmem fallback lets PyTorch hold more than the card (real corpus records such as
    oom-torch-ipassr-9-windows-shared): that is diagnosed, not refused."""
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 10.73 GiB (GPU 0; 8.00 GiB total "
        "capacity; 17.20 GiB already allocated; 0 bytes free; 19.15 GiB reserved in total by "
        "PyTorch)"
    )
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.inconsistent is None
    assert d.cause != "unknown"
    assert d.fixes


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_exits_1_and_json_names_the_contradiction() -> None:
    res = _doctor("--json", _NEW.format(free="40.00 GiB"))
    assert res.stderr.startswith("Error: the message's numbers are inconsistent: 40.00 GiB free")
    assert len(res.stderr.strip().splitlines()) == 1
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    doc = json.loads(res.stdout)
    assert doc["cause"] == "unknown"
    assert doc["fixes"] == []
    assert "free memory cannot exceed" in doc["events"][0]["inconsistent"]
    assert _doctor(_NEW.format(free="1.00 GiB")).returncode == 0


# --- zero values are worded, not printed as "0 bytes already held" ------------------------------


def test_nothing_cached_is_worded_as_nothing() -> None:
    # the README's example (a real report): reserved == allocated
    d = diagnose_text(
        "RuntimeError: CUDA out of memory. Tried to allocate 86.00 MiB (GPU 0; 10.92 GiB total "
        "capacity; 10.27 GiB already allocated; 37.06 MiB free; 10.27 GiB reserved in total by "
        "PyTorch)"
    )
    assert "(nothing cached)" in d.explanation
    assert "no cached-but-free memory" in d.explanation
    assert "0 bytes" not in d.explanation


def test_pytorch_holding_nothing_is_said_once() -> None:
    d = diagnose_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 23.65 GiB of which 0 bytes is free. Of the allocated memory 0 bytes "
        "is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated."
    )
    assert "PyTorch holds no memory on this device" in d.explanation
    assert "0 bytes allocated" not in d.explanation
    assert d.cause == "other_process_holding_memory"


def test_framework_holding_nothing_is_not_said_to_fill_the_device() -> None:
    d = diagnose_text(
        "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,024 bytes "
        "(allocated so far: 0 bytes)."
    )
    assert "holds nothing yet" in d.explanation
    assert "already holds 0 bytes" not in d.explanation
    assert "holds most of the device" not in d.explanation


# --- what the user states with the log is checked like any other command's options ------------

_LLAMA_LOG = "llama_model_load: error loading model: unable to allocate CUDA0 buffer"


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("--ctx", "0"), 2, "--ctx must be at least 1, got 0"),
        (("--vram", "0GiB"), 2, "--vram 0: a GPU or host with no memory"),
        (("-m", "llama-3.1-8b", "-q", "Q9"), 1, "Unknown llama.cpp file type 'Q9'"),
        (("-r", "vllm", "-q", "Q4_K_M"), 1, "Unknown HF weight format 'Q4_K_M'"),
        (("-q", "zz"), 1, "Unknown HF weight format 'zz'"),
    ],
)
def test_doctor_refuses_impossible_user_facts(
    args: tuple[str, ...], code: int, needle: str
) -> None:
    res = _doctor(_LLAMA_LOG, *args)
    assert res.returncode == code, res.stderr
    assert res.stdout == ""
    assert res.stderr.startswith("Error: ")
    assert needle in res.stderr


_TF_LOG = (
    "ResourceExhaustedError: OOM when allocating tensor with shape[64,512,512] and type float "
    "on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"
)


@pytest.mark.parametrize("quant", ["Q4_K_M", "awq", "fp8", "UD-Q4_K_XL", "MXFP4_MOE"])
def test_doctor_accepts_every_kind_of_quant_without_a_runtime(quant: str) -> None:
    # a log whose runtime oomkit does not estimate (TensorFlow): either kind of name
    assert _doctor(_TF_LOG, "-q", quant).returncode == 0


@pytest.mark.parametrize(("quant", "code"), [("Q4_K_M", 0), ("UD-Q4_K_XL", 0), ("awq", 1)])
def test_doctor_checks_the_quant_against_the_logs_runtime(quant: str, code: int) -> None:
    # a llama.cpp log: a checkpoint format is not a GGUF type (it was accepted and every
    # estimator fix failed with "fix provider 'training_or_inference' failed")
    res = _doctor(_LLAMA_LOG, "-q", quant)
    assert res.returncode == code, res.stderr
    if code:
        assert "the log is a llama.cpp run" in res.stderr
        assert "fix provider" not in res.stderr


def test_a_message_cut_before_what_holds_the_device_does_not_say_zero_is_held() -> None:
    """Real paste (tc-trl-2776): cut after "Including non-PyTorch memory,"."""
    d = diagnose_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 130.00 MiB. GPU 0 has a "
        "total capacity of 94.99 GiB of which 87.19 MiB is free. Including non-PyTorch memory,"
    )
    assert "0 bytes is already held" not in d.explanation
    assert "94.90 GiB of the card is in use (the message is cut" in d.explanation


def test_free_above_the_request_is_not_short_by_zero() -> None:
    """Real report (tc-pytorch-59778): 3.03 GiB free and a 2.26 GiB request failed."""
    d = diagnose_text(
        "CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; "
        "781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch)"
    )
    assert "short by 0 bytes" not in d.explanation
    assert "3.03 GiB is free, not less than the 2.26 GiB request, yet it failed" in d.explanation


def test_an_over_full_device_is_over_not_negative_left() -> None:
    """A sized fix that still does not fit said "(-2.69 GiB left on cuda:0; still short ...)"."""
    from pathlib import Path

    log = Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-llamacpp-kv-fail.txt"
    res = _doctor(str(log), "-m", "llama-3.1-8b", "--gpu", "rtx-4060-ti-8gb")
    assert res.returncode == 0, res.stderr
    assert "GiB left on cuda:0" in res.stdout or "MiB left on cuda:0" in res.stdout
    assert " over on cuda:0; still short on cuda:0" in res.stdout
    assert "(-" not in res.stdout


def test_vllm_budget_overrun_is_said_as_over_not_negative_kv() -> None:
    """Real log (vllm#13882): vLLM itself prints "KV Cache is -1.05GiB"; the doctor said
    "leaving -1.05 GiB for the KV cache"."""
    from pathlib import Path

    log = Path(__file__).parent / "fixtures" / "oom_logs"
    d = diagnose_text((log / "measured-vllm-13882-qwen25-7b-rtx4060-8gb.txt").read_text())
    assert "leaving -" not in d.explanation
    assert "1.05 GiB over the budget before any KV cache" in d.explanation
