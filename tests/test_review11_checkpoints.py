"""Local checkpoints a new user points oomkit at (review11): real files written with the
``safetensors`` package.

* A Hugging Face directory on llama.cpp/Ollama is the GGUF converted from it: ``--quant`` used to
  be ignored there (even ``--quant bogus``), the header's HF names put ``token_embd`` on the GPU
  (llama.cpp keeps it in host memory), and the explanation said "gguf header".
* A sharded checkpoint with a shard missing and no index used to be read as a smaller model.
* A PEFT ``adapter_model.safetensors`` beside a ``config.json`` used to be read as the model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import oomkit
from oomkit.errors import OomkitError, SourceNotFoundError
from oomkit.spec.settings import InferenceSettings

safetensors_numpy = pytest.importorskip("safetensors.numpy")

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rms_norm_eps": 1e-5,
}  # fmt: skip


def _tensors() -> dict[str, np.ndarray]:
    t = {
        "model.embed_tokens.weight": np.zeros((1000, 64), np.float16),
        "lm_head.weight": np.zeros((1000, 64), np.float16),
        "model.norm.weight": np.zeros((64,), np.float16),
    }
    for layer in range(2):
        p = f"model.layers.{layer}."
        for name, shape in (("self_attn.q_proj", (64, 64)), ("self_attn.k_proj", (32, 64)),
                            ("self_attn.v_proj", (32, 64)), ("self_attn.o_proj", (64, 64)),
                            ("mlp.gate_proj", (128, 64)), ("mlp.up_proj", (128, 64)),
                            ("mlp.down_proj", (64, 128))):  # fmt: skip
            t[p + name + ".weight"] = np.zeros(shape, np.float16)
        t[p + "input_layernorm.weight"] = np.zeros((64,), np.float16)
        t[p + "post_attention_layernorm.weight"] = np.zeros((64,), np.float16)
    return t


def _model_dir(root: Path, shards: int = 1) -> Path:
    d = root / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    t = _tensors()
    if shards == 1:
        safetensors_numpy.save_file(t, str(d / "model.safetensors"))
        return d
    first = {k: v for k, v in t.items() if "layers.1" not in k}
    rest = {k: v for k, v in t.items() if "layers.1" in k}
    safetensors_numpy.save_file(first, str(d / "model-00001-of-00002.safetensors"))
    safetensors_numpy.save_file(rest, str(d / "model-00002-of-00002.safetensors"))
    return d


def _placed(est: oomkit.Estimate) -> tuple[int, int]:
    gpu = sum(c.n_bytes for c in est.devices[0].components if c.category == "weights")
    host = sum(c.n_bytes for c in est.host.components if c.category == "weights")
    return gpu, host


def _gpu() -> oomkit.Hardware:
    return oomkit.Hardware(devices=(oomkit.find_gpu("rtx-4090").to_device_target(),))


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_directory_on_llamacpp_is_the_converted_gguf(tmp_path: Path, runtime: str) -> None:
    d = _model_dir(tmp_path)
    for quant in ("Q4_K_M", "Q8_0"):
        s = InferenceSettings(runtime=runtime, quant=quant)
        from_dir = oomkit.estimate_model(str(d), s, _gpu())
        from_config = oomkit.estimate_model(str(d / "config.json"), s, _gpu())
        assert _placed(from_dir) == _placed(from_config)
    q4 = _placed(oomkit.estimate_model(str(d), InferenceSettings(runtime=runtime, quant="Q4_K_M"),
                                       _gpu()))  # fmt: skip
    q8 = _placed(oomkit.estimate_model(str(d), InferenceSettings(runtime=runtime, quant="Q8_0"),
                                       _gpu()))  # fmt: skip
    assert sum(q4) < sum(q8)  # the quant is no longer ignored
    # no quant: the checkpoint's 16-bit dtype, with llama.cpp's token_embd in host memory
    est = oomkit.estimate_model(str(d), InferenceSettings(runtime=runtime), _gpu())
    assert est.settings["quant"] == "F16"
    assert _placed(est)[1] == 1000 * 64 * 2
    assert not any("gguf header" in a for a in est.assumptions)
    with pytest.raises(OomkitError, match="bogus"):
        oomkit.estimate_model(str(d), InferenceSettings(runtime=runtime, quant="bogus"), _gpu())


def test_vllm_still_reads_the_exact_header(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    est = oomkit.estimate_model(str(d), InferenceSettings(runtime="vllm"), _gpu())
    assert est.model.source == "safetensors"
    assert est.model.params == sum(v.size for v in _tensors().values())


def test_missing_shard_without_index_is_refused(tmp_path: Path) -> None:
    d = _model_dir(tmp_path, shards=2)
    whole = oomkit.load_model(str(d))
    assert whole.source == "safetensors"
    one = oomkit.load_model(str(d / "model-00001-of-00002.safetensors"))  # reads its siblings
    assert len(one.tensors or ()) == len(whole.tensors or ()) == len(_tensors())
    (d / "model-00002-of-00002.safetensors").unlink()
    for ref in (d, d / "model-00001-of-00002.safetensors"):
        with pytest.raises(SourceNotFoundError, match=r"model-00002-of-00002\.safetensors"):
            oomkit.load_model(str(ref))


def test_peft_adapter_beside_a_config_is_not_the_model(tmp_path: Path) -> None:
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    adapter = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight":
               np.zeros((8, 64), np.float32)}  # fmt: skip
    safetensors_numpy.save_file(adapter, str(d / "adapter_model.safetensors"))
    spec = oomkit.load_model(str(d))
    config_only = oomkit.load_model(str(d / "config.json"))
    assert spec.tensors is None
    est = oomkit.estimate_model(spec, InferenceSettings(runtime="vllm"), _gpu())
    assert (
        est.model.params
        == oomkit.estimate_model(
            config_only, InferenceSettings(runtime="vllm"), _gpu()
        ).model.params
    )


def test_a_header_far_smaller_than_the_config_is_refused(tmp_path: Path) -> None:
    """One 8-element tensor beside a Llama config was read as the model ("0.00 B params")."""
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    safetensors_numpy.save_file({"a": np.zeros((8,), np.float16)}, str(d / "model.safetensors"))
    with pytest.raises(SourceNotFoundError, match="not this model's weights"):
        oomkit.load_model(str(d))
