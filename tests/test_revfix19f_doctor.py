"""revfix19f: a KV-cache failure keeps its context lever when the log prints no n_ctx (``-c <N>``,
``num_ctx <N>`` on Ollama, ranked by the half of the KV cache it frees); the NCCL finding's
headline, deciding question and first fix agree; one "What would decide:" per finding."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.runtime_lines import log_family

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus_records import development_diagnoses  # noqa: E402

_KV_LINES = (
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: "
    "cudaMalloc failed: out of memory\n"
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 4294967296\n"
    "llama_init_from_model: failed to initialize the context: failed to allocate buffer for "
    "kv cache\n"
)
_OLLAMA_HEAD = (
    'time=2025-03-02T10:14:01.112+01:00 level=INFO source=server.go:104 msg="system memory" '
    'total="15.7 GiB" free="9.8 GiB" free_swap="4.0 GiB"\n'
    "time=2025-03-02T10:14:01.131+01:00 level=INFO source=server.go:555 "
    'msg="waiting for llama runner to start responding"\n'
)
_OLLAMA_TAIL = (
    "time=2025-03-02T10:14:05.131+01:00 level=ERROR source=sched.go:455 "
    'msg="error loading llama server" error="llama runner process has terminated: error loading '
    'model: failed to allocate buffer for kv cache"\n'
)


def _doctor(tmp_path: Path, text: str) -> str:
    log = tmp_path / "oom.log"
    log.write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", "--no-input", str(log)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_llamacpp_kv_failure_without_n_ctx_leads_with_a_placeholder_context(
    tmp_path: Path,
) -> None:
    out = _doctor(tmp_path, _KV_LINES)
    assert "Cause: kv_cache_or_context" in out
    first = out.split("Fixes", 1)[1].split("\n  2.", 1)[0]
    assert "1. Halve the context: -c <N>  [saves ~2.00 GiB]" in first
    assert "N is half the context you run" in first
    assert "add to your command line: -c <N>" in first


def test_the_sized_context_fix_still_wins_when_n_ctx_is_printed(tmp_path: Path) -> None:
    out = _doctor(tmp_path, "llama_context: n_ctx = 32768\n" + _KV_LINES)
    assert "1. Halve the context: -c 16384  [saves ~2.00 GiB]" in out
    assert "<N>" not in out


def test_ollama_kv_failure_without_n_ctx_offers_num_ctx(tmp_path: Path) -> None:
    out = _doctor(tmp_path, _OLLAMA_HEAD + _KV_LINES + _OLLAMA_TAIL)
    first = out.split("Fixes", 1)[1].split("\n  2.", 1)[0]
    assert "1. Halve the context: num_ctx <N>  [saves ~2.00 GiB]" in first
    assert ">>> /set parameter num_ctx <N>" in first
    assert "-c <N>" not in out
    assert "OLLAMA_KV_CACHE_TYPE=q8_0" in out


def test_a_kv_failure_with_no_size_and_no_n_ctx_still_offers_the_context() -> None:
    d = diagnose_text("Failed to initialize the context: failed to allocate buffer for kv cache")
    assert d.cause == "kv_cache_or_context"
    assert [f.title for f in d.fixes][:1] == ["Halve the context: -c <N>"]
    assert "(?)" not in d.explanation


#: a line that sets the context: llama.cpp's flag, Ollama's parameter, a binding's n_ctx=
_CONTEXT_LINE = re.compile(
    r"(?:^|\s)(?:-c|--ctx-size)\s|/set parameter num_ctx |\"num_ctx\"|\bn_ctx="
)


def test_every_llamacpp_or_ollama_kv_finding_in_the_corpus_offers_a_context_fix() -> None:
    seen, missing = 0, []
    for rec, d in development_diagnoses():
        if d.cause != "kv_cache_or_context" or log_family(d.primary, d.context) is None:
            continue
        seen += 1
        if not any(_CONTEXT_LINE.search(c) for f in d.fixes for c in f.commands):
            missing.append((rec["id"], [f.title for f in d.fixes]))
    assert seen > 40
    assert not missing, missing


_NCCL = (
    "include/alloc.h:125 NCCL WARN Cuda failure 2 'out of memory'\n"
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.20.5\n"
    "ncclUnhandledCudaError: Call to CUDA function failed.\n"
    "Last error:\n"
    "Cuda failure 2 'out of memory'\n"
)


def test_nccl_headline_question_and_first_fix_agree(tmp_path: Path) -> None:
    out = _doctor(tmp_path, _NCCL)
    head, fixes = out.split("Fixes", 1)
    assert head.startswith("Cause: unknown")
    assert "batch_or_activations" not in out
    assert head.count("What would decide:") == 1
    assert "NCCL_DEBUG_SUBSYS=ALLOC" in head
    assert "batch size 1" not in out
    assert "1. Turn off NVLink SHARP buffers" in fixes
    assert "Halve the batch" not in fixes
    assert "--answer other_process=yes|no" in fixes


def test_one_deciding_sentence_per_finding_over_the_development_corpus() -> None:
    """A rule that settles the cause on top of another's result, and the base-rate guess on top
    of a rule that named its deciding fact, leave one "What would decide:" sentence."""
    seen, twice = 0, []
    for rec, d in development_diagnoses():
        n = d.explanation.count("What would decide:")
        seen += n
        if n > 1:
            twice.append(rec["id"])
    assert seen > 500
    assert not twice, twice
