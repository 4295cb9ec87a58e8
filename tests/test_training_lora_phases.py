"""LoRA / QLoRA with gradient checkpointing: the training estimate's activation terms, measured.

A reviewer read the LoRA + checkpointing activation ("forward") term as high against a training
log. The committed GPU results say otherwise: every LoRA/QLoRA step with checkpointing is within
-1.6% to -0.5% of its ``max_memory_allocated``, and the CUDA caching allocator's own history of
three of them (``benchmarks/gpu/results/training_traces_h200.json.gz``), cut into the second
step's phases by ``benchmarks/training_lora_phases.py``, puts the estimate's forward-end
activations 0.9-2.0% *under* the real ones. What is kept, per the traces and the sources:

* each checkpointed layer keeps its input only, in the base dtype (transformers 5.24
  ``activation_checkpointing_enable`` defaults to ``use_reentrant=False``; the layer input is the
  positional argument the non-reentrant checkpoint's ``recompute_fn`` holds, while its pack hook
  stores a ``_Holder``, no tensor, for everything the layer saves: torch/utils/checkpoint.py
  ``_checkpoint_hook``): ``2 x layers`` bytes per token x hidden;
* the loss's forward holds the bf16 logits, their fp32 upcast (``ForCausalLMLoss``:
  ``logits = logits.float()``) and ``log_softmax``'s fp32 output: exactly 10 bytes per B·S·V;
* beyond those, only the final RMSNorm's fp32 input (saved) and its bf16 output (the head's
  input, alive until the loss) and autocast's cached casts of the adapter weights: 6 B per
  token x hidden plus a few MiB, which the estimate leaves out (why it is a little low).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from functools import cache
from typing import Any

import pytest

from gpu_results import ROOT
from oomkit.api import load_model
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_activations import loss_activations
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings


@cache
def _bench() -> Any:
    import importlib.util
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
    spec = importlib.util.spec_from_file_location(
        "training_lora_phases", ROOT / "benchmarks" / "training_lora_phases.py"
    )
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cache
def _trace_rows() -> tuple[dict[str, Any], ...]:
    return tuple(_bench().trace_rows())


def _ckpt_traces() -> list[dict[str, Any]]:
    rows = [r for r in _trace_rows() if r["case"].endswith(" ckpt")]
    assert len(rows) == 3  # Llama-3.1-8B, its 8-layer b2 s4096, Qwen3-30B-A3B (4 layers)
    return rows


def _error(row: dict[str, Any], key: str) -> float:
    m, e = row["measured"], row["estimated"]
    real = m[key] - m["resident"]
    return float(e[key] / real - 1)


def test_adapter_gradients_and_adamw_states_are_measured_arithmetic() -> None:
    # the traces' resident correction rests on these two terms: the H100 file measured them
    bench = _bench()
    doc = json.loads((bench.RESULTS / "training_h100.json").read_text())
    lora = [r for r in doc["results"] if r["method"] == "lora"]
    assert len(lora) == 5
    for r in lora:
        _, _, est = bench._estimate(r, "h100")
        cats = est.runtime_details["phase_categories"]
        grads = cats["optimizer_step"]["gradients"]
        states = cats["forward_end"]["optimizer"]
        assert abs(grads / r["measured"]["gradient_bytes"] - 1) < 0.005, r["model"]
        assert abs(states / r["measured"]["optimizer_state_bytes"] - 1) < 0.005, r["model"]


@pytest.mark.parametrize("i", range(3))
def test_lora_checkpointing_forward_end_is_not_high(i: int) -> None:
    row = _ckpt_traces()[i]
    err = _error(row, "forward_end")
    # at d367051: -2.0% (Llama-3.1-8B), -1.8% (8 layers b2 s4096), -0.9% (Qwen3-30B-A3B)
    assert -0.05 < err <= 0.0, (row["case"], err)


@pytest.mark.parametrize("i", range(3))
def test_lora_checkpointing_loss_backward_and_layer_walk_are_not_high(i: int) -> None:
    row = _ckpt_traces()[i]
    assert -0.05 < _error(row, "loss_backward") <= 0.0, row["case"]
    # one recomputed layer (its full saved set) + its gradients beside the remaining inputs:
    # -2.6% / -4.0% dense; the MoE layer's routed buffers are under-counted (-23%)
    assert -0.30 < _error(row, "layer_walk") <= 0.0, row["case"]


def test_the_loss_forward_is_ten_bytes_per_logit() -> None:
    for row in _trace_rows():
        m, e = row["measured"], row["estimated"]
        # bf16 logits + fp32 upcast + fp32 log_softmax output, measured to the byte's fraction
        assert abs((m["forward_end"] - m["pre_loss"]) / m["bsv"] - 10) < 0.01, row["case"]
        spec = load_model(row["case"].split()[0], offline=True)
        loss = loss_activations(spec, TrainingSettings(method="lora", micro_batch=1, seq=2048))
        bsv = 2048 * spec.vocab_size
        assert loss.saved_bytes + loss.forward_transient_bytes == 10 * bsv, e["vocab"]


def test_the_checkpointed_stack_is_the_layer_inputs_and_the_final_norm() -> None:
    for row in _ckpt_traces():
        m, e = row["measured"], row["estimated"]
        th = e["tokens_x_hidden"]
        assert e["kept"] == 2 * e["layers"] * th  # bf16 layer inputs, nothing else
        extra = (m["pre_loss"] - m["resident"] - e["kept"]) / th
        # the final RMSNorm: fp32 input (4) + bf16 output (2); autocast's adapter casts on top
        assert 6.0 <= extra < 8.0, (row["case"], extra)


def test_every_lora_checkpointing_peak_is_within_tolerance_and_not_high() -> None:
    rows = [r for r in _bench().peak_rows() if r["ckpt"]]
    assert len(rows) >= 20
    for r in rows:
        err = r["estimate"] / r["measured"] - 1
        assert -0.03 < err <= 0.01, (r["file"], r["case"], err)


# the measured LoRA/QLoRA checkpointing steps' models (dense GQA, MoE, eager soft-capped Gemma-2)
MONOTONE = (
    ("llama-3.1-8b", "lora"),
    ("llama-3.1-8b", "qlora"),
    ("qwen3-30b-a3b", "qlora"),
    ("gemma-2-9b", "qlora"),
    ("phi-3-mini", "lora"),
)


@pytest.mark.parametrize(("name", "method"), MONOTONE)
def test_longer_sequences_and_bigger_batches_never_need_less(name: str, method: str) -> None:
    spec = load_model(name, offline=True)
    base = TrainingSettings(method=method, grad_checkpointing="full", micro_batch=1, seq=256)

    def sizes(s: TrainingSettings) -> tuple[int, int]:
        rd = estimate_training(spec, s, Hardware()).runtime_details
        phases = rd["phases"]
        assert isinstance(phases, dict)
        return int(phases["forward_end"]), int(rd["peak_allocated_bytes"])

    by_seq = [sizes(dataclasses.replace(base, seq=n)) for n in (256, 1024, 2048, 4096, 8192)]
    by_batch = [sizes(dataclasses.replace(base, micro_batch=b, seq=2048)) for b in (1, 2, 4, 8)]
    for series in (by_seq, by_batch):
        for a, b in itertools.pairwise(series):
            assert b[0] > a[0], (name, method, "forward end", series)
            assert b[1] > a[1], (name, method, "peak", series)
