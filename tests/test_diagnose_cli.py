"""``oomkit doctor`` through click's CliRunner: exit codes, JSON, input modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"
ENV = {"NO_COLOR": "1", "COLUMNS": "100"}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_file_json(runner: CliRunner) -> None:
    res = runner.invoke(doctor_command, ["--json", str(LOGS / "oom-torch-lerf-73.txt")], env=ENV)
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc["cause"] == "batch_or_activations"  # a 3 GiB tensor; fragmentation second
    assert doc["fixes"][0]["commands"][0].endswith("expandable_segments:True")
    assert doc["events"][0]["requested_bytes"] == 3 * 1024**3


def test_human_output(runner: CliRunner) -> None:
    res = runner.invoke(
        doctor_command, [str(LOGS / "oom-ollama-continue-11715-phi3mini.txt")], env=ENV
    )
    assert res.exit_code == 0
    assert "Cause: host_ram" in res.stdout
    assert "1.10 GiB" in res.stdout


def test_stdin_and_pasted_message(runner: CliRunner) -> None:
    msg = "model requires more system memory (7.5 GiB) than is available (5.2 GiB)"
    res = runner.invoke(doctor_command, ["-"], input=msg, env=ENV)
    assert res.exit_code == 0
    assert "host_ram" in res.stdout
    res = runner.invoke(doctor_command, ["--json", msg], env=ENV)
    assert json.loads(res.stdout)["cause"] == "host_ram"


def test_no_oom_exit_3(runner: CliRunner) -> None:
    res = runner.invoke(doctor_command, ["--json", "-"], input="all fine here\n", env=ENV)
    assert res.exit_code == 3
    assert json.loads(res.stdout)["events"] == []


def test_unreadable_file_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    res = runner.invoke(doctor_command, [str(tmp_path / "missing.log")], env=ENV)
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: ")
    assert len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.output
    res = runner.invoke(doctor_command, [str(tmp_path)], env=ENV)
    assert res.exit_code == 1
    assert "directory" in res.stderr
