"""Serving threads' wordings of a memory that ran short, and runtime codes of a failed allocation
(issue 9): ``parse_wordings_strain`` and ``parse_wordings_codes``, built on the retired held-out
parts 26 and 27. Each family reads its records' wording and stays silent on its neighbours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_codes import code_match
from oomkit.diagnose.parse_wordings_strain import strain_match

CORPUS = Path(__file__).resolve().parent / "fixtures" / "oom_corpus"

# the retired records these families were built on (heldout26/27, now development)
_RECORDS = (
    "h26-forums.developer.nvidia.com-370049",
    "h27-truss-993",
    "h27-dgx-spark-playbooks-97",
    "h27-mlx-lm-98",
    "h27-omlx-947",
    "h27-serving-1215",
    "h27-lmstudio-bug-tracker-1021",
    "h27-lmstudio-bug-tracker-1365",
    "h27-SkyRL-1768",
    "h27-Model-References-10",
)


def _records() -> dict[str, str]:
    out: dict[str, str] = {}
    for part in ("heldout26", "heldout27"):
        for f in sorted(CORPUS.glob(f"{part}_*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                if r["id"] in _RECORDS:
                    out[r["id"]] = r["text"]
    return out


@pytest.mark.parametrize("rid", _RECORDS)
def test_the_retired_records_are_recognised(rid: str) -> None:
    assert diagnose_text(_records()[rid]).oom_found, rid


_STRAIN = (
    # memory that climbs to a failure
    "Total memory consumption hits ~333GB before it's killed.",
    "Sharp increase in memory usage -> server is killed",
    "VRAM usage spikes to 23 GB and then the server crashes.",
    "RAM balloons on the second request until the container dies.",
    # no headroom left for the KV cache
    "The default of 0.9 doesn't leave enough gpu memory for non-kv cache use cases.",
    "After loading a model without enough headroom for the KV cache, the server crashes.",
    "With the weights at 70 GB there is not enough memory left for the KV cache.",
    # an allocation that fails with memory free
    "A large contiguous allocation (e.g. a weight reload) fails with plenty of free VRAM.",
    "cudaMalloc fails even though 10 GB are free.",
    # "not enough" misspelled
    "LM Studio claims not enourg VRAM to load models.",
    "It says not enogh memory for this model.",
    # a model that cannot be loaded into VRAM
    "nvidia-nemotron-3-nano-30b-a3b Unable to load to VRAM",
    "can't load the model into GPU memory anymore",
)


@pytest.mark.parametrize("text", _STRAIN)
def test_strain_wordings_are_recognised(text: str) -> None:
    assert strain_match(text, text.lower()) is not None, text
    assert diagnose_text(text).oom_found, text


_STRAIN_NEIGHBOURS = (
    "Memory usage reaches 20 GB during the first request and then stays flat.",
    "Memory usage spikes during model loading, but the server does not crash.",
    "Memory usage hit 30 GB after the warm-up, so I killed the process.",
    "Make sure to leave enough memory for the KV cache when you lower gpu_memory_utilization.",
    "A sharp increase in memory usage is expected while the CUDA graphs are captured.",
    "Unable to load the model into VRAM because the GGUF file is corrupted.",
    "LM Studio could not load the model to VRAM: unknown model architecture 'qwen35'.",
    "This flag is not entirely memory-safe on older drivers.",
)


@pytest.mark.parametrize("text", _STRAIN_NEIGHBOURS)
def test_strain_neighbours_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


# neighbours on which an older family fires (its keyword: "not enough memory", "allocation
# fail"); these families add nothing to them
_GRAMMAR_NEIGHBOURS = (
    "There is not enough memory bandwidth on this card.",
    "The kernel's allocation fails with an invalid argument when the tensor is empty.",
)


@pytest.mark.parametrize("text", _GRAMMAR_NEIGHBOURS)
def test_the_strain_grammar_stays_silent_on_older_families_neighbours(text: str) -> None:
    assert strain_match(text, text.lower()) is None, text


def test_codes_read_the_runtime_and_the_size() -> None:
    line = (
        "RuntimeError: FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size "
        "::14493510400 failed!"
    )
    m = code_match(line, line.lower())
    assert m is not None
    assert m["req_bytes"] == "14493510400"
    d = diagnose_text(line)
    assert d.primary is not None
    assert d.primary.requested_bytes == 14493510400
    nvml = (
        "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "
        '"../c10/cuda/CUDACachingAllocator.cpp":838'
    )
    assert code_match(nvml, nvml.lower()) is not None
    for quiet in (
        "Captured boot kernel journals contain no NV_ERR_NO_MEMORY, Xid, or killed-process "
        "messages.",
        "zero NV_ERR_NO_MEMORY in the last run",
        "RuntimeError: Native API failed. Native API returns: 20 (UR_RESULT_ERROR_DEVICE_LOST)",
    ):
        assert code_match(quiet, quiet.lower()) is None, quiet
