"""The runtime lists name the programs sized as llama.cpp (LM Studio, koboldcpp,
llama-cpp-python): the unknown-runtime error, ``--help`` and the web page's runtime select."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from oomkit.cli import main
from oomkit.errors import UnknownNameError
from oomkit.estimate.registry import RUNTIMES_HELP, normalize_runtime
from oomkit.web.app import create_app

STATIC = Path(__file__).parents[1] / "src" / "oomkit" / "web" / "static"
ALIASES = ("llamacpp", "lmstudio", "koboldcpp", "llama-cpp-python")


def test_unknown_runtime_names_the_aliases() -> None:
    with pytest.raises(UnknownNameError) as err:
        normalize_runtime("banana")
    assert f"llama.cpp (also: {', '.join(ALIASES)})" in str(err.value)
    for alias in ALIASES:
        assert normalize_runtime(alias) == "llama.cpp"
    assert normalize_runtime("hf") == "transformers"


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_help_names_the_aliases(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert " ".join(RUNTIMES_HELP.split()) in text
    assert "llama-cpp-python" in text


def test_page_offers_the_binding_and_the_api_takes_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    html = (STATIC / "index.html").read_text()
    assert '<option value="llama-cpp-python">' in html
    family = re.search(r"LLAMA_FAMILY = \[([^\]]*)\]", (STATIC / "app.js").read_text())
    assert family is not None
    assert '"llama-cpp-python"' in family.group(1)  # GGUF quants and -ctk/-ctv on the page
    client = TestClient(create_app())
    body = {"model": "llama-3.1-8b", "gpu": "rtx-3060", "quant": "Q4_K_M"}
    r = client.post("/api/estimate", json={**body, "runtime": "llama-cpp-python"})
    assert r.status_code == 200, r.text
    assert r.json()["settings"]["n_gpu_layers"] == 0  # Llama(...)'s default, as the CLI's
    capsys.readouterr()
    ask = ["llama-3.1-8b", "--gpu", "rtx-3060", "-q", "Q4_K_M"]
    code = main(["estimate", *ask, "-r", "llama-cpp-python", "--json"])
    assert code == 0
    assert r.json()["devices"] == json.loads(capsys.readouterr().out)["devices"]
