"""``oomkit doctor --when``: the user's answer to the deciding question decides an open cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus_records import corpus_text
from oomkit.cli import main
from oomkit.diagnose.doctor import diagnose_text

CORPUS = Path(__file__).parent / "fixtures" / "oom_corpus" / "dev_torch.jsonl"


def _text(record_id: str) -> str:
    return corpus_text(record_id)


# a real message with a small request on a full 4 GiB card: the message alone leaves it open
OPEN = "tc-mygirlgpt-11"


def test_the_message_alone_leaves_it_open_and_asks() -> None:
    d = diagnose_text(_text(OPEN))
    assert d.confidence <= 0.5
    assert "--when load|first-step|later" in d.explanation


@pytest.mark.parametrize(
    ("when", "cause"),
    [
        ("load", "model_too_large"),
        ("first-step", "batch_or_activations"),
        ("later", "leak_or_accumulation"),
    ],
)
def test_the_answer_decides(when: str, cause: str) -> None:
    d = diagnose_text(_text(OPEN), when=when)
    assert d.cause == cause
    assert d.confidence >= 0.6
    assert "You said" in d.explanation
    assert "Neither the numbers nor the phase decide" not in d.explanation


def test_a_cause_the_numbers_settled_stays() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 3.06 MiB is free. Process 1234 has 20.00 GiB "
        "memory in use. Including non-PyTorch memory, this process has 3.55 GiB memory in use. "
        "Of the allocated memory 3.10 GiB is allocated by PyTorch, and 7.25 MiB is reserved by "
        "PyTorch but unallocated."
    )
    for when in ("load", "first-step", "later"):
        assert diagnose_text(text, when=when).cause == "other_process_holding_memory"


def test_host_ram_is_not_a_phase_question() -> None:
    text = (
        "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate "
        "4294967296 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert diagnose_text(text).cause == "host_ram"
    assert diagnose_text(text, when="later").cause == "host_ram"


def test_an_unknown_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="--when"):
        diagnose_text(_text(OPEN), when="soon")


def test_cli_when(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", _text(OPEN), "--when", "later", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cause"] == "leak_or_accumulation"
    assert main(["doctor", _text(OPEN), "--when", "soon"]) == 2
    err = capsys.readouterr().err
    assert "--when" in err
    assert "Traceback" not in err


def test_an_answer_a_settled_cause_overrules_is_echoed_not_dropped() -> None:
    # the numbers settle "another process" and the answer does not change it, but the user must
    # see that their --when was read and why it did not decide (it was silently ignored)
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 3.06 MiB is free. Process 1234 has 20.00 GiB "
        "memory in use. Including non-PyTorch memory, this process has 3.55 GiB memory in use. "
        "Of the allocated memory 3.10 GiB is allocated by PyTorch, and 7.25 MiB is reserved by "
        "PyTorch but unallocated."
    )
    bare = diagnose_text(text)
    said = diagnose_text(text, when="load")
    assert said.cause == bare.cause == "other_process_holding_memory"
    assert "You said it fails while loading" in said.explanation
    assert "does not change it" in said.explanation
    host = diagnose_text(
        "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate "
        "4294967296 bytes. Error code 12 (Cannot allocate memory)",
        when="later",
    )
    assert "when it fails does not decide host_ram" in host.explanation


def test_an_answer_the_named_model_contradicts_is_echoed() -> None:
    # --model llama-3.2-1b (2.3 GiB) with 7+ GiB more held: the weights decide "batch"; the
    # user's "it fails while loading" disagrees and the explanation says so
    from oomkit.catalog.models import find_model

    spec = find_model("llama-3.2-1b").spec()
    text = Path(__file__).parent / "fixtures" / "oom_logs" / "oom-torch-llama-82-7b-11gb.txt"
    d = diagnose_text(text.read_text(encoding="utf-8"), model=spec, when="load")
    assert d.cause == "batch_or_activations"
    assert "You said it fails while loading" in d.explanation
    agree = diagnose_text(text.read_text(encoding="utf-8"), model=spec, when="first-step")
    assert "You said" not in agree.explanation  # the answer agrees: nothing to add


def test_the_logs_traceback_outranks_the_answer() -> None:
    # a DeepSpeed traceback in optimizer.step(): "it fails while loading" contradicts it (it was
    # applied: "You said it fails while loading: the weights ... do not fit"), and "the first
    # step" in optimizer.step() is the optimizer states (it read "batch_or_activations")
    log = Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-deepspeed-zero1-step.txt"
    text = log.read_text(encoding="utf-8")
    bare = diagnose_text(text)
    load = diagnose_text(text, when="load")
    assert (load.cause, load.confidence) == (bare.cause, bare.confidence)
    assert "the log's traceback shows it in optimizer.step()" in load.explanation
    first = diagnose_text(text, when="first-step")
    assert first.cause == "model_too_large"
    assert "optimizer states" in first.explanation
    assert diagnose_text(text, when="later").cause == "leak_or_accumulation"
