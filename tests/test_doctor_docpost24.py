"""docpost24 (issue #9, heldout48-49 retired): PaddlePaddle's OOM sentence on XPU/NPU with its
sizes, the XPU API's workspace status, faiss 1.x's cudaMalloc assertion (recognition), and host
RAM named by the machine, a data set's pre-processing or AutoGluon's memory guard (cause)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.rules_extra import names_host_memory

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from doctor_corpus import load, part_files


def _record(part: str, rid: str) -> dict[str, object]:
    return next(r for r in load(part_files(part)) if r.get("id") == rid)


@pytest.mark.parametrize(
    ("part", "rid"),
    [
        ("heldout48", "h48-faiss-648"),  # faiss 1.3's cudaMalloc assertion
        ("heldout49", "h49-PaddleDetection-4179"),  # XPU API "no enough workspace"
    ],
)
def test_retired_records_now_recognised(part: str, rid: str) -> None:
    assert diagnose_text(str(_record(part, rid)["text"])).oom_found


@pytest.mark.parametrize(
    "rid",
    [
        "h48-MAAC-14",  # "my machine memory always overflow"
        "h48-IsaacLab-5350",  # "My personal computer has 128 gigs of memory"
        "h48-ogb-46",  # `dataset = PygNodePropPredDataset(...)`
        "h48-GAMLP-5",  # "while preprocessing the papers-100M dataset"
        "h48-autogluon-3031",  # AutoGluon's pre-fit memory guard
    ],
)
def test_retired_host_ram_records(rid: str) -> None:
    assert diagnose_text(str(_record("heldout48", rid)["text"])).cause == "host_ram"


def test_paddle_places_and_sizes() -> None:
    # Paddle's HumanReadableSize divides by 1024: "1.5GB" is 1.5 GiB, not the 1.40 GiB a
    # decimal reading of the generic fallback gave before
    e = parse_log(
        "Out of memory error on NPU 1. Cannot allocate 2.000000GB memory on NPU 1, available "
        "memory is only 1.000000GB."
    ).events[0]
    assert (e.format, e.device, e.requested_bytes, e.free_bytes, e.detail) == (
        "paddle_out_of_memory",
        1,
        2 * 1024**3,
        1024**3,
        "NPU",
    )
    e = parse_log("Out of memory error on XPU 0. Cannot allocate 1.5GB memory on XPU 0.").events[0]
    assert (e.format, e.requested_bytes) == ("paddle_out_of_memory", int(1.5 * 1024**3))
    a = diagnose_text("Out of memory error on XPU 0. Cannot allocate 1.5GB memory on XPU 0.")
    assert "on the XPU" in a.explanation
    # the GPU sentence is read as before
    g = parse_log(
        "Out of memory error on GPU 0. Cannot allocate 1.953125GB memory on GPU 0, 14.653931GB "
        "memory has been allocated and available memory is only 1.118347GB."
    ).events[0]
    assert g.device == 0
    assert g.detail is None
    assert g.allocated_bytes is not None


@pytest.mark.parametrize(
    "text",
    [
        "ExternalError: XPU conv kernel return wrong value[1 xpu api invalid param]",
        "ExternalError: XPU conv kernel return wrong value[2 xpu api runtime error]",
        "cudaMalloc(p, size) == cudaSuccess",
        "details: Failed to cudaMalloc 1024 bytes (error 1 invalid argument)",
    ],
)
def test_near_misses_not_recognised(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "my machine memory always overflow when I run it",
        "My personal computer has 128 gigs of memory and the scenes exhaust this memory",
        "I get an out of memory error while preprocessing the papers-100M dataset",
        "I run out of memory by running `dataset = PygNodePropPredDataset('ogbn-papers100M')`",
        "Warning: Not enough memory to safely train model, roughly requires: 9.4 GB, but only "
        "9.6 GB is available...",
        "Not enough memory to train LightGBM... Skipping this model.",
    ],
)
def test_host_machine_wordings(text: str) -> None:
    assert names_host_memory(text)


@pytest.mark.parametrize(
    "text",
    [
        # a GPU word on the line still vetoes (the card's memory, not the machine's)
        "my machine memory is fine but the GPU ran out of memory",
        "CUDA out of memory while loading the dataset",
        "my computer has 24 GB of VRAM and it runs out of memory",
        # the model, not a data set; a machine named without its memory
        "out of memory while loading the model",
        "out of memory on my machine during the first step on the GPU",
        # prose about training memory in general (not AutoGluon's guard)
        "there is not enough memory to train a 70B model",
    ],
)
def test_host_machine_near_misses(text: str) -> None:
    assert not names_host_memory(text)
