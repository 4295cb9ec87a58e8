"""The probe's torchao AdamW8bit: its state layout and the fp32 buffers of its compiled step.

Expected bytes come from the traced model's own parameter shapes and the layout read from
torchao v0.6.1 / Inductor's output code (:mod:`oomkit.estimate.training_torchao`).
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from oomkit.estimate.training_torchao import (  # noqa: E402
    torchao_state_bytes,
    torchao_step_temporary_bytes,
)
from oomkit.inprocess.probe import probe  # noqa: E402
from oomkit.inprocess.probe_step import StepOptions  # noqa: E402

LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 4096,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
}


def _shapes() -> list[int]:
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**LLAMA)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    return [p.numel() for p in model.parameters()]


def run(optimizer: str, step: StepOptions | None = None, seq: int = 128) -> Any:
    return probe(
        LLAMA, train="full", seq=seq, batch=2, round_to_cuda_blocks=False, optimizer=optimizer,
        mixed_precision=False, dtype="bf16", step=step or StepOptions(),
    )  # fmt: skip


def test_states_follow_the_torchao_layout() -> None:
    sizes = _shapes()
    r = run("torchao_adamw8bit")
    # exp_avg + exp_avg_sq per parameter, plus the fp32 step counter of each
    assert r.optimizer_state_bytes == sum(torchao_state_bytes(n, 2) + 4 for n in sizes)


def test_step_allocates_the_largest_parameters_fp32_buffers() -> None:
    largest = max(_shapes())
    r = run("torchao_adamw8bit")
    # at optimizer.step(): weights, all gradients, states, the inputs (2 x 128 int64) and the
    # rotary inv_freq buffer (64 fp32), plus one parameter's buffers at a time: the largest's
    held = r.parameters_bytes + r.gradients_bytes + r.optimizer_state_bytes + 2 * 128 * 8 + 64 * 4
    assert r.phase_peaks["optimizer_step"] - held == torchao_step_temporary_bytes(largest)


def test_in_backward_the_buffers_exist_one_parameter_at_a_time() -> None:
    largest = max(_shapes())
    # a short sequence, so that the activations are smaller than the step's buffers
    r = run("torchao_adamw8bit", StepOptions(optimizer_in_backward=True), seq=8)
    assert "optimizer_step" not in r.phase_peaks
    assert r.gradients_bytes == 0
    # the head's update: its bf16 gradient and its fp32 buffers on top of weights and states
    floor = r.parameters_bytes + r.optimizer_state_bytes + 2 * largest
    assert r.phase_peaks["backward"] >= floor + torchao_step_temporary_bytes(largest)


def test_the_cli_list_names_every_optimizer_the_step_builds() -> None:
    from oomkit.inprocess.probe import PROBE_OPTIMIZERS
    from oomkit.inprocess.probe_step import STEP_OPTIMIZERS

    assert set(PROBE_OPTIMIZERS) == set(STEP_OPTIMIZERS)
    assert "torchao_adamw8bit" in PROBE_OPTIMIZERS
