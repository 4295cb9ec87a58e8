"""The JSON API takes the draft model (``draft_model``) like MODEL: catalog names only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the web API is the [web] extra")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient

from oomkit.web.app import create_app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def test_catalog_draft_is_estimated(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": 8192, "draft_model": "qwen2.5-0.5b"}
    r = client.post("/api/estimate", json={**body, "draft_ngl": 99, "draft_quant": "Q8_0"})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["runtime_details"]["draft"]["model"] == "qwen2.5-0.5b"
    # qwen2.5-0.5b: 24 layers x 2 KV heads x 64 x (K + V) x 2 bytes per cell, 8192 cells
    cuda0 = doc["runtime_details"]["draft"]["devices"]["cuda:0"]
    # llama-server's -np auto: 4 slots on one unified cache, and init() gives each slot its own
    # draft context of n_ctx_seq (= n_ctx when unified) cells (oomkit.estimate.llamacpp_draft)
    assert cuda0["draft KV cache"] == 4 * 24 * 2 * 64 * 2 * 2 * 8192
    r = client.post("/api/estimate", json={**body, "draft_ngl": 99, "draft_quant": "Q8_0",
                                           "parallel": 1})  # fmt: skip
    assert r.status_code == 200, r.text
    one = r.json()["runtime_details"]["draft"]["devices"]["cuda:0"]
    assert one["draft KV cache"] == 24 * 2 * 64 * 2 * 2 * 8192


@pytest.mark.parametrize("ref", ["/etc/passwd", "../x/draft.gguf", "draft.gguf"])
def test_draft_path_is_refused(client: TestClient, ref: str) -> None:
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "draft_model": ref})
    assert r.status_code == 404, r.text
    detail = r.json()["detail"]
    assert "does not read files" in detail
    assert "\n" not in detail
