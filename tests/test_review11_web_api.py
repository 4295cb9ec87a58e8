"""Hostile bodies at ``oomkit serve``'s JSON API (review11), through FastAPI's TestClient: a body
over the limit is a 413 whose advice fits the route (an estimate request was told to "paste
only the part of the log around the out-of-memory error"), and the fine-tuner's refusals come
back as one-line 4xx details, never a 200 for settings the estimate ignored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient

from oomkit.web.app import MAX_BODY_BYTES, create_app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def test_413_advice_fits_the_route(client: TestClient) -> None:
    big = "x" * (MAX_BODY_BYTES + 1)
    r = client.post("/api/estimate", content=f'{{"model": "{big}"}}',
                    headers={"content-type": "application/json"})  # fmt: skip
    assert r.status_code == 413
    assert "log" not in r.json()["detail"]
    assert "JSON object" in r.json()["detail"]
    r = client.post("/api/doctor", content=big, headers={"content-type": "text/plain"})
    assert r.status_code == 413
    assert "log" in r.json()["detail"]


def test_fsdp_optimizer_only_offload_is_a_4xx(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "2xa100-80gb", "train": "full",
            "fsdp": "full_shard", "offload_optimizer": True}  # fmt: skip
    r = client.post("/api/estimate", json=body)
    assert 400 <= r.status_code < 500, r.text
    detail = r.json()["detail"]
    assert "\n" not in detail
    assert "offload" in detail
