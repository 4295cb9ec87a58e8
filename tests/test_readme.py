"""README.md stays true: its test command is the one .ci/run runs, and its Python runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, re.S)


def test_two_commands_at_the_top() -> None:
    blocks = _bash_blocks()
    assert blocks[0].strip().startswith("pip install . && oomkit plan llama-3.1-70b")
    assert "pytest" in blocks[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_cmd = _bash_blocks()[1].strip()
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines


def test_python_api_snippet_runs(tmp_path: Path, monkeypatch: object) -> None:
    code = re.findall(r"```python\n(.*?)```", README, re.S)[0]
    log = tmp_path / "crash.log"
    log.write_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 23.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
        "process has 22.58 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by "
        "PyTorch, and 250.00 MiB is reserved by PyTorch but unallocated."
    )
    code = code.replace('"crash.log"', repr(str(log)))
    ns: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), ns)
    assert ns["diag"] is not None


def test_the_deciding_question_example_is_what_the_doctor_asks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The README's question block: the question and its numbered answers as the terminal
    prompt prints them (tests/test_doctor_questions.py drives the prompt on a real pty), and
    the first line of ``--answer`` re-run."""
    import json

    from oomkit.cli import main

    block = next(b for b in re.findall(r"```text\n(.*?)```", README, re.S) if "One fact" in b)
    log = "tests/fixtures/oom_logs/oom-torch-llama-82-7b-11gb.txt"
    capsys.readouterr()
    main(["doctor", str(ROOT / log), "--json"])
    doc = json.loads(capsys.readouterr().out)
    q = doc["question"]
    assert f"Cause: {doc['cause']}  (confidence {doc['confidence']:.2f})" in block
    assert f"One fact would decide it: {q['text']}" in block
    for i, a in enumerate(q["answers"], 1):
        assert f"  {i}. {a['text']}  (-> {a['leads_to']})" in block
    assert "--answer batch1=no" in block
    main(["doctor", str(ROOT / log), "--answer", "batch1=no"])
    first = capsys.readouterr().out.splitlines()[0]
    assert block.rstrip().endswith(first)


def test_training_doctor_example_is_todays_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's training doctor example had drifted (50.20 GiB from a 118.60 GiB peak
    where the doctor prints 49.99 from 118.10): its three lines are today's output."""
    from oomkit.cli import main

    block = re.search(
        r"\$ oomkit doctor (\S+) -m (\S+) \| grep '\^  \[1-3\]\\\.'\n(.*?)```", README, re.S
    )
    assert block is not None
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    main(["doctor", block.group(1), "-m", block.group(2)])
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if re.match(r"^  [1-3]\.", ln)]
    assert lines == block.group(3).strip("\n").splitlines()


def test_plan_example_is_todays_output(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's plan example had drifted (34 layers, 21.92 GiB where plan printed 35 and
    22.23): every line it shows before its "..." is today's output."""
    from oomkit.cli import main

    block = re.search(r"```text\n\$ oomkit plan (.*?)\n(.*?)\n\.\.\.\n```", README, re.S)
    assert block is not None
    capsys.readouterr()
    main(["plan", *block.group(1).split()])
    captured = capsys.readouterr()
    out = captured.err.splitlines() + captured.out.splitlines()  # the GPU line is on stderr
    shown = block.group(2).splitlines()
    assert out[: len(shown)] == shown
