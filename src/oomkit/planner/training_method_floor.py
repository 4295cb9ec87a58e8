"""What the asked training method needs when the planner answers with another one, or with no CPU
offload: the host RAM that ``--ram`` refused.

With ``--ram`` given, a change that offloads to the CPU is priced against it and refused when
the host part does not fit (:func:`oomkit.planner.training_host.host_overflows`). A full
fine-tune of Llama-3.1-70B on 8 x H100 with ``--ram 512GiB`` then fell through to LoRA without a
word, although ZeRO-3 with the optimizer states on the CPU fits the GPUs and needs 1182.75 GiB
of host RAM (DeepSpeed ``offload_optimizer``: fp32 master weights and both Adam moments on the
CPU, :mod:`oomkit.estimate.training_offload_optim`). :func:`method_floor` is the planner's own
minimal stack of levers (:func:`oomkit.planner.training._combination`) without the method levers
(LoRA, QLoRA), priced with the host RAM unchecked, so the answer can say what the asked method
needs and how much RAM.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.estimate.breakdown import Estimate
    from oomkit.estimate.verdict import Platform
    from oomkit.planner.training import RuntimeLevers, TrainingChange
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import TrainingSettings

__all__ = ["METHOD_NAMES", "method_floor", "ram_refused"]

#: the training methods as a sentence names them
METHOD_NAMES = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def method_floor(
    spec: ModelSpec,
    settings: TrainingSettings,
    hardware: Hardware,
    platform: Platform | None,
    runtime: RuntimeLevers | None = None,
) -> TrainingChange | None:
    """The minimal stack of the planner's levers that keeps ``settings.method`` and that the
    verdict calls "fits" on the GPUs, with the host RAM not checked (None: none fits)."""
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.training import estimate_training
    from oomkit.estimate.verdict import verdict
    from oomkit.hardware.native_bf16 import native_bf16
    from oomkit.planner.training import (
        _combination,
        _lora,
        _no_runtime_lever,
        _qlora,
        plan_levers,
    )

    free = dataclasses.replace(hardware, host_ram_bytes=None)

    def run(s: TrainingSettings) -> Estimate | None:
        try:
            return estimate_training(spec, s, free)
        except InvalidSettingError:
            return None

    def accept(est: Estimate) -> str | None:
        return "fits" if verdict(est, platform).level == "fits" else None

    bf16 = all(native_bf16(d) for d in hardware.devices)
    levers = tuple(
        _no_runtime_lever if x in (_lora, _qlora) else x
        for x in plan_levers(settings, platform, bf16=bf16, runtime=runtime)
    )
    return _combination(settings, run, accept, levers)


def ram_refused(
    spec: ModelSpec,
    settings: TrainingSettings,
    hardware: Hardware,
    platform: Platform | None,
    runtime: RuntimeLevers | None = None,
) -> TrainingChange | None:
    """:func:`method_floor` where it needs more host RAM than ``--ram`` gives (None: no
    ``--ram``, no stack, or one the RAM holds)."""
    ram = hardware.host_ram_bytes
    if ram is None:
        return None
    floor = method_floor(spec, settings, hardware, platform, runtime)
    if floor is None or floor.estimate.host.total_bytes <= ram:
        return None
    return floor
