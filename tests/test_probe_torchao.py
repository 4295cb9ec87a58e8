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


def test_first_step_autotunes_the_largest_shape_once() -> None:
    from oomkit.estimate.training_torchao import torchao_autotune_bytes

    sizes = _shapes()
    largest = max(sizes)
    r = probe(
        LLAMA, train="full", seq=128, batch=2, round_to_cuda_blocks=False,
        optimizer="torchao_adamw8bit", mixed_precision=False, dtype="bf16",
        steady_state=False,
    )  # fmt: skip
    # the first step creates the states in the loop: the embedding (first parameter, shape
    # 4096 x 256) compiles and autotunes with only its own states allocated; the head of the
    # same shape reuses the kernel, so one autotuning, the largest's
    weights_grads = r.parameters_bytes + r.gradients_bytes + 2 * 128 * 8 + 64 * 4
    own = torchao_state_bytes(largest, 2) + 4
    extra = torchao_step_temporary_bytes(largest) + torchao_autotune_bytes(largest, 2)
    assert r.phase_peaks["optimizer_step"] == weights_grads + own + extra


def test_a_compiled_shape_is_not_autotuned_again() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    from oomkit.estimate.training_torchao import torchao_autotune_bytes
    from oomkit.inprocess.probe_torchao import FakeTorchaoAdamW8bit
    from oomkit.inprocess.probe_tracker import MemoryTracker

    n = 1024 * 256
    with FakeTensorMode(), MemoryTracker(round_to_cuda_blocks=False) as tracker:
        a, b = (torch.nn.Parameter(torch.zeros(1024, 256, dtype=torch.bfloat16)) for _ in "ab")
        compiled: set[tuple[Any, ...]] = set()
        peaks = []
        for p in (a, b):  # one optimizer per parameter, as torchtune's optimizer_in_bwd
            p.grad = torch.zeros_like(p)
            opt = FakeTorchaoAdamW8bit([p], compiled)
            tracker.reset_peak()
            before = tracker.live_bytes
            opt.step()
            states = torchao_state_bytes(n, 2) + 4
            peaks.append(tracker.peak_bytes - before - states)
    assert peaks == [
        torchao_step_temporary_bytes(n) + torchao_autotune_bytes(n, 2),
        torchao_step_temporary_bytes(n),
    ]
