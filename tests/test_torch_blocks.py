"""PyTorch's CUDA caching allocator holding the weights of a transformers load (torch_blocks).

Rules (c10/cuda/CUDACachingAllocator.cpp): requests rounded to 512 B; a new segment is 2 MiB
(<= 1 MiB), 20 MiB (< 10 MiB) or the request rounded up to 2 MiB; a cached rest is reused
best-fit; a large-pool block is split only when MORE than 1 MiB would remain (else the request
holds the whole block: that rest is the slack counted).

The real run: DeepSeek-Coder-V2#30 (heldout13, `tf-dscv2-30-*`), DeepSeek-V2 bf16 on 8x A100
80GB with the 2024 remote code, whose routed experts are one ``nn.Linear`` each
(5120 x 1536 bf16 = exactly 15 MiB, so each keeps a whole 16 MiB segment).
"""

from __future__ import annotations

import json
from pathlib import Path

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.torch_blocks import allocation_units, held_slack_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.spec.model import TensorInfo
from oomkit.spec.settings import InferenceSettings

MiB = 1 << 20
LABEL = "caching allocator rounding of the weights"
RUNS = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout13.jsonl"


def test_large_request_keeps_whole_segment_when_at_most_1mib_left() -> None:
    assert held_slack_bytes([15 * MiB]) == MiB  # rest 1 MiB: not split, kept whole
    assert held_slack_bytes([15 * MiB] * 4) == 4 * MiB
    assert held_slack_bytes([32 * MiB]) == 0  # already a multiple of 2 MiB
    # 14.5 MiB: segment 16 MiB, rest 1.5 MiB split off and cached (free, not counted); a
    # later 1.5 MiB request is served from it exactly
    assert held_slack_bytes([14 * MiB + MiB // 2, MiB + MiB // 2]) == 0
    # 9.5 MiB twice from one 20 MiB segment: the second leaves 1 MiB, kept whole
    assert held_slack_bytes([9 * MiB + MiB // 2] * 2) == MiB


def test_mid_requests_split_20mib_segments() -> None:
    # 5.5 MiB (DeepSeek-V2-Lite's 2048 x 1408 bf16 experts): rests of 14.5, 9 and 3.5 MiB are
    # all split off; the 3.5 MiB rest is free for later requests, not held
    assert held_slack_bytes([11 * MiB // 2] * 3) == 0
    assert held_slack_bytes([3 * MiB] * 7) == 0


def test_small_requests_round_to_512_bytes() -> None:
    assert held_slack_bytes([600 * 1024] * 4) == 0
    assert held_slack_bytes([100]) == 412
    assert held_slack_bytes([MiB - 100]) == 100  # the rest of its 2 MiB segment is split off


def test_stacked_experts_are_one_request_each_in_the_loop_generation() -> None:
    t = TensorInfo(
        name="blk.1.ffn_up_exps.weight", shape=(4, 1536, 5120), role="ffn_up_exps.weight", layer=1
    )
    size = 4 * 15 * MiB
    assert allocation_units([t], [size], per_expert=True) == [15 * MiB] * 4
    assert allocation_units([t], [size], per_expert=False) == [size]


def _dscv2(runtime_version: str | None) -> Estimate:
    rec = next(
        json.loads(ln)
        for ln in RUNS.read_text().splitlines()
        if ln.strip() and json.loads(ln)["id"].startswith("tf-dscv2-30-")
    )
    settings = InferenceSettings(
        runtime="transformers",
        quant=rec["quant"],
        ctx=rec["ctx"],
        runtime_version=runtime_version or rec["date"],
        **rec["settings"],
    )
    hw = hardware_for(parse_gpu_list(rec["gpu"]), n_devices=1)
    return estimate(rec["model"], settings, hw, offline=True)


def _rounding(est: Estimate, device: str) -> int:
    d = next(d for d in est.devices if d.device == device)
    return next(c.n_bytes for c in d.components if c.label == LABEL)


def test_deepseek_v2_experts_on_the_last_gpu() -> None:
    est = _dscv2(None)
    last = est.devices[-1]
    assert last.device == "cuda:7"
    # accelerate's plan (verff6): layers 50-59 on GPU 7, all MoE layers; each holds 160 routed
    # experts x 3 matrices of 15 MiB, each in a 16 MiB segment: 480 MiB per layer
    moe_slack = 10 * 160 * 3 * MiB
    got = _rounding(est, "cuda:7")
    assert moe_slack <= got < moe_slack + 64 * MiB
    # the plan itself counts raw bytes (unchanged by the rounding): GPU 7's total still grows
    free = last.capacity_bytes - last.total_bytes
    assert 0 < free < 1 << 30  # was +5.47 GiB without the segments


def test_fused_experts_in_transformers_5_are_one_request() -> None:
    est = _dscv2("5.0.0")
    assert _rounding(est, "cuda:7") < 64 * MiB
