"""torchao ``AdamW8bit`` for the probe: its state layout and the buffers of its compiled step.

The real optimizer cannot run on fake tensors (``torch.compile`` per parameter, a tensor
subclass for the states), so the probe makes exactly the tensors it makes
(:mod:`oomkit.estimate.training_torchao` has the torchao v0.6.1 lines and the Inductor output
code this rests on): per parameter with ``numel >= 4096`` and ``numel % 256 == 0``, per state,
``uint8`` codes shaped like the parameter, fp32 scales per 256-element block and a 256-entry
fp32 ``qmap``; else ``zeros_like(p)``. Each step of a quantised parameter allocates what
torch 2.5.1's CUDA ``call()`` allocates, live until it returns: one fp32 buffer shaped like the
parameter. The first step of each parameter shape in a process (``compiled``: the shapes this
run has compiled) also autotunes the kernel: ``do_bench``'s 256e6-byte flush buffer and a clone
of every mutated argument per name the kernel gives it (the parameter, both code tensors and
both scale vectors, each twice), alive together during a benchmarked launch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from oomkit.estimate.training_torchao import TORCHAO_BLOCK, torchao_quantised

__all__ = ["FakeTorchaoAdamW8bit"]

_QMAP_ENTRIES = 256
_DO_BENCH_FLUSH_INT32 = 256 * 10**6 // 4  # triton 3.1 do_bench: torch.empty(int(256e6 // 4))
_NAMES_PER_MUTATED = 2  # in_ptr and out_ptr of the generated kernel, each cloned


class FakeTorchaoAdamW8bit(torch.optim.Optimizer):
    """``torchao.prototype.low_bit_optim.AdamW8bit`` memory behaviour (see the module docstring).

    ``compiled``: the (shape, dtype) keys already compiled in this process (shared by the
    per-parameter optimizers of ``optimizer_in_bwd``); a new key autotunes once."""

    def __init__(
        self, params: Iterable[nn.Parameter], compiled: set[tuple[Any, ...]] | None = None
    ) -> None:
        super().__init__(params, {"lr": 1e-4})
        self.compiled: set[tuple[Any, ...]] = set() if compiled is None else compiled

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
                buf = torch.empty_like(p, dtype=torch.float32)  # call()'s one buffer
                key = (tuple(p.shape), p.dtype)
                if key not in self.compiled:  # first launch: autotuning
                    self.compiled.add(key)
                    flush = torch.empty(_DO_BENCH_FLUSH_INT32, dtype=torch.int32, device=p.device)
                    mutated = [p, *(st[k] for st in (state["exp_avg"], state["exp_avg_sq"])
                                    for k in ("codes", "scale"))]  # fmt: skip
                    clones = [t.clone() for t in mutated for _ in range(_NAMES_PER_MUTATED)]
                    del flush, clones
                del buf  # the compiled call returns
