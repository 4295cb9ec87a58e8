"""Training options that name old behaviour: --softmax-saves-input is settable (CLI and web),
--runtime-version is refused with --train (training has no runtime generations)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import oomkit
from oomkit.cli import main
from oomkit.estimate.training import estimate_training
from oomkit.spec.settings import TrainingSettings

_BERT = ["bert-large-uncased", "--train", "full", "--attn-implementation", "eager"]
_BERT += ["--mixed-precision", "no", "--micro-batch", "4", "--seq", "512", "--gpu", "h100"]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_runtime_version_is_refused_with_train(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("estimate", "plan"):
        assert main([cmd, *_BERT, "--runtime-version", "1.10", "--offline"]) == 2
        err = capsys.readouterr().err
        assert "--runtime-version cannot be used with --train" in err
        assert "training has no runtime generations" in err
        assert "Traceback" not in err


def test_softmax_saves_input_reaches_the_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    code, today = _json(capsys, ["estimate", *_BERT, "--offline", "--json"])
    code_old, old = _json(
        capsys, ["estimate", *_BERT, "--softmax-saves-input", "--offline", "--json"]
    )
    assert (code, code_old) == (0, 0)
    assert today["settings"]["softmax_saves_input"] is False
    assert old["settings"]["softmax_saves_input"] is True
    # the CLI's number is the API's number for the same settings
    spec = oomkit.load_model("bert-large-uncased", offline=True)
    s = TrainingSettings(
        mixed_precision="no", micro_batch=4, seq=512, attn_implementation="eager",
        softmax_saves_input=True,
    )  # fmt: skip
    hw = oomkit.Hardware(devices=(oomkit.find_gpu("h100").to_device_target(),))
    est = estimate_training(spec, s, hw)
    assert old["devices"][0]["total_bytes"] == est.devices[0].total_bytes
    assert old["devices"][0]["total_bytes"] > today["devices"][0]["total_bytes"]


def test_softmax_saves_input_is_a_web_key() -> None:
    """DESIGN.md: web keys are the CLI's long options in snake_case."""
    pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    body = {
        "model": "bert-large-uncased", "train": "full", "attn_implementation": "eager",
        "micro_batch": 4, "seq": 512, "gpu": "h100",
    }  # fmt: skip
    with TestClient(create_app()) as c:
        today = c.post("/api/estimate", json=body)
        old = c.post("/api/estimate", json={**body, "softmax_saves_input": True})
        refused = c.post("/api/estimate", json={**body, "runtime_version": "1.10"})
    assert today.status_code == old.status_code == 200, old.text
    assert old.json()["settings"]["softmax_saves_input"] is True
    assert old.json()["total_bytes"] > today.json()["total_bytes"]
    assert 400 <= refused.status_code < 500
    assert "training has no runtime generations" in refused.json()["detail"]
