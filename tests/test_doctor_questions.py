"""The deciding question (``oomkit.diagnose.questions``): an open or low-confidence diagnosis
carries one question whose answers each name the cause the doctor re-runs to; ``--answer``
re-runs with the fact; a terminal session asks it; ``--json`` gets ``question``/``answers``."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.analysis import CAUSES
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.questions import (
    ASK_BELOW,
    QUESTIONS,
    check_answers,
    parse_answer_pairs,
)
from oomkit.errors import InvalidSettingError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
# a real message: a small request on a full 4 GiB card, no traceback; the message leaves the
# cause open between the resident model and the batch
OPEN = "tc-mygirlgpt-11"
# llama.cpp states which buffer failed: settled (kv_cache_or_context), no question
SETTLED = (
    "llama_kv_cache_init: CUDA0 KV buffer size = 16384.00 MiB\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: "
    "cudaMalloc failed: out of memory\n"
    "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
)


def test_the_set_is_well_formed_and_documented() -> None:
    doc = (ROOT / "docs" / "doctor-causes.md").read_text(encoding="utf-8")
    for qid, spec in QUESTIONS.items():
        assert spec.id == qid
        assert 2 <= len(spec.choices) <= 4, qid
        assert len(set(spec.values())) == len(spec.values()), qid
        assert set(spec.decides) <= set(CAUSES), qid
        for c in spec.choices:
            assert c.points_at in (*CAUSES, None, "pool"), (qid, c.value)
            assert c.rules_out <= set(CAUSES), (qid, c.value)
            assert c.points_at not in c.rules_out, (qid, c.value)
        assert f"`{qid}`" in doc, f"docs/doctor-causes.md does not document {qid}"
    # when= is the same fact as --when: the same values
    assert QUESTIONS["when"].values() == ("load", "first-step", "later")


def test_an_open_diagnosis_carries_a_question_and_each_answer_leads_where_it_says() -> None:
    text = corpus_text(OPEN)
    d = diagnose_text(text)
    assert d.confidence < ASK_BELOW
    q = d.question
    assert q is not None
    assert 2 <= len(q.answers) <= 4
    assert len({cause for _, _, cause in q.answers}) >= 2
    for value, _, leads_to in q.answers:
        again = diagnose_text(text, answers={q.id: value})
        assert again.cause == leads_to, (q.id, value)
        assert [a.id for a in again.answers] == [q.id]
        assert again.question is None or again.question.id != q.id  # never asked twice
    doc = d.to_dict()
    assert doc["question"]["id"] == q.id
    assert doc["answers"] == []


def test_leads_to_is_the_rerun_cause_across_the_development_corpus() -> None:
    """The stated effect of every answer is what the re-run gives (no hidden override), and a
    question is asked exactly when the diagnosis is open or below 0.6 (unless no answer would
    change it), over the development part ``dev``."""
    folder = ROOT / "tests" / "fixtures" / "oom_corpus"
    records = [
        json.loads(x)
        for path in (folder / "dev_torch.jsonl", folder / "dev_serving.jsonl")
        for x in path.read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]
    asked = 0
    for rec in records:
        d = diagnose_text(rec["text"])
        if d.question is None:
            continue
        assert d.confidence < ASK_BELOW or d.open_question, rec["id"]
        asked += 1
        for value, _, leads_to in d.question.answers:
            rerun = diagnose_text(rec["text"], answers={d.question.id: value})
            assert rerun.cause == leads_to, (rec["id"], d.question.id, value)
    assert asked >= 50


def test_a_settled_diagnosis_asks_nothing_and_an_answer_is_echoed() -> None:
    d = diagnose_text(SETTLED)
    assert d.cause == "kv_cache_or_context"
    assert d.confidence >= ASK_BELOW
    assert d.question is None
    again = diagnose_text(SETTLED, answers={"short_context": "yes"})
    assert again.cause == "kv_cache_or_context"
    assert again.answers[0].effect == "kept"
    assert "does not change it" in again.explanation


@pytest.mark.parametrize(
    ("answers", "cause"),
    [
        ({"batch1": "no"}, "batch_or_activations"),
        ({"batch1": "yes"}, "model_too_large"),
        ({"other_process": "yes"}, "other_process_holding_memory"),
        ({"growth": "yes"}, "leak_or_accumulation"),
        ({"model_fits": "no"}, "model_too_large"),
        ({"model_fits": "yes"}, "batch_or_activations"),  # PyTorch: what the run adds is the batch
    ],
)
def test_an_answer_decides_the_open_cause_and_closes_the_question(
    answers: dict[str, str], cause: str
) -> None:
    d = diagnose_text(corpus_text(OPEN), answers=answers)
    assert d.cause == cause
    assert d.confidence >= ASK_BELOW
    assert d.question is None
    assert not d.open_question
    assert "You said" in d.explanation


def test_a_ruled_out_cause_goes_to_the_next_likeliest() -> None:
    """ "No other process" on a reading of another process: the base rate's next cause."""
    text = corpus_text(OPEN)
    d = diagnose_text(text, answers={"other_process": "yes"})
    assert d.cause == "other_process_holding_memory"
    no = diagnose_text(text, answers={"other_process": "no"})
    assert no.cause != "other_process_holding_memory"
    assert "no other process" in no.explanation


