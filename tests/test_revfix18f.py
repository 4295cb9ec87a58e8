"""Review 18f: estimate --pooling suggests what plan --pooling finds, a config's absurd context
is named by its own key and file, --tp refusals list only sizes the GPUs given can run, and
settings.quant has one spelling (CLI end to end, real catalog models and config files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from oomkit.errors import ConfigFormatError
from oomkit.loaders.hf_config import parse_config
from oomkit.validate import MAX_CTX, key_limit


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert out, err
    return code, json.loads(out)


# -- 1. estimate --pooling searches as plan --pooling does ------------------------------------

_POOL = ["qwen3-8b", "-r", "vllm", "--gpu", "rtx-4090", "--pooling", "--offline"]


def test_pooling_estimate_suggests_what_plan_finds(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["estimate", *_POOL])
    assert code == 3
    assert doc["fits"] is False
    assert doc["suggestions"], "no suggestion where plan --pooling finds a plan"
    first = doc["suggestions"][0]
    assert first["changes"][0].startswith("--enforce-eager")
    assert "--enforce-eager" in first["command"]
    assert "--runner pooling" in first["command"]
    assert first["settings"]["enforce_eager"] is True
    pcode, plan = _json(capsys, ["plan", *_POOL])
    assert pcode == 0
    assert plan["plans"]
    assert first["settings"]["ctx"] == plan["plans"][0]["settings"]["ctx"]
    _, out, _ = run_cli(capsys, "estimate", *_POOL)
    assert "Nothing the planner can change" not in out
    assert "1. --enforce-eager" in out


def test_eager_pooling_estimate_adds_no_eager_change(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "qwen3-8b", "-r", "vllm", "--gpu", "rtx-3060", "--pooling"]
    _, doc = _json(capsys, [*argv, "--enforce-eager", "--offline"])
    assert doc["fits"] is False
    assert doc["suggestions"]
    for s in doc["suggestions"]:
        assert not any(c.startswith("--enforce-eager") for c in s["changes"])


# -- 2. a config's absurd context is named by the key the file has, and the file ----------------

_GPT2 = {
    "architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1 << 30,
    "vocab_size": 50257,
}


@pytest.mark.parametrize("runtime", ["llama.cpp", "vllm", "transformers"])
def test_absurd_n_positions_is_named_by_its_key_and_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, runtime: str
) -> None:
    (tmp_path / "big").mkdir()
    cfg = tmp_path / "big" / "config.json"
    cfg.write_text(json.dumps(_GPT2))
    code, _, err = run_cli(capsys, "estimate", str(tmp_path / "big"), "-r", runtime, "-g", "l4")
    assert code == 1  # a bad file (EXIT_ERROR), not a bad flag (2)
    assert "--ctx" not in err
    assert "'n_positions' is 1073741824" in err
    assert "max_position_embeddings" not in err
    assert str(cfg) in err


def test_a_context_key_has_the_ctx_bound() -> None:
    for key in ("max_position_embeddings", "n_positions", "seq_length", "llama.context_length"):
        assert key_limit(key) == MAX_CTX
    with pytest.raises(ConfigFormatError, match="'max_position_embeddings' is 1073741824"):
        parse_config({**_GPT2, "max_position_embeddings": 1 << 30}, name="x")
    assert parse_config({**_GPT2, "n_positions": MAX_CTX}, name="x").max_position_embeddings


def test_a_real_gpt2_config_still_loads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**_GPT2, "n_positions": 1024}))
    code, doc = _json(capsys, ["estimate", str(tmp_path), "-g", "l4", "-r", "vllm", "--offline"])
    assert code == 0
    assert doc["settings"]["ctx"] == 1024


# -- 3. a --tp refusal lists only sizes the GPUs given can run ----------------------------------


@pytest.mark.parametrize("command", ["estimate", "plan"])
@pytest.mark.parametrize(
    ("gpus", "extra", "listed"),
    [
        ("4xrtx-4090", [], "valid sizes on the 4 GPUs given: 1, 2, 4"),
        ("8xrtx-4090", [], "valid sizes on the 8 GPUs given: 1, 2, 4, 8"),
        ("rtx-4090", [], "valid sizes on the 1 GPU given: 1"),
    ],
)
def test_tp_refusal_caps_the_sizes_at_the_gpus_given(
    capsys: pytest.CaptureFixture[str], command: str, gpus: str, extra: list[str], listed: str
) -> None:
    argv = [command, "llama-3.1-8b", "-r", "vllm", "--tp", "3", "--gpu", gpus, *extra]
    code, _, err = run_cli(capsys, *argv, "--offline")
    assert code == 2
    assert err.rstrip().endswith(listed), err


def test_tp_refusal_with_pp_and_with_vram(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "llama-3.1-8b", "-r", "vllm", "--tp", "3", "--offline"]
    _, _, err = run_cli(capsys, *argv, "--pp", "2", "--gpu", "8xrtx-4090")
    assert err.rstrip().endswith("valid sizes on the 8 GPUs given with --pp 2: 1, 2, 4"), err
    # --vram takes the GPU count from --tp: no count was named, every size the model allows
    _, _, err = run_cli(capsys, *argv, "--vram", "24GiB")
    assert err.rstrip().endswith("valid sizes: 1, 2, 4, 8, 16, 32"), err
    # no --tp: the GPUs named are the count (vLLM would need --tp 3 for all three)
    _, _, err = run_cli(capsys, *argv[:4], "--gpu", "3xrtx-4090", "--offline")
    assert err.rstrip().endswith("valid sizes on the 3 GPUs given: 1, 2"), err


# -- 4. settings.quant: one spelling per type, --quant's (DESIGN.md) ------------------------------


@pytest.mark.parametrize("runtime", ["vllm", "sglang", "transformers"])
@pytest.mark.parametrize(
    ("model", "quants", "name"),
    [
        ("llama-3.1-8b", ([], ["-q", "bf16"], ["-q", "bfloat16"], ["-q", "BF16"]), "bf16"),
        ("pythia-70m", ([], ["-q", "fp16"], ["-q", "float16"], ["-q", "FP16"]), "fp16"),
    ],
)
def test_settings_quant_has_one_spelling(
    capsys: pytest.CaptureFixture[str],
    runtime: str,
    model: str,
    quants: tuple[list[str], ...],
    name: str,
) -> None:
    seen = set()
    for q in quants:
        argv = ["estimate", model, "-r", runtime, "--gpu", "a100-40gb-pcie", *q, "--offline"]
        _, doc = _json(capsys, argv)
        seen.add(doc["settings"]["quant"])
    assert seen == {name}  # the config's torch_dtype ("bfloat16", "float16") as --quant spells it
