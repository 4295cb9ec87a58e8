"""The doctor over the whole public OOM corpus (issue 9): every record is recognised as an OOM,
no two fixes of one diagnosis contradict, and no top fix needs hardware the log does not show.

Parts are discovered from the file names (``<part>_<family>.jsonl``). Held-out files
(``heldout*``) are read here only to run these invariants; the test prints nothing from them
(assertion messages carry counts and record ids of the development files only).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.consistency import contradictions, hardware_top_fix, label_hardware
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import Fix, rank

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "oom_corpus"
OOM_DEV = (
    ROOT.parent / "shared" / "validation" / "oom_dev.jsonl",
    Path("/work/shared/validation/oom_dev.jsonl"),
)


def _records(pattern: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for path in sorted(CORPUS.glob(pattern)):
        out.extend(
            json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()
        )
    return out


def _oom_dev() -> list[dict[str, object]]:
    for p in OOM_DEV:
        if p.exists():
            return [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    return []


DECIDE = ("decide", "oomkit gpus", "confirm", "would ", "instead")


def _parts() -> dict[str, list[dict[str, object]]]:
    """Every corpus part ``<part>_<family>.jsonl`` found here, plus ``oom_dev``."""
    names = {p.name.split("_", 1)[0] for p in CORPUS.glob("*_*.jsonl")}
    out = {name: _records(f"{name}_*.jsonl") for name in sorted(names)}
    out["oom_dev"] = _oom_dev()
    return out


PARTS = _parts()


@pytest.mark.parametrize("part", sorted(PARTS))
def test_corpus_invariants(part: str) -> None:
    records = PARTS[part]
    if not records:
        pytest.skip(f"no {part} records here")
    unrecognised: list[str] = []
    contra = 0
    hw_top = 0
    undecided = 0
    for rec in records:
        d = diagnose_text(str(rec.get("text", "")))
        if not d.oom_found:
            unrecognised.append(str(rec.get("id")))
        contra += len(contradictions(d))
        hw_top += hardware_top_fix(d)
        # an ambiguous diagnosis says what extra fact would decide it
        undecided += (
            d.oom_found and d.confidence < 0.6 and not any(w in d.explanation for w in DECIDE)
        )
    heldout = part.startswith("heldout")
    # a held-out part's recognition is a score: not even its count is printed here (a fresh
    # part's figure must first be seen when it is scored, benchmarks/doctor_corpus.py --part P)
    shown = unrecognised if not heldout else ["not shown for a held-out part"]
    if heldout:
        # recognition on the held-out part is a score (benchmarks/doctor_corpus.py), not a
        # rule this test may push toward: only the structural guarantees are asserted there
        unrecognised = []
    assert (len(unrecognised), contra, hw_top, undecided) == (0, 0, 0, 0), (
        f"{part}: not recognised as an OOM: {shown}; {contra} contradicting fix pair(s); "
        f"{hw_top} diagnosis(es) whose top fix needs more hardware; {undecided} low-confidence "
        "diagnosis(es) without a deciding fact"
    )


def test_hardware_fix_ranks_last_and_is_labelled() -> None:
    tp = Fix(
        title="Shard over 2 GPUs: --tensor-parallel-size 2",
        why="",
        commands=(),
        expected_saving_bytes=10 << 30,
    )
    small = Fix(
        title="Halve the context: -c 4096",
        why="",
        commands=("-c 4096",),
        expected_saving_bytes=1 << 30,
    )
    ranked = rank(label_hardware([tp, small]))
    assert [f.title for f in ranked] == [
        "Halve the context: -c 4096",
        "Hardware change: Shard over 2 GPUs: --tensor-parallel-size 2",
    ]
    assert ranked[1].hardware
    assert ranked[1].to_dict()["hardware"] is True


def test_vllm_torch_oom_with_profiling_keeps_one_utilization_direction() -> None:
    # a CUDA OOM after vLLM profiled memory: the rule lowers --gpu-memory-utilization for
    # headroom; nothing in the same diagnosis may raise it
    log = (
        "INFO 03-27 10:29:01 [worker.py:267] the current vLLM instance can use total_gpu_memory "
        "(44.53GiB) x gpu_memory_utilization (0.98) = 43.64GiB\n"
        "INFO 03-27 10:29:01 [worker.py:267] model weights take 20.64GiB; non_torch_memory takes "
        "0.28GiB; PyTorch activation peak memory takes 1.52GiB; the rest of the memory reserved "
        "for KV Cache is 21.20GiB.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 44.53 GiB of which 448.00 KiB is free.\n"
    )
    d = diagnose_text(log)
    assert d.cause == "batch_or_activations"
    assert contradictions(d) == []
    assert not hardware_top_fix(d)
