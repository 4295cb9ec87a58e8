"""``oomkit models --fits``: every catalog model is accounted for, with a reason when it is out."""

from __future__ import annotations

import json

import pytest

import oomkit
from oomkit.catalog.models import search_models
from oomkit.cli import main
from oomkit.planner.reverse import fits_report
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings


def _h100() -> Hardware:
    return Hardware(devices=(oomkit.find_gpu("h100-sxm5-80gb").to_device_target(),))


@pytest.mark.parametrize("runtime", ["vllm", "llama.cpp"])
def test_every_catalog_model_is_in_exactly_one_list(runtime: str) -> None:
    r = fits_report(_h100(), runtime=runtime)
    keys = [m.key for m in r.fits] + [m.key for m in r.not_fitting + r.unsupported]
    assert sorted(keys) == sorted(e.key for e in search_models(None))
    assert len(keys) == len(set(keys))
    assert all(m.reason for m in r.not_fitting + r.unsupported)
    # a model that does not fit really does not: its reason names the shortfall
    assert all(("needs" in m.reason or "at least" in m.reason) for m in r.not_fitting)


def test_prequantized_checkpoints_are_compared_as_they_ship() -> None:
    """gpt-oss ships MXFP4 experts: the shop list starts from the checkpoint's own format,
    and the row's quant is what `estimate -q` takes, which fits there too."""
    hw = _h100()
    r = fits_report(hw, runtime="vllm", query="gpt-oss")
    rows = {m.key: m for m in r.fits}
    assert {"gpt-oss-20b", "gpt-oss-120b"} <= set(rows)
    for key, m in rows.items():
        assert m.quant == "mxfp4"
        est = oomkit.estimate_model(key, InferenceSettings(runtime="vllm", ctx=m.ctx), hw)
        assert est.fits is True
        again = InferenceSettings(runtime="vllm", ctx=m.ctx, quant=m.quant)
        assert oomkit.estimate_model(key, again, hw).fits is True
    # DeepSeek-V3's FP8 checkpoint (671 B) is not silently dropped: it does not fit, says why
    miss = {
        m.key: m.reason for m in fits_report(hw, runtime="vllm", query="deepseek-v3").not_fitting
    }
    assert "deepseek-v3" in miss
    assert miss["deepseek-v3"].startswith("checkpoint at 4096 tokens")


def test_cli_json_lists_the_misses(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["models", "--fits", "h100-sxm5-80gb", "-r", "vllm", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {m["model"] for m in doc["models"]}
    assert {"gpt-oss-20b", "gpt-oss-120b"} <= names
    out = {m["model"] for m in doc["not_fitting"] + doc["unsupported_models"]}
    assert names | out == {e.key for e in search_models(None)}
    assert doc["unsupported"] == len(doc["unsupported_models"])
