"""Which buffers Inductor's CPU backend allocates in torchao AdamW8bit's compiled step.

    pip download torchao==0.6.1 --no-deps -d /tmp/ao && unzip -q /tmp/ao/*.whl -d /tmp/ao/pkg
    PYTHONPATH=/tmp/ao/pkg:src python benchmarks/torchao_adamw8bit_buffers.py [ROWS COLS]

(the wheel's pure-Python ``prototype/low_bit_optim`` is all it needs; torchao is not an oomkit
dependency). Steps ``AdamW8bit([p])`` once on a bf16 CPU parameter (default 1024 x 1024),
prints every ``empty_strided`` of the generated ``call()`` with its bytes, next to
:func:`oomkit.estimate.training_torchao.torchao_step_temporary_bytes`, which models the *CUDA*
code of torch 2.5.1 (``benchmarks/torchao_adamw8bit_triton.py``: one fp32 buffer). The CPU
backend differs: torch 2.13 keeps two fp32 scaled states and two scale vectors; torch 2.5.1
those and the fp32 buffer the CUDA code keeps. torchao's
``single_param_adam`` runs verbatim except for ``grad = grad.to(exp_avg.dtype)`` first (fp32 for
8-bit states, whose wrapper tensor is fp32): torch 2.13's ``lerp`` meta rejects an fp32 start
with a bf16 end (later torchao versions cast explicitly). A parameter torchao does not quantise
(fewer than 4096 elements, or not a multiple of 256) gets no buffer at all.
The first call compiles (20-50 s on a 2-core machine).
"""

from __future__ import annotations

import inspect
import re
import sys

_ELEM = {"torch.float32": 4, "torch.bfloat16": 2, "torch.uint8": 1, "torch.int64": 8}


def main(argv: list[str]) -> int:
    import torch
    import torchao.prototype.low_bit_optim.adam as adam
    from torch._inductor.utils import run_and_get_code

    from oomkit.estimate.training_torchao import torchao_step_temporary_bytes

    rows, cols = (int(argv[0]), int(argv[1])) if len(argv) == 2 else (1024, 1024)
    src = inspect.getsource(adam.single_param_adam)
    src = src.replace(
        "    if not is_adamw:\n", "    grad = grad.to(exp_avg.dtype)\n    if not is_adamw:\n", 1
    )
    namespace = dict(vars(adam))
    exec(compile(src, "single_param_adam", "exec"), namespace)
    adam.single_param_adam = namespace["single_param_adam"]

    p = torch.nn.Parameter(torch.randn(rows, cols, dtype=torch.bfloat16))
    p.grad = torch.randn_like(p)
    opt = adam.AdamW8bit([p], lr=1e-4)
    _, codes = run_and_get_code(opt.step)
    total = 0
    pattern = r"(buf\d+) = empty_strided_\w+\(\(([\d, ]*)\), \([\d, ]*\), (torch\.\w+)\)"
    for code in codes:
        for name, shape, dtype in re.findall(pattern, code):
            dims = [int(d) for d in shape.replace(" ", "").split(",") if d]
            n = 1
            for d in dims:
                n *= d
            total += n * _ELEM[dtype]
            print(f"{name}: ({shape}) {dtype}: {n * _ELEM[dtype]} bytes")
    model = torchao_step_temporary_bytes(p.numel())
    print(
        f"parameter {rows} x {cols}: CPU buffers {total} bytes "
        f"(oomkit models the CUDA code: {model} bytes)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
