"""Inductor's CUDA (Triton) output code for torchao AdamW8bit's compiled step, without a GPU.

    python -m venv /tmp/tao && /tmp/tao/bin/pip install torch==2.5.1 torchao==0.6.1
    PYTHONPATH=src /tmp/tao/bin/python benchmarks/torchao_adamw8bit_triton.py 128256 3072 \
        [--target cuda|cpu] [--excerpt OUT]

(PyPI's torch 2.5.1 is the CUDA build and brings its Triton 3.1; no GPU or driver is needed.
torch 2.13's CPU build with ``pip install triton`` (3.9) generates its CUDA code too; torchao
0.6.1's ``lerp`` of an fp32 state with a bf16 gradient needs torch <= 2.5, so for 2.13 put the
``prototype/low_bit_optim`` files of torchao's 2024-11-09 nightly (75f52ae76, which upcasts
first) over the wheel's.)
``torch.compile(single_param_adam, fullgraph=True, dynamic=False)`` (torchao's own call,
``adam.py`` ``_AdamBase.step``) runs on *meta* tensors with a backend that keeps the graph
AOTAutograd hands to Inductor (``OptimState8bit`` flattened to codes / scale / qmap, the
``copy_`` mutations kept). The graph's meta device is then renamed ``cuda`` and Inductor's
``compile_fx_inner`` lowers, schedules and generates the wrapper and Triton kernels on
FakeTensors, with A100 device properties (sm80, 108 SMs) patched in where torch would ask the
driver; generation stops at ``GraphLowering.save_output_code``, before any kernel is compiled
or run. Prints each ``empty_strided`` of ``call()`` with its bytes, the kernels' heuristics, and
the autotuning clones of the mutated arguments, and compares them with
:mod:`oomkit.estimate.training_torchao`. ``--target cpu`` generates the C++ code the same way
(for torch 2.5.1 it matches what a real CPU step generates). ``--excerpt`` writes the kernel
decorators and ``call()`` (the fixture ``tests/fixtures/torchao_adamw8bit_triton_*.txt``).
Exits 0 with a message when torch, Triton or torchao is missing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

_ELEM = {"float32": 4, "bfloat16": 2, "uint8": 1, "int32": 4, "int64": 8}
_BUF = re.compile(r"(buf\d+) = empty_strided_\w+\(\(([\d, ]*)\), \([\d, ]*\), torch\.(\w+)\)")
_RUN = re.compile(r"(\w+)\.run\(([^\n]*)\)")


def buffers(code: str) -> list[tuple[str, tuple[int, ...], str, int]]:
    """(name, shape, dtype, bytes) of every buffer the generated ``call()`` allocates."""
    out = []
    for name, shape, dtype in _BUF.findall(code):
        dims = tuple(int(d) for d in shape.replace(" ", "").split(",") if d)
        n = 1
        for d in dims:
            n *= d
        out.append((name, dims, dtype, n * _ELEM[dtype]))
    return out


def mutated_clones(code: str, arg_bytes: dict[str, int]) -> dict[str, int]:
    """Bytes ``CachingAutotuner.clone_args`` copies per benchmarked launch, per kernel: every
    argument whose name is in ``mutated_arg_names``, each occurrence cloned on its own.

    ``arg_bytes`` maps the wrapper's argument and buffer names (``arg1_1``, ``buf1``...) to
    their bytes."""
    headers = _kernel_headers(code)
    out: dict[str, int] = {}
    for kernel, run in _RUN.findall(code):
        names, mutated = headers[kernel]
        passed = [a.strip() for a in run.split(",")]
        out[kernel] = sum(
            arg_bytes[arg] for name, arg in zip(names, passed, strict=False) if name in mutated
        )
    return out


def _kernel_headers(code: str) -> dict[str, tuple[list[str], set[str]]]:
    pattern = r"'kernel_name': '(\w+)', 'mutated_arg_names': \[([^\]]*)\].*?\ndef \w+\(([^)]*)\)"
    out = {}
    for m in re.finditer(pattern, code, re.S):
        mutated = {s.strip().strip("'") for s in m.group(2).split(",") if s.strip()}
        names = [s.split(":")[0].strip() for s in m.group(3).split(",")]
        out[m.group(1)] = (names, mutated)
    return out


def heuristics(code: str) -> list[tuple[str, str]]:
    """(heuristic, reduction hint) of every generated Triton kernel."""
    found = re.findall(
        r"@triton_heuristics\.(\w+)\(\s*size_hints=[^\n]*\n\s*(?:reduction_hint=ReductionHint\.(\w+))?",
        code,
    )
    return [(h, hint or "") for h, hint in found]


def excerpt(code: str) -> str:
    """The kernels' decorators and signatures and the wrapper's ``call()``."""
    pattern = r"@triton_heuristics\.\w+\((?:.|\n)*?\ndef \w+\([^)]*\):"
    keep = [m.group(0) for m in re.finditer(pattern, code)]
    start = code.index("def call(")
    ends = [code.find(e, start) for e in ("def get_args", "def benchmark_compiled_module")]
    call = code[start : min(e for e in ends if e > 0)]
    return "\n\n".join([*keep, call.rstrip()]) + "\n"


def _patch_cuda(torch: Any) -> None:
    """Answer torch's device queries as an A100 would (nothing is ever launched)."""
    import torch._dynamo.device_interface as di
    import torch._inductor.scheduler as sched
    import torch._subclasses.fake_tensor as ft
    import torch.utils._triton as ut

    class Props:
        name = "NVIDIA A100-SXM4-80GB"
        major, minor, multi_processor_count = 8, 0, 108
        total_memory = 80 * 2**30
        regs_per_multiprocessor, max_threads_per_multi_processor, warp_size = 65536, 2048, 32

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda d: None
    cuda.get_device_capability = lambda d=None: (8, 0)
    cuda.get_device_properties = lambda d=None: Props()
    cuda.synchronize = lambda d=None: None
    cuda.get_rng_state = lambda *a, **k: torch.zeros(16, dtype=torch.uint8)
    cuda.set_rng_state = lambda *a, **k: None
    cuda.is_initialized = lambda: True
    cuda._exchange_device = lambda d: 0  # (newer torch: device guards around codegen)
    cuda._maybe_exchange_device = lambda d: 0
    iface = di.CudaInterface
    iface.current_device = staticmethod(lambda: 0)  # type: ignore[method-assign]
    iface.set_device = staticmethod(lambda d: None)  # type: ignore[method-assign]
    iface.device_count = staticmethod(lambda: 1)  # type: ignore[method-assign]
    iface.synchronize = staticmethod(lambda d=None: None)  # type: ignore[method-assign]
    iface.get_device_properties = staticmethod(lambda d=None: Props())  # type: ignore[method-assign]
    iface.get_raw_stream = staticmethod(lambda d=0: 0)  # type: ignore[method-assign]
    di.get_interface_for_device("cuda")
    di.register_interface_for_device("cuda:0", iface)
    sched.has_triton = lambda: True  # type: ignore[attr-defined]
    ut.triton_hash_with_backend = lambda: "generated-without-a-gpu"  # type: ignore[attr-defined]
    ft.init_gpu_context = lambda *a: None  # type: ignore[attr-defined]


