"""Errors about the draft model (and the KV cache types) name the flag the user typed, in the
CLI and the JSON API, never a library field (``draft_devices``, ``'cache_type_k'``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

_MAIN = ["llama-3.1-70b", "--gpu", "2x3090", "-md", "llama-3.2-1b"]


def _estimate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "flag", "internal"),
    [
        (["-ctkd", "q9"], "-ctkd ('q9')", "cache_type_k"),
        (["-ctvd", "zz"], "-ctvd ('zz')", "cache_type_v"),
        (["-ctvd", "q4_0", "--no-flash-attn"], "-ctvd (q4_0)", "cache_type_v"),
        (["-devd", "5"], "-devd 5", "draft_devices"),
        (["--runtime-version", "b3000"], "--draft-model/-md", "draft_model"),
    ],
)
def test_cli_draft_errors_name_the_flag(args: list[str], flag: str, internal: str) -> None:
    line = _error(_estimate(*_MAIN, *args))
    assert flag in line
    assert internal not in line


@pytest.mark.parametrize(
    ("args", "flag"),
    [(["-ctk", "q9"], "-ctk/--kv-dtype ('q9')"), (["--kv-dtype", "q9"], "-ctk/--kv-dtype")],
)
def test_cli_kv_type_errors_name_the_flag(args: list[str], flag: str) -> None:
    line = _error(_estimate("llama-3.1-8b", *args))
    assert flag in line
    assert "cache_type" not in line


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    pytest.importorskip("fastapi", reason="the web API is the [web] extra")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    with TestClient(create_app()) as c:
        yield c


def test_api_draft_ctx_takes_a_number_like_ctx(client: object) -> None:
    from fastapi.testclient import TestClient

    assert isinstance(client, TestClient)
    body = {"model": "llama-3.1-70b", "gpu": "2x3090", "draft_model": "llama-3.2-1b"}
    as_int = client.post("/api/estimate", json={**body, "draft_ctx": 4096})
    as_text = client.post("/api/estimate", json={**body, "draft_ctx": "4k"})
    assert as_int.status_code == 200, as_int.text
    assert as_text.status_code == 200, as_text.text
    assert as_int.json() == as_text.json()
    assert as_int.json()["settings"]["draft_ctx"] == 4096


def test_api_draft_error_names_the_field(client: object) -> None:
    # the web API names its form field, not the CLI flag (webfix15); the CLI keeps "-devd"
    from fastapi.testclient import TestClient

    assert isinstance(client, TestClient)
    body = {"model": "llama-3.1-70b", "gpu": "2x3090", "draft_model": "llama-3.2-1b"}
    r = client.post("/api/estimate", json={**body, "device_draft": "5"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("'device_draft' 5: the target has 2 GPU(s)")
    r = client.post("/api/estimate", json={**body, "cache_type_k_draft": "q9"})
    assert r.status_code == 422, r.text
    assert "'cache_type_k_draft' ('q9')" in r.json()["detail"]
