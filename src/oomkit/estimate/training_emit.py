"""Configs and launch commands for the distributed engines a training estimate assumes.

* :func:`emit_deepspeed_config` — a DeepSpeed JSON config (keys from ``deepspeed/runtime/
  constants.py`` and ``deepspeed/runtime/zero/config.py`` ``DeepSpeedZeroConfig``; bucket sizes
  are the ones :func:`oomkit.estimate.training_sharding.deepspeed_buckets` also estimates with);
* :func:`emit_fsdp_accelerate_config` — an ``accelerate`` FSDP config YAML with the keys
  ``accelerate config`` writes (``accelerate/commands/config/cluster.py``: ``fsdp_config`` with
  ``fsdp_sharding_strategy``, ``fsdp_offload_params``, ``fsdp_auto_wrap_policy``,
  ``fsdp_transformer_layer_cls_to_wrap``, ``fsdp_backward_prefetch``, ``fsdp_state_dict_type``,
  ``fsdp_forward_prefetch``, ``fsdp_use_orig_params``, ``fsdp_cpu_ram_efficient_loading``,
  ``fsdp_sync_module_states``, ``fsdp_activation_checkpointing``);
* :func:`emit_launch` — ``torchrun`` / ``accelerate launch`` / ``deepspeed`` argv for
  ``gpus`` per node x ``nodes``.

Pure: no I/O. ``oomkit estimate --train ... --emit`` prints the estimate, then
``emit_heading`` and ``emit_text`` (with ``--json``, ``emit_text`` goes in ``"command"``).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from oomkit.estimate.training_sharding import deepspeed_buckets
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings

__all__ = [
    "DEEPSPEED_CONFIG_FILE",
    "FSDP_CONFIG_FILE",
    "TRAIN_SCRIPT",
    "emit_deepspeed_config",
    "emit_fsdp_accelerate_config",
    "emit_heading",
    "emit_launch",
    "emit_text",
]

DEEPSPEED_CONFIG_FILE = "ds_config.json"
FSDP_CONFIG_FILE = "fsdp_config.yaml"
TRAIN_SCRIPT = "train.py"
_MASTER_PORT = "29500"


def emit_deepspeed_config(spec: ModelSpec, settings: TrainingSettings) -> dict[str, Any]:
    """The DeepSpeed config for ``settings`` (``zero`` 0-3, offload, precision, batch sizes)."""
    b = deepspeed_buckets(spec)
    zero: dict[str, Any] = {
        "stage": settings.zero,
        "contiguous_gradients": True,
        "overlap_comm": settings.zero == 3,
        "reduce_scatter": True,
        "reduce_bucket_size": b["reduce_bucket_size"],
        "allgather_bucket_size": b["reduce_bucket_size"],
    }
    if settings.zero == 3:
        zero["stage3_prefetch_bucket_size"] = b["stage3_prefetch_bucket_size"]
        zero["stage3_param_persistence_threshold"] = b["stage3_param_persistence_threshold"]
        zero["stage3_max_live_parameters"] = 1_000_000_000
        zero["stage3_max_reuse_distance"] = 1_000_000_000
        zero["stage3_gather_16bit_weights_on_model_save"] = True
        # the estimate's step upcasts one sub-group of this many elements at a time
        zero["sub_group_size"] = b["stage3_sub_group_size"]
    if settings.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if settings.offload_params:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    dp = settings.data_parallel
    cfg: dict[str, Any] = {
        "train_batch_size": settings.micro_batch * settings.grad_accum * dp,
        "train_micro_batch_size_per_gpu": settings.micro_batch,
        "gradient_accumulation_steps": settings.grad_accum,
        "gradient_clipping": 1.0,
        "bf16": {"enabled": settings.mixed_precision == "bf16"},
        "fp16": {"enabled": settings.mixed_precision == "fp16"},
        "zero_optimization": zero,
        "steps_per_print": 10,
        "wall_clock_breakdown": False,
    }
    if settings.grad_checkpointing != "none":
        cfg["activation_checkpointing"] = {
            "partition_activations": settings.tp > 1,
            "contiguous_memory_optimization": False,
            "cpu_checkpointing": False,
        }
    return cfg


def _layer_class(spec: ModelSpec) -> str:
    """HF decoder-layer class to wrap (``LlamaForCausalLM`` -> ``LlamaDecoderLayer``)."""
    arch = spec.architecture
    for suffix in ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "Model"):
        if arch.endswith(suffix):
            return arch[: -len(suffix)] + "DecoderLayer"
    return arch + "DecoderLayer"


def emit_fsdp_accelerate_config(spec: ModelSpec, settings: TrainingSettings) -> dict[str, Any]:
    """The ``accelerate`` config (as a dict) for FSDP with ``settings.fsdp_strategy``."""
    fsdp = {
        "fsdp_activation_checkpointing": settings.grad_checkpointing != "none",
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_backward_prefetch": "BACKWARD_PRE",
        "fsdp_cpu_ram_efficient_loading": True,
        "fsdp_forward_prefetch": False,
        "fsdp_offload_params": settings.offload_params,
        "fsdp_sharding_strategy": settings.fsdp_strategy,
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_sync_module_states": True,
        "fsdp_transformer_layer_cls_to_wrap": _layer_class(spec),
        "fsdp_use_orig_params": True,
    }
    return {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": "FSDP",
        "downcast_bf16": "no",
        "fsdp_config": fsdp,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": settings.mixed_precision,
        "num_machines": settings.nodes,
        "num_processes": settings.world_size,
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
    }


def _yaml_scalar(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    text = str(v)
    return json.dumps(text) if text in ("no", "yes", "on", "off", "") else text


def _to_yaml(doc: dict[str, Any], indent: int = 0) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"{pad}{k}:")
            lines.extend(_to_yaml(v, indent + 2))
        else:
            lines.append(f"{pad}{k}: {_yaml_scalar(v)}")
    return lines


def emit_launch(kind: str, settings: TrainingSettings) -> list[str]:
    """argv of ``torchrun`` / ``accelerate launch`` / ``deepspeed`` for this job (node rank 0).

    Multi-node commands name ``$MASTER_ADDR`` (and the node rank 0): run them on every node
    with that node's rank.
    """
    n, m = settings.gpus, settings.nodes
    if kind == "torchrun":
        if m == 1:
            return ["torchrun", "--standalone", f"--nproc_per_node={n}", TRAIN_SCRIPT]
        return [
            "torchrun",
            f"--nnodes={m}",
            f"--nproc_per_node={n}",
            "--node_rank=0",
            "--master_addr=$MASTER_ADDR",
            f"--master_port={_MASTER_PORT}",
            TRAIN_SCRIPT,
        ]
    if kind == "deepspeed":
        argv = ["deepspeed", f"--num_gpus={n}"]
        if m > 1:
            argv += [f"--num_nodes={m}", "--hostfile=hostfile"]
        return [*argv, TRAIN_SCRIPT, "--deepspeed", DEEPSPEED_CONFIG_FILE]
    if kind == "accelerate":
        argv = ["accelerate", "launch"]
        if settings.zero:
            argv += ["--use_deepspeed", f"--deepspeed_config_file={DEEPSPEED_CONFIG_FILE}"]
        elif settings.fsdp:
            argv += [f"--config_file={FSDP_CONFIG_FILE}"]
        elif settings.mixed_precision != "no":
            argv += [f"--mixed_precision={settings.mixed_precision}"]
        argv += [f"--num_processes={settings.world_size}", f"--num_machines={m}"]
        if m > 1:
            argv += [
                "--machine_rank=0",
                "--main_process_ip=$MASTER_ADDR",
                f"--main_process_port={_MASTER_PORT}",
            ]
        elif settings.world_size > 1 and not settings.zero and not settings.fsdp:
            argv += ["--multi_gpu"]
        return [*argv, TRAIN_SCRIPT]
    raise ValueError(f"unknown launcher '{kind}'")


def emit_heading(kind: str) -> str:
    """The line ``estimate --train ... --emit KIND`` prints between the estimate and
    :func:`emit_text` (as inference's ``run:``): the file a config goes in, or ``run:``."""
    if kind == "deepspeed":
        return f"{DEEPSPEED_CONFIG_FILE}:"
    if kind == "fsdp":
        return f"{FSDP_CONFIG_FILE}:"
    return "run:"


def emit_text(kind: str, spec: ModelSpec, settings: TrainingSettings) -> str:
    """What ``--emit KIND`` prints: a JSON/YAML config or a shell command line."""
    if kind == "deepspeed":
        return json.dumps(emit_deepspeed_config(spec, settings), indent=2)
    if kind == "fsdp":
        return "\n".join(_to_yaml(emit_fsdp_accelerate_config(spec, settings)))
    # our own "$MASTER_ADDR" arguments stay unquoted so the shell expands them
    line = " ".join(a if "$" in a else shlex.quote(a) for a in emit_launch(kind, settings))
    if settings.expandable_segments:
        # the one change a launch line can carry: `plan --train` printed "Plan: expandable
        # segments" over a bare `torchrun ...` that runs without them
        line = f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True {line}"
    return line
