"""``POST /api/doctor`` checks what the user states like ``oomkit doctor`` does: ``vram`` is
accepted (the CLI has ``--vram``), an unknown ``quant`` is refused, and a bad value is a
one-line 4xx naming the field (a union field's branch names stay out of it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web API is the [web] extra")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient

from oomkit.web.app import create_app

LOG = (
    "llama_kv_cache_init: CUDA0 KV buffer size = 16384.00 MiB\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: "
    "cudaMalloc failed: out of memory\n"
    "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _cli(*args: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", "--json", "-", *args],
        input=LOG,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_vram_sizes_the_fixes_as_the_cli_does(client: TestClient) -> None:
    body = {"log": LOG, "model": "llama-3.1-8b", "ctx": 131072, "vram": "24GiB"}
    r = client.post("/api/doctor", json=body)
    assert r.status_code == 200, r.text
    cli = _cli("-m", "llama-3.1-8b", "--ctx", "131072", "--vram", "24GiB")
    assert r.json()["fixes"] == cli["fixes"]
    as_bytes = client.post("/api/doctor", json={**body, "vram": 24 << 30})
    assert as_bytes.json() == r.json()


@pytest.mark.parametrize(
    ("extra", "status", "needle"),
    [
        ({"quant": "Q9"}, 404, "Unknown llama.cpp file type 'Q9'"),
        ({"runtime": "vllm", "quant": "Q4_K_M"}, 404, "Unknown HF weight format 'Q4_K_M'"),
        ({"vram": 0}, 422, "'vram' 0: a GPU or host with no memory"),
        ({"vram": "nanGiB"}, 400, "vram: cannot read size 'nanGiB'"),
        ({"ctx": 0}, 422, "'ctx' must be an integer in [1, 268435456], got 0"),
    ],
)
def test_bad_facts_are_one_line_errors(
    client: TestClient, extra: dict[str, Any], status: int, needle: str
) -> None:
    r = client.post("/api/doctor", json={"log": LOG, **extra})
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert needle in detail
    assert "constrained-" not in detail
    assert "\n" not in detail


def test_when_answers_the_open_question_as_the_cli_does(client: TestClient) -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a "
        "total capacity of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, "
        "this process has 3.44 GiB memory in use. Of the allocated memory 2.58 GiB is allocated "
        "by PyTorch, and 1.90 MiB is reserved by PyTorch but unallocated."
    )
    r = client.post("/api/doctor", json={"log": text, "when": "later"})
    assert r.status_code == 200, r.text
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", "--json", "-", "--when", "later"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.json() == json.loads(res.stdout)
    assert r.json()["cause"] == "leak_or_accumulation"
    bad = client.post("/api/doctor", json={"log": text, "when": "soon"})
    assert bad.status_code == 422
    assert "when" in bad.text


TORCH_LOG = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 86.00 MiB (GPU 0; 10.92 GiB "
    "total capacity; 10.27 GiB already allocated; 37.06 MiB free; 10.27 GiB reserved in total "
    "by PyTorch)"
)


def test_a_quant_of_another_runtime_than_the_logs_is_refused(client: TestClient) -> None:
    """--quant Q4_K_M (a GGUF type) on a PyTorch message, no --runtime: every estimator fix
    failed ("fix provider 'training_or_inference' failed") and --model stopped deciding the
    cause, with exit 0; now refused like an unknown quant, naming the log's runtime."""
    from oomkit.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["doctor", TORCH_LOG, "-m", "llama-3.1-8b", "-q", "Q4_K_M"])
    assert exit_.value.code == 1
    r = client.post(
        "/api/doctor", json={"log": TORCH_LOG, "model": "llama-3.1-8b", "quant": "Q4_K_M"}
    )
    assert 400 <= r.status_code < 500
    assert "the log is a PyTorch (transformers) run" in r.json()["detail"]
    ok = client.post(
        "/api/doctor", json={"log": TORCH_LOG, "model": "llama-3.1-8b", "quant": "nf4"}
    )
    assert ok.status_code == 200
    assert not any("failed" in n for n in ok.json()["notes"])
    # the same GGUF type on a llama.cpp log is that log's own kind
    assert client.post("/api/doctor", json={"log": LOG, "quant": "Q4_K_M"}).status_code == 200
