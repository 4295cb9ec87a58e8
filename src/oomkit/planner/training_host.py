"""Training runs whose GPUs fit but whose host RAM does not: host-side changes first.

ZeRO-Offload keeps the fp32 master weights and both Adam moments on the CPU (DeepSpeed
``offload_optimizer``: 12 bytes per parameter for the whole model on each node, whatever the
number of GPUs), FSDP ``CPUOffload(offload_params=True)`` the sharded parameters, gradients and
step. When that is what overflows, the GPU levers (:data:`oomkit.planner.training.LEVERS`:
checkpointing, 8-bit AdamW, a smaller micro-batch...) free GPU memory that is not short, and
their "saves N GiB per GPU" says nothing about the RAM. The host-side change is to take the
offload back: the states stay on the GPUs, sharded (ZeRO-3 / FSDP FULL_SHARD when there are
several GPUs), with gradient checkpointing if that is what then fits them. Those come first;
the other changes follow in lever order (LoRA and QLoRA also drop the full optimizer states,
so they remain offers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.planner.training import TrainingChange
    from oomkit.spec.settings import TrainingSettings

__all__ = ["host_overflows", "host_side_changes"]


def host_overflows(est: Estimate) -> bool:
    """Every GPU's total fits its capacity but the host part does not fit the host RAM."""
    cap = est.host.capacity_bytes
    if cap is None or est.host.total_bytes <= cap or not est.devices:
        return False
    return all(d.capacity_bytes is None or d.total_bytes <= d.capacity_bytes for d in est.devices)


def _no_offload(s: TrainingSettings) -> list[tuple[str, TrainingSettings]]:
    """The offload taken back, as it is and then sharded across the GPUs."""
    if not (s.offload_optimizer or s.offload_params):
        return []
    back = dataclasses.replace(s, offload_optimizer=False, offload_params=False)
    what = "--offload-params" if s.offload_params else "--offload-optimizer"
    out = [(f"no CPU offload: optimizer states stay on the GPUs (drop {what})", back)]
    world = s.gpus * s.nodes
    if world > 1 and s.fsdp and s.fsdp_strategy != "FULL_SHARD":
        out.append(
            (
                f"no CPU offload, FSDP FULL_SHARD across {world} GPUs (drop {what})",
                dataclasses.replace(back, fsdp_strategy="FULL_SHARD"),
            )
        )
    elif world > 1 and not s.fsdp and s.zero < 3:
        out.append(
            (
                f"no CPU offload, ZeRO-3 across {world} GPUs (drop {what}, --zero 3)",
                dataclasses.replace(back, zero=3),
            )
        )
    if back.grad_checkpointing != "full":
        out += [
            (f"{name} + gradient checkpointing (--grad-checkpointing)",
             dataclasses.replace(st, grad_checkpointing="full"))
            for name, st in list(out)
        ]  # fmt: skip
    return out


def host_side_changes(
    settings: TrainingSettings,
    run: Callable[[TrainingSettings], Estimate | None],
    accept: Callable[[Estimate], str | None],
) -> list[TrainingChange]:
    """The host-side changes that make a run fit whose host RAM overflows: the first taking
    the offload back that ``accept`` takes ("fits" before "tight"), else nothing."""
    from oomkit.planner.training import TrainingChange

    found: list[TrainingChange] = []
    for name, s in _no_offload(settings):
        est = run(s)
        lv = None if est is None else accept(est)
        if est is None or lv is None:
            continue
        found.append(TrainingChange(changes=(name,), settings=s, estimate=est, level=lv))
        if lv == "fits":
            break
    found.sort(key=lambda c: c.level != "fits")
    return found[:1]
