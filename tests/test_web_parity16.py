"""Boundary defects a new-user review found (s16); the CLI, the library and the web API agree.

1. A model name with a '/' that is no Hugging Face repo id (``Qwen/通义千问``) is refused before
   any Hub request, with one line naming it and the rule it breaks (the CLI printed
   ``'ascii' codec can't encode characters`` from ``http.client``): exit 2, a 404 on the web.
2. The web bodies take every long option of the CLI command, aliases included
   (``max_model_len`` was a 422 "unknown option" though the CLI takes ``--max-model-len``).
3. The web doctor refuses a binary body as ``oomkit doctor bin.log`` does (it answered 200,
   "No out-of-memory message was found").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from fastapi.testclient import TestClient

import oomkit
from oomkit.cli import main
from oomkit.errors import InvalidModelNameError, UnknownNameError
from oomkit.loaders import hub
from oomkit.loaders.hub import parse_hub_ref, repo_id_problem
from oomkit.web.app import create_app
from oomkit.web.bridge import cli_argv, command_options, option_keys
from oomkit.web.schemas import NOT_IN_BODY

SRC = str(Path(__file__).parents[1] / "src")
NON_ASCII = "Qwen/通义千问"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def _cli(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as e:  # doctor exits itself
        code = int(e.code or 0)
    got = capsys.readouterr()
    return code, got.out, got.err


def _process(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m oomkit ARGS`` with the Hub pointed at a closed local port (no network)."""
    env = {**os.environ, "PYTHONPATH": SRC, "HF_ENDPOINT": "http://127.0.0.1:9"}
    for var in ("OOMKIT_OFFLINE", "HF_HUB_OFFLINE"):
        env.pop(var, None)
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**env, "PYTHONIOENCODING": "utf-8"},
        timeout=300,
        check=False,
    )


# -- 1. a name that is no repo id ----------------------------------------------------------------

REPO_IDS = [
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "_org/name_1.5",
    "a/" + "x" * 96,
    NON_ASCII,
    "Qwen/Qwen3 8B",
    "café/model",
    "a/b/c",
    "-org/name",
    "org/name.",
    "org/na--me",
    "org/na..me",
    "org/name.git",
    "a/" + "x" * 97,
    "org/",
    "Qwen/Qwen3-8B\u200b",
]


