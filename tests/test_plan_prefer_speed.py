"""``--prefer speed`` ranked "on the GPU or not", then exactly as quality, so it never put fp8
above bf16 where both fit, though on vLLM/SGLang fp8 weights halve the weight bytes read per
decoded token. It now ranks by the planner's own decode estimate (oomkit.planner.speed) after
"on the GPU" and the context deficit; the default (quality) ranking is unchanged."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main
from oomkit.planner.knobs import Candidate
from oomkit.planner.ranking import rank_key

ARGS = ["plan", "llama-3.1-70b", "-r", "vllm", "--gpu", "2xh100-sxm", "--ctx", "32k", "--json"]


def _plans(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, object]]:
    assert main([*ARGS, *extra]) == 0
    plans: list[dict[str, object]] = json.loads(capsys.readouterr().out)["plans"]
    return plans


def _quant(p: dict[str, object]) -> object:
    settings = p["settings"]
    assert isinstance(settings, dict)
    return settings["quant"]


def _tps(p: dict[str, object]) -> float:
    speed = p["speed"]
    assert isinstance(speed, dict)
    return float(speed["decode_tokens_per_s"])


def test_speed_puts_fp8_first_on_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    plans = _plans(capsys, "--prefer", "speed")
    assert _quant(plans[0]) == "fp8"
    bf16 = [p for p in plans if _quant(p) == "bf16"]
    assert bf16, plans
    assert _tps(plans[0]) > _tps(bf16[0])


def test_quality_ranking_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    plans = _plans(capsys)
    assert [_quant(p) for p in plans[:2]] == ["bf16", "fp8"]


def test_rank_key_speed_orders_by_decode_estimate() -> None:
    kw = {"ladder": ["bf16", "fp8"], "kvs": ["auto"], "target_ctx": 4096, "n_layer": 32}
    bf16 = Candidate(quant="bf16", kv="auto", ctx=4096)
    fp8 = Candidate(quant="fp8", kv="auto", ctx=4096)
    short = Candidate(quant="fp8", kv="auto", ctx=2048)

    def key(c: Candidate, tps: float | None, prefer: str = "speed") -> tuple[float, ...]:
        return rank_key(c, prefer=prefer, decode_tps=tps, **kw)  # type: ignore[arg-type]

    assert key(fp8, 40.0) < key(bf16, 28.0)
    assert key(bf16, 28.0) < key(short, 80.0)  # speed never buys itself with context
    assert key(bf16, None) > key(fp8, 40.0)  # no estimate: after those with one
    assert key(bf16, None) < key(fp8, None)  # none has one: as quality
    assert key(bf16, 28.0, "quality") < key(fp8, 40.0, "quality")
