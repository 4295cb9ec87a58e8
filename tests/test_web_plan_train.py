"""``POST /api/plan`` with ``train``: the body carries plan's defaults (``prefer: quality``), which
``plan --train`` must take, while a non-default inference search option is a 4xx naming it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient

from oomkit.web.app import create_app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def test_training_plan_answers_with_the_bodys_defaults(client: TestClient) -> None:
    body = {"model": "llama-3.2-1b", "gpu": "rtx-4090", "train": "lora"}
    r = client.post("/api/plan", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["training"] is True
    assert doc["plans"]


def test_training_plan_refuses_a_headroom(client: TestClient) -> None:
    body = {"model": "llama-3.2-1b", "gpu": "rtx-4090", "train": "lora", "headroom": "20GiB"}
    r = client.post("/api/plan", json=body)
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["detail"].startswith("'headroom' is an inference option")
