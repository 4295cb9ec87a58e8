"""llama.cpp's retry without pipeline parallelism (src/llama-context.cpp sched_reserve, PR
#16748) and the GPU count a llama.cpp log lists (oomkit.diagnose.pipeline_retry, gpu_count).

Real records: sv-lcpp-pr26297-minimax-compute (dev2: a 50.5 GiB compute buffer on device 1
fails with pipeline parallelism on, llama.cpp retries without it and the server initialises;
the run had 3 GPUs, the excerpt lists none) and h23-llama.cpp-23679 (heldout23: the retry's
own 1.46 GiB allocation fails too and the load exits).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.cli import main
from oomkit.diagnose.doctor import diagnose_text

_CORPUS = Path(__file__).parent / "fixtures" / "oom_corpus"


def _record(part: str, rid: str) -> str:
    for line in (_CORPUS / part).read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["id"] == rid:
            return str(r["text"])
    raise AssertionError(rid)


_PR26297 = _record("dev2_serving.jsonl", "sv-lcpp-pr26297-minimax-compute")


def test_recovered_load_is_said_to_have_recovered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(_PR26297)
    assert main(["doctor", "--json", str(log)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["explanation"].startswith("The load recovered: with pipeline parallelism on, "), d
    assert "50.54 GiB compute buffer on CUDA1" in d["explanation"]
    assert "the cost is speed" in d["explanation"]
    # the run had 3 GPUs; the excerpt lists none, so no count is stated or guessed
    assert "on the devices the log names" in d["explanation"]
    assert "all 2 devices" not in d["explanation"]
    commands = [c for f in d["fixes"] for c in f["commands"]]
    assert not any(c.startswith("-ts 1,") for c in commands), commands


def test_listed_gpu_count_sizes_the_split() -> None:
    d = diagnose_text("ggml_cuda_init: found 3 CUDA devices:\n" + _PR26297)
    assert "loaded on all 3 devices" in d.explanation
    assert any("-ts 1,0.5,1" in c for f in d.fixes for c in f.commands)


def test_using_device_lines_count_the_gpus() -> None:
    listed = "".join(
        f"llama_model_load_from_file_impl: using device CUDA{k} (NVIDIA GeForce RTX 3090) - "
        "23000 MiB free\n"
        for k in range(3)
    )
    d = diagnose_text(listed + _PR26297)
    assert "loaded on all 3 devices" in d.explanation


def test_a_later_failure_is_the_one_diagnosed() -> None:
    text = _record("heldout23_serving.jsonl", "h23-llama.cpp-23679")
    d = diagnose_text(text)
    assert [round((e.requested_bytes or 0) / 2**20, 2) for e in d.events] == [1495.76]
    assert not d.explanation.startswith("The load recovered")


def test_retry_with_no_start_line_and_no_later_error() -> None:
    cut = _PR26297.rsplit("\n", 1)[0]  # ends at the retry line
    assert cut.endswith("retrying without pipeline parallelism")
    d = diagnose_text(cut)
    assert d.explanation.startswith("The load recovered")
    assert "no later error follows in the log" in d.explanation
