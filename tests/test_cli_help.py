"""What a new user sees first: bare `oomkit`, `doctor` with nothing to read, bad choices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from oomkit.cli import main
from oomkit.errors import HardwareError

SRC = str(Path(__file__).parents[1] / "src")


def test_bare_oomkit_prints_readable_help_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([])
    out, err = capsys.readouterr()
    assert code == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "Usage: oomkit [OPTIONS] COMMAND [ARGS]..."
    assert "Error" not in out
    for command in ("doctor", "estimate", "gpus", "models"):
        assert any(ln.strip().startswith(command) for ln in lines), command
    assert "oomkit estimate llama-3.1-8b" in out  # an example to copy
    assert max(len(ln) for ln in lines) <= 100  # wrapped, not one squashed line


def test_doctor_on_a_terminal_says_what_it_expects() -> None:
    # A real pseudo-terminal as stdin: doctor must not sit waiting for input nobody knows to type.
    master, slave = os.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "oomkit", "doctor"],
            stdin=slave,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": SRC},
            check=False,
        )
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 1
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("Error: oomkit doctor needs the error to diagnose")
    assert "cat train.log | oomkit doctor -" in line


def test_doctor_still_reads_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor"],
        input="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": SRC},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Cause:")


@pytest.mark.parametrize(
    ("args", "valid"),
    [
        (
            ["--runtime", "nope"],
            "llama.cpp (also: llamacpp, lmstudio, koboldcpp, llama-cpp-python), ollama, vllm",
        ),
        (["--quant", "Q9_K"], "Q4_K_M"),
        (["--quant", "Q9_K"], "IQ4_XS"),
        (["--runtime", "vllm", "--quant", "zz"], "Valid formats: fp32, fp16, bf16"),
        (["--runtime", "vllm", "--kv-dtype", "zz"], "Valid dtypes: "),
        (["--kv-dtype", "zz"], "q8_0"),
    ],
)
def test_bad_choices_list_the_valid_ones(
    capsys: pytest.CaptureFixture[str], args: list[str], valid: str
) -> None:
    code = main(["estimate", "qwen2.5-7b", *args])
    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert out == ""
    first = err.splitlines()[0]
    assert first.startswith("Error: ")
    assert valid in first


def test_gpus_json_without_a_gpu_is_still_json() -> None:
    from oomkit.cli.gpus import gpus_command, use_backend
    from oomkit.hardware.live import GpuBackend

    def none_here() -> GpuBackend:
        raise HardwareError("GPU detection failed for 'this machine': no GPU found.")

    use_backend(none_here)
    try:
        result = CliRunner().invoke(gpus_command, ["--json"], env={"NO_COLOR": "1"})
    finally:
        use_backend(None)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc == {
        "schema_version": 1,
        "gpus": [],
        "error": "GPU detection failed for 'this machine': no GPU found.",
    }
    assert result.stderr.count("Error:") == 1


def test_doctor_help_names_every_runtime_it_takes_and_its_usage_exit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The help listed four runtimes while -r sglang is accepted, and left out exit 2, which an
    unknown --runtime or --gpu returns."""
    assert main(["doctor", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "vllm | sglang | transformers" in out
    assert "2 a bad option value" in out
    log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert main(["doctor", log, "-r", "sglang"]) == 0
    with pytest.raises(SystemExit) as bad:
        main(["doctor", log, "-r", "nosuch"])
    assert bad.value.code == 2
