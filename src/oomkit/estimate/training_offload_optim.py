"""The optimizer a CPU-offloaded training step really runs, when it is not the one asked for.

**DeepSpeed ZeRO-Offload** (``zero_optimization.offload_optimizer.device: cpu``) steps on the
CPU, and only its own CPU optimizers may do it: ``DeepSpeedEngine._configure_optimizer``
(deepspeed/runtime/engine.py l.2040-2044 at deepspeedai/DeepSpeed edaa722) raises
``ZeRORuntimeException`` ("You are using ZeRO-Offload with a client provided optimizer ...")
for a client optimizer that is not ``DeepSpeedCPUAdam`` / ``DeepSpeedCPULion`` unless the
config sets ``"zero_force_ds_cpu_optimizer": false`` (default True, runtime/constants.py
l.77-78). The HF Trainer does not set it: with no ``optimizer`` block in the ds_config it builds
its ``optim=`` optimizer and sets only ``zero_allow_untested_optimizer``
(transformers src/transformers/integrations/deepspeed.py ``deepspeed_optim_sched``), and
accelerate then *replaces* that optimizer before ``deepspeed.initialize``:
``Accelerator._prepare_deepspeed`` (src/accelerate/accelerator.py l.2364-2374 at
huggingface/accelerate 16cb6eb), when ``offload_optimizer`` is on and
``zero_force_ds_cpu_optimizer`` is not false, calls ``map_pytorch_optim_to_deepspeed``
(src/accelerate/utils/deepspeed.py l.29-96): ``DeepSpeedCPUAdam`` for everything but torch's
Adagrad and bitsandbytes' 32-bit Lion (``DeepSpeedCPULion``), with only ``lr`` and
``weight_decay`` carried over (``adamw_mode`` only for ``torch.optim.AdamW`` and a 32-bit bnb
AdamW). So ``optim="adamw_bnb_8bit"`` with ZeRO-Offload trains with DeepSpeedCPUAdam: two fp32
states per parameter on the CPU, and the 8-bit choice saves nothing (raw
``deepspeed.initialize`` refuses it instead). :func:`zero_offload_optimizer` names that
optimizer, so the estimate prices the states the run keeps.

**FSDP** ``CPUOffload(offload_params=True)`` keeps no engine optimizer: the client optimizer
steps the CPU parameters itself. A bitsandbytes 8-bit optimizer does that only from
bitsandbytes 0.50.0 (PR #1901, "Enable CPU Optimizer Support", the CPU
``optimizer_update_8bit_blockwise`` kernel in bitsandbytes/backends/cpu/ops.py; paged states
fall back to unpaged there, bitsandbytes/optim/optimizer.py): its 8-bit states then live in host
RAM, so they shrink the host's share, not the GPU's (:func:`fsdp_offload_note`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.settings import TrainingSettings

__all__ = ["fsdp_offload_note", "zero_offload_note", "zero_offload_optimizer"]

#: ``--optimizer`` values ZeRO-Offload keeps under the HF Trainer (accelerate's
#: ``map_pytorch_optim_to_deepspeed``): torch AdamW -> DeepSpeedCPUAdam(adamw_mode=True), the
#: Trainer's ``lion_32bit`` (bitsandbytes Lion32bit) -> DeepSpeedCPULion; both keep the states
#: of the optimizer asked for
_KEPT = frozenset({"adamw", "lion"})
#: bitsandbytes' 8-bit optimizers (the CPU step needs bitsandbytes >= 0.50.0, PR #1901)
_BNB_8BIT = frozenset({"adamw8bit", "paged_adamw8bit"})


def zero_offload_optimizer(settings: TrainingSettings) -> str | None:
    """The ``--optimizer`` whose states a ZeRO-Offload run of ``settings`` keeps when it is not
    ``settings.optimizer`` ("adamw": accelerate's DeepSpeedCPUAdam, fp32 ``exp_avg`` and
    ``exp_avg_sq``); None when the run keeps the optimizer asked for (see the module doc)."""
    if not (settings.zero and settings.offload_optimizer) or settings.optimizer in _KEPT:
        return None
    return "adamw"


def zero_offload_note(asked: str) -> str:
    """The estimate's assumption for a ZeRO-Offload run that asked for ``asked``."""
    return (
        f"ZeRO-Offload with {asked}: DeepSpeed steps on the CPU with its own optimizer only; the "
        f"HF Trainer (accelerate) replaces {asked} with DeepSpeedCPUAdam, priced here (two fp32 "
        "states per parameter in host RAM), and raw deepspeed.initialize refuses it unless "
        '"zero_force_ds_cpu_optimizer": false; the states are on the CPU either way, so '
        f"{asked} saves no GPU memory: use --optimizer adamw"
    )


def fsdp_offload_note(settings: TrainingSettings) -> str | None:
    """The estimate's assumption for FSDP CPU offload with a bitsandbytes 8-bit optimizer."""
    if not (settings.fsdp and settings.offload_params) or settings.optimizer not in _BNB_8BIT:
        return None
    return (
        f"FSDP CPU offload with {settings.optimizer}: the optimizer steps the CPU parameters, "
        "which bitsandbytes' 8-bit optimizers do only from bitsandbytes 0.50.0 (PR #1901; paged "
        "states unpaged there); the 8-bit states are in host RAM, so they save no GPU memory"
    )
