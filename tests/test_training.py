"""Training estimator: exact state accounting on small specs, phases, settings validation."""

from __future__ import annotations

import pytest

from oomkit.errors import InvalidSettingError
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_activations import layer_activations, loss_activations
from oomkit.estimate.training_states import (
    lora_adapter_params,
    lora_target_roles,
    model_states,
)
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec, MoESpec
from oomkit.spec.settings import TrainingSettings
from oomkit.spec.tensors import count_params
from oomkit.units import GiB

# A Llama-shaped toy: 2 layers, GQA (4 heads, 2 KV heads), SwiGLU, untied lm_head.
TINY = ModelSpec(
    name="tiny",
    architecture="LlamaForCausalLM",
    model_type="llama",
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    v_head_dim=16,
    intermediate_size=128,
    vocab_size=1000,
)
HW = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=80 * GiB),))


def test_full_mixed_precision_deepspeed_is_20_bytes_per_param() -> None:
    # DeepSpeed estimate_zero2_model_states_mem_needs: 4 x P + 16 x P / N (N = 1): 16-bit
    # params and grads + fp32 master, Adam m, v and the fp32 gradient partition
    p = count_params(TINY)
    st = model_states(TINY, TrainingSettings(zero=1))
    total = (
        st.trainable_weights_bytes
        + st.gradients_bytes
        + st.master_bytes
        + st.optimizer_bytes
        + st.fp32_grad_copy_bytes
    )
    assert total == 20 * p


def test_pure_bf16_adamw_states_follow_param_dtype() -> None:
    # torch.optim.AdamW creates zeros_like(p): bf16 params -> bf16 states
    p = count_params(TINY)
    st = model_states(TINY, TrainingSettings(master_weights=False))
    assert st.trainable_weights_bytes == 2 * p
    assert st.optimizer_bytes == 4 * p
    assert st.step_temporary_bytes == 2 * p  # _foreach_sqrt(exp_avg_sqs)


