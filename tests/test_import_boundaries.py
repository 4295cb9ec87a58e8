"""`import oomkit` (and the CLI's main path) must not pull in heavy modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def _loaded_full(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


#: Modules the cold-start path (`oomkit estimate CATALOG-MODEL --json`, llama.cpp) must not
#: load: other runtimes' estimators, the live GPU probes, the OOM doctor, file/Hub loaders,
#: the GPU catalog (no --gpu given) and difflib (only an unknown name needs suggestions).
NOT_ON_ESTIMATE_PATH = (
    "oomkit.estimate.vllm",
    "oomkit.estimate.sglang",
    "oomkit.estimate.transformers",
    "oomkit.estimate.ollama",
    "oomkit.hardware.live",
    "oomkit.hardware.nvml",
    "oomkit.hardware.smi",
    "oomkit.hardware.catalog",
    "oomkit.diagnose",
    "oomkit.loaders.hub",
    "oomkit.loaders.gguf",
    "oomkit.loaders.safetensors",
    "oomkit.cli.render",
    "oomkit.cli.gpus",
    "oomkit.cli.doctor",
    "difflib",
    # a catalog model's spec, and its tensors' llama-quantize types, come from the build-time
    # table (oomkit.catalog.specs): no config reader, no quantizer replay
    "oomkit.loaders.hf_config",
    "oomkit.loaders.hf_config_families",
    "oomkit.quant.llamacpp_mix",
    # the planner only runs when a configuration does not fit (or for `plan`)
    "oomkit.planner.search",
    "oomkit.planner.core",
    "oomkit.planner.speed",
)


def test_cli_estimate_loads_only_what_it_needs() -> None:
    mods = _loaded_full(
        "import sys\nfrom oomkit.cli import main\n"
        "sys.stdout = open('/dev/null', 'w')\n"
        "main(['estimate', 'llama-3.1-8b', '--quant', 'Q4_K_M', '--ctx', '8192', '--json'])\n"
        "sys.stdout = sys.__stdout__"
    )
    loaded = {m for m in NOT_ON_ESTIMATE_PATH if m in mods}
    assert not loaded, loaded
    # one family file of the model catalog is read, through the precomputed name index
    assert "oomkit.catalog.models" in mods
    assert "oomkit.catalog.models_index" not in mods  # the index builder is a dev tool


#: Not loaded by `oomkit estimate CATALOG-MODEL --json` written the common way (issue 10, cold
#: start): it runs through `oomkit.cli.estimate_fast`, without click, the click command group,
#: the training options or the text renderer. Re-adding an eager import of any of these on the
#: path costs milliseconds of the 60 ms budget and fails here.
NOT_ON_FAST_ESTIMATE_PATH = (
    "click",
    "oomkit.cli.group",
    "oomkit.cli.estimate",
    "oomkit.cli.params",
    "oomkit.cli.train_options",
    "oomkit.cli.render",
    "oomkit.cli.bars",
    "oomkit.estimate.training",
    "oomkit.planner",
    "oomkit.quant.formats",
    "oomkit.quant.hf_formats",
    "oomkit.web",
    "difflib",
    "argparse",
    # the build-time quantizer table pays off from a process's second prediction on: one
    # estimate replays the quantizer instead of unpacking it (gzip, hashlib, ~7 ms cold)
    "oomkit.quant.mix_table",
    "gzip",
    "hashlib",
)


def test_cli_estimate_json_takes_the_lean_path() -> None:
    mods = _loaded_full(
        "import sys\nfrom oomkit.cli import main\n"
        "sys.stdout = open('/dev/null', 'w')\n"
        "main(['estimate', 'llama-3.1-8b', '--quant', 'Q4_K_M', '--ctx', '8192', '--json'])\n"
        "sys.stdout = sys.__stdout__"
    )
    loaded = {m for m in NOT_ON_FAST_ESTIMATE_PATH if m in mods}
    assert not loaded, loaded
    assert "oomkit.cli.estimate_fast" in mods  # the path this test is about was taken


#: Not imported by the command itself (``python -m oomkit estimate ... --json``, the dataclass
#: code cache on): ``dataclasses`` comes without ``inspect`` (and its ``ast``, ``dis``,
#: ``tokenize``) and ``copy``, see ``oomkit._codecache``; without ``--runtime-version`` the
#: generations table is not built (``datetime``, the evidence table).
NOT_ON_COMMAND_PATH = (
    "copy",
    "inspect",
    "ast",
    "dis",
    "tokenize",
    "datetime",
    "oomkit.estimate.generation_evidence",
)


def _imported_by_command(args: list[str]) -> set[str]:
    """Every module ``python -X importtime -m oomkit ARGS`` imports (the process ends with
    ``os._exit``, so ``sys.modules`` cannot be printed at exit: the import log is read)."""
    env = {k: v for k, v in os.environ.items() if k != "OOMKIT_CODE_CACHE"}
    env["PYTHONPATH"] = str(Path(__file__).parents[1] / "src")
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(proc.stdout)["runtime"] == "llama.cpp"
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "self [us]" not in line
    }


def test_cli_estimate_command_imports_no_introspection_modules() -> None:
    mods = _imported_by_command(
        ["estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--ctx", "8192", "--json"]
    )
    assert "dataclasses" in mods
    assert "oomkit.cli.estimate_fast" in mods
    loaded = {m for m in NOT_ON_COMMAND_PATH if m in mods}
    assert not loaded, loaded


def test_every_dataclass_has_a_docstring() -> None:
    """``oomkit._codecache`` keeps ``inspect`` (with ``ast``, ``dis``, ``tokenize``) off the
    command path only while every dataclass has a docstring (3.10/3.11 ``dataclasses`` calls
    ``inspect.signature`` to write one): ``hf_kv.KvLayer`` had none and pulled them in once
    the verdict imported ``hf_kv`` (session 17's CI dry run)."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "oomkit"
    missing = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or ast.get_docstring(node):
                continue
            for d in node.decorator_list:
                f = d.func if isinstance(d, ast.Call) else d
                if isinstance(f, ast.Name) and f.id == "dataclass":
                    missing.append(f"{path.relative_to(src)}:{node.name}")
    assert not missing, missing
