"""oomkit.install(): the OOM section under real tracebacks (plain Python and IPython)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oomkit.inprocess import hook

torch = pytest.importorskip("torch")

SRC = str(Path(__file__).resolve().parents[1] / "src")
DOCTOR = importlib.util.find_spec("oomkit.diagnose.doctor") is not None
# A real CUDA OOM message (LISTatSNU/FastMRI_challenge#238, torch 1.x wording).
CUDA_OOM = (
    "CUDA out of memory. Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB "
    "already allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch) If reserved memory "
    "is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
    "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
)


def _run(code: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_report_for_a_real_cpu_oom() -> None:
    try:
        torch.empty(2**62, dtype=torch.uint8)
    except RuntimeError as exc:
        report = hook.format_oom_report(exc)
    assert report is not None
    assert "oomkit: out-of-memory diagnosis" in report
    assert "allocator now: cpu:" in report
    if DOCTOR:
        assert "cause:" in report
    else:
        assert "diagnosis unavailable" in report


def test_no_report_for_other_errors() -> None:
    assert hook.format_oom_report(ValueError("shape mismatch")) is None


def test_report_warns_about_disagreeing_alloc_conf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:True")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")
    report = hook.format_oom_report(torch.OutOfMemoryError(CUDA_OOM))
    assert report is not None
    assert "disagree" in report


def test_install_chains_and_uninstall_restores() -> None:
    seen: list[str] = []

    def previous(etype, value, tb):  # type: ignore[no-untyped-def]
        seen.append(type(value).__name__)

    saved = sys.excepthook
    sys.excepthook = previous
    try:
        hook.install(ipython=False)
        hook.install(ipython=False)  # idempotent: still chains to `previous` once
        assert hook.installed()
        sys.excepthook(ValueError, ValueError("x"), None)
        assert seen == ["ValueError"]
        hook.uninstall()
        assert sys.excepthook is previous
        assert not hook.installed()
    finally:
        hook.uninstall()
        sys.excepthook = saved


def test_plain_python_uncaught_oom() -> None:
    # A real uncaught DefaultCPUAllocator failure in a fresh interpreter.
    done = _run(
        """
        import oomkit.inprocess as oi
        oi.install()
        import torch
        torch.empty(2**62, dtype=torch.uint8)
        """
    )
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "DefaultCPUAllocator: can't allocate memory" in done.stderr
    assert done.stderr.index("Traceback") < done.stderr.index("oomkit: out-of-memory diagnosis")
    assert "allocator now: cpu:" in done.stderr


def test_plain_python_other_error_untouched() -> None:
    done = _run("import oomkit.inprocess as oi\noi.install()\nraise KeyError('k')\n")
    assert done.returncode == 1
    assert "KeyError: 'k'" in done.stderr
    assert "oomkit" not in done.stderr


def test_import_does_not_load_torch_or_ipython() -> None:
    done = _run(
        "import sys, oomkit.inprocess\n"
        "print(sorted(m for m in ('torch', 'IPython', 'pynvml') if m in sys.modules))"
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_ipython_shell_gets_the_report() -> None:
    pytest.importorskip("IPython")
    done = _run(
        f"""
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        import oomkit.inprocess as oi
        oi.install()
        shell.run_cell("import torch\\nraise torch.OutOfMemoryError({CUDA_OOM!r})")
        shell.run_cell("1/0")
        oi.uninstall()
        shell.run_cell("raise torch.OutOfMemoryError('CUDA out of memory. again')")
        """
    )
    out = done.stdout + done.stderr
    assert "OutOfMemoryError" in out
    assert out.count("oomkit: out-of-memory diagnosis") == 1  # not for 1/0, not after uninstall
    assert "ZeroDivisionError" in out
    assert "CUDA out of memory. again" in out
