"""Relational properties of the training estimator (hypothesis over real catalog models).

Each property is what the engines guarantee by construction, e.g. ZeRO stage k+1 partitions a
superset of what stage k partitions; checkpointing only ever frees saved activations.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from oomkit.api import load_model
from oomkit.estimate.hf_attention_bytes import sdpa_runs_math
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_activations import autocast_stream, layer_activations
from oomkit.estimate.training_states import lora_target_roles, model_states
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings

# dense GQA, MoE, MLA + MoE, SWA, tied embeddings (gemma), fused QKV, GELU MLP
MODELS = (
    "llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b", "deepseek-v2-lite", "gemma-2-9b",
    "phi-3-mini", "falcon-7b", "mistral-7b",
)  # fmt: skip
HW = Hardware()


@cache
def spec_of(name: str) -> ModelSpec:
    return load_model(name, offline=True)


def total(spec: ModelSpec, s: TrainingSettings) -> int:
    return estimate_training(spec, s, HW).devices[0].total_bytes


def phase(spec: ModelSpec, s: TrainingSettings, name: str) -> int:
    phases = estimate_training(spec, s, HW).runtime_details["phases"]
    assert isinstance(phases, dict)
    value = phases[name]
    assert isinstance(value, int)
    return value


base = st.builds(
    TrainingSettings,
    method=st.sampled_from(("full", "lora", "qlora")),
    optimizer=st.sampled_from(("adamw", "adamw8bit", "sgd_momentum", "adafactor", "lion")),
    micro_batch=st.integers(1, 8),
    seq=st.sampled_from((128, 512, 2048, 4096, 8192)),
    grad_checkpointing=st.sampled_from(("none", "full", "selective")),
    loss=st.sampled_from(("standard", "chunked", "fused")),
    attn_implementation=st.sampled_from(("sdpa", "flash_attention_2", "eager")),
    grad_accum=st.integers(1, 4),
)
models = st.sampled_from(MODELS)
gpu_counts = st.sampled_from((2, 4, 8, 16))


@settings(max_examples=40, deadline=None)
@given(models, base, gpu_counts)
def test_zero_stages_never_increase_per_gpu_memory(
    name: str, s: TrainingSettings, gpus: int
) -> None:
    spec = spec_of(name)
    s = dataclasses.replace(s, gpus=gpus, method="full")
    ddp, z1, z2, z3 = (total(spec, dataclasses.replace(s, zero=z)) for z in (0, 1, 2, 3))
    assert z3 <= z2
    assert z1 <= ddp
    # stage 2 allocates its whole 16-bit gradient partition (grads_in_partition, 2P/N) at the
    # first reduction in backward, where stage 1's autograd gradients have only begun: while
    # activations dominate, stage 2 can hold up to that buffer more than stage 1 before the
    # allocator fragmentation margin. The margin is a fraction of the peak by the peak's
    # make-up (1.95% to 3.51%), so the buffer shifts the fraction a little and the margins of
    # the two stages are compared by that bound, not by one stage's fraction (Hypothesis found
    # mixtral-8x7b at 2 GPUs 2 MB past a bound that reused stage 2's fraction for both)
    grads = model_states(spec, dataclasses.replace(s, zero=2)).gradients_bytes

    def margin(zero: int) -> int:
        dev = estimate_training(spec, dataclasses.replace(s, zero=zero), HW).devices[0]
        return sum(c.n_bytes for c in dev.components if "fragmentation" in c.label)

    m1, m2 = margin(1), margin(2)
    assert z2 - m2 <= z1 - m1 + -(-grads // gpus) + 2**20
    assert m2 <= 0.0352 * (z2 - m2) + 2**20


@settings(max_examples=40, deadline=None)
@given(models, base)
def test_checkpointing_never_increases_activations_or_peak(name: str, s: TrainingSettings) -> None:
    spec = spec_of(name)
    roles = None if s.method == "full" else lora_target_roles(spec, s.lora_targets)
    for a in layer_activations(spec, s, trainable_roles=roles):
        assert a.checkpoint_bytes <= a.saved_bytes
        assert a.selective_bytes <= a.saved_bytes
    runs = {
        mode: estimate_training(spec, dataclasses.replace(s, grad_checkpointing=mode), HW)
        for mode in ("none", "selective", "full")
    }
    fwd = {m: e.runtime_details["phases"]["forward_end"] for m, e in runs.items()}  # type: ignore[index]
    assert fwd["full"] <= fwd["none"]
    assert fwd["selective"] <= fwd["none"]
    acts = {m: e.devices[0].activations_bytes for m, e in runs.items()}
    peaks = {m: e.devices[0].total_bytes for m, e in runs.items()}
    assert acts["selective"] <= acts["none"]
    assert peaks["selective"] <= peaks["none"]
    # Recomputing the last layer keeps its checkpointed input next to the recomputed tensors, so
    # when gradients dominate (end of backward) full checkpointing can cost one layer input more.
    stream = 4 if autocast_stream(s) or s.mixed_precision == "no" else 2
    layer_input = s.micro_batch * s.seq * spec.hidden_size * stream
    assert acts["full"] <= acts["none"] + layer_input
    assert peaks["full"] <= peaks["none"] + 2 * layer_input  # + its fragmentation margin


@settings(max_examples=40, deadline=None)
@given(models, base, st.sampled_from((4, 8, 16, 64)))
def test_lora_never_exceeds_full(name: str, s: TrainingSettings, rank: int) -> None:
    spec = spec_of(name)
    full = total(spec, dataclasses.replace(s, method="full"))
    lora = total(spec, dataclasses.replace(s, method="lora", lora_rank=rank))
    qlora = total(spec, dataclasses.replace(s, method="qlora", lora_rank=rank))
    assert qlora <= lora <= full


@settings(max_examples=30, deadline=None)
@given(models, base, st.sampled_from(("zero3", "FULL_SHARD", "SHARD_GRAD_OP")))
def test_more_gpus_never_increase_model_states(name: str, s: TrainingSettings, engine: str) -> None:
    spec = spec_of(name)
    kw: dict[str, object] = (
        {"zero": 3} if engine == "zero3" else {"fsdp": True, "fsdp_strategy": engine}
    )
    steps = [
        phase(spec, dataclasses.replace(s, gpus=n, **kw), "optimizer_step")  # type: ignore[arg-type]
        for n in (1, 2, 4, 8, 16)
    ]
    assert steps == sorted(steps, reverse=True)


@settings(max_examples=40, deadline=None)
@given(models, base)
def test_longer_sequences_and_bigger_batches_never_need_less(
    name: str, s: TrainingSettings
) -> None:
    spec = spec_of(name)
    seqs = [total(spec, dataclasses.replace(s, seq=n)) for n in (256, 1024, 4096)]
    assert seqs == sorted(seqs)
    batches = [total(spec, dataclasses.replace(s, micro_batch=b)) for b in (1, 2, 4)]
    assert batches == sorted(batches)


@settings(max_examples=30, deadline=None)
@given(models, base)
def test_fused_attention_and_fused_loss_never_need_more(name: str, s: TrainingSettings) -> None:
    spec = spec_of(name)
    eager = total(spec, dataclasses.replace(s, attn_implementation="eager"))
    sdpa = total(spec, dataclasses.replace(s, attn_implementation="sdpa"))
    # except where "sdpa" is not fused: Falcon's multi-query call runs the math backend on
    # fp32 copies (oomkit.estimate.hf_attention_bytes.sdpa_runs_math), which its own eager
    # path, scores in the stream dtype, undercuts
    if not sdpa_runs_math(spec):
        assert sdpa <= eager
    std = total(spec, dataclasses.replace(s, loss="standard"))
    chunked = total(spec, dataclasses.replace(s, loss="chunked"))
    fused = total(spec, dataclasses.replace(s, loss="fused"))
    assert fused <= chunked <= std


@settings(max_examples=30, deadline=None)
@given(models, base)
def test_device_total_is_sum_of_categories(name: str, s: TrainingSettings) -> None:
    d = estimate_training(spec_of(name), s, HW).devices[0]
    cats = (
        d.weights_bytes + d.gradients_bytes + d.optimizer_bytes + d.activations_bytes
        + d.overhead_bytes + d.kv_cache_bytes
    )  # fmt: skip
    assert d.total_bytes == cats
    assert d.kv_cache_bytes == 0
