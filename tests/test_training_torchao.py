"""torchao AdamW8bit (``torchao_adamw8bit``): 8-bit states and the compiled step's fp32 buffers.

Expected bytes come from the shapes and the layout read from torchao v0.6.1 and Inductor's
generated code (:mod:`oomkit.estimate.training_torchao`), never from a fitted figure.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from oomkit.api import load_model
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_states import model_states, trainable_tensors
from oomkit.estimate.training_torchao import (
    torchao_autotune_bytes,
    torchao_quantised,
    torchao_state_bytes,
    torchao_step_temporary_bytes,
)
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import TrainingSettings

SPEC = load_model("llama-3.2-3b", offline=True)  # tied 128256 x 3072 embedding
BASE = TrainingSettings(
    method="full", optimizer="torchao_adamw8bit", master_weights=False, micro_batch=2,
    seq=4096, loss="chunked", grad_checkpointing="full", optimizer_in_backward=True,
    activation_offloading=True, compiled=True, compiled_loss=True,
)  # fmt: skip
# (the torchtune README row "+ adamw8bit" of tests/fixtures/training_measured.jsonl)
EMBED = SPEC.vocab_size * SPEC.hidden_size


def _components(s: TrainingSettings) -> tuple[int, str, list[Any]]:
    est = estimate_training(SPEC, s, Hardware())
    peak = est.runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    return peak, str(est.runtime_details["peak_phase"]), list(est.devices[0].components)


def test_quantisation_rule_and_state_bytes() -> None:
    assert torchao_quantised(4096)
    assert torchao_quantised(EMBED)
    assert not torchao_quantised(3072)  # a norm: below 4096 elements
    assert not torchao_quantised(4096 + 128)  # not a multiple of the 256-element block
    # codes (1 byte) + one fp32 scale per 256 elements + 256-entry fp32 qmap, per state
    assert torchao_state_bytes(EMBED, 2) == 2 * (EMBED + 4 * EMBED // 256 + 4 * 256)
    assert torchao_state_bytes(3072, 2) == 2 * 3072 * 2  # zeros_like(p) in bf16
    # the one fp32 buffer of torch 2.5.1's CUDA call() (the fixture's empty_strided_cuda)
    assert torchao_step_temporary_bytes(EMBED) == 4 * EMBED
    assert torchao_step_temporary_bytes(3072) == 0
    # first call: two clones of the bf16 parameter, both codes and both scales, + 256e6 flush
    assert torchao_autotune_bytes(EMBED, 2) == 2 * (2 * EMBED + 2 * EMBED + 8 * EMBED // 256) + (
        256 * 10**6
    )
    assert torchao_autotune_bytes(3072, 2) == 0


def test_model_states_sum_the_layout_over_the_tensors() -> None:
    st = model_states(SPEC, BASE)
    tensors = trainable_tensors(SPEC, BASE)
    assert st.optimizer_bytes == sum(torchao_state_bytes(t.n_params, 2) for t in tensors)
    # the step runs one parameter at a time: the largest one's buffers
    assert st.step_temporary_bytes == torchao_step_temporary_bytes(EMBED)
    assert st.step_temporary_one_tensor_bytes == st.step_temporary_bytes


def test_embedding_step_in_backward_holds_its_gradient_and_the_fp32_buffers() -> None:
    peak, phase, comps = _components(BASE)
    by_label = {c.label: c.n_bytes for c in comps}
    temp = by_label["step temporaries of token_embd.weight (torchao_adamw8bit)"]
    # the embedding's first step (it steps last, of a shape no other tensor has): the call's
    # buffer plus its kernel's autotuning, with every state already allocated
    assert temp == torchao_step_temporary_bytes(EMBED) + torchao_autotune_bytes(EMBED, 2)
    assert by_label["gradient of token_embd.weight (its step runs in backward)"] == 2 * EMBED
    assert phase == "backward"
    # the tied embedding steps at the end of backward: no saved activation is left then
    assert not [c for c in comps if c.category == "activations"]
    st = model_states(SPEC, BASE)
    assert peak == st.trainable_weights_bytes + st.optimizer_bytes + 2 * EMBED + temp


def test_bitsandbytes_layout_has_no_step_buffers() -> None:
    bnb = dataclasses.replace(BASE, optimizer="adamw8bit")
    peak_ao, _, _ = _components(BASE)
    peak_bnb, _, comps = _components(bnb)
    assert not [c for c in comps if "step temporaries" in c.label]
    assert peak_ao > peak_bnb


def test_untied_head_steps_while_the_saved_activations_are_alive() -> None:
    from oomkit.estimate.training import _comp, _in_backward_step

    untied = dataclasses.replace(SPEC, tie_word_embeddings=False)
    s = dataclasses.replace(BASE, activation_offloading=False)
    saved = _comp("activations", "saved activations", 123, "", "", {})
    comps = {c.label: c for c in _in_backward_step(untied, s, model_states(untied, s), saved)}
    # the head's gradient is complete right after the loss backward: every layer's
    # checkpointed input is still held when its step allocates the fp32 buffer; it steps
    # first, so its autotuning happens before the other states exist (not counted), and the
    # embedding of the same shape reuses the compiled kernel
    assert comps["saved activations"] is saved
    head = comps["step temporaries of output.weight (torchao_adamw8bit)"]
    assert head.n_bytes == torchao_step_temporary_bytes(EMBED)
    # with them the head's step is not the peak any more: the loss backward is
    est = estimate_training(untied, s, Hardware())
    labels = [c.label for c in est.devices[0].components]
    assert "step temporaries of output.weight (torchao_adamw8bit)" not in labels
    assert "logits + loss (backward)" in labels


def test_without_optimizer_in_backward_the_step_phase_holds_them() -> None:
    s = dataclasses.replace(BASE, optimizer_in_backward=False)
    est = estimate_training(SPEC, s, Hardware())
    phases = est.runtime_details["phases"]
    assert isinstance(phases, dict)
    st = model_states(SPEC, s)
    # all gradients + states + weights + the largest parameter's buffers at optimizer.step()
    assert phases["optimizer_step"] >= (
        st.trainable_weights_bytes + st.optimizer_bytes + st.gradients_bytes
        + torchao_step_temporary_bytes(EMBED)
    )  # fmt: skip
