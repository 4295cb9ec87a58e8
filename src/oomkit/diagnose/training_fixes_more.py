"""The training fixes of one stack or shape: the next ZeRO stage, torchtune's activation
offloading, a smaller LoRA rank, and more GPUs (a hardware change); each sized by the
:class:`~oomkit.diagnose.training_fixes._Sizer` of :mod:`oomkit.diagnose.training_fixes`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.diagnose.fixes import Fix
    from oomkit.diagnose.training_fixes import _Sizer

__all__ = ["lora_rank_fix", "more_gpus_fix", "offload_activations_fix", "zero_next_fix"]

_MAX_GPUS_SEARCHED = 8


def zero_next_fix(z: _Sizer) -> list[Fix | None]:
    """ZeRO stage +1 below 3 (stage 3 is the planner's shard lever) on the job's GPUs."""
    s = z.base_settings
    if s.fsdp or s.gpus * s.nodes < 2 or s.zero >= 2:
        return []
    new = dataclasses.replace(s, zero=s.zero + 1 if s.zero else 2)
    est = z.run(new)
    if est is None:
        return []
    title = f"DeepSpeed ZeRO stage {s.zero} -> {new.zero}: partition gradients and optimizer " \
            f"states over the {s.gpus * s.nodes} GPUs"  # fmt: skip
    return [z.fix("zero_next", title, new, est)]


def offload_activations_fix(z: _Sizer) -> list[Fix | None]:
    """torchtune's activation offloading (a torchtune recipe option)."""
    s = z.base_settings
    if z.framework != "torchtune" or s.activation_offloading:
        return []
    new = dataclasses.replace(s, activation_offloading=True)
    est = z.run(new)
    if est is None:
        return []
    return [z.fix("offload_activations", "Offload saved activations to host memory", new, est)]


def lora_rank_fix(z: _Sizer) -> list[Fix | None]:
    s = z.base_settings
    if s.method == "full" or s.lora_rank <= 8:
        return []
    new = dataclasses.replace(s, lora_rank=max(8, s.lora_rank // 4))
    est = z.run(new)
    if est is None:
        return []
    return [z.fix("lora_rank", f"LoRA rank {s.lora_rank} -> {new.lora_rank}", new, est)]


def more_gpus_fix(z: _Sizer) -> list[Fix | None]:
    """Hardware change: the fewest GPUs (2, 4, 8) whose ZeRO-3 split fits, full fine-tuning,
    for a job on one GPU only. (docfix22) The world size is the log's (its ranks, WORLD_SIZE,
    "world size N": training_context), so a job whose log shows rank 7 is never told to shard
    over 4 GPUs (or 8): sharding over the GPUs it has is the software lever (``shard``)."""
    from oomkit.spec.hardware import Hardware

    s = z.base_settings
    if s.gpus * s.nodes > 1 or s.method != "full" or z.fits(z.base) is None:
        return []
    target = z.hw.devices[0]
    n = 2
    while n <= _MAX_GPUS_SEARCHED:
        if z.framework == "torchtune":  # torchtune's distributed recipes shard with FSDP
            new = dataclasses.replace(s, gpus=n, fsdp=True, fsdp_strategy="FULL_SHARD")
        else:
            new = dataclasses.replace(s, gpus=n, zero=3, fsdp=False)
        est = z.run(new, Hardware(devices=(target,) * n))
        if est is not None and z.fits(est):
            how = "FSDP FULL_SHARD" if new.fsdp else "ZeRO-3"
            title = f"Hardware change: {how} over {n} GPUs like this one"
            return [z.fix("more_gpus", title, new, est, hardware=True)]
        n *= 2
    return []
