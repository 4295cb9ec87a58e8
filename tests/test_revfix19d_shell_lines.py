"""revfix19d: every line the doctor prints after ``$ `` is a shell command (a program, or
environment assignments followed by one), and an empty input is a usage error (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.prompt_lines import line_ok
from oomkit.diagnose.runtime_lines import is_ollama_line, llamacpp_only, log_family
from oomkit.diagnose.shell_lines import is_shell_line, prompt, shell_ready

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from corpus_records import development_diagnoses  # noqa: E402


def test_every_line_over_the_development_corpus_is_what_its_prompt_promises() -> None:
    """revfix19e: every prompt kind, not only ``$``: flags with values or ``<N>``, Python that
    parses, settings, an ``ollama run`` REPL command (prompt_lines.py); and every line in the
    terms of the log's runtime (runtime_lines.py): no llama.cpp-only flag on an Ollama record,
    no Ollama line on a llama.cpp one."""
    bad: set[tuple[str, str]] = set()
    wrong_runtime: set[tuple[str, str]] = set()
    seen: Counter[str] = Counter()
    for rec, d in development_diagnoses():
        family = log_family(d.primary, d.context)
        for f in d.fixes:
            for c in f.commands:
                kind = prompt(c)
                seen[kind] += 1
                if not (is_shell_line(c) if kind == "$ " else line_ok(kind, c)):
                    bad.add((kind, c))
                if (family == "ollama" and llamacpp_only(c)) or (
                    family == "llama.cpp" and is_ollama_line(c)
                ):
                    wrong_runtime.add((str(rec["id"]), c))
    assert seen["$ "] > 1000
    assert seen["add to your command line: "] > 1000
    assert seen["Python: "] > 1000
    assert seen["setting: "] > 100
    assert seen[">>> "] > 50
    assert not bad, sorted(bad)
    assert not wrong_runtime, sorted(wrong_runtime)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("OLLAMA_MAX_LOADED_MODELS=1", "OLLAMA_MAX_LOADED_MODELS=1 ollama serve"),
        ("TF_FORCE_GPU_ALLOW_GROWTH=true", "export TF_FORCE_GPU_ALLOW_GROWTH=true"),
        (
            "XLA_PYTHON_CLIENT_PREALLOCATE=false   # if JAX shares the process",
            "export XLA_PYTHON_CLIENT_PREALLOCATE=false   # if JAX shares the process",
        ),
        ("nvidia-smi", "nvidia-smi"),
        ("CUDA_VISIBLE_DEVICES=1 python train.py", "CUDA_VISIBLE_DEVICES=1 python train.py"),
    ],
)
def test_bare_assignments_get_the_program_that_reads_them(command: str, expected: str) -> None:
    (fix,) = shell_ready([generic("t", "w.", (command,))])
    assert fix.commands == (expected,)
    assert is_shell_line(expected)


@pytest.mark.parametrize(
    "prose",
    [
        "update llama.cpp (newer builds split weight buffers)",
        "reduce batch size / sequence length / input length",
        "max_length / image size // 2",
        "a CUDA / ROCm build of llama.cpp",
    ],
)
def test_prose_moves_into_the_fix_text(prose: str) -> None:
    (fix,) = shell_ready([generic("t", "why.", ("-ub 256", prose))])
    assert fix.commands == ("-ub 256",)
    assert prose in fix.why


def test_settings_are_not_shell_lines() -> None:
    assert prompt("batch_size=4") == "setting: "
    assert prompt("SOLVER.IMS_PER_BATCH=2") == "setting: "
    assert prompt("GGML_CUDA_NO_PINNED=1") == "$ "


def test_ollama_max_loaded_models_cli_line() -> None:
    text = (
        "Error: model requires more system memory (12.3 GiB) than is available (8.0 GiB)\n"
        "time=2025-01-01T00:00:00 level=INFO source=server.go msg=ollama\n"
    )
    commands = [c for f in diagnose_text(text).fixes for c in f.commands]
    assert "OLLAMA_MAX_LOADED_MODELS=1 ollama serve" in commands
    assert "OLLAMA_MAX_LOADED_MODELS=1" not in commands


def _doctor(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_an_empty_file_is_an_error_naming_it(tmp_path: Path, content: str) -> None:
    # a given FILE that cannot be used exits 1 (DESIGN.md: "1 error (unreadable file, bad
    # input, offline)"), as a missing one does; 2 is kept for no input at all (below)
    log = tmp_path / "train.log"
    log.write_text(content)
    r = _doctor(str(log))
    assert r.returncode == 1
    assert f"{log}: the file is empty" in r.stderr
    assert "No out-of-memory" not in r.stdout


@pytest.mark.parametrize("content", ["", "\n \n"])
def test_empty_stdin_is_a_usage_error(content: str) -> None:
    r = _doctor("-", stdin=content)
    assert r.returncode == 2
    assert "stdin: no input" in r.stderr
