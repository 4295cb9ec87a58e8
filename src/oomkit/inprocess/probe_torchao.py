"""torchao ``AdamW8bit`` for the probe: its state layout and the buffers of its compiled step.

The real optimizer cannot run on fake tensors (``torch.compile`` per parameter, a tensor
subclass for the states), so the probe makes exactly the tensors it makes
(:mod:`oomkit.estimate.training_torchao` has the torchao v0.6.1 lines and the Inductor output
code this rests on): per parameter with ``numel >= 4096`` and ``numel % 256 == 0``, per state,
``uint8`` codes shaped like the parameter, fp32 scales per 256-element block and a 256-entry
fp32 ``qmap``; else ``zeros_like(p)``. Each step of a quantised parameter allocates what the
compiled ``call()`` allocates, in its order, live until it returns: two fp32 ``(numel / 256,)``
scale buffers and two fp32 ``(numel / 256, 256)`` scaled-state buffers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from oomkit.estimate.training_torchao import TORCHAO_BLOCK, torchao_quantised

__all__ = ["FakeTorchaoAdamW8bit"]

_QMAP_ENTRIES = 256


class FakeTorchaoAdamW8bit(torch.optim.Optimizer):
    """``torchao.prototype.low_bit_optim.AdamW8bit`` memory behaviour (see the module docstring)."""

    def __init__(self, params: Iterable[nn.Parameter]) -> None:
        super().__init__(params, {"lr": 1e-4})

    @staticmethod
    def _new_buffer(p: torch.Tensor) -> dict[str, torch.Tensor]:
        if not torchao_quantised(p.numel()):
            return {"": torch.zeros_like(p)}
        blocks = p.numel() // TORCHAO_BLOCK
        return {
            "codes": torch.zeros_like(p, dtype=torch.uint8),
            "scale": torch.zeros(blocks, dtype=torch.float32, device=p.device),
            "qmap": torch.zeros(_QMAP_ENTRIES, dtype=torch.float32, device=p.device),
        }

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        del closure
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                    state["exp_avg"] = self._new_buffer(p)
                    state["exp_avg_sq"] = self._new_buffer(p)
                if not torchao_quantised(p.numel()):
                    continue  # a pointwise step: Inductor fuses it into one in-place loop
                blocks = p.numel() // TORCHAO_BLOCK
                f32 = {"dtype": torch.float32, "device": p.device}
                scales = [torch.empty(blocks, **f32) for _ in range(2)]
                scaled = [torch.empty(blocks, TORCHAO_BLOCK, **f32) for _ in range(2)]
                del scales, scaled  # the compiled call returns