def test_adamw8bit_blockwise_layout() -> None:
    # uint8 states + fp32 absmax per 256 for tensors >= 4096 elements; fp32 states below
    st = model_states(TINY, TrainingSettings(optimizer="adamw8bit"))
    from oomkit.spec.tensors import model_tensors

    expected = 0
    for t in model_tensors(TINY):
        n = t.n_params
        expected += 2 * (n + 4 * -(-n // 256)) if n >= 4096 else 2 * 4 * n
    assert st.optimizer_bytes == expected


def test_lora_params_from_tensor_shapes() -> None:
    # PEFT default for llama: q_proj [64, 64] and v_proj [32, 64], r x (in + out) each, 2 layers
    params, n = lora_adapter_params(TINY, TrainingSettings(method="lora", lora_rank=8))
    assert n == 4
    assert params == 2 * (8 * (64 + 64) + 8 * (64 + 32))


def test_lora_all_linear_skips_lm_head() -> None:
    roles = lora_target_roles(TINY, ("all-linear",))
    assert roles is None
    params, n = lora_adapter_params(
        TINY, TrainingSettings(method="lora", lora_rank=4, lora_targets=("all-linear",))
    )
    assert n == 2 * 7  # q k v o gate up down per layer, no output.weight
    per_layer = 4 * ((64 + 64) + (64 + 32) * 2 + (64 + 64) + (64 + 128) * 2 + (128 + 64))
    assert params == 2 * per_layer


def test_unknown_lora_target_is_a_one_line_error() -> None:
    with pytest.raises(InvalidSettingError, match="Invalid lora target 'qproj'"):
        lora_adapter_params(TINY, TrainingSettings(method="lora", lora_targets=("qproj",)))


def test_qlora_base_is_nf4_sized() -> None:
    lora = model_states(TINY, TrainingSettings(method="lora"))
    qlora = model_states(TINY, TrainingSettings(method="qlora"))
    assert lora.frozen_weights_bytes == 2 * count_params(TINY)
    assert qlora.frozen_weights_bytes < lora.frozen_weights_bytes


def test_checkpointing_keeps_only_layer_inputs() -> None:
    s = TrainingSettings(micro_batch=2, seq=16, master_weights=False)
    acts = layer_activations(TINY, s, trainable_roles=None)
    assert all(a.checkpoint_bytes == 2 * 16 * 64 * 2 for a in acts)
    assert all(a.saved_bytes > a.checkpoint_bytes for a in acts)


def test_autocast_keeps_an_fp32_stream_and_casts_per_linear() -> None:
    # HF Trainer AMP: fp32 residual stream; q, k, v and gate, up each save their own bf16 cast
    pure = layer_activations(TINY, TrainingSettings(master_weights=False), trainable_roles=None)
    amp = layer_activations(TINY, TrainingSettings(), trainable_roles=None)
    tokens, h = 2048, 64
    assert amp[0].checkpoint_bytes == tokens * h * 4
    # + the two RMSNorms' ``weight * x`` inputs in fp32 instead of bf16
    extra_casts = tokens * (2 + 1) * h * 2
    assert amp[0].saved_bytes - pure[0].saved_bytes == extra_casts + tokens * 2 * h * (4 - 2)


def test_eager_attention_adds_the_s_squared_term() -> None:
    sdpa = layer_activations(TINY, TrainingSettings(seq=128), trainable_roles=None)
    eager = layer_activations(
        TINY, TrainingSettings(seq=128, attn_implementation="eager"), trainable_roles=None
    )
    # fp32 softmax + its bf16 copy: a x s x (4 + 2) bytes per token, and repeat_kv's copies of
    # k and v at 4 query heads instead of 2 KV heads: (4 - 2) x (16 + 16) x 2 bytes per token
    repeat = 128 * (4 - 2) * 32 * 2
    assert eager[0].saved_bytes - sdpa[0].saved_bytes == 128 * 4 * 128 * 6 + repeat
    assert eager[0].selective_bytes == sdpa[0].saved_bytes + repeat


def test_loss_term_and_chunking() -> None:
    s = TrainingSettings(micro_batch=1, seq=10)
    std = loss_activations(TINY, s)
    assert std.saved_bytes == 4 * 10 * 1000
    assert std.backward_transient_bytes == 8 * 10 * 1000
    chunked = loss_activations(TINY, TrainingSettings(micro_batch=1, seq=10, loss="chunked"))
    fused = loss_activations(TINY, TrainingSettings(micro_batch=1, seq=10, loss="fused"))
    assert chunked.backward_transient_bytes < std.backward_transient_bytes
    assert fused.saved_bytes < std.saved_bytes


def test_moe_activations_scale_with_experts_per_token() -> None:
    def moe(k: int) -> ModelSpec:
        return ModelSpec(
            name="moe", architecture="MixtralForCausalLM", model_type="mixtral",
            num_hidden_layers=1, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, v_head_dim=16, intermediate_size=128, vocab_size=1000,
            moe=MoESpec(num_experts=8, num_experts_per_tok=k, expert_intermediate_size=128),
        )  # fmt: skip

    s = TrainingSettings(seq=32)
    one = layer_activations(moe(1), s, trainable_roles=None)[0].saved_bytes
    two = layer_activations(moe(2), s, trainable_roles=None)[0].saved_bytes
    assert two > one


def test_estimate_reports_peak_phase_and_sums() -> None:
    est = estimate_training(TINY, TrainingSettings(micro_batch=2, seq=64), HW)
    d = est.devices[0]
    details = est.runtime_details
    assert details["peak_phase"] in ("forward_end", "backward", "optimizer_step")
    phases = details["phases"]
    assert isinstance(phases, dict)
    assert details["peak_allocated_bytes"] == max(phases.values())
    # the device total is the allocator peak + context + fragmentation margin
    assert d.total_bytes == details["peak_allocated_bytes"] + d.overhead_bytes
    assert d.gradients_bytes + d.optimizer_bytes > 0


def test_paged_optimizer_goes_to_host() -> None:
    est = estimate_training(TINY, TrainingSettings(optimizer="paged_adamw8bit"), HW)
    assert est.devices[0].optimizer_bytes == 0
    assert est.host.optimizer_bytes > 0


def test_offload_optimizer_moves_states_to_host() -> None:
    s = TrainingSettings(zero=2, gpus=2, offload_optimizer=True)
    est = estimate_training(TINY, s, HW)
    assert est.devices[0].optimizer_bytes == 0
    assert est.host.optimizer_bytes > 0


def test_optimizer_in_backward_has_no_full_gradient_set() -> None:
    base = TrainingSettings(master_weights=False)
    inbwd = TrainingSettings(master_weights=False, optimizer_in_backward=True)
    a = estimate_training(TINY, base, HW).runtime_details["phases"]
    b = estimate_training(TINY, inbwd, HW).runtime_details["phases"]
    assert isinstance(a, dict)
    assert isinstance(b, dict)
    assert b["optimizer_step"] < a["optimizer_step"]


def test_nccl_only_with_several_gpus() -> None:
    one = estimate_training(TINY, TrainingSettings(), HW).devices[0]
    two = estimate_training(TINY, TrainingSettings(gpus=2), HW).devices[0]
    assert not any(c.label == "NCCL buffers" for c in one.components)
    assert any(c.label == "NCCL buffers" for c in two.components)


def test_fragmentation_override() -> None:
    est = estimate_training(TINY, TrainingSettings(fragmentation_fraction=0.0), HW)
    assert not any("fragmentation" in c.label for c in est.devices[0].components)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"optimizer": "adam"}, "Invalid optimizer 'adam'"),
        ({"zero": 4}, "Invalid zero stage 4"),
        ({"zero": 2, "fsdp": True}, "Invalid zero/fsdp combination"),
        ({"offload_optimizer": True}, "Invalid offload"),
        ({"zero": 2, "offload_params": True}, "Invalid offload_params with zero 2"),
        ({"sp": True}, "Invalid sp"),
        ({"tp": 3, "gpus": 4}, "Invalid tp 3"),
        ({"micro_batch": 0}, "Invalid micro_batch 0"),
        ({"optimizer_in_backward": True, "grad_accum": 4}, "Invalid optimizer_in_backward"),
        ({"method": "qlora", "mixed_precision": "no"}, "Invalid mixed_precision 'no'"),
        ({"fsdp_strategy": "FULL"}, "Invalid fsdp_strategy 'FULL'"),
        ({"fragmentation_fraction": 1.5}, "Invalid fragmentation_fraction"),
    ],
)
def test_settings_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSettingError, match=message) as info:
        TrainingSettings(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_bool_grad_checkpointing_still_accepted() -> None:
    assert TrainingSettings(grad_checkpointing=True).grad_checkpointing == "full"  # type: ignore[arg-type]
