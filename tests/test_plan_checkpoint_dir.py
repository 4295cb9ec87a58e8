"""``plan DIR`` for a Hugging Face checkpoint directory weighs each quant as ``estimate DIR
--quant Q`` does: on llama.cpp/Ollama the GGUF converted from it (real safetensors files)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import oomkit
from oomkit.spec.settings import InferenceSettings

FIELDS = {f.name for f in dataclasses.fields(InferenceSettings)}
safetensors_numpy = pytest.importorskip("safetensors.numpy")

H, FF, V, L = 256, 512, 1024, 2  # rows of 256: the k-quants apply (no Q8_0 fallback)
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
    "intermediate_size": FF, "num_hidden_layers": L, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": V, "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rms_norm_eps": 1e-5,
}  # fmt: skip


def _model_dir(root: Path) -> Path:
    kv = H // 2
    t = {
        "model.embed_tokens.weight": np.zeros((V, H), np.float16),
        "lm_head.weight": np.zeros((V, H), np.float16),
        "model.norm.weight": np.zeros((H,), np.float16),
    }
    for layer in range(L):
        p = f"model.layers.{layer}."
        for name, shape in (("self_attn.q_proj", (H, H)), ("self_attn.k_proj", (kv, H)),
                            ("self_attn.v_proj", (kv, H)), ("self_attn.o_proj", (H, H)),
                            ("mlp.gate_proj", (FF, H)), ("mlp.up_proj", (FF, H)),
                            ("mlp.down_proj", (H, FF))):  # fmt: skip
            t[p + name + ".weight"] = np.zeros(shape, np.float16)
        t[p + "input_layernorm.weight"] = np.zeros((H,), np.float16)
        t[p + "post_attention_layernorm.weight"] = np.zeros((H,), np.float16)
    d = root / "ckpt"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    safetensors_numpy.save_file(t, str(d / "model.safetensors"))
    return d


def _plan(d: Path, runtime: str, *extra: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "oomkit", "plan", str(d), "-r", runtime, "--gpu", "rtx-4090"]
    res = subprocess.run([*cmd, *extra, "--json"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    assert doc["plans"]
    return doc


def _weights(devices: list[dict[str, Any]], host: dict[str, Any]) -> int:
    return sum(int(x["weights_bytes"]) for x in devices) + int(host["weights_bytes"])


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_each_plan_weighs_what_estimate_dir_quant_does(tmp_path: Path, runtime: str) -> None:
    d = _model_dir(tmp_path)
    gpu = oomkit.Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))
    header = 2 * (2 * V * H + L * (2 * H * H + 2 * (H // 2) * H + 3 * FF * H + 2 * H) + H)
    seen: dict[str, int] = {}
    for extra in ((), ("--quant", "Q4_K_M"), ("--quant", "Q2_K")):
        doc = _plan(d, runtime, *extra)
        for p in doc["plans"]:
            quant = p["settings"]["quant"]
            # the plan's own run (its -ngl places the buffers, padded per buffer)
            same = {k: v for k, v in p["settings"].items() if k in FIELDS and k != "tensor_split"}
            est = oomkit.estimate_model(str(d), InferenceSettings(runtime=runtime, **same), gpu)
            want = sum(x.weights_bytes for x in (*est.devices, est.host))
            assert _weights(p["devices"], p["host"]) == want, quant
            seen[quant] = want
        assert any("convert_hf_to_gguf.py" in n for n in doc["notes"])
    assert {"Q4_K_M", "Q2_K"} <= set(seen)
    # the quant is no longer ignored: a 4-bit GGUF is well under the 16-bit header
    assert seen["Q2_K"] < seen["Q4_K_M"] < header


def test_vllm_plan_keeps_the_header(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    doc = _plan(d, "vllm")
    assert not any("convert_hf_to_gguf.py" in n for n in doc["notes"])