def test_when_answer_is_the_when_flag() -> None:
    text = corpus_text(OPEN)
    for value in QUESTIONS["when"].values():
        by_answer = diagnose_text(text, answers={"when": value}).to_dict()
        by_flag = diagnose_text(text, when=value).to_dict()
        assert by_answer == by_flag
        assert by_answer["answers"][0]["id"] == "when"
    with pytest.raises(ValueError, match="disagree"):
        diagnose_text(text, when="load", answers={"when": "later"})


def test_bad_answers_name_the_input_and_the_choices() -> None:
    with pytest.raises(InvalidSettingError, match=r"valid ids: when, batch1"):
        check_answers({"batch2": "yes"})
    with pytest.raises(InvalidSettingError, match=r"batch1=maybe.*valid values: yes, no"):
        check_answers({"batch1": "maybe"})
    with pytest.raises(InvalidSettingError, match=r"--answer 'batch1': expected ID=VALUE"):
        parse_answer_pairs(["batch1"])
    with pytest.raises(InvalidSettingError, match="given twice"):
        parse_answer_pairs(["batch1=yes", "batch1=no"])
    assert parse_answer_pairs([" batch1 = yes", "growth=no"]) == {"batch1": "yes", "growth": "no"}
    with pytest.raises(InvalidSettingError, match="answers"):
        diagnose_text("CUDA out of memory", answers={"nope": "x"})


# -- the CLI ---------------------------------------------------------------------------------


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.fixture(scope="module")
def open_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("q") / "oom.log"
    path.write_text(corpus_text(OPEN), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("pair", "needle"),
    [
        ("batch2=yes", "valid ids: when, batch1, other_process"),
        ("batch1=maybe", "valid values: yes, no"),
        ("batch1", "expected ID=VALUE"),
    ],
)
def test_a_bad_answer_is_a_one_line_usage_error(open_log: Path, pair: str, needle: str) -> None:
    res = _run(str(open_log), "--answer", pair)
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "--answer" in lines[0]
    assert needle in lines[0]
    assert "Traceback" not in res.stderr


def test_when_and_answer_when_disagree(open_log: Path) -> None:
    res = _run(str(open_log), "--when", "load", "--answer", "when=later")
    assert res.returncode == 2
    assert "--when load and --answer when=later disagree" in res.stderr


def test_json_has_question_and_the_applied_answers(open_log: Path) -> None:
    plain = json.loads(_run(str(open_log), "--json").stdout)
    q = plain["question"]
    assert q is not None
    assert plain["answers"] == []
    value, leads_to = q["answers"][1]["value"], q["answers"][1]["leads_to"]
    res = _run(str(open_log), "--json", "--answer", f"{q['id']}={value}")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["cause"] == leads_to
    assert doc["answers"] == [
        {"id": q["id"], "value": value, "effect": "decided", "cause_before": plain["cause"]}
    ]
    assert doc["question"] is None
    settled = json.loads(_run("-", "--json", stdin=SETTLED).stdout)
    assert settled["question"] is None
    assert settled["answers"] == []


