"""DeepSpeed / accelerate FSDP configs and launch commands for a training estimate."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml

from oomkit.estimate.training_emit import (
    emit_deepspeed_config,
    emit_fsdp_accelerate_config,
    emit_launch,
    emit_text,
)
from oomkit.estimate.training_sharding import deepspeed_buckets
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings

SPEC = ModelSpec(
    name="tiny", architecture="LlamaForCausalLM", model_type="llama", num_hidden_layers=2,
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, v_head_dim=16,
    intermediate_size=128, vocab_size=1000,
)  # fmt: skip

# Top-level keys DeepSpeed reads (deepspeed/runtime/constants.py: TRAIN_BATCH_SIZE,
# TRAIN_MICRO_BATCH_SIZE_PER_GPU, GRADIENT_ACCUMULATION_STEPS, GRADIENT_CLIPPING, BFLOAT16, FP16,
# STEPS_PER_PRINT, WALL_CLOCK_BREAKDOWN; zero/config.py ZERO_OPTIMIZATION;
# activation_checkpointing/config.py ACT_CHKPT).
DS_TOP_KEYS = frozenset({
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "gradient_clipping", "bf16", "fp16", "zero_optimization", "steps_per_print",
    "wall_clock_breakdown", "activation_checkpointing",
})  # fmt: skip
# DeepSpeedZeroConfig fields and aliases (deepspeed/runtime/zero/config.py)
DS_ZERO_KEYS = frozenset({
    "stage", "contiguous_gradients", "reduce_scatter", "reduce_bucket_size",
    "allgather_partitions", "allgather_bucket_size", "overlap_comm", "offload_param",
    "offload_optimizer", "sub_group_size", "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold", "stage3_max_live_parameters",
    "stage3_max_reuse_distance", "stage3_gather_16bit_weights_on_model_save",
})  # fmt: skip
# DeepSpeedZeroOffloadOptimizerConfig / OffloadParamConfig (zero/offload_config.py)
DS_OFFLOAD_KEYS = frozenset({"device", "pin_memory", "nvme_path", "buffer_count"})
# fsdp_config keys `accelerate config` writes (accelerate/commands/config/cluster.py)
ACCELERATE_FSDP_KEYS = frozenset({
    "fsdp_activation_checkpointing", "fsdp_auto_wrap_policy", "fsdp_backward_prefetch",
    "fsdp_cpu_ram_efficient_loading", "fsdp_forward_prefetch", "fsdp_offload_params",
    "fsdp_sharding_strategy", "fsdp_state_dict_type", "fsdp_sync_module_states",
    "fsdp_transformer_layer_cls_to_wrap", "fsdp_use_orig_params", "fsdp_min_num_params",
    "fsdp_version", "fsdp_reshard_after_forward",
})  # fmt: skip


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("offload", [False, True])
def test_deepspeed_config_uses_deepspeed_key_names(stage: int, offload: bool) -> None:
    s = TrainingSettings(
        zero=stage, gpus=4, micro_batch=2, grad_accum=8, grad_checkpointing="full",
        offload_optimizer=offload and stage > 0, offload_params=offload and stage == 3,
    )  # fmt: skip
    cfg = json.loads(emit_text("deepspeed", SPEC, s))
    assert set(cfg) <= DS_TOP_KEYS
    zero = cfg["zero_optimization"]
    assert set(zero) <= DS_ZERO_KEYS
    assert zero["stage"] == stage
    for key in ("offload_optimizer", "offload_param"):
        if key in zero:
            assert set(zero[key]) <= DS_OFFLOAD_KEYS
    # train_batch_size = micro x accumulation x data-parallel ranks (DeepSpeed checks this)
    assert cfg["train_batch_size"] == 2 * 8 * 4
    assert cfg["bf16"] == {"enabled": True}


def test_deepspeed_buckets_match_the_estimate() -> None:
    cfg = emit_deepspeed_config(SPEC, TrainingSettings(zero=3, gpus=2))
    b = deepspeed_buckets(SPEC)
    assert cfg["zero_optimization"]["reduce_bucket_size"] == b["reduce_bucket_size"] == 64 * 64
    assert cfg["zero_optimization"]["stage3_prefetch_bucket_size"] == int(0.9 * 64 * 64)


@pytest.mark.parametrize("strategy", ["FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD"])
def test_fsdp_yaml_parses_with_accelerate_keys(strategy: str) -> None:
    s = TrainingSettings(fsdp=True, fsdp_strategy=strategy, gpus=8, nodes=2)
    doc = yaml.safe_load(emit_text("fsdp", SPEC, s))
    assert doc == emit_fsdp_accelerate_config(SPEC, s)
    assert doc["distributed_type"] == "FSDP"
    assert doc["num_processes"] == 16
    assert doc["mixed_precision"] == "bf16"
    assert doc["downcast_bf16"] == "no"  # quoted, not YAML 1.1 False
    assert set(doc["fsdp_config"]) <= ACCELERATE_FSDP_KEYS
    assert doc["fsdp_config"]["fsdp_sharding_strategy"] == strategy
    assert doc["fsdp_config"]["fsdp_transformer_layer_cls_to_wrap"] == "LlamaDecoderLayer"


def test_launch_commands_single_node() -> None:
    s = TrainingSettings(gpus=4)
    assert emit_launch("torchrun", s) == ["torchrun", "--standalone", "--nproc_per_node=4",
                                          "train.py"]  # fmt: skip
    assert emit_launch("deepspeed", TrainingSettings(gpus=4, zero=2)) == [
        "deepspeed", "--num_gpus=4", "train.py", "--deepspeed", "ds_config.json",
    ]  # fmt: skip
    assert "--multi_gpu" in emit_launch("accelerate", s)


def test_launch_commands_multi_node() -> None:
    s = TrainingSettings(gpus=8, nodes=4, fsdp=True)
    torchrun = emit_text("torchrun", SPEC, s)
    assert "--nnodes=4" in torchrun
    assert "--master_addr=$MASTER_ADDR" in torchrun  # left for the shell to expand
    acc = shlex.split(emit_text("accelerate", SPEC, s))
    assert "--num_processes=32" in acc
    assert "--config_file=fsdp_config.yaml" in acc
    ds = emit_launch("deepspeed", TrainingSettings(gpus=8, nodes=2, zero=3))
    assert "--num_nodes=2" in ds
    assert "--hostfile=hostfile" in ds


@pytest.mark.parametrize("kind", ["torchrun", "accelerate"])  # "deepspeed": its JSON config
def test_launch_line_sets_the_allocator_when_the_plan_does(kind: str) -> None:
    """`plan --train` printed "Plan: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" over a
    bare `torchrun ... train.py`: the launch line now carries the environment variable."""
    from oomkit.api import load_model
    from oomkit.estimate.training_emit import emit_text

    spec = load_model("llama-3.2-1b", offline=True)
    on = emit_text(kind, spec, TrainingSettings(expandable_segments=True, zero=2, gpus=2))
    off = emit_text(kind, spec, TrainingSettings(zero=2, gpus=2))
    assert on == f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True {off}"
    argv = shlex.split(on)
    assert argv[0] == "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
