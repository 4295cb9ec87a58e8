"""``oomkit plan`` and ``POST /api/plan`` take llama-server's draft model like ``estimate``:
every candidate carries the draft, the command has its flags, and the plan's numbers are the
numbers ``oomkit estimate`` gives for that command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

_MAIN = ["llama-3.1-70b", "--gpu", "2x3090"]
_DRAFT = ["-md", "llama-3.2-1b", "-cd", "4096"]


def _oomkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _totals(devices: list[dict[str, Any]]) -> list[int]:
    return [d["total_bytes"] for d in devices]


def test_plan_carries_the_draft_and_matches_estimate() -> None:
    res = _oomkit("plan", *_MAIN, *_DRAFT, "--ctx", "16k", "--json")
    assert res.returncode == 0, res.stderr
    best = json.loads(res.stdout)["plans"][0]
    s = best["settings"]
    assert s["draft_model"] == "llama-3.2-1b"
    assert s["draft_ctx"] == 4096
    assert " -md llama-3.2-1b-Q4_K_M.gguf -cd 4096" in best["command"]
    labels = {c["label"] for d in best["devices"] for c in d["components"]}
    assert "draft model weights" in labels
    # the same configuration through `estimate` (the plan's own settings, as flags)
    args = ["-q", s["quant"], "-c", str(s["ctx"]), "-ngl", str(s["n_gpu_layers"])]
    if s.get("cache_type_k"):
        args += ["-ctk", s["cache_type_k"], "-ctv", s["cache_type_v"]]
    est = _oomkit("estimate", *_MAIN, *args, *_DRAFT, "--json")
    assert est.returncode in (0, 4), est.stderr
    assert _totals(json.loads(est.stdout)["devices"]) == _totals(best["devices"])


def test_the_draft_costs_the_main_model_room() -> None:
    """A 70B on one 24 GB card: the draft's weights and buffers leave fewer main layers."""
    common = ["plan", "llama-3.1-70b", "--gpu", "rtx-4090", "--ram", "64GiB", "--ctx", "32k"]
    without = json.loads(_oomkit(*common, "--json").stdout)["plans"][0]
    with_draft = json.loads(_oomkit(*common, "-md", "llama-3.2-1b", "--json").stdout)["plans"][0]
    assert without["settings"]["quant"] == with_draft["settings"]["quant"]
    assert with_draft["settings"]["n_gpu_layers"] < without["settings"]["n_gpu_layers"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["-devd", "7"], "-devd 7: the target has 2 GPU(s)"),
        (["-ctkd", "q9"], "-ctkd ('q9')"),
        (["--runtime", "vllm"], "--runtime vllm does not use it"),
        (["-ngld", "-5"], "--draft-ngl must be an integer"),
    ],
)
def test_plan_draft_usage_errors(args: list[str], needle: str) -> None:
    res = _oomkit("plan", *_MAIN, "-md", "llama-3.2-1b", *args)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1, res.stderr
    assert needle in errors[0]


def test_plan_draft_option_without_a_draft_is_refused() -> None:
    res = _oomkit("plan", *_MAIN, "-ngld", "3")
    assert res.returncode == 2
    assert "--draft-ngl needs --draft-model" in res.stderr


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    pytest.importorskip("fastapi", reason="the web API is the [web] extra")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    with TestClient(create_app()) as c:
        yield c


def test_api_plan_takes_the_draft_options(client: Any) -> None:
    body = {"model": "llama-3.1-70b", "gpu": "2x3090", "ctx": 16384}
    r = client.post("/api/plan", json={**body, "draft_model": "llama-3.2-1b", "draft_ctx": 4096})
    assert r.status_code == 200, r.text
    cli = _oomkit("plan", *_MAIN, *_DRAFT, "--ctx", "16384", "--json", "--offline")
    assert r.json()["plans"][0] == json.loads(cli.stdout)["plans"][0]
    r = client.post("/api/plan", json={**body, "draft_model": "/etc/passwd"})
    assert r.status_code == 404
    assert "does not read files" in r.json()["detail"]
