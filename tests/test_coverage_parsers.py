"""Parser branches the main corpus tests leave out, each driven by a real message or log shape.

Sources: /work/shared/reference/oom-messages.md (§1.8 MPS, §2 llama.cpp, §3 Ollama) and the
upstream code that prints each line (cited per case). Every case says why it exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.parse_ollama import parse_ollama
from oomkit.diagnose.parse_other import tensor_bytes
from oomkit.diagnose.parse_torch import parse_torch
from oomkit.diagnose.sizes import decimal_to_bytes, to_bytes
from oomkit.diagnose.text import (
    _HEAD_CHARS,
    _MAX_WINDOWS_EACH_SIDE,
    _WINDOW_CHARS,
    FULL_SCAN_CHARS,
    MAX_LINE,
    Lines,
    split_lines,
)
from oomkit.units import GiB, MiB

# ---------------------------------------------------------------------------------------------
# llama.cpp: settings lines that only look like n_ctx
# ---------------------------------------------------------------------------------------------

# llama.cpp src/llama-context.cpp (llama_context ctor) prints n_ctx, then n_ctx_per_seq, and warns
# "n_ctx_per_seq (%u) < n_ctx_train (%u) -- the full capacity of the model will not be
# utilized"; print_info (src/llama-model.cpp) prints "n_ctx_train = %u". All three mention
# "n_ctx" but are not the context size the user asked for.
_LLAMA_CTX_LOG = """\
print_info: n_ctx_train      = 131072
llama_context: constructing llama_context
llama_context: n_seq_max     = 1
llama_context: n_ctx         = 8192
llama_context: n_ctx_per_seq = 8192
llama_context: n_batch       = 2048
llama_context: n_ubatch      = 512
llama_context: flash_attn    = 0
llama_context: n_ctx_per_seq (8192) < n_ctx_train (131072) -- the full capacity of the model \
will not be utilized
llama_kv_cache_unified:      CUDA0 KV buffer size =  1024.00 MiB
ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4256.00 MiB on device 0: cudaMalloc \
failed: out of memory
ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 4462739456
"""


def test_llamacpp_n_ctx_train_and_per_seq_do_not_override_n_ctx() -> None:
    # Why: the n_ctx_train / n_ctx_per_seq lines come AFTER "n_ctx = 8192" in a real load log.
    # If the settings regex ever accepted them, the context size would silently become 131072
    # (the training length) and every KV-cache fix would be sized 16x too large.
    log = parse_log(_LLAMA_CTX_LOG)
    ctx = log.context
    assert ctx.n_ctx == 8192
    assert ctx.n_batch == 2048
    assert ctx.n_ubatch == 512
    assert ctx.n_seq == 1
    assert ctx.flash_attn is False
    (event,) = log.events
    assert event.runtime == "llama.cpp"
    assert event.requested_bytes == 4256 * MiB
    assert event.line == 11


def test_llamacpp_n_ctx_train_alone_sets_nothing() -> None:
    # Why: a pasted model-metadata dump (print_info only, no context lines) must not invent an
    # n_ctx: the training length is not the runtime's context size.
    log = parse_log("print_info: n_ctx_train      = 32768\nprint_info: n_embd           = 4096\n")
    assert log.context.n_ctx is None
    assert log.events == ()


# ---------------------------------------------------------------------------------------------
# Ollama: "model runner has unexpectedly stopped"
# ---------------------------------------------------------------------------------------------

# ollama llm/server.go (Completion): errors.New("model runner has unexpectedly stopped, this may
# be due to resource limitations or an internal error, check ollama server logs for details");
# oom-messages.md §3 (v0.5+). Users meet it in three shapes:
_STOPPED = (
    "model runner has unexpectedly stopped, this may be due to resource limitations or an "
    "internal error, check ollama server logs for details"
)


@pytest.mark.parametrize(
    "text",
    [
        # the `ollama run` CLI prints it after "Error: "
        f"Error: {_STOPPED}",
        # the HTTP API returns it as a JSON body (OpenAI-compatible clients quote it)
        f'{{"error":"{_STOPPED}"}}',
        # an OpenAI client raises it inside its own exception text
        f"openai.InternalServerError: Error code: 500 - {{'error': {{'message': '{_STOPPED}'}}}}",
    ],
    ids=["cli", "api-json", "openai-client"],
)
def test_ollama_runner_stopped_every_shape(text: str) -> None:
    # Why: this is the only message an Ollama user sees when the runner died of an OOM mid-request
    # (oom-messages.md §3); it must become an event, not "no OOM found".
    log = parse_log("llama_model_loader: loaded meta data\n" + text + "\n")
    (event,) = log.events
    assert (event.runtime, event.kind, event.format) == (
        "ollama",
        "runner_terminated",
        "ollama_runner_stopped",
    )
    assert event.line == 2


def test_ollama_runner_stopped_hard_wrapped() -> None:
    # Why: pasted into a Markdown note or an email, the message is hard-wrapped after "resource"
    # (seen verbatim in a public project note quoting an Ollama 500). The line that carries
    # "model runner has unexpectedly stopped" alone must still be recognised.
    text = (
        "openai.InternalServerError: Error code: 500\n"
        "'model runner has unexpectedly stopped, this may be due to resource\n"
        "limitations or an internal error'\n"
    )
    events, _ = parse_ollama(split_lines(text))
    assert [(e.format, e.line) for e in events] == [("ollama_runner_stopped", 2)]


def test_ollama_stopped_without_runner_wording_is_not_an_event() -> None:
    # Why: "unexpectedly stopped" alone is common English in unrelated logs (a systemd unit, a
    # watcher); without Ollama's wording it must not be reported as an OOM.
    events, _ = parse_ollama(split_lines('level=WARN msg="file watcher unexpectedly stopped"\n'))
    assert events == []


# ---------------------------------------------------------------------------------------------
# PyTorch MPS: a message cut short
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # a paste cut in the middle of the sentence (terminal scrollback, a UI toast)
        "RuntimeError: MPS backend out of memory (MPS allocated: 18.04 GB, other allocations: "
        "25.73 MB, max allowed: 18.13 GB). Tried to allocate",
        # apps such as ComfyUI / A1111 surface only the exception's first words
        "Error occurred when executing KSampler: MPS backend out of memory",
    ],
    ids=["cut-mid-sentence", "headline-only"],
)
def test_mps_partial_message_is_still_an_mps_event(text: str) -> None:
    # Why: MPSAllocator.mm raises a plain RuntimeError (oom-messages.md §1.4, §1.8); when the
    # sizes are missing we still know it is an Apple-GPU OOM, and must not fall back to CUDA.
    events, _ = parse_torch(split_lines(text))
    (event,) = events
    assert (event.kind, event.format) == ("mps_oom", "mps_partial")
    assert event.requested_bytes is None
    assert event.allocated_bytes is None
    assert "MPS backend out of memory" in event.text


def test_mps_full_message_still_parses_exactly() -> None:
    # Why: relational partner of the partial case above: the same text, complete, must give the
    # full format with MPS's binary "GB" (format_size over 1024**3), so the partial path is
    # taken only when the message really is cut.
    text = (
        "RuntimeError: MPS backend out of memory (MPS allocated: 18.04 GB, other allocations: "
        "25.73 MB, max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool. Use "
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations "
        "(may cause system failure)."
    )
    (event,) = parse_torch(split_lines(text))[0]
    assert event.format == "mps"
    assert event.requested_bytes == 256 * MiB
    assert event.allowed_bytes == to_bytes("18.13", "GiB", "pytorch")
    assert event.detail == "private pool"


# ---------------------------------------------------------------------------------------------
# sizes: a number with no integer part
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "scale", "expected"),
    [
        # ".5" is half a unit: the whole part defaults to 0 (Python float() accepts the form too)
        (".5", GiB, GiB // 2),
        # negative bare fraction, as a signed delta ("-.25 GiB" free after over-commit)
        ("-.25", GiB, -(GiB // 4)),
        # rounding half up on a bare fraction: 0.0000005 MiB = 0.524288 bytes -> 1
        (".0000005", MiB, 1),
    ],
)
def test_decimal_to_bytes_bare_fraction(number: str, scale: int, expected: int) -> None:
    # Why: decimal_to_bytes is public; no parser regex feeds it a leading-dot number today, but
    # the helper must agree with float() on the forms float() accepts instead of returning None.
    assert decimal_to_bytes(number, scale) == expected
    assert decimal_to_bytes(number, scale) == round(float(number) * scale + 1e-9)


# ---------------------------------------------------------------------------------------------
# text: huge logs read as head + windows + tail
# ---------------------------------------------------------------------------------------------

# A training-log line with none of the window anchors (emory, lloc, ALLOC, illed, KV cache,
# status 5) in it.
_NOISE = "2024-06-01 10:00:00 INFO trainer step 1234 loss 2.3456 lr 3.0e-04 grad_norm 0.81\n"
_TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.12 GiB memory in use. Of the allocated memory 75.51 GiB is allocated by PyTorch, and "
    "1.98 GiB is reserved by PyTorch but unallocated.\n"
)


def _mem_line(step: int) -> str:
    # nanoGPT / torchtune-style periodic report: "max memory allocated" carries two anchors
    return f"step {step}: loss 2.31, max memory allocated 21.37 GiB\n"


def _assert_faithful(text: str, lines: Lines) -> None:
    """Every kept line is the original line with that number, and no line is kept twice."""
    originals = text.split("\n")
    assert all(len(o) <= MAX_LINE for o in originals)
    pairs = list(zip(lines.number, lines.text, strict=True))
    assert all(originals[n - 1] == t for n, t in pairs), next(
        (n, t[:60], originals[n - 1][:60]) for n, t in pairs if originals[n - 1] != t
    )
    assert list(lines.number) == sorted(set(lines.number))


def _noise_block(n_chars: int) -> str:
    return _NOISE * (n_chars // len(_NOISE) + 1)


def test_huge_log_dense_periodic_lines_merge_into_one_window() -> None:
    # Why: a long training run reports "max memory allocated" every few steps, then OOMs. With
    # reports closer together than two window widths, more than _MAX_WINDOWS_EACH_SIDE of them
    # sit in the skipped middle: the forward scan takes the first 16, the backward scan takes the
    # rest until it meets the forward windows, and the overlapping windows merge into one span.
    spacing = _WINDOW_CHARS + _WINDOW_CHARS // 2  # < 2 windows: neighbours overlap
    reports = _MAX_WINDOWS_EACH_SIDE + 8
    block = "".join(_mem_line(s) + _noise_block(spacing - 60) for s in range(reports))
    head = _noise_block(_HEAD_CHARS + 50_000)
    filler = _noise_block(FULL_SCAN_CHARS // 2)
    text = head + block + filler + _TORCH_OOM + filler
    assert len(text) > FULL_SCAN_CHARS

    lines = split_lines(text)
    _assert_faithful(text, lines)
    assert lines.skipped_chars > 0
    kept_reports = [t for t in lines.text if "max memory allocated" in t]
    assert kept_reports == [_mem_line(s).strip() for s in range(reports)]
    oom_line = text[: text.index(_TORCH_OOM)].count("\n") + 1
    log = parse_log(text)
    assert [(e.format, e.line) for e in log.events] == [("pytorch_new", oom_line)]
    assert log.events[0].requested_bytes == 2 * GiB


def test_huge_log_sparse_periodic_lines_keep_first_and_last_few() -> None:
    # Why: the contract of the window scan is "first and last few of each keyword". With reports
    # farther apart than two windows, the first 16 and the last 16 are kept and the ones in
    # between are skipped, so a 100 MB log costs bounded work.
    spacing = 3 * _WINDOW_CHARS
    reports = 2 * _MAX_WINDOWS_EACH_SIDE + 10
    block = "".join(_mem_line(s) + _noise_block(spacing) for s in range(reports))
    head = _noise_block(_HEAD_CHARS + 50_000)
    text = head + block + _noise_block(FULL_SCAN_CHARS) + _TORCH_OOM
    lines = split_lines(text)
    _assert_faithful(text, lines)
    kept = [int(t.split(":")[0].split()[1]) for t in lines.text if "max memory allocated" in t]
    first = list(range(_MAX_WINDOWS_EACH_SIDE))
    last = list(range(reports - _MAX_WINDOWS_EACH_SIDE, reports))
    assert kept == first + last
    assert parse_log(text).events[0].line == text.count("\n")


def test_huge_log_window_inside_a_long_line_at_the_head_edge_is_not_read_twice() -> None:
    # Why: the head is extended to the end of the line it cuts. When that line is long and
    # mentions memory just past the head's edge (an accelerate user printing max_memory and the
    # device map of a 126-layer model on one line), the keyword's window already lies inside the
    # head and must be dropped: emitting it again would duplicate the line (or add an empty one).
    device_map = ", ".join(
        [
            "'model.embed_tokens': 0",
            *(f"'model.layers.{i}': {0 if i < 40 else repr('cpu')}" for i in range(126)),
            "'model.norm': 'cpu'",
            "'lm_head': 'cpu'",
        ]
    )
    long_line = (
        "2024-06-01 10:00:00,123 - INFO - max_memory={0: '76GiB', 'cpu': '400GiB'} "
        f"device_map={{{device_map}}}\n"
    )
    assert long_line.index("max_memory") + _WINDOW_CHARS < len(long_line) < MAX_LINE
    # noise lines, then one filler line, so that the long line starts 10 characters before the
    # head's edge
    start = _HEAD_CHARS - 10
    noise = _noise_block(start)
    noise = noise[: noise.rfind("\n", 0, start - 100) + 1]
    pad = "#" * (start - len(noise) - 1) + "\n"
    text = noise + pad + long_line + _noise_block(FULL_SCAN_CHARS) + _TORCH_OOM
    assert text.index(long_line) == start

    lines = split_lines(text)
    _assert_faithful(text, lines)
    assert sum("max_memory=" in t for t in lines.text) == 1
    assert lines.skipped_chars > 0
    assert parse_log(text).events[0].line == text.count("\n")


# ---------------------------------------------------------------------------------------------
# Lines that only the hypothesis fuzz test reached (by chance): pinned with the real fixtures
# ---------------------------------------------------------------------------------------------

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"


def _fixture(name: str) -> str:
    return (LOGS / f"{name}.txt").read_text(encoding="utf-8")


def test_ollama_system_memory_line_from_real_log() -> None:
    # Why: Ollama's `msg="system memory" total=... free=...` (server.go, v0.3+; ipex-llm#13277,
    # see PROVENANCE.md) gives the host RAM a CPU-only load competes for. Without this case the
    # branch was covered only when hypothesis happened to sample this fixture.
    ctx = parse_log(_fixture("measured-ollama-ipexllm13277-qwen25coder14b-q2k-cpu")).context
    assert ctx.system_total_bytes == to_bytes("22.9", "GiB", "ollama")
    assert ctx.system_free_bytes == to_bytes("16.9", "GiB", "ollama")
    # the offload line on the next line of the same log, read by the same parser
    assert ctx.ollama_required_full_bytes == to_bytes("6.3", "GiB", "ollama")
    assert ctx.ollama_required_kv_bytes == 768 * MiB


def test_llamacpp_kv_types_from_the_kv_size_line_alone() -> None:
    # Why: llama_kv_cache_unified prints "kv_size = N, type_k = 'q8_0', type_v = 'q8_0'" before
    # the "KV self size ... K (q8_0)" line (ik_llama.cpp#357 log, see PROVENANCE.md). A log cut
    # after the first line (the allocation failed in between) must still give the cache types,
    # which decide whether "quantize the KV cache" is a fix at all.
    full = _fixture("measured-iklcpp-d357-qwen3-235b-q6k-2gpu-hybrid-16k")
    (kv_line,) = [ln for ln in full.splitlines() if "type_k = '" in ln]
    ctx = parse_log(kv_line).context
    assert (ctx.type_k, ctx.type_v) == ("q8_0", "q8_0")
    assert parse_log(full).context.type_k == "q8_0"


def test_tensorflow_oom_tensor_size_from_shape_and_dtype() -> None:
    # Why: TF's "OOM when allocating tensor with shape[16,112,112,147] and type float"
    # (Azure/MachineLearningNotebooks#880) states the failing tensor exactly; its size is
    # shape product x dtype width (float = 4 bytes), and the diagnosis quotes it.
    assert tensor_bytes((16, 112, 112, 147), "float") == 16 * 112 * 112 * 147 * 4
    d = diagnose_text(_fixture("oom-tf-azure-880"))
    assert d.cause == "batch_or_activations"
    assert "(float: 112.55 MiB)" in d.explanation


def test_tensorflow_oom_cut_before_dtype_has_no_size() -> None:
    # Why: the segan#42 paste ends right after "shape[100,4096,32]" (no "and type ..."): an
    # unknown dtype must give no size rather than a guessed width.
    assert tensor_bytes((100, 4096, 32), None) is None
    assert tensor_bytes((100, 4096, 32), "qint8") is None  # quantized TF type: width not modelled
    d = diagnose_text(_fixture("oom-tf-segan-42"))
    assert "MiB" not in d.explanation
    assert "[100x4096x32]" in d.explanation


def test_windows_crlf_log_keeps_line_numbers() -> None:
    # Why: logs saved on Windows (fast-reid#624 in oom_dev.jsonl is a Windows PyTorch report) end
    # lines with CRLF; the "\r" must not stay in the text nor shift the line numbers.
    text = (
        'Traceback (most recent call last):\r\n  File "train.py", line 45, in forward\r\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 7.79 GiB of which 2.06 MiB is free.\r\n"
    )
    lines = split_lines(text)
    assert not any("\r" in t for t in lines.text)
    (event,) = parse_log(text).events
    assert event.line == 3
    assert event.requested_bytes == 20 * MiB
