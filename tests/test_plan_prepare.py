"""A llama.cpp / Ollama plan for a Hugging Face checkpoint directory says how to make the .gguf
it runs (``planner/prepare.py``): ``convert_hf_to_gguf.py`` writes f32/f16/bf16/q8_0 directly,
``llama-quantize`` makes every other type from the 16-bit file, and Ollama quantizes an import
itself only to Q8_0 / Q4_K_S / Q4_K_M (its ``ParseFileType``)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oomkit.planner.prepare import (
    OLLAMA_QUANTIZE_TYPES,
    checkpoint_gguf_name,
    is_local_checkpoint,
    prepare_checkpoint,
)

pytest.importorskip("safetensors.numpy")
from test_plan_checkpoint_dir import _model_dir


def test_direct_outtypes_need_one_conversion() -> None:
    for quant, outtype in (("Q8_0", "q8_0"), ("BF16", "bf16"), ("F16", "f16"), ("F32", "f32")):
        prep = prepare_checkpoint("llama.cpp", "./m", "safetensors", quant, "bfloat16")
        assert prep is not None
        assert prep.lines == (
            f"python convert_hf_to_gguf.py ./m --outtype {outtype} --outfile m-{quant}.gguf",
        )
        assert prep.target == f"m-{quant}.gguf"


def test_other_types_convert_at_the_checkpoints_width_then_quantize() -> None:
    prep = prepare_checkpoint("llama.cpp", "/data/ckpt/", "config", "q4_k_m", "float16")
    assert prep is not None
    convert, quantize = prep.lines
    assert "--outtype f16 --outfile ckpt-F16.gguf" in convert
    assert shlex.split(quantize) == [
        "llama-quantize",
        "ckpt-F16.gguf",
        "ckpt-Q4_K_M.gguf",
        "Q4_K_M",
    ]
    # a config.json path names its directory
    prep = prepare_checkpoint("llama.cpp", "/data/ckpt/config.json", "config", "IQ4_XS", None)
    assert prep is not None
    assert prep.lines[0].startswith("python convert_hf_to_gguf.py /data/ckpt --outtype bf16")


def test_nothing_to_prepare_for_a_gguf_a_catalog_name_or_a_serving_runtime() -> None:
    assert prepare_checkpoint("llama.cpp", "m-Q4_K_M.gguf", "gguf", "Q4_K_M", None) is None
    assert prepare_checkpoint("llama.cpp", "llama-3.1-8b", "catalog", "Q4_K_M", None) is None
    assert prepare_checkpoint("vllm", "./ckpt", "safetensors", "fp8", None) is None
    assert not is_local_checkpoint("Qwen/Qwen2.5-7B", "hub")
    assert checkpoint_gguf_name(".", "Q8_0") == "model-Q8_0.gguf"


def test_ollama_imports_the_directory_for_its_own_types_only() -> None:
    for quant in sorted(OLLAMA_QUANTIZE_TYPES | {"F16"}):
        prep = prepare_checkpoint("ollama", "./ckpt", "safetensors", quant, None)
        assert prep is not None
        assert prep.lines == ()
        assert prep.target == "./ckpt"
    prep = prepare_checkpoint("ollama", "./ckpt", "safetensors", "Q6_K", None)
    assert prep is not None
    assert prep.target == "./ckpt-Q6_K.gguf"
    assert prep.lines[-1] == "llama-quantize ckpt-BF16.gguf ckpt-Q6_K.gguf Q6_K"


def _plan(d: Path, runtime: str, *extra: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "oomkit", "plan", str(d), "-r", runtime, "--gpu", "rtx-4090"]
    res = subprocess.run([*cmd, *extra, "--json"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    assert doc["plans"]
    return doc


def test_llamacpp_plan_for_a_checkpoint_dir_makes_the_file_it_runs(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    plan = _plan(d, "llama.cpp", "-q", "Q4_K_M")["plans"][0]
    quant = plan["settings"]["quant"]
    assert quant == "Q4_K_M"
    convert, quantize = plan["prepare"]
    assert shlex.split(convert)[:3] == ["python", "convert_hf_to_gguf.py", str(d)]
    # the checkpoint says bfloat16: the intermediate file keeps it
    assert "--outtype bf16" in convert
    out = shlex.split(quantize)[2]
    assert out == f"ckpt-{quant}.gguf"
    run = shlex.split(plan["command"])
    assert run[run.index("-m") + 1] == out


def test_ollama_plan_imports_the_checkpoint_dir(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    plan = _plan(d, "ollama", "-q", "Q8_0")["plans"][0]
    assert plan["prepare"] == []
    assert f"FROM {d}" in plan["command"]
    assert "ollama create planned -f Modelfile --quantize Q8_0" in plan["command"]
    text = subprocess.run(
        [sys.executable, "-m", "oomkit", "plan", str(d), "-r", "llama.cpp", "--gpu", "rtx-4090"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "first (llama.cpp's tools make the .gguf this plan runs):" in text
    assert "convert_hf_to_gguf.py" in text


def test_catalog_plans_have_nothing_to_prepare() -> None:
    doc = _plan(Path("llama-3.1-8b"), "llama.cpp")
    assert all(p["prepare"] == [] for p in doc["plans"])
