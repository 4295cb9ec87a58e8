"""The JSON API of ``oomkit serve`` through FastAPI's TestClient (a real ASGI app, real estimators).

What the page shows must equal the CLI's ``--json`` for the same inputs, and bad input must be a
4xx with a one-line ``detail`` (never a 500).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oomkit.cli import main
from oomkit.web.app import MAX_BODY_BYTES, create_app

HERE = Path(__file__).parent
LOGS = HERE / "fixtures" / "oom_logs"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def cli_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


# -- the page's numbers are the CLI's numbers ------------------------------------------------

ESTIMATES = [
    (
        {"model": "llama-3.1-8b", "gpu": "rtx-4060-ti-16gb", "ctx": 32768},
        ["llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", "--ctx", "32768"],
    ),
    (
        {"model": "llama-3.1-8b", "gpu": "rtx-4060-ti-16gb", "ctx": "32k", "quant": "Q8_0"},
        ["llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", "-c", "32k", "-q", "Q8_0"],
    ),
    (  # does not fit: the CLI adds the planner's suggestions
        {"model": "llama-3.1-70b", "gpu": "rtx-4060-ti-16gb", "ctx": 8192},
        ["llama-3.1-70b", "--gpu", "rtx-4060-ti-16gb", "--ctx", "8192"],
    ),
    (
        {
            "model": "qwen3-30b-a3b",
            "runtime": "vllm",
            "ctx": 32768,
            "gpu": "2xh100",
            "tp": 2,
            "gpu_memory_utilization": 0.9,
        },
        [
            *("qwen3-30b-a3b", "-r", "vllm", "--ctx", "32768", "--gpu", "2xh100", "--tp", "2"),
            *("--gpu-memory-utilization", "0.9"),
        ],
    ),
    (
        {"model": "llama-3.1-8b", "vram": "12GiB", "flash_attn": True, "kv_dtype": "q8_0"},
        ["llama-3.1-8b", "--vram", "12GiB", "--flash-attn", "--kv-dtype", "q8_0"],
    ),
    (  # transformers without a device_map: the key is the long option in snake_case
        {
            "model": "llama-3.1-8b",
            "runtime": "transformers",
            "gpu": "rtx-4090",
            "quant": "fp32",
            "device_map": "none",
        },
        [
            *("llama-3.1-8b", "-r", "transformers", "--gpu", "rtx-4090", "-q", "fp32"),
            *("--device-map", "none"),
        ],
    ),
    (  # no device_map key: a fit by CPU offload is "does not fit" (exit 3), as in the CLI
        {"model": "llama-3.1-8b", "runtime": "transformers", "gpu": "rtx-4090", "quant": "fp32"},
        ["llama-3.1-8b", "-r", "transformers", "--gpu", "rtx-4090", "-q", "fp32"],
    ),
    (  # device_map "auto" accepts the offload
        {
            "model": "llama-3.1-8b",
            "runtime": "transformers",
            "gpu": "rtx-4090",
            "quant": "fp32",
            "device_map": "auto",
        },
        [
            *("llama-3.1-8b", "-r", "transformers", "--gpu", "rtx-4090", "-q", "fp32"),
            *("--device-map", "auto"),
        ],
    ),
    (  # vLLM LoRA slots: the body's keys are the CLI's options (issue #13)
        {
            "model": "qwen3-4b",
            "runtime": "vllm",
            "gpu": "a30",
            "ctx": 4096,
            "enable_lora": True,
            "max_loras": 2,
            "max_lora_rank": 32,
        },
        [
            *("qwen3-4b", "-r", "vllm", "--gpu", "a30", "--ctx", "4096"),
            *("--enable-lora", "--max-loras", "2", "--max-lora-rank", "32"),
        ],
    ),
]


@pytest.mark.parametrize(("body", "argv"), ESTIMATES)
def test_estimate_equals_cli_json(
    client: TestClient, capsys: pytest.CaptureFixture[str], body: dict[str, Any], argv: list[str]
) -> None:
    r = client.post("/api/estimate", json=body)
    assert r.status_code == 200, r.text
    code, expected = cli_json(capsys, ["estimate", *argv, "--json"])
    assert r.json() == expected
    assert ("suggestions" in expected) == (code == 3)


PLANS = [
    (
        {"model": "llama-3.1-8b", "gpu": "rtx-4060-ti-16gb", "ctx": 32768},
        ["llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", "--ctx", "32768"],
    ),
    (
        {
            "model": "qwen3-30b-a3b",
            "gpu": ["rtx-3090", "rtx-3090"],
            "ctx": "64k",
            "min_ctx": 16384,
            "prefer": "speed",
            "ram": "64GiB",
        },
        [
            *("qwen3-30b-a3b", "-g", "rtx-3090", "-g", "rtx-3090", "-c", "64k"),
            *("--min-ctx", "16384", "--prefer", "speed", "--ram", "64GiB"),
        ],
    ),
    (  # a size in bytes is the CLI's size with a unit
        {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": 65536, "headroom": 2147483648},
        ["llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "65536", "--headroom", "2GiB"],
    ),
    (  # nothing fits: plans empty, the reason in "impossible"
        {"model": "llama-3.1-405b", "gpu": "rtx-4060", "no_offload": True},
        ["llama-3.1-405b", "--gpu", "rtx-4060", "--no-offload"],
    ),
]


@pytest.mark.parametrize(("body", "argv"), PLANS)
def test_plan_equals_cli_json(
    client: TestClient, capsys: pytest.CaptureFixture[str], body: dict[str, Any], argv: list[str]
) -> None:
    r = client.post("/api/plan", json=body)
    assert r.status_code == 200, r.text
    code, expected = cli_json(capsys, ["plan", *argv, "--json"])
    assert r.json() == expected
    assert expected["fits"] == (code == 0)


@pytest.mark.parametrize(
    "name",
    [
        "oom-torch-llama-82-7b-11gb.txt",
        "constructed-llamacpp-kv-fail.txt",
        "measured-vllm-10517-llama31-8b-3090-29k.txt",
        "constructed-ollama-new-engine.txt",
    ],
)
def test_doctor_equals_cli_json(
    client: TestClient, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    text = (LOGS / name).read_text(encoding="utf-8")
    _, expected = cli_json(capsys, ["doctor", str(LOGS / name), "--json"])
    plain = client.post(
        "/api/doctor", content=text.encode(), headers={"content-type": "text/plain"}
    )
    as_json = client.post("/api/doctor", json={"log": text})
    assert plain.status_code == as_json.status_code == 200
    assert plain.json() == expected
    assert as_json.json() == expected
    assert expected["events"], "each fixture holds a real OOM message"


def test_doctor_with_stated_facts_equals_cli(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    path = LOGS / "oom-torch-llama-82-7b-11gb.txt"
    body = {"log": path.read_text(), "model": "llama-3.1-8b", "gpu": "rtx-3090", "ctx": 8192}
    r = client.post("/api/doctor", json=body)
    assert r.status_code == 200, r.text
    argv = ["doctor", str(path), "-m", "llama-3.1-8b", "-g", "rtx-3090", "-c", "8192", "--json"]
    assert r.json() == cli_json(capsys, argv)[1]


def test_no_oom_in_text_is_a_valid_answer(client: TestClient) -> None:
    r = client.post(
        "/api/doctor", content=b"all good, loss 1.23", headers={"content-type": "text/plain"}
    )
    assert r.status_code == 200
    assert r.json()["events"] == []


def test_catalog_searches_equal_cli(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        client.get("/api/models", params={"q": "llama-3.1"}).json()
        == cli_json(capsys, ["models", "llama-3.1", "--json"])[1]
    )
    gpus = client.get("/api/gpus", params={"q": "4060"}).json()
    expected = cli_json(capsys, ["gpus", "--catalog", "4060", "--json"])[1]
    assert gpus["gpus"] == expected["gpus"]
    assert "rtx-4060-ti-16gb" in [g["key"] for g in gpus["gpus"]]
    # this machine has no GPU driver: the live list is empty and says why
    assert isinstance(gpus["live"], list)
    assert gpus["live"] or gpus["live_error"]
    assert len(client.get("/api/models", params={"q": "", "limit": 5}).json()["models"]) == 5


def test_live_gpus_equal_cli_gpus_json(
    capsys: pytest.CaptureFixture[str], gpu_replay: ModuleType
) -> None:
    from oomkit.cli.gpus import use_backend

    replay = gpu_replay
    with TestClient(create_app(gpu_backend=replay.ReplayBackend)) as c:
        doc = c.get("/api/gpus", params={"q": "4090"}).json()
    use_backend(replay.ReplayBackend)
    try:
        expected = cli_json(capsys, ["gpus", "--json"])[1]
    finally:
        use_backend(None)
    assert doc["live_error"] is None
    assert [{k: v for k, v in g.items() if k != "catalog_key"} for g in doc["live"]] == (
        expected["gpus"]
    )
    assert [g["catalog_key"] for g in doc["live"]] == ["rtx-4090", "rtx-4090"]
    assert doc["live"][0]["memory_total_bytes"] == 24564 * 1024 * 1024


def _load(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_hub_ids_only_with_the_hub_flag(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a local fake of the Hub's HTTP API (tests/fake_hub.py) on 127.0.0.1: no real network
    pytest.importorskip("huggingface_hub")
    fake_hub = _load("fake_hub")
    tiny = HERE / "fixtures" / "safetensors" / "tiny-llama-sharded"
    sha = "a" * 40
    files = {p.name: p.read_bytes() for p in tiny.iterdir()}
    repos = {
        "org/tiny": fake_hub.FakeRepo(files=files, sha=sha, branches={"main": sha}),
        "org/gated": fake_hub.FakeRepo(
            files=files, sha=sha, branches={"main": sha}, gated=True, allowed_tokens=frozenset()
        ),
    }
    with fake_hub.serve(repos) as h:
        monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.delenv("HF_HUB_CACHE", raising=False)
        for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "OOMKIT_OFFLINE"):
            monkeypatch.delenv(var, raising=False)
        body = {"model": "org/tiny", "gpu": "rtx-4090", "runtime": "transformers"}
        with TestClient(create_app()) as off:
            _assert_clear(off.post("/api/estimate", json=body), 404, "serve --hub")
        assert h.requests == []  # without --hub the Hub is never asked
        with TestClient(create_app(hub=True)) as c:
            r = c.post("/api/estimate", json=body)
            assert r.status_code == 200, r.text
            argv = ["estimate", "org/tiny", "-g", "rtx-4090", "-r", "transformers", "--json"]
            assert r.json() == cli_json(capsys, argv)[1]
            gated = c.post("/api/estimate", json={**body, "model": "org/gated"})
            _assert_clear(gated, 403, "gated")
            missing = c.post("/api/estimate", json={**body, "model": "org/missing"})
            _assert_clear(missing, 404, "not found")
            monkeypatch.setenv("HF_HUB_OFFLINE", "1")
            offline = c.post("/api/estimate", json={**body, "model": "org/other"})
            _assert_clear(offline, 503, "org/other")


def test_size_in_bytes_equals_cli_size_with_unit(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "vram": 25757220864})
    assert r.status_code == 200, r.text
    expected = cli_json(capsys, ["estimate", "llama-3.1-8b", "--vram", "25757220864B", "--json"])
    assert r.json() == expected[1]
    assert r.json()["devices"][0]["capacity_bytes"] == 25757220864


@pytest.mark.parametrize(("command", "base"), [("estimate", "EstimateBody"), ("plan", "PlanBody")])
def test_every_cli_option_is_a_body_key(command: str, base: str) -> None:
    from oomkit.web import schemas
    from oomkit.web.bridge import command_options, option_keys

    options = set(command_options(command)) - schemas.NOT_IN_BODY
    hand_written = set(getattr(schemas, base).model_fields) - {"model"}
    assert hand_written <= options, hand_written - options  # no typo in the hand-written body
    derived = schemas.cli_body_model("Derived", getattr(schemas, base), command)
    # every long option, aliases and --no- forms included (--max-model-len: max_model_len)
    params = [p for k, p in command_options(command).items() if k in options]
    every = {k for k, (p, _, _) in option_keys(command).items() if p in params}
    assert {"batch", "kv_cache_dtype", "no_flash_attn"} <= every
    assert set(derived.model_fields) - {"model"} == every


def test_options_the_bodies_do_not_list_are_typed_from_click() -> None:
    from pydantic import ValidationError

    from oomkit.web import schemas

    # `oomkit gpus` has a flag, a float and an int option none of the bodies list
    model = schemas.cli_body_model("GpusBody", schemas._Body, "gpus")
    good = {"catalog": True, "watch": 2.5, "count": 3}
    assert model.model_validate(good).model_dump(exclude_unset=True) == good
    for bad in ({"catalog": "yes"}, {"count": "3"}, {"watch": "fast"}, {"nope": 1}):
        with pytest.raises(ValidationError):
            model.model_validate(bad)


def test_openapi_and_page_are_served(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/api/estimate", "/api/plan", "/api/doctor", "/api/models", "/api/gpus"} <= set(
        spec["paths"]
    )
    assert "text/plain" in spec["paths"]["/api/doctor"]["post"]["requestBody"]["content"]
    assert client.get("/docs").status_code == 200
    page = client.get("/")
    assert page.status_code == 200
    assert 'id="verdict"' in page.text
    for asset in ("/static/app.js", "/static/style.css"):
        assert client.get(asset).status_code == 200
    # no third-party host anywhere in the page: everything is served locally
    assert "http" not in page.text.replace('href="/docs"', "")


# -- bad input: a clear 4xx, never a 500 --------------------------------------------------------

BAD = [
    ({"model": "no-such-model-xyz"}, 404, "no-such-model-xyz"),
    ({"model": "llama-3.1-8b", "ctx": -5}, 422, "ctx"),
    # (llama.cpp's ctx 0 is its -c 0, the trained context: tests/test_revfix21c_paste.py)
    ({"model": "llama-3.1-8b", "runtime": "vllm", "ctx": 0}, 422, "ctx"),
    ({"model": "llama-3.1-8b", "ctx": "abc"}, 422, "ctx"),
    ({"model": "llama-3.1-8b", "ctx": 1.5}, 422, "ctx"),
    ({"model": "llama-3.1-8b", "tp": "two"}, 422, "tp"),
    ({"model": "llama-3.1-8b", "flash_attn": "yes"}, 422, "flash_attn"),
    ({"model": "llama-3.1-8b", "gpu_memory_utilization": 1.5}, 422, "gpu_memory_utilization"),
    ({"model": 42}, 422, "model"),
    ({}, 422, "model"),
    ({"model": "llama-3.1-8b", "context": 8192}, 422, "context"),
    ({"model": "llama-3.1-8b", "gpu": "rtx-9999"}, 404, "rtx-9999"),
    ({"model": "llama-3.1-8b", "gpu": "0xrtx-4090"}, 422, "0xrtx-4090"),
    ({"model": "llama-3.1-8b", "vram": "banana"}, 422, "banana"),
    ({"model": "llama-3.1-8b", "quant": "Q9_Z"}, 404, "Q9_Z"),
    ({"model": "llama-3.1-8b", "runtime": "tensorrt-xyz"}, 404, "tensorrt-xyz"),
    ({"model": "llama-3.1-8b", "quant": "--json"}, 404, "--json"),
    ({"model": "/etc/passwd"}, 404, "does not read files"),
    ({"model": "../secret/model.gguf"}, 404, "does not read files"),
    ({"model": "meta-llama/Llama-3.1-8B-Unknown"}, 404, "Hub look-ups are off"),
    ({"model": "x" * 500}, 422, "model"),
]


def _assert_clear(r: Any, status: int, needle: str) -> None:
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str)
    assert "\n" not in detail
    assert len(detail) < 600
    assert needle.lower() in detail.lower()


@pytest.mark.parametrize(("body", "status", "needle"), BAD)
def test_bad_estimate_input_is_a_clear_4xx(
    client: TestClient, body: dict[str, Any], status: int, needle: str
) -> None:
    _assert_clear(client.post("/api/estimate", json=body), status, needle)


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        # the planner needs a GPU or a memory size: named by the request's fields, not flags
        ({"model": "llama-3.1-8b"}, 422, "'gpu' NAME"),
        (
            {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": 4096, "min_ctx": 8192},
            422,
            "min_ctx",
        ),
        ({"model": "llama-3.1-8b", "gpu": "rtx-4090", "prefer": "cheap"}, 422, "prefer"),
        ({"model": "llama-3.1-8b", "gpu": ["rtx-4090", 3]}, 422, "gpu"),
        ({"model": "llama-3.1-8b", "gpu": "rtx-4090", "headroom": "lots"}, 422, "lots"),
        ({"model": "nope-nope", "gpu": "rtx-4090"}, 404, "nope-nope"),
    ],
)
def test_bad_plan_input_is_a_clear_4xx(
    client: TestClient, body: dict[str, Any], status: int, needle: str
) -> None:
    _assert_clear(client.post("/api/plan", json=body), status, needle)


def test_existing_server_file_is_never_read(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mymodel").write_text("{}")
    monkeypatch.chdir(tmp_path)
    _assert_clear(client.post("/api/estimate", json={"model": "mymodel"}), 404, "does not read")
    _assert_clear(client.post("/api/doctor", json={"log": "x", "model": "mymodel"}), 404, "read")


@pytest.mark.parametrize("path", ["/api/estimate", "/api/plan", "/api/doctor"])
def test_ten_megabyte_body_is_413(client: TestClient, path: str) -> None:
    big = b"a" * (10 * 1024 * 1024)
    _assert_clear(
        client.post(path, content=big, headers={"content-type": "text/plain"}), 413, "2 MiB"
    )

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(10):
            yield b"b" * (1024 * 1024)

    _assert_clear(client.post(path, content=chunks()), 413, "larger than")


def test_just_under_the_cap_is_read(client: TestClient) -> None:
    line = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    text = ("x" * 100 + "\n") * ((MAX_BODY_BYTES - 200) // 101) + line
    assert len(text.encode()) <= MAX_BODY_BYTES
    r = client.post("/api/doctor", content=text.encode(), headers={"content-type": "text/plain"})
    assert r.status_code == 200
    assert r.json()["events"]


@pytest.mark.parametrize(
    ("content", "ctype", "needle"),
    [
        (b"{not json", "application/json", "not valid JSON"),
        (b"[1, 2]", "application/json", "body"),
        (b"", "text/plain", "empty"),
        (b'{"log": 5}', "application/json", "log"),
        (b'{"log": "x", "extra": 1}', "application/json", "extra"),
    ],
)
def test_bad_bodies(client: TestClient, content: bytes, ctype: str, needle: str) -> None:
    path = "/api/doctor" if b"log" in content or ctype == "text/plain" else "/api/estimate"
    _assert_clear(client.post(path, content=content, headers={"content-type": ctype}), 422, needle)


@pytest.mark.parametrize(
    ("path", "params", "content", "starts"),
    [
        # the query parameter is named, not its source ("query: ..." named no field)
        ("/api/models", {"limit": -1}, None, "Invalid request: limit: "),
        ("/api/gpus", {"limit": 0}, None, "Invalid request: limit: "),
        # an unreadable body has no field: its character offset ("0: ...") is not one
        ("/api/estimate", None, b"not json", "Invalid request: body: the body is not valid JSON"),
    ],
)
def test_validation_detail_names_the_field(
    client: TestClient,
    path: str,
    params: dict[str, Any] | None,
    content: bytes | None,
    starts: str,
) -> None:
    if content is None:
        r = client.get(path, params=params)
    else:
        r = client.post(path, content=content, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(starts), r.json()["detail"]


_KEYS = ["model", "runtime", "quant", "ctx", "gpu", "vram", "tp", "parallel", "n_gpu_layers"]
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["llama-3.1-8b", "rtx-4090", "32k", "Q4_K_M", "vllm", "-1", "1e9", "../x"]),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(body=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=5))
def test_random_bodies_never_500(client: TestClient, body: dict[str, Any]) -> None:
    body.setdefault("model", "llama-3.1-8b")
    for path in ("/api/estimate", "/api/plan"):
        r = client.post(path, json=body)
        assert r.status_code < 500, (body, r.text)
        if r.status_code >= 400:
            assert isinstance(r.json()["detail"], str)


def test_a_bug_is_a_one_line_json_500(monkeypatch: pytest.MonkeyPatch) -> None:
    import oomkit.web.app as web_app

    def boom(*_: object, **__: object) -> Any:
        raise RuntimeError("simulated bug\nsecond line")

    monkeypatch.setattr(web_app, "run_cli_json", boom)
    with TestClient(create_app(), raise_server_exceptions=False) as c:
        r = c.post("/api/estimate", json={"model": "llama-3.1-8b"})
    assert r.status_code == 500
    assert r.json()["detail"] == (
        "Internal error (RuntimeError: simulated bug second line); please report it with the input."
    )


# -- the command ------------------------------------------------------------------------------


def test_serve_refuses_a_remote_host_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--allow-remote" in err
    assert "Error:" in err


def test_serve_says_when_the_port_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"Error: Listening failed for '127.0.0.1:{port}'")
    assert "--port" in err
    assert len(err.splitlines()) == 1


def test_cli_help_does_not_import_fastapi() -> None:
    code = (
        "import sys\nfrom oomkit.cli import main\n"
        "sys.stdout = open('/dev/null', 'w')\n"
        "main(['--help']); main(['serve', '--help'])\n"
        "sys.stdout = sys.__stdout__\n"
        "web = ('fastapi', 'uvicorn', 'starlette', 'pydantic')\n"
        "print(sorted(m for m in web if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_oomkit_serve_answers_on_loopback() -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomkit", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                with urllib.request.urlopen(base + "/api/health", timeout=2) as r:
                    assert json.load(r)["ok"] is True
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("oomkit serve did not answer within 20 s")
        req = urllib.request.Request(
            base + "/api/estimate",
            data=json.dumps({"model": "llama-3.1-8b", "gpu": "rtx-4090"}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            assert json.load(r)["fits"] is True
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert f"http://127.0.0.1:{port}/" in err


@pytest.mark.parametrize("name", ["llama\u202e-3.1-8b", "llama-3.1-8b\u200b", "ll\x1bama"])
def test_model_names_with_control_or_format_characters_are_refused_and_escaped(
    client: TestClient, name: str
) -> None:
    """A right-to-left override or zero-width character could make an error line read as
    something else: refused with 4xx, and the echoed name is escaped, never raw."""
    r = client.post("/api/estimate", json={"model": name})
    assert 400 <= r.status_code < 500
    detail = r.json()["detail"]
    assert isinstance(detail, str)
    assert all(c.isprintable() for c in detail)
    assert "\\u" in detail or "\\x" in detail
