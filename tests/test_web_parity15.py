"""The web API takes what the CLI takes and refuses it the same way (new-user review, s15).

- ``backend``: the values of the CLI's ``--backend`` (one list, ``sycl`` included);
- ``--gpu auto`` through the API uses the GPUs the page lists (the replayed NVML fixture), with
  their count and free memory, as the CLI does;
- a context length has one ceiling and one wording for an int, a count with a unit, the
  estimate and the plan, on the page and on the CLI;
- errors name the request's fields, not the CLI's flags (the CLI keeps its wording).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest
from fastapi.testclient import TestClient

from oomkit.cli import main
from oomkit.cli.gpu_choice import BACKEND_CHOICES
from oomkit.validate import MAX_CTX
from oomkit.web.app import create_app
from oomkit.web.bridge import command_options
from oomkit.web.schemas import EstimateBody, PlanBody


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def _cli(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    """``oomkit ARGS``: exit code and stdout + stderr (errors mapped as the command line does)."""
    capsys.readouterr()
    code = main(args)
    got = capsys.readouterr()
    return code, got.out + got.err


# -- backend ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_backend_values_are_the_clis(command: str) -> None:
    param = command_options(command)["backend"]
    assert isinstance(param.type, click.Choice)
    assert tuple(param.type.choices) == BACKEND_CHOICES
    assert "sycl" in BACKEND_CHOICES
    for value in BACKEND_CHOICES:
        assert EstimateBody(model="m", backend=value).backend == value
        assert PlanBody(model="m", backend=value.upper()).backend == value


def test_sycl_backend_is_estimated_like_the_cli(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    r = client.post(
        "/api/estimate", json={"model": "llama-3.1-8b", "vram": "16GiB", "backend": "sycl"}
    )
    assert r.status_code == 200, r.text
    code, out = _cli(
        capsys, ["estimate", "llama-3.1-8b", "--vram", "16GiB", "--backend", "sycl", "--json"]
    )
    assert code == 0
    assert r.json()["devices"] == json.loads(out)["devices"]
    assert r.json()["devices"][0]["device"].startswith("xpu")


def test_unknown_backend_lists_the_cli_values(client: TestClient) -> None:
    r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "backend": "opencl"})
    assert r.status_code == 422
    assert "backend: Input should be one of cuda, rocm, metal, vulkan, sycl" in r.json()["detail"]
    spec = client.get("/openapi.json").json()["components"]["schemas"]
    assert list(BACKEND_CHOICES) in [
        s.get("enum") for s in spec["EstimateRequest"]["properties"]["backend"]["anyOf"]
    ]


# -- the live GPUs: the page's "My GPUs" is `--gpu auto` ---------------------------------------


@pytest.mark.parametrize("runtime", ["llama.cpp", "vllm"])
def test_gpu_auto_uses_the_listed_gpus_count_and_free_memory(
    runtime: str, capsys: pytest.CaptureFixture[str], gpu_replay: ModuleType
) -> None:
    from oomkit.cli.gpus import use_backend

    replay = gpu_replay
    body: dict[str, Any] = {"model": "llama-3.1-8b", "gpu": "auto", "ctx": 32768}
    argv = ["estimate", "llama-3.1-8b", "--gpu", "auto", "--ctx", "32768"]
    if runtime == "vllm":
        body |= {"runtime": "vllm", "tp": 2}
        argv += ["-r", "vllm", "--tp", "2"]
    with TestClient(create_app(gpu_backend=replay.ReplayBackend)) as c:
        live = c.get("/api/gpus").json()["live"]
        doc = c.post("/api/estimate", json=body).json()
        plan = c.post("/api/plan", json={**body, "gpu": ["auto"]})
    assert plan.status_code == 200, plan.text
    # the web app's GPU source was used only for these requests: the CLI's is the default again
    from oomkit.cli.gpus import _SOURCE
    from oomkit.hardware.live import default_backend

    assert _SOURCE.factory is default_backend
    use_backend(replay.ReplayBackend)
    try:
        code, out = _cli(capsys, [*argv, "--json"])
    finally:
        use_backend(None)
    assert code in (0, 4), out  # fits or tight: the devices are what this test compares
    expected = json.loads(out)
    assert doc["devices"] == expected["devices"]
    # count and free memory per device, as `oomkit gpus` lists them (not the total)
    caps = [d["capacity_bytes"] for d in doc["devices"] if d["capacity_bytes"]]
    assert caps == [g["memory_free_bytes"] for g in live]
    assert len(caps) == 2
    assert caps[0] < live[0]["memory_total_bytes"]


# -- ctx: one ceiling, one wording --------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/estimate", "/api/plan"])
@pytest.mark.parametrize("ctx", [20_000_000, "20M"])
def test_a_long_context_is_one_answer_in_any_form(client: TestClient, path: str, ctx: Any) -> None:
    r = client.post(path, json={"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": ctx})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("path", ["/api/estimate", "/api/plan"])
@pytest.mark.parametrize(
    ("ctx", "shown"), [(0, 0), (MAX_CTX + 1, MAX_CTX + 1), ("300M", 300 << 20)]
)
def test_a_context_out_of_range_is_one_wording(
    client: TestClient, path: str, ctx: Any, shown: int
) -> None:
    # llama.cpp reads a ctx of 0 as the trained context (-c 0, cli/ctx_zero.py): ask vLLM
    body = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "ctx": ctx, "runtime": "vllm"}
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == f"'ctx' must be an integer in [1, {MAX_CTX}], got {shown}"


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize("ctx", ["0", "300M"])
def test_the_cli_has_the_same_ceiling_and_wording(
    command: str, ctx: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # llama.cpp reads -c 0 as the trained context (cli/ctx_zero.py, estimate and plan): vLLM
    argv = [command, "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", ctx, "-r", "vllm"]
    code, out = _cli(capsys, argv)
    assert code == 2, out
    got = 0 if ctx == "0" else 300 << 20
    assert f"Error: --ctx must be an integer in [1, {MAX_CTX}], got {got}" in out


# -- errors name the fields -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "detail"),
    [
        (
            "/api/estimate",
            {"vram": 0},
            "'vram' 0: a GPU or host with no memory runs nothing; give its size with a unit",
        ),
        ("/api/plan", {"ram": 0, "gpu": "rtx-4090"}, "'ram' 0: a GPU or host"),
        ("/api/estimate", {"os": "plan9"}, "Invalid value for 'os': 'plan9' is not one of"),
        (
            "/api/estimate",
            {"backend": "vulkan", "runtime": "vllm"},
            "(drop 'backend', or use 'runtime' llama.cpp)",
        ),
        ("/api/plan", {"gpu": "rtx-4090", "ctx": 4096, "min_ctx": 8192}, "'min_ctx' (8192) is"),
    ],
)
def test_errors_name_fields_not_flags(
    client: TestClient, path: str, body: dict[str, Any], detail: str
) -> None:
    r = client.post(path, json={"model": "llama-3.1-8b", **body})
    assert r.status_code == 422, r.text
    assert detail in r.json()["detail"]
    assert "--" not in r.json()["detail"]


def test_the_cli_keeps_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, ["estimate", "llama-3.1-8b", "--vram", "0B"])
    assert code == 2
    assert "Error: --vram 0: a GPU or host with no memory" in out


# -- the page's fields are the CLI's values ----------------------------------------------------


def _page_options() -> dict[str, list[str]]:
    from html.parser import HTMLParser

    out: dict[str, list[str]] = {}

    class _Selects(HTMLParser):
        current: str | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if tag == "select":
                self.current = a.get("id")
                out[str(self.current)] = []
            elif tag == "option" and self.current is not None:
                out[self.current].append(str(a.get("value")))

        def handle_endtag(self, tag: str) -> None:
            if tag == "select":
                self.current = None

    html = (Path(__file__).parents[1] / "src/oomkit/web/static/index.html").read_text()
    _Selects().feed(html)
    return out


def test_page_fields_offer_the_clis_values() -> None:
    from oomkit.estimate.llamacpp_params import KV_CACHE_TYPES
    from oomkit.estimate.registry import normalize_runtime

    options = _page_options()
    os_param = command_options("estimate")["os"]
    assert isinstance(os_param.type, click.Choice)
    assert sorted(v for v in options["os"] if v) == sorted(os_param.type.choices)
    assert command_options("plan")["os"].type.choices == os_param.type.choices
    for kv in ("ctk", "ctv"):
        assert sorted(v for v in options[kv] if v) == sorted(KV_CACHE_TYPES)
        assert options[kv][0] == ""  # not sent: the runtime's default
    assert {"lmstudio", "koboldcpp", "llama.cpp", "ollama", "vllm"} <= set(options["runtime"])
    for rt in options["runtime"]:
        normalize_runtime(rt)  # every runtime the page offers, the CLI takes


@pytest.mark.parametrize(
    ("body", "argv"),
    [
        (
            {"runtime": "lmstudio", "os": "windows", "ram": "16GiB"},
            ["-r", "lmstudio", "--os", "windows", "--ram", "16GiB"],
        ),
        (
            {"runtime": "koboldcpp", "cache_type_k": "q8_0", "cache_type_v": "q4_0"},
            ["-r", "koboldcpp", "-ctk", "q8_0", "-ctv", "q4_0"],
        ),
        (
            {"runtime": "koboldcpp", "cache_type_v": "q4_0", "flash_attn": True},
            ["-r", "koboldcpp", "-ctv", "q4_0", "-fa", "on"],
        ),
    ],
)
def test_llamacpp_family_fields_are_the_clis(
    client: TestClient, capsys: pytest.CaptureFixture[str], body: dict[str, Any], argv: list[str]
) -> None:
    base = ["llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", "--ctx", "32768"]
    r = client.post(
        "/api/estimate",
        json={"model": "llama-3.1-8b", "gpu": "rtx-4060-ti-16gb", "ctx": 32768, **body},
    )
    code, out = _cli(capsys, ["estimate", *base, *argv, "--json"])
    if "Error:" in out:  # refused the same way, named by field on the page
        assert r.status_code == 422
        cli_error = out.split("Error: ", 1)[1].split("\n")[0]
        assert "--" not in r.json()["detail"]
        assert r.json()["detail"].replace("'", "") == (
            cli_error.replace("'", "")
            .replace("--kv-dtype", "kv_dtype")
            .replace("-ctv", "cache_type_v")
            .replace("--flash-attn", "flash_attn")
        )
        return
    assert r.status_code == 200, r.text
    assert code in (0, 3), out
    assert r.json()["devices"] == json.loads(out)["devices"]
    assert r.json()["host"] == json.loads(out)["host"]
    if "os" in body:
        p = client.post(
            "/api/plan", json={"model": "llama-3.1-8b", "gpu": "rtx-4060-ti-16gb", **body}
        )
        assert p.status_code == 200, p.text
        _, plan_out = _cli(
            capsys, ["plan", "llama-3.1-8b", "--gpu", "rtx-4060-ti-16gb", *argv, "--json"]
        )
        assert p.json()["plans"] == json.loads(plan_out)["plans"]
