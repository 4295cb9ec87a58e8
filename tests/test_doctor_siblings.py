"""Sibling workers of one job listed on GPU 0 (rules_siblings)."""

from __future__ import annotations

import re

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


def test_consecutive_pids_on_gpu0_are_one_jobs_workers() -> None:
    # h2-vita-83-same-gpu: two vLLM engines both loaded on GPU 0 (CUDA_VISIBLE_DEVICES set too
    # late); NVML lists their processes, forked back to back
    d = diagnose_text(corpus_text("h2-vita-83-same-gpu"))
    assert d.cause == "multi_gpu_imbalance"
    assert d.confidence == 0.5
    assert "consecutive" in d.explanation
    assert "nvidia-smi" in d.explanation


def _renumber(text: str, pids: dict[str, str]) -> str:
    return re.sub(r"Process (\d+)", lambda m: f"Process {pids.get(m[1], m[1])}", text)


def test_unrelated_pids_stay_other_processes() -> None:
    text = corpus_text("h2-vita-83-same-gpu")
    far = _renumber(text, {"4042163": "911", "4045381": "2200731"})
    d = diagnose_text(far)
    assert d.cause == "other_process_holding_memory"


def test_siblings_on_another_gpu_are_not_read_as_placement() -> None:
    text = corpus_text("h2-vita-83-same-gpu").replace("GPU 0 has", "GPU 3 has")
    d = diagnose_text(text)
    assert d.cause == "other_process_holding_memory"


def test_pids_a_hundred_apart_are_not_siblings() -> None:
    # h4-vary-52: 1027252, 1027451, 1027562 were started at different times
    d = diagnose_text(corpus_text("h4-vary-52"))
    assert d.cause == "model_too_large"
