"""web23: ``/api/gpu-name`` reads a name as ``--gpu`` does (aliases, counts), so a link's
``gpu=h100`` picks the H100 on the page; an unknown name is the CLI's one-line error."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")

from fastapi.testclient import TestClient

from oomkit.cli.params import parse_gpu_list
from oomkit.web.app import create_app


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


@pytest.mark.parametrize("name", ["h100", "2x4090", "rtx-4090", "a100-80gb,rtx-3090"])
def test_names_are_the_clis(client: TestClient, name: str) -> None:
    r = client.get("/api/gpu-name", params={"name": name})
    assert r.status_code == 200
    assert r.json()["gpus"] == [g.key for g in parse_gpu_list(name)]


def test_h100_is_not_the_default_card(client: TestClient) -> None:
    assert client.get("/api/gpu-name", params={"name": "h100"}).json()["gpus"] == ["h100-sxm"]


def test_unknown_name_is_one_line(client: TestClient) -> None:
    r = client.get("/api/gpu-name", params={"name": "no-such-gpu"})
    assert r.status_code == 404
    assert r.json()["detail"].startswith("Unknown GPU 'no-such-gpu'")
    assert "\n" not in r.json()["detail"]
    assert client.get("/api/gpu-name", params={"name": "0xh100"}).status_code == 422