def generate(rows: int, cols: int, target: str) -> tuple[str, dict[str, int]]:
    """(output code, bytes of each wrapper argument) of one parameter's compiled step."""
    import inspect

    import torch
    import torchao.prototype.low_bit_optim.adam as adam
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._inductor.graph import GraphLowering
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torchao.prototype.low_bit_optim.subclass_8bit import OptimState8bit

    config.compile_threads = 1
    captured: dict[str, Any] = {}

    def inner(gm: Any, example_inputs: Any, **kw: Any) -> Any:
        captured.update(gm=gm, ex=example_inputs, kw=kw)
        return make_boxed_func(gm)

    p = torch.empty(rows, cols, dtype=torch.bfloat16, device="meta")
    states = [OptimState8bit.zeros(p.shape, signed, 256, "meta") for signed in (True, False)]
    # torchao's call: lr is a CPU tensor (defaults), step a CPU tensor (state["step"])
    extra = (False,) if len(inspect.signature(adam.single_param_adam).parameters) == 13 else ()
    fn = torch.compile(
        adam.single_param_adam, fullgraph=True, dynamic=False,
        backend=lambda gm, ex: compile_fx(gm, ex, inner_compile=inner),
    )  # fmt: skip
    fn(p, torch.empty_like(p), torch.tensor(1.0), *states, None, torch.tensor(1e-4),
       0.9, 0.999, 0.01, 1e-8, True, *extra)  # fmt: skip
    gm = captured["gm"]
    dev = torch.device("cuda", 0) if target == "cuda" else torch.device("cpu")
    for node in gm.graph.nodes:
        d = node.kwargs.get("device")
        if isinstance(d, torch.device) and d.type == "meta":
            node.kwargs = {**node.kwargs, "device": dev}
    gm.recompile()
    if target == "cuda":
        _patch_cuda(torch)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        ins = [
            torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                                device=dev if t.device.type == "meta" else "cpu")
            for t in captured["ex"]
        ]  # fmt: skip
    sizes = {f"arg{i}_1": t.numel() * t.element_size() for i, t in enumerate(ins)}
    codes: list[str] = []

    class Generated(Exception):
        pass

    def save(code: str) -> None:
        codes.append(code)
        raise Generated

    GraphLowering.save_output_code = staticmethod(save)  # type: ignore[method-assign]
    try:
        with mode:
            compile_fx_inner(gm, ins, **captured["kw"])
    except Exception:  # Generated, or newer torch's InductorError wrapping it
        if not codes:
            raise
    return codes[0], sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=int)
    parser.add_argument("cols", type=int)
    parser.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--excerpt", type=Path, help="write the decorators and call() here")
    args = parser.parse_args(argv)
    try:
        import torch
        import torchao  # noqa: F401

        if args.target == "cuda":
            import triton  # noqa: F401
    except ImportError as exc:
        print(f"needs torch 2.5.1 (the CUDA build from PyPI), its Triton and torchao: {exc}")
        return 0
    from oomkit.estimate.training_torchao import (
        torchao_autotune_bytes,
        torchao_step_temporary_bytes,
    )

    code, sizes = generate(args.rows, args.cols, args.target)
    n = args.rows * args.cols
    total = 0
    for name, shape, dtype, nbytes in buffers(code):
        total += nbytes
        print(f"{name}: {shape} {dtype}: {nbytes} bytes")
    print(f"torch {torch.__version__}, {args.target}, parameter {args.rows} x {args.cols}")
    print(f"call() buffers: {total} bytes; oomkit {torchao_step_temporary_bytes(n)}")
    if args.target == "cuda":
        sizes.update({name: nbytes for name, _, _, nbytes in buffers(code)})
        print(f"kernels (heuristic, reduction hint): {heuristics(code)}")
        modelled = torchao_autotune_bytes(n, 2) - 256 * 10**6  # less do_bench's flush buffer
        print(f"autotuning clones per benchmarked launch: {mutated_clones(code, sizes)} bytes")
        print(f"oomkit (torch 2.5.1's code, less do_bench's 256e6 flush): {modelled}")
    if args.excerpt:
        args.excerpt.write_text(excerpt(code))
    return 0


if __name__ == "__main__":
    sys.exit(main())
