"""Phi-2 full fine-tuning's need beyond its allocated peak (issue #13, the training band).

``benchmarks/training_two_step_replay.py`` traces the two steps of
``benchmarks/gpu/training_boundary.py`` (``_train``) on fake tensors and replays them through
the caching allocator model. On Phi-2 full b2 s1024 (``training_boundary_holdout3_h100.json``)
it reproduces the allocated peak, the reserved peak and the request the real run died on: the
``_foreach_sqrt(exp_avg_sqs)`` output for the last large parameter (the 500 MiB fp32
``lm_head.weight``) in the second step's ``AdamW(foreach=True).step()``, placed after the
other parameters' temporaries were cut out of the blocks the freed activations left. It does
*not* reproduce how much the real allocator had stranded at that moment (3.41 GiB real, 1.55
GiB replayed), so its smallest card is 1.9 GiB under the measured one: no bound is derived from
it (the band is unchanged).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from typing import Any

import pytest

from gpu_results import RESULTS, ROOT
from oomkit.inprocess.probe_allocator import replay, smallest_limit

MiB = 1 << 20
GiB = 1 << 30


def _script() -> Any:
    sys.path.insert(0, str(ROOT / "src"))
    path = ROOT / "benchmarks" / "training_two_step_replay.py"
    spec = importlib.util.spec_from_file_location("training_two_step_replay", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["training_two_step_replay"] = mod  # dataclasses resolve the module by name
    spec.loader.exec_module(mod)
    return mod


def test_param_sized_temporaries_cut_from_activation_blocks_strand_the_remainders() -> None:
    """The mechanism from the allocator's rules alone: N freed 40 MiB activation blocks (each
    its own segment: a request of 10 MiB or more gets a segment of its size rounded to 2 MiB),
    then N 25 MiB optimizer temporaries (best fit: each splits a 40 MiB block and leaves a
    15 MiB free piece, ``should_split``: more than 1 MiB remains), then one 500 MiB request.
    No piece fits it and no segment is wholly free, so ``release_cached_blocks`` frees nothing:
    the card must hold N x 15 MiB of stranded pieces beyond the allocated peak."""
    n = 20
    trace = [(k, 40 * MiB) for k in range(n)] + [(k, -1) for k in range(n)]
    trace += [(100 + k, 25 * MiB) for k in range(n)] + [(999, 500 * MiB)]
    free = replay(trace)
    assert free.allocated_peak_bytes == (n * 25 + 500) * MiB
    need = smallest_limit(trace, step_bytes=MiB)
    assert need == n * 40 * MiB + 500 * MiB
    assert need - (n * 25 + 500) * MiB == n * 15 * MiB
    # without the activation blocks first, the temporaries need nothing beyond their sum
    alone = [(100 + k, 25 * MiB) for k in range(n)] + [(999, 500 * MiB)]
    assert smallest_limit(alone, step_bytes=MiB) == (n * 26 + 500) * MiB  # 25 -> 26 MiB segment


def _phi2_row() -> dict[str, Any]:
    doc = json.loads((RESULTS / "training_boundary_holdout3_h100.json").read_text())
    rows = [r for r in doc["results"] if r["model"] == "phi-2"]
    assert len(rows) == 1
    row: dict[str, Any] = rows[0]
    return row


@pytest.mark.slow
def test_phi2_two_step_replay_finds_the_real_oom_request_but_not_the_need() -> None:
    mod = _script()
    row = _phi2_row()
    tr = mod.two_step_trace("phi-2", row["batch"], row["seq"])
    kw: dict[str, Any] = {"skip": tr.skip, "cublas_workspace": True}
    peaks = replay(tr.events, **kw)
    real_alloc = row["full_card_max_allocated_bytes"]
    real_reserved = row["full_card_max_reserved_bytes"]
    assert abs(peaks.allocated_peak_bytes / real_alloc - 1) < 0.01  # 51.91 vs 51.84 GiB
    assert abs(peaks.reserved_peak_bytes / real_reserved - 1) < 0.02  # 59.20 vs 59.79 GiB
    need = smallest_limit(tr.events, step_bytes=32 * MiB, **kw)
    fail = mod.first_failure(tr, need - 32 * MiB)
    assert fail is not None
    # the real OOM: "Tried to allocate 500.00 MiB ... Of the allocated memory 51.53 GiB"
    m = re.search(r"Tried to allocate ([\d.]+) MiB.*allocated memory ([\d.]+) GiB", row["oom"])
    assert m is not None
    assert fail.request_bytes == 51200 * 2560 * 4 == float(m.group(1)) * MiB  # lm_head fp32
    assert fail.phase == "optimizer2"
    assert abs(fail.allocated_bytes - float(m.group(2)) * GiB) < 0.1 * GiB
    # every free piece is smaller than the smallest matrix parameter (2560 x 2560 fp32 = 25
    # MiB), the smallest large request of the foreach list: useless to all that follow
    assert max(fail.free_block_sizes) < 25 * MiB
    # ... but the replay strands less than the real allocator did (1.55 against 3.41 GiB), so
    # its smallest card is short of the measured need (53.56 against 55.47 GiB): when a better
    # trace closes this gap, this assertion fails and the band can be re-derived from it
    from oomkit.estimate.overhead import cuda_context_bytes
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    ctx = cuda_context_bytes("training", hardware_for((find_gpu("h100-sxm"),)).devices[0])[0]
    real_need = row["smallest_survived_bytes"] - ctx
    assert real_need - need > 1.5 * GiB


@pytest.mark.slow
def test_phi2_strands_little_when_the_activation_blocks_are_whole_multiples_of_a_weight() -> None:
    """The replay's stranding follows the remainder of the b*s-sized activation blocks over
    the 25 MiB (2560 x 2560 fp32) parameter-sized requests: at 2560 tokens the bf16 MLP
    block (b*s*10240*2 = 50 MiB) holds exactly two, and the step needs 0.43 GiB beyond its
    allocated peak; at 2048 tokens (40 MiB = 25 + 15) it needed 1.65 GiB (the test above),
    at 3072 (60 = 2 x 25 + 10) 3.97 GiB, at 4096 (80 = 3 x 25 + 5) 6.77 GiB (replayed with
    ``benchmarks/training_two_step_replay.py``; not measured on a GPU)."""
    mod = _script()
    tr = mod.two_step_trace("phi-2", 1, 2560)
    kw: dict[str, Any] = {"skip": tr.skip, "cublas_workspace": True}
    peaks = replay(tr.events, **kw)
    need = smallest_limit(tr.events, step_bytes=32 * MiB, **kw)
    assert need - peaks.allocated_peak_bytes < 0.6 * GiB
