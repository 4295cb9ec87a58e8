"""A paste as the runtime printed it (diagnose/normalize.py), and the doctor on distorted pastes."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize import normalize_line, normalize_text

TORCH = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.64 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 22.57 GiB memory in use. Of the allocated memory 21.10 GiB is allocated by PyTorch, and "
    "1.05 GiB is reserved by PyTorch but unallocated."
)


def _bench() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "doctor_metamorphic.py"
    spec = importlib.util.spec_from_file_location("doctor_metamorphic", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["doctor_metamorphic"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("\x1b[1;31mCUDA out of memory\x1b[0m", "CUDA out of memory"),
        ("CUDA\u00a0out\u202fof memory", "CUDA out of memory"),
        ("> > CUDA out of memory", "CUDA out of memory"),
        ("2024-05-01 12:00:00,123 ERROR [worker-1] CUDA out of memory", "CUDA out of memory"),
        ("[2024-05-01T12:00:00Z] | ERROR | CUDA out of memory", "CUDA out of memory"),
        ("\ufeffCUDA out of memory", "CUDA out of memory"),
    ],
)
def test_line_distortions_are_undone(line: str, expected: str) -> None:
    assert normalize_line(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "llama_kv_cache_init: CUDA0 KV buffer size = 16384.00 MiB",
        "time=2024-06-01T10:00:00.000Z level=INFO source=server.go:100 msg=x",
        "INFO 02-26 09:54:05 worker.py:267] memory profiling",
        "2x + 3 > 4 is not a quote",
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory.",
    ],
)
def test_clean_lines_are_untouched(line: str) -> None:
    assert normalize_line(line) == line


def test_whole_text_distortions_are_undone() -> None:
    assert normalize_text(json.dumps({"error": TORCH + "\nnext"})) == TORCH + "\nnext"
    assert normalize_text(repr([TORCH + "\nnext"])) == TORCH + "\nnext"
    assert normalize_text(repr(("Killed",))) == "Killed"
    logged = json.dumps({"time": "t", "level": "error", "msg": TORCH})
    assert normalize_text("start\n" + logged) == "start\n" + TORCH
    assert normalize_text("a &gt; b &amp; c") == "a > b & c"


def test_clean_text_and_windows_paths_are_untouched() -> None:
    for text in (TORCH, "C:\\new\\x plain", 'File "C:\\Users\\n\\train.py", line 3', "a & b"):
        assert normalize_text(text) == text


def test_idempotent() -> None:
    for text in (json.dumps({"e": TORCH}), "\x1b[31m" + TORCH, "> " + TORCH):
        once = normalize_text(text)
        assert normalize_text(once) == once


def test_linear_on_hostile_input() -> None:
    junk = (
        "\x1b[" * 50_000
        + "> " * 50_000
        + "&#" * 50_000
        + '{"' * 50_000
        + "\\n" * 50_000
        + "['" * 50_000
        + "2024-05-01 12:00:00 " * 5_000
    )
    start = time.process_time()
    normalize_text(junk)
    for line in junk.split("\n"):
        normalize_line(line)
    diagnose_text(junk)
    assert time.process_time() - start < 5.0


@functools.cache
def _sample() -> tuple[ModuleType, list[dict[str, object]], dict[str, tuple[str, str]]]:
    """Every 8th development record and its undistorted reading, once for all distortions."""
    mod = _bench()
    sample = mod.records()[::8]
    return mod, sample, mod.baseline(sample)


@pytest.mark.parametrize("name", sorted(_bench().REQUIRED))
def test_distorted_corpus_pastes_read_the_same(name: str) -> None:
    # every 8th development record: the distortion neither loses it nor changes its cause
    mod, sample, base = _sample()
    assert len(sample) > 150
    bad = mod.compare(sample, {name: mod.REQUIRED[name]}, base)[name]
    assert bad == []


def test_a_long_log_that_lost_its_line_breaks_is_broken_again() -> None:
    log = (
        "llama_model_loader: loaded meta data with 30 key-value pairs and 292 tensors "
        "llm_load_tensors: offloading 32 repeating layers to GPU "
        "llm_load_tensors: CUDA0 buffer size = 4403.50 MiB "
        "llama_new_context_with_model: n_ctx = 131072 "
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: "
        "cudaMalloc failed: out of memory "
        "llama_kv_cache_init: failed to allocate buffer for kv cache"
    )
    assert normalize_text(log).count("\n") == 5
    short = "RuntimeError: CUDA out of memory. llama_kv_cache_init: x"
    assert normalize_text(short) == short  # too short to be a collapsed log


def test_nested_escapes_are_undone_level_by_level_and_entities_once() -> None:
    body = json.dumps(
        {"error": "cudaMalloc failed: out of memory\nllama_new_context: failed\nexit status 2"}
    )
    message = "ValueError: call failed. Details: " + body
    once = normalize_text(message)
    assert "out of memory\nllama_new_context" in once
    assert normalize_text(repr([message])) == once  # the repr level, then the JSON level
    # an escaped entity is text the page meant to show: one level only
    assert normalize_text("a &amp;lt; b") == "a &lt; b"
    assert diagnose_text("CUDA out of memory &amp;lt;").events[0].text.endswith("&lt;")


def test_one_line_repr_list_undoes_its_quote_escapes() -> None:
    """``repr([line])`` escapes the apostrophe and backslashes of a one-line message: a stated
    leak ("doesn't release the memory") must read the same inside the repr (heldout21's
    mmsegmentation-477 turned from a leak into host RAM under the metamorphic repr_list)."""
    from oomkit.diagnose.doctor import diagnose_text
    from oomkit.diagnose.normalize import normalize_text

    line = (
        "it seems that the validation process doesn't release the memory it consumes, and "
        'eventually the program crashes due to "OSError: [Errno 12] Cannot allocate memory"'
    )
    assert normalize_text(repr([line])) == line
    assert normalize_text(repr([r"C:\Users\x failed"])) == r"C:\Users\x failed"
    plain = diagnose_text(line).to_dict()["cause"]
    assert diagnose_text(repr([line])).to_dict()["cause"] == plain


@pytest.mark.parametrize(
    ("head", "tail"),
    [
        ("2024-05-01 12:00:00,123 ERROR [worker-1] ", ""),
        ("> ", ""),
        ("[rank0]: ", ""),
        ("\t", ""),
        ("**", "**"),
        ("`", "`"),
    ],
)
def test_word_wrap_is_undone_inside_a_margin_every_line_shares(head: str, tail: str) -> None:
    """heldout24's DataLoader message wrapped mid-phrase ("Bus\\nerror"): a log collector's
    prefix, a quote or a Markdown wrapper on every line must not hide the wrap."""
    from oomkit.diagnose.normalize import _shared_margins, unwrap_word_wrapped

    text = (
        "RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus\n"
        "error. It is possible that dataloader's workers are out of shared\n"
        "memory. Please try to raise your shared memory limit."
    )
    pasted = "\n".join(head + line + tail for line in text.split("\n"))
    assert _shared_margins(pasted.split("\n")) == (head, tail)
    unwrapped = unwrap_word_wrapped(pasted)
    assert unwrapped is not None
    assert "killed by signal: Bus error. It is possible" in unwrapped
    assert unwrapped.startswith(head)


def test_shared_margins_keep_words_and_colour_codes_whole() -> None:
    from oomkit.diagnose.normalize import _shared_margins

    # lines that start with the same letters share no margin: the word stays
    assert _shared_margins(["abcdef one", "abcxyz two"]) == ("", "")
    assert _shared_margins(["out of memory", "out of time"]) == ("out of ", "")
    # an ANSI colour prefix is left to normalize_line, never cut in half
    assert _shared_margins(["\x1b[31mone\x1b[0m", "\x1b[1;31mtwo\x1b[0m"]) == ("", "")
    assert _shared_margins(["only one line"]) == ("", "")


# A llama.cpp log squashed onto one line (h42-amd-strix-halo-toolboxes-65: a GitHub issue's
# paste): the KV-cache failure printed after the allocation failure names the stage. The
# re-broken lines must not depend on what surrounds the squashed line: a trailing newline (a
# file or stdin), non-breaking spaces, or a JSON log line's level beside the message.
_SQUASHED = (
    "Loading model... \\ggml_backend_cuda_buffer_type_alloc_buffer: allocating 3048.00 MiB on "
    "device 0: cudaMalloc failed: out of memory alloc_tensor_range: failed to allocate ROCm0 "
    "buffer of size 3196059648 llama_init_from_model: failed to initialize the context: failed "
    "to allocate buffer for kv cache common_init_result: failed to create context with model "
    "'models/qwen3-coder-30B-A3B/BF16/Qwen3-Coder-30B-A3B-Instruct-BF16-00001-of-00002.gguf'"
)


@pytest.mark.parametrize(
    "paste",
    [
        _SQUASHED,
        _SQUASHED + "\n",
        "\n\n" + _SQUASHED + "\n",
        _SQUASHED.replace(" ", "\u00a0"),
        json.dumps({"level": "error", "msg": _SQUASHED}),
    ],
    ids=["bare", "trailing-newline", "blank-lines", "nbsp", "json-line"],
)
def test_a_squashed_llamacpp_line_is_re_broken_whatever_surrounds_it(paste: str) -> None:
    assert diagnose_text(paste).cause == "kv_cache_or_context"