@pytest.mark.parametrize("repo", REPO_IDS)
def test_repo_id_rules_are_huggingface_hubs(repo: str) -> None:
    """Valid exactly when ``huggingface_hub.utils.validate_repo_id`` accepts it (with the
    namespace, which a bare catalog-style name lacks)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo)
        hf_ok = True
    except HFValidationError:
        hf_ok = False
    assert (repo_id_problem(repo) is None) == hf_ok, repo_id_problem(repo)
    assert (parse_hub_ref(repo) is not None) == hf_ok


def test_cli_refuses_a_non_ascii_repo_id_in_one_line_exit_2() -> None:
    for command in (["estimate", NON_ASCII], ["plan", NON_ASCII, "--gpu", "rtx-4090"]):
        r = _process(*command)
        assert r.returncode == 2, r.stderr
        lines = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
        assert lines == [
            f"Error: model '{NON_ASCII}': not in the catalog and not a valid Hugging Face repo "
            "id (letters, digits, '-', '_', '.' only, not '通', '义', '千', '问'). Run "
            "'oomkit models --search <text>' to search the catalog."
        ], r.stderr
        assert "codec" not in r.stderr


def test_cli_names_close_catalog_models_and_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, ["estimate", "Qwen/Qwen3-8X!", "--offline"])
    assert code == 2
    assert "not '!'" in err
    assert "Did you mean 'qwen3-8b'" in err
    code, _, err = _cli(capsys, ["estimate", "org/name@", "--offline"])
    assert code == 2
    assert "nothing after '@'" in err
    # a well-formed id is still looked up (offline: not cached, exit 1), a bare name is unknown
    assert _cli(capsys, ["estimate", "org/name", "--offline"])[0] == 1
    for page in (f"https://huggingface.co/{NON_ASCII}", f"hf.co/{NON_ASCII}:Q4_K_M"):
        code, _, err = _cli(capsys, ["estimate", page, "--offline"])
        assert code == 2
        assert err.startswith(f"Error: model '{page}': not in the catalog and not a valid")
    code, _, err = _cli(capsys, ["estimate", "通义千问", "--offline"])
    assert code == 1
    assert "Unknown model '通义千问'" in err


def test_library_refuses_before_any_hub_request(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_request(*_: Any, **__: Any) -> None:
        raise AssertionError("the Hub was asked")

    monkeypatch.setattr(hub, "load_hub_model", no_request)
    with pytest.raises(InvalidModelNameError, match="not a valid Hugging Face repo id") as e:
        oomkit.load_model(NON_ASCII)
    assert isinstance(e.value, UnknownNameError)
    assert e.value.name == NON_ASCII


@pytest.mark.parametrize("with_hub", [False, True])
def test_web_answers_the_clis_message_as_404(
    with_hub: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    web = TestClient(create_app(hub=with_hub))
    _, _, err = _cli(capsys, ["estimate", NON_ASCII, "--offline"])
    for path, body in (
        ("/api/estimate", {"model": NON_ASCII}),
        ("/api/plan", {"model": NON_ASCII, "gpu": "rtx-4090"}),
        ("/api/doctor", {"log": "CUDA out of memory", "model": NON_ASCII}),
    ):
        r = web.post(path, json=body)
        assert r.status_code == 404, r.text
        assert f"Error: {r.json()['detail']}" == err.strip()


# -- 2. every long option is a body key ----------------------------------------------------------


def _long_keys(command: str) -> set[str]:
    """Every long option ``oomkit COMMAND`` takes, snake_case, read from the click command."""
    from oomkit.cli import cli

    cmd = cli.get_command(click.Context(cli), command)
    assert cmd is not None
    keys: set[str] = set()
    for param in cmd.params:
        if isinstance(param, click.Option):
            name = next(o for o in param.opts if o.startswith("--"))[2:].replace("-", "_")
            if name in NOT_IN_BODY:
                continue
            keys.update(
                o[2:].replace("-", "_")
                for o in (*param.opts, *param.secondary_opts)
                if o.startswith("--")
            )
    return keys


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_bodies_take_every_long_option_of_the_command(client: TestClient, command: str) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    request = schemas["EstimateRequest" if command == "estimate" else "PlanRequest"]
    keys = _long_keys(command)
    assert {"batch", "kv_cache_dtype", "gpu_layers", "no_flash_attn", "headless"} <= keys
    assert keys - {"model"} <= set(request["properties"]), keys - set(request["properties"])
    for key in keys:  # each one reaches the command as its own flag, which click reads
        param, flag, negated = option_keys(command)[key]
        value: object = True if param.is_flag else "1"
        argv = cli_argv(command, ["m"], {key: value})
        assert argv[1] == (flag if param.is_flag else f"{flag}={value}"), (key, argv)
        assert param in command_options(command).values()
        assert negated == (flag in param.secondary_opts)


def _post(client: TestClient, body: dict[str, Any], path: str = "/api/estimate") -> Any:
    r = client.post(path, json=body)
    return r.status_code, r.json()


def test_max_model_len_is_ctx_as_on_the_command_line(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    base = {"model": "llama-3.1-8b", "runtime": "vllm", "gpu": "rtx-4090"}
    code, by_ctx = _post(client, {**base, "ctx": 32768})
    assert code == 200
    for alias in ("max_model_len", "context_length", "ctx_size"):
        code, doc = _post(client, {**base, alias: 32768})
        assert code == 200, doc
        assert doc == by_ctx
    rc, out, _ = _cli(
        capsys,
        [
            "estimate",
            "llama-3.1-8b",
            "-r",
            "vllm",
            "--gpu",
            "rtx-4090",
            "--max-model-len",
            "32768",
            "--json",
        ],
    )
    assert rc in (0, 3, 4)
    assert json.loads(out) == by_ctx
    code, doc = _post(client, {**base, "tensor_parallel_size": 1, "kv_cache_dtype": "fp8"})
    code2, doc2 = _post(client, {**base, "tp": 1, "kv_dtype": "fp8"})
    assert (code, doc) == (code2, doc2)
    assert code == 200


def test_an_alias_is_validated_as_its_option(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    base = {"model": "llama-3.1-8b", "runtime": "vllm"}
    huge = 1 << 40
    code, by_ctx = _post(client, {**base, "ctx": huge})
    assert code == 422
    assert _post(client, {**base, "max_model_len": huge}) == (422, by_ctx)
    rc, _, err = _cli(
        capsys, ["estimate", "llama-3.1-8b", "-r", "vllm", "--max-model-len", str(huge)]
    )
    assert rc == 2
    assert str(huge) in err
    code, doc = _post(client, {**base, "max_model_len": "32k tokens"})
    assert code == 422
    assert doc["detail"].startswith("Invalid request: max_model_len:")
    code, doc = _post(client, {**base, "tensor_parallel_size": 0})
    assert code == 422
    assert "tensor_parallel_size" in doc["detail"]
    code, doc = _post(client, {**base, "ctx": 8192, "max_model_len": 32768})
    assert code == 422
    assert "'ctx' and 'max_model_len' name one option" in doc["detail"]


def test_negated_flags_and_draft_aliases(client: TestClient) -> None:
    base = {"model": "llama-3.1-8b", "gpu": "rtx-4090"}
    assert _post(client, {**base, "no_flash_attn": True}) == _post(
        client, {**base, "flash_attn": False}
    )
    assert _post(client, {**base, "no_flash_attn": False}) == _post(
        client, {**base, "flash_attn": True}
    )
    # the draft model under its llama-server name is read like MODEL: never a server path
    code, doc = _post(client, {**base, "model_draft": "/etc/passwd"})
    assert code == 404
    assert "does not read files on the server" in doc["detail"]
    assert _post(client, {**base, "model_draft": "llama-3.2-1b"}) == _post(
        client, {**base, "draft_model": "llama-3.2-1b"}
    )


# -- 3. the web doctor refuses a binary body -----------------------------------------------------


def _binary() -> bytes:
    """The first 3,000 bytes of this machine's Python executable (a real binary)."""
    return Path(sys.executable).resolve().read_bytes()[:3000]


