"""GLM-4-9B before transformers' native Glm (v4.46): the Hub's ChatGLM remote code, whose
``generate`` keeps only the last position's logits (``return_last_logit=True``)."""

from __future__ import annotations

import dataclasses

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.transformers_remote_code import remote_code_keeps_last_logit
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

# THUDM/GLM-4 basic_demo (0423d7c): trans_stress_test.py on one A100-SXM4-80GB, transformers
# 4.40.0 (requirements.txt), bf16, 128000 random prompt tokens + max_new_tokens 512
HW = hardware_for(parse_gpu_list("a100-80gb-sxm"))
SETTINGS = {
    "runtime": "transformers",
    "quant": "bf16",
    "ctx": 128512,
    "max_new_tokens": 512,
    "device_map": "none",
}


def _est(model: str, version: str) -> Estimate:
    return estimate(model, InferenceSettings(runtime_version=version, **SETTINGS), HW)


def test_glm4_on_4_40_keeps_only_the_last_logit() -> None:
    """Full-sequence logits would be 128000 x 151552 x (2 + 4) bytes = 108 GiB, more than the
    A100 holds; the stated peak of this run is 57379 MiB. With the remote code's last-position
    logits the prefill's live set is a decoder layer's, as on 4.45+ (logits_to_keep=1)."""
    old = _est("glm-4-9b", "4.40.0")
    new = _est("glm-4-9b", "4.45.0")
    assert old.devices[0].activations_bytes == new.devices[0].activations_bytes
    assert old.devices[0].total_bytes < 57379 * 2**20  # the run's stated peak
    assert any("return_last_logit" in n for n in old.assumptions)


def test_native_models_still_get_full_logits_before_4_45() -> None:
    """The same release and prompt on a native architecture (Llama-3.1-8B, vocabulary 128256)
    still materialises every position's logits: tens of GiB more than on 4.45."""
    old = _est("llama-3.1-8b", "4.40.0").devices[0].activations_bytes
    new = _est("llama-3.1-8b", "4.45.0").devices[0].activations_bytes
    assert old - new > 70 * GiB  # logits 128512 x 128256 x 6 bytes = 92 GiB, less the layer


def test_rule_by_model_type() -> None:
    glm = load_model("glm-4-9b")
    assert remote_code_keeps_last_logit(glm, release_full_logits=True)
    # 4.45+: native generate already keeps one position; nothing to change
    assert not remote_code_keeps_last_logit(glm, release_full_logits=False)
    chatglm = dataclasses.replace(glm, model_type="chatglm")
    assert remote_code_keeps_last_logit(chatglm, release_full_logits=False)
    assert not remote_code_keeps_last_logit(load_model("llama-3.1-8b"), release_full_logits=True)


def test_deepseek_v2_remote_code_rope_buffers_per_layer() -> None:
    """DeepSeek-V2's Hub modeling_deepseek.py: every attention layer's own rotary embedding
    registers cos_cached and sin_cached of max_position_embeddings x qk_rope_head_dim in the
    default dtype: 2 x 163840 x 64 x 2 B = 40 MiB per layer in bf16; native transformers (no
    per-layer caches) only after the full-logits releases."""
    from oomkit.estimate.transformers_remote_code import remote_rope_cache_bytes

    spec = load_model("deepseek-v2", offline=True)
    assert spec.max_position_embeddings == 163840
    assert remote_rope_cache_bytes(spec, release_full_logits=True, elem=2) == 40 * 2**20
    assert remote_rope_cache_bytes(spec, release_full_logits=False, elem=2) == 0
    glm = load_model("glm-4-9b", offline=True)
    assert remote_rope_cache_bytes(glm, release_full_logits=True, elem=2) == 0


def test_deepseek_coder_v2_8xa100_death_is_not_fits() -> None:
    """DeepSeek-Coder-V2#30 (heldout13, tf-dscv2-30-*): died in dispatch_model ->
    attach_align_device_hook_on_blocks, where the buffers move to their GPUs. GPU 7's ten MoE
    layers: 400 MiB of RoPE buffers and 4.69 GiB of 16 MiB segments for 15 MiB experts
    (oomkit.estimate.torch_blocks) on top of accelerate's raw-byte plan."""
    import json
    from pathlib import Path

    from oomkit.estimate.verdict import Platform, verdict

    runs = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout13.jsonl"
    rec = next(
        json.loads(ln)
        for ln in runs.read_text().splitlines()
        if ln.strip() and json.loads(ln)["id"].startswith("tf-dscv2-30-")
    )
    settings = InferenceSettings(
        runtime="transformers",
        quant=rec["quant"],
        ctx=rec["ctx"],
        runtime_version=rec["date"],
        **rec["settings"],
    )
    est = estimate(rec["model"], settings, hardware_for(parse_gpu_list(rec["gpu"])), offline=True)
    assert any("RoPE cos/sin buffers" in n for n in est.assumptions)
    assert verdict(est, Platform()).level != "fits"
