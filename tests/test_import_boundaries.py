"""`import oomkit` (and the CLI's main path) must not pull in heavy modules."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "torch",
    "numpy",
    "fastapi",
    "uvicorn",
    "pynvml",
    "huggingface_hub",
    "transformers",
    "gguf",
    "safetensors",
    "click",
)


def _loaded(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {m.split(".")[0] for m in json.loads(out.strip().splitlines()[-1])}


def test_import_oomkit_is_light() -> None:
    mods = _loaded("import oomkit")
    assert not mods & set(HEAVY), mods & set(HEAVY)


def test_estimate_api_is_light() -> None:
    # the main job (catalog model, llama.cpp estimate) needs none of the heavy stack
    mods = _loaded(
        "import oomkit\n"
        "oomkit.estimate_model('llama-3.1-8b', oomkit.InferenceSettings(quant='Q4_K_M', ctx=8192))"
    )
    heavy = set(HEAVY) - {"click"}
    assert not mods & heavy, mods & heavy


def test_cli_estimate_does_not_import_torch() -> None:
    mods = _loaded(
        "import sys\nfrom oomkit.cli import main\n"
        "sys.stdout = open('/dev/null', 'w')\n"
        "main(['estimate', 'llama-3.1-8b', '--quant', 'Q4_K_M', '--ctx', '8192', '--json'])\n"
        "sys.stdout = sys.__stdout__"
    )
    heavy = set(HEAVY) - {"click"}
    assert not mods & heavy, mods & heavy