def test_web_doctor_refuses_a_binary_as_the_cli_does(
    client: TestClient, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = _binary()
    path = tmp_path / "bin.log"
    path.write_bytes(data)
    rc, _, err = _cli(capsys, ["doctor", str(path)])
    assert rc == 1  # a bad input file (DESIGN.md: 1 error (unreadable file, bad input))
    reason = err.split("is not a text log: ", 1)[1].split(". Pass", 1)[0]
    assert reason.endswith("control bytes (NUL and others) that no text log holds")
    r = client.post("/api/doctor", content=data, headers={"content-type": "text/plain"})
    assert r.status_code == 422
    assert r.json()["detail"].startswith(f"'log' is not a text log: {reason}.")
    r = client.post("/api/doctor", json={"log": data.decode("latin-1")})
    assert r.status_code == 422
    assert r.json()["detail"].startswith(f"'log' is not a text log: {reason}.")


def test_web_doctor_still_reads_text_logs(client: TestClient) -> None:
    log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    for raw in (log.encode(), log.encode("utf-16"), b"\x1b[31m" + log.encode() + b"\x1b[0m"):
        r = client.post("/api/doctor", content=raw, headers={"content-type": "text/plain"})
        assert r.status_code == 200, r.text
        assert r.json()["events"][0]["requested_bytes"] == 2 << 30
    r = client.post("/api/doctor", json={"log": log})
    assert r.status_code == 200
    assert r.json()["events"]
