"""PyTorch's CUDA caching allocator holding the weights of a transformers load (torch_blocks).

Rules (c10/cuda/CUDACachingAllocator.cpp): requests rounded to 512 B; a new segment is 2 MiB
(<= 1 MiB), 20 MiB (< 10 MiB) or the request rounded up to 2 MiB; a cached rest is reused
best-fit; a large-pool block is split only when MORE than 1 MiB would remain.

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
from oomkit.estimate.torch_blocks import allocation_units, reserved_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.spec.model import TensorInfo
from oomkit.spec.settings import InferenceSettings

MiB = 1 << 20
LABEL = "caching allocator rounding of the weights"
RUNS = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout13.jsonl"


def test_large_request_keeps_whole_segment_when_at_most_1mib_left() -> None:
    assert reserved_bytes([15 * MiB]) == 16 * MiB  # rest 1 MiB: not split, kept whole
    assert reserved_bytes([15 * MiB] * 4) == 64 * MiB
    assert reserved_bytes([32 * MiB]) == 32 * MiB  # already a multiple of 2 MiB
    # 14.5 MiB: segment 16 MiB, rest 1.5 MiB split off and cached; a later 1.5 MiB request
    # is served from it (best fit), no new segment
    assert reserved_bytes([14 * MiB + MiB // 2, MiB + MiB // 2]) == 16 * MiB


def test_mid_requests_share_20mib_segments() -> None:
    # 3 MiB requests (Qwen3-30B-A3B's 2048 x 768 bf16 experts): six per 20 MiB segment, the
    # 2 MiB rest fits no seventh
    assert reserved_bytes([3 * MiB] * 6) == 20 * MiB
    assert reserved_bytes([3 * MiB] * 7) == 40 * MiB


def test_small_requests_pack_2mib_segments() -> None:
    assert reserved_bytes([600 * 1024] * 3) == 2 * MiB
    assert reserved_bytes([600 * 1024] * 4) == 4 * MiB
    assert reserved_bytes([100]) == 2 * MiB  # rounded to 512 B, in a 2 MiB segment


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
