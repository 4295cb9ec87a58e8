"""A rejected SGLang plan candidate says which ``--mem-fraction-static`` raise the planner
considered (revfix21d item 5): its reason used to be the default fraction's alone ("weights
exceed mem_fraction_static", "KV pool vs one request") even where the raise was weighed and
refused by SGLang's activation floor (docs/advanced_features/hyperparameter_tuning.md:
"reserving 5-8 GB of memory for activations is typically sufficient"; planner/sglang_fraction.py).
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def _rejected(capsys: pytest.CaptureFixture[str], vram: str) -> list[str]:
    code, out, err = run_cli(
        capsys,
        "plan",
        "llama-3.1-8b",
        "-r",
        "sglang",
        "--vram",
        vram,
        "--quant",
        "bf16",
        "--min-quant",
        "bf16",
        "-c",
        "8192",
        "--min-ctx",
        "8192",
        "--offline",
        "--json",
    )
    assert code == 3, err
    return [r["reason"] for r in json.loads(out)["rejected"]]


def test_pool_short_reason_names_the_raise_not_tried(capsys: pytest.CaptureFixture[str]) -> None:
    reason = _rejected(capsys, "19GiB")[0]
    assert reason.startswith("at SGLang's default --mem-fraction-static 0.808: Tight")
    assert (
        "no raise of --mem-fraction-static was tried: 0.89 would leave under 5 GiB outside it "
        "for activations (SGLang's tuning guide; at most 0.73 keeps it"
    ) in reason


def test_weights_over_the_default_name_the_floor(capsys: pytest.CaptureFixture[str]) -> None:
    reason = _rejected(capsys, "16GiB")[0]
    assert "weights exceed mem_fraction_static of the GPU" in reason
    assert "at most 0.68 keeps it: the default 0.772 already leaves less" in reason
