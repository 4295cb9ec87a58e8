"""The probe's training-loop variants and its caching-allocator replay, on small real configs.

Each variant is checked against the mechanism it models (who holds what, when), with numbers
derived from the model's own parameter count, never hard-coded peaks.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from oomkit.errors import InvalidSettingError  # noqa: E402
from oomkit.inprocess.probe import probe  # noqa: E402
from oomkit.inprocess.probe_allocator import (  # noqa: E402
    CUBLAS_WORKSPACE_BYTES,
    _Allocator,
    replay,
)
from oomkit.inprocess.probe_step import StepOptions  # noqa: E402

MiB = 1 << 20
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


def run(**kw: Any) -> Any:
    args: dict[str, Any] = {"train": "full", "seq": 128, "batch": 2, "round_to_cuda_blocks": False}
    return probe(LLAMA, **{**args, **kw})


# --- allocator replay -------------------------------------------------------------------------


def test_replay_rules_small_large_and_split() -> None:
    # small request: a 2 MiB segment; < 10 MiB: 20 MiB segment; >= 10 MiB: rounded to 2 MiB
    assert replay([(1, 100)]).reserved_peak_bytes == 2 * MiB
    assert replay([(1, 3 * MiB)]).reserved_peak_bytes == 20 * MiB
    assert replay([(1, 11 * MiB + 1)]).reserved_peak_bytes == 12 * MiB
    # a 12 MiB segment holding an 11 MiB + 1 block keeps the remainder (< 1 MiB) in the block
    assert replay([(1, 11 * MiB + 1)]).allocated_peak_bytes == 12 * MiB
    # freed blocks are reused (best fit), merged with free neighbours
    r = replay([(1, 4 * MiB), (2, 4 * MiB), (1, -1), (2, -1), (3, 8 * MiB)])
    assert (r.reserved_peak_bytes, r.segments) == (20 * MiB, 1)
    # a cached block too small for the request does not help: a new segment
    r = replay([(1, 30 * MiB), (1, -1), (2, 40 * MiB)])
    assert r.reserved_peak_bytes == 70 * MiB
    assert replay([], cublas_workspace=True).allocated_peak_bytes == CUBLAS_WORKSPACE_BYTES


def test_replay_bookkeeping_invariants_on_random_traces() -> None:
    rng = random.Random(7)
    a = _Allocator()
    live: dict[int, Any] = {}
    for i in range(3000):
        if live and rng.random() < 0.5:
            a.free(live.pop(rng.choice(list(live))))
        else:
            live[i] = a.malloc(rng.choice([100, 5000, 700_000, 3 * MiB, 12 * MiB]))
        assert sum(b.size for b in a.blocks.values()) == a.reserved
        assert sum(b.size for b in live.values()) == a.allocated


def test_repeated_steps_reach_a_steady_reserve() -> None:
    trace = [(1, 40 * MiB), (2, 8 * MiB), (1, -1), (3, 30 * MiB), (2, -1), (3, -1)]
    once = replay(trace, repeat_from=0, repeats=1).reserved_peak_bytes
    many = replay(trace, repeat_from=0, repeats=5).reserved_peak_bytes
    assert once == many  # a step that frees what it allocates reuses its cached segments


def test_probe_reports_reserved_at_least_allocated() -> None:
    r = run(round_to_cuda_blocks=True)
    assert r.reserved_peak_bytes is not None
    assert r.allocator_allocated_peak_bytes is not None
    assert r.reserved_peak_bytes >= r.allocator_allocated_peak_bytes >= r.peak_bytes
    assert r.to_dict()["reserved_peak_bytes"] == r.reserved_peak_bytes


# --- step variants --------------------------------------------------------------------------------


def test_paged_optimizer_states_leave_the_allocator() -> None:
    plain = run(optimizer="adamw8bit", mixed_precision=False)
    paged = run(optimizer="paged_adamw8bit", mixed_precision=False)
    # states of tensors >= 1e5 elements are cudaMallocManaged: only the small ones stay
    assert paged.optimizer_state_bytes < plain.optimizer_state_bytes
    assert paged.peak_bytes < plain.peak_bytes
    assert paged.peak_by_category["optimizer_state"] < plain.peak_by_category["optimizer_state"]


def test_kept_gradients_are_alive_during_the_forward() -> None:
    none = run(mixed_precision=False)
    kept = run(mixed_precision=False, step=StepOptions(zero_grad_set_to_none=False))
    n_bytes = 2 * none.trainable_parameter_count  # bf16 gradients (pure bf16 training)
    assert kept.phase_peaks["forward"] - none.phase_peaks["forward"] == n_bytes


def test_optimizer_in_backward_never_holds_all_gradients() -> None:
    base = run(mixed_precision=False, dtype="bf16")
    inbwd = run(mixed_precision=False, dtype="bf16", step=StepOptions(optimizer_in_backward=True))
    assert inbwd.gradients_bytes == 0  # each gradient is freed by its own update
    assert base.gradients_bytes == 2 * base.trainable_parameter_count
    assert "optimizer_step" not in inbwd.phase_peaks  # no separate step with all gradients
    assert inbwd.peak_bytes <= base.peak_bytes


def test_held_fp32_logits_and_chunked_loss() -> None:
    compute = run(mixed_precision=False, dtype="bf16", step=StepOptions(held_logits="compute"))
    held = run(mixed_precision=False, dtype="bf16", step=StepOptions(held_logits="fp32"))
    # the upcast copy the loop holds and the log-softmax output it feeds are fp32, not bf16:
    # at least 2 x 2 more bytes per logit through the backward
    logits = 2 * 127 * LLAMA["vocab_size"]  # batch x (seq - 1) x vocab
    assert held.phase_peaks["backward"] - compute.phase_peaks["backward"] >= 4 * logits
    std = run(mixed_precision=False, dtype="bf16")
    chunked = run(mixed_precision=False, dtype="bf16", step=StepOptions(loss="chunked"))

    def act_peak(r: Any) -> int:
        return max(r.phase_peaks["forward"], r.phase_peaks["backward"])

    assert act_peak(chunked) < act_peak(std)


def test_adafactor_and_forloop_adamw() -> None:
    ada = run(optimizer="adafactor", mixed_precision=False)
    adam = run(optimizer="adamw", mixed_precision=False)
    assert ada.optimizer_state_bytes < adam.optimizer_state_bytes / 4  # factored, no momentum
    loop = run(mixed_precision=False, step=StepOptions(optimizer_impl="forloop"))
    assert loop.optimizer_state_bytes == adam.optimizer_state_bytes
    # one parameter's temporaries at a time instead of one per parameter in the foreach list
    assert loop.phase_peaks["optimizer_step"] < adam.phase_peaks["optimizer_step"]


def test_bad_step_option() -> None:
    with pytest.raises(InvalidSettingError, match="held_logits"):
        StepOptions(held_logits="fp8")


def test_activation_offloading_moves_saved_tensors_to_the_host() -> None:
    kw: dict[str, Any] = {"mixed_precision": False, "dtype": "bf16", "seq": 512, "batch": 4}
    base = run(**kw, step=StepOptions(loss="chunked"))
    off = run(**kw, step=StepOptions(loss="chunked", offload_activations=True))
    # the forward keeps at most the last few saved tensors on the GPU; the rest is host memory
    assert off.phase_peaks["forward"] < base.phase_peaks["forward"]
    assert off.saved_activations_bytes < base.saved_activations_bytes / 2
    # with checkpointing only the layer inputs are saved: those are what moves
    gc = run(**kw, grad_checkpointing=True, step=StepOptions(loss="chunked"))
    gc_off = run(
        **kw, grad_checkpointing=True, step=StepOptions(loss="chunked", offload_activations=True)
    )
    layer_input = kw["batch"] * kw["seq"] * LLAMA["hidden_size"] * 2  # bf16 hidden state
    assert gc.saved_activations_bytes - gc_off.saved_activations_bytes >= layer_input


def test_compiled_chunked_loss_keeps_bf16_logits_not_fp32_log_probs() -> None:
    kw: dict[str, Any] = {"mixed_precision": False, "dtype": "bf16", "seq": 512, "batch": 2}
    eager = run(**kw, step=StepOptions(loss="chunked"))
    comp = run(**kw, step=StepOptions(loss="chunked", compiled_loss=True))
    logits = kw["batch"] * kw["seq"] * LLAMA["vocab_size"]
    rows = kw["batch"] * kw["seq"]
    # eager log_softmax saves fp32 log-probs (4 B/logit); the fused kernel keeps the bf16 chunk
    # (2 B/logit) and a fp32 logsumexp per row
    saved = eager.saved_activations_bytes - comp.saved_activations_bytes
    assert abs(saved - (2 * logits - 4 * rows)) < 1024  # (a few scalars aside)
