"""Falcon's multi-query SDPA call in training: PyTorch's math backend saves fp32 scores.

``FalconAttention.forward`` (transformers models/falcon/modeling_falcon.py, 5.24) passes 71 query
heads and one K/V head to ``scaled_dot_product_attention`` without ``enable_gqa``: flash,
memory-efficient and cuDNN attention refuse unequal head counts (sdp_utils
``check_batch_size_and_num_heads_dense``), so ``_scaled_dot_product_attention_math`` runs, a
composite of autograd ops on fp32 copies whose ``_safe_softmax`` saves its fp32 result for
backward: 4 bytes per score per layer (``oomkit.estimate.hf_attention_bytes.sdpa_runs_math``).
"""

from __future__ import annotations

from typing import Any

import pytest

from oomkit.estimate.hf_attention_bytes import sdpa_runs_math
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_activations import layer_activations
from oomkit.estimate.training_states import lora_target_roles
from oomkit.inprocess.probe_model import load_config_dict
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings


def _spec(layers: int | None = None) -> tuple[dict[str, Any], ModelSpec]:
    cfg = load_config_dict("falcon-7b")
    if layers:
        cfg = {**cfg, "num_hidden_layers": layers}
    return cfg, parse_config(cfg, name="falcon-7b")


def test_falcon_saves_fp32_scores_per_layer_under_sdpa() -> None:
    _, spec = _spec()
    assert sdpa_runs_math(spec)
    a = spec.num_attention_heads
    roles = lora_target_roles(spec, None)

    def per_token(seq: int, attn: str = "sdpa") -> int:
        st = TrainingSettings(method="lora", micro_batch=1, seq=seq, attn_implementation=attn)
        return layer_activations(spec, st, trainable_roles=roles)[0].saved_bytes // seq

    # the s x s term: one fp32 score per head and key per token
    assert per_token(2048) - per_token(1024) == a * 1024 * 4
    # FlashAttention-2 takes multi-query natively: nothing grows with s
    assert per_token(2048, "flash_attention_2") == per_token(1024, "flash_attention_2")


def test_a_falcon_lora_step_at_2048_tokens_does_not_fit_an_80_gb_card() -> None:
    """b2 x 71 heads x 2048^2 x 4 B = 2.2 GiB of saved scores per layer, 32 layers."""
    from oomkit.estimate.verdict import Platform, verdict
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    _, spec = _spec()
    st = TrainingSettings(method="lora", micro_batch=2, seq=2048)
    est = estimate_training(spec, st, hardware_for((find_gpu("h100-sxm"),)))
    assert verdict(est, Platform(os="linux", display=False)).level == "does_not_fit"


def test_probe_agrees_per_layer_on_falcon() -> None:
    """The FakeTensor probe (the same composite on fake tensors) against the formula's
    per-layer growth (2 layers minus 1), LoRA b1 s1024: the formula within 12% above it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from oomkit.inprocess.probe import probe
    from oomkit.spec.hardware import Hardware

    peaks = []
    for layers in (1, 2):
        cfg, spec = _spec(layers)
        traced = probe(cfg, train="lora", seq=1024, batch=1, round_to_cuda_blocks=False)
        st = TrainingSettings(method="lora", micro_batch=1, seq=1024)
        est = estimate_training(spec, st, Hardware())
        peaks.append((traced.peak_bytes, int(est.runtime_details["peak_allocated_bytes"])))
    probe_layer = peaks[1][0] - peaks[0][0]
    formula_layer = peaks[1][1] - peaks[0][1]
    # a probe layer holds 71 x 1024^2 x 4 B = 298 MB of scores: without them the formula is
    # less than half the probe's layer
    assert probe_layer > 71 * 1024 * 1024 * 4
    assert probe_layer <= formula_layer <= 1.12 * probe_layer
