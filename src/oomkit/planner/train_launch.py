"""The launch command a training plan needs, with the config file it reads.

A plan's ZeRO stage, CPU offload or FSDP sharding lives in the engine's config, not in a
``torchrun`` line: ``torchrun ... train.py`` runs plain DDP, so a plan that fits only with
``ZeRO-2 + offload_optimizer`` printed a command that runs out of memory. The launcher follows
the plan's settings:

* ZeRO (``zero`` 1-3, DeepSpeed): ``deepspeed --num_gpus=N train.py --deepspeed ds_config.json``
  (the DeepSpeed launcher, ``deepspeed/launcher/runner.py``; the script passes
  ``args.deepspeed`` to ``deepspeed.initialize(config=...)`` or to the HF Trainer's
  ``--deepspeed``) with the ``ds_config.json`` of :func:`oomkit.estimate.training_emit.
  emit_deepspeed_config`: ``zero_optimization.stage``, ``offload_optimizer`` /
  ``offload_param`` ``{"device": "cpu"}``, the micro-batch and accumulation steps;
* FSDP: ``accelerate launch --config_file=fsdp_config.yaml ... train.py`` with the accelerate
  FSDP config (``fsdp_sharding_strategy``, ``fsdp_offload_params``,
  ``fsdp_activation_checkpointing``) of :func:`~oomkit.estimate.training_emit.
  emit_fsdp_accelerate_config`;
* otherwise (one GPU, DDP, LoRA/QLoRA without sharding): ``torchrun``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import TrainingSettings

__all__ = ["TrainLaunch", "training_launch"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainLaunch:
    """What to type for a training plan: the launcher, its command, the config file it reads."""

    launcher: str  # "deepspeed" | "accelerate" | "torchrun"
    command: str
    config_file: str | None = None  # "ds_config.json" | "fsdp_config.yaml"
    config: str | None = None  # the file's text (JSON or YAML)


def training_launch(spec: ModelSpec, settings: TrainingSettings) -> TrainLaunch:
    """The launcher ``settings`` need (see the module docstring)."""
    from oomkit.estimate.training_emit import (
        DEEPSPEED_CONFIG_FILE,
        FSDP_CONFIG_FILE,
        emit_text,
    )

    if settings.zero:
        return TrainLaunch(
            launcher="deepspeed",
            command=_launch("deepspeed", settings),
            config_file=DEEPSPEED_CONFIG_FILE,
            config=emit_text("deepspeed", spec, settings),
        )
    if settings.fsdp:
        return TrainLaunch(
            launcher="accelerate",
            command=_launch("accelerate", settings),
            config_file=FSDP_CONFIG_FILE,
            config=emit_text("fsdp", spec, settings),
        )
    return TrainLaunch(launcher="torchrun", command=_launch("torchrun", settings))


def _launch(kind: str, settings: TrainingSettings) -> str:
    """The shell line of ``kind``'s argv (:func:`~oomkit.estimate.training_emit.emit_launch`),
    as ``emit_text`` writes it: ``$MASTER_ADDR`` unquoted, the allocator setting in front."""
    import shlex

    from oomkit.estimate.training_emit import emit_launch

    line = " ".join(a if "$" in a else shlex.quote(a) for a in emit_launch(kind, settings))
    if settings.expandable_segments:
        line = f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True {line}"
    return line
