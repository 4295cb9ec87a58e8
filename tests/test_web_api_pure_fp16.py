"""Pure fp16 training (``mixed_precision: fp16`` without master weights) is refused by one
check, :func:`oomkit.estimate.training_precision.check_pure_fp16`, wherever it is asked: the
JSON API of ``oomkit serve`` (estimate and plan), the CLI it runs, and the Python API
(``oomkit.estimate_training``), which answered it with a memory figure."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient

import oomkit
from oomkit.catalog.models import find_model
from oomkit.errors import InvalidSettingError
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings
from oomkit.web.app import create_app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


@pytest.mark.parametrize("endpoint", ["/api/estimate", "/api/plan"])
@pytest.mark.parametrize("off", [{"master_weights": False}, {"no_master_weights": True}])
def test_api_refuses_pure_fp16(client: TestClient, endpoint: str, off: dict[str, bool]) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "train": "full", "mixed_precision": "fp16"}
    r = client.post(endpoint, json={**body, **off})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "pure fp16 training fails" in detail
    assert "GradScaler" in detail


def test_api_keeps_fp16_with_master_weights(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "train": "full", "mixed_precision": "fp16"}
    assert client.post("/api/estimate", json=body).status_code == 200


def test_python_api_refuses_pure_fp16() -> None:
    spec = find_model("llama-3.1-8b").spec()
    hw = Hardware(devices=(find_gpu("h100-sxm").to_device_target(),))
    with pytest.raises(InvalidSettingError, match="pure fp16 training fails"):
        oomkit.estimate_training(
            spec, TrainingSettings(mixed_precision="fp16", master_weights=False), hw
        )
    # pure bf16 (torchtune's dtype: bf16) stays a valid run
    oomkit.estimate_training(
        spec, TrainingSettings(mixed_precision="bf16", master_weights=False), hw
    )