def _pty_session(args: list[str], reply: bytes | None) -> tuple[str, int]:
    """Run ``oomkit doctor ARGS`` on a real pseudo-terminal (stdin and stdout), answering the
    prompt with ``reply``; the whole transcript and the exit status."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec, never return into pytest
        os.execve(sys.executable, [sys.executable, "-m", "oomkit", "doctor", *args], env)
    out = b""
    sent = False
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if reply is not None and not sent and b"Enter skips]: " in out:
                os.write(fd, reply)
                sent = True
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return out.decode("utf-8", "replace").replace("\r\n", "\n"), os.waitstatus_to_exitcode(status)


def test_a_terminal_session_asks_once_and_prints_the_rerun(open_log: Path) -> None:
    plain = json.loads(_run(str(open_log), "--json").stdout)
    q = plain["question"]
    out, code = _pty_session([str(open_log)], b"2\n")
    assert code == 0, out
    assert out.count("One fact would decide it:") == 1
    assert q["text"] in out
    assert f"  1. {q['answers'][0]['text']}  (-> {q['answers'][0]['leads_to']})" in out
    second = q["answers"][1]
    assert f"With your answer (--answer {q['id']}={second['value']}):" in out
    after = out.split("With your answer", 1)[1]
    assert f"Cause: {second['leads_to']}" in after
    # the re-run equals the non-interactive --answer
    doc = json.loads(
        _run(str(open_log), "--json", "--answer", f"{q['id']}={second['value']}").stdout
    )
    assert f"Cause: {doc['cause']}  (confidence {doc['confidence']:.2f})" in after


def test_enter_skips(open_log: Path) -> None:
    out, code = _pty_session([str(open_log)], b"\n")
    assert code == 0
    assert "One fact would decide it:" in out
    assert "With your answer" not in out


@pytest.mark.parametrize("flag", ["--no-input", "--json"])
def test_no_prompt_with_no_input_or_json(open_log: Path, flag: str) -> None:
    out, code = _pty_session([str(open_log), flag], None)
    assert code == 0
    assert "Enter skips" not in out
    assert "One fact would decide it" not in out


def test_no_prompt_when_stdout_or_stdin_is_not_a_terminal(open_log: Path) -> None:
    # stdout a pipe (stdin a terminal is not needed to show it never asks)
    res = _run(str(open_log))
    assert res.returncode == 0
    assert "Enter skips" not in res.stdout
    # the log piped on stdin: never asks (stdin is the log, not the user)
    res = _run("-", stdin=corpus_text(OPEN))
    assert res.returncode == 0
    assert "Enter skips" not in res.stdout


@pytest.mark.parametrize(
    ("record_id", "qid", "cause"),
    [
        # "Killed" in the report: a host-RAM reading at low confidence asks about RAM
        ("h13-vibe-83", "host_ram", "host_ram"),
        # a checkpoint every DDP rank loads onto cuda:0: asks whether one GPU fills alone
        ("h11-mmengine-665", "gpu_balance", "multi_gpu_imbalance"),
    ],
)
def test_host_ram_and_a_split_have_their_questions(record_id: str, qid: str, cause: str) -> None:
    text = corpus_text(record_id)
    d = diagnose_text(text)
    assert d.cause == cause
    assert d.question is not None
    assert d.question.id == qid
    no = diagnose_text(text, answers={qid: "no"})
    assert no.cause not in (cause, "unknown")  # ruled out: the base rate's next cause
    assert no.answers[0].effect == "decided"
    assert diagnose_text(text, answers={qid: "yes"}).answers[0].effect == "confirmed"


def test_without_a_terminal_the_question_is_named_with_its_flag(open_log: Path) -> None:
    """Piped or with --no-input nothing is asked, but the finding says which fact would decide
    it and how to give it."""
    res = _run(str(open_log))
    doc = json.loads(_run(str(open_log), "--json").stdout)
    q = doc["question"]
    assert q is not None
    values = "|".join(a["value"] for a in q["answers"])
    assert f"What would decide it: {q['text']}" in res.stdout
    assert f"--answer {q['id']}={values}" in res.stdout
    assert "Enter skips" not in res.stdout
