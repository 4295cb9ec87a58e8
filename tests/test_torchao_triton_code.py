"""What torch 2.5.1's Inductor generated for torchao AdamW8bit's step on CUDA, read back.

The fixture is ``benchmarks/torchao_adamw8bit_triton.py 128256 3072 --excerpt`` (torch
2.5.1+cu124, Triton 3.1, torchao 0.6.1; generated without a GPU): the Triton kernel's decorator
and signature and the wrapper's ``call()``. These tests hold oomkit's torchao step model
(:mod:`oomkit.estimate.training_torchao`) to that code: the buffers ``call()`` allocates, the
heuristic that decides whether the first launch autotunes, and the bytes ``clone_args`` copies.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from oomkit.estimate.training_torchao import torchao_autotune_bytes, torchao_step_temporary_bytes

ROOT = Path(__file__).resolve().parents[1]
CODE = (ROOT / "tests" / "fixtures" / "torchao_adamw8bit_triton_128256x3072.txt").read_text()
N = 128256 * 3072


def _script() -> ModuleType:
    path = ROOT / "benchmarks" / "torchao_adamw8bit_triton.py"
    spec = importlib.util.spec_from_file_location("torchao_adamw8bit_triton", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_call_allocates_one_fp32_buffer_of_the_parameters_shape() -> None:
    bufs = _script().buffers(CODE)
    assert [(shape, dtype) for _, shape, dtype, _ in bufs] == [((128256, 3072), "float32")]
    assert sum(b for *_, b in bufs) == torchao_step_temporary_bytes(N)


def test_the_step_is_one_reduction_kernel_with_the_default_hint() -> None:
    # torch 2.5.1 _reduction_configs: ReductionHint.DEFAULT -> six configs, so the first
    # launch benchmarks them (CachingAutotuner.run -> autotune_to_one_config)
    assert _script().heuristics(CODE) == [("reduction", "DEFAULT")]


def test_autotuning_clones_every_mutated_name() -> None:
    # the wrapper's arguments (AOT order): step, exp_avg codes / scale / qmap, grad,
    # exp_avg_sq codes / scale / qmap, lr, the bf16 parameter
    blocks = N // 256
    sizes = {
        "arg0_1": 4, "arg1_1": N, "arg2_1": 4 * blocks, "arg3_1": 1024, "arg4_1": 2 * N,
        "arg5_1": N, "arg6_1": 4 * blocks, "arg7_1": 1024, "arg8_1": 4, "arg9_1": 2 * N,
        "buf8": 4 * N,
    }  # fmt: skip
    (clones,) = _script().mutated_clones(CODE, sizes).values()
    # the parameter, both codes and both scales, each passed as in_ptr and out_ptr
    assert clones == 2 * (2 * N + N + N + 2 * 4 * blocks)
    assert clones + 256 * 10**6 == torchao_autotune_bytes(N, 2)


def test_gpu_check_script_states_what_a_cuda_run_should_measure() -> None:
    path = ROOT / "benchmarks" / "gpu" / "torchao_adamw8bit_first_step.py"
    spec = importlib.util.spec_from_file_location("torchao_adamw8bit_first_step", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    want = mod.expected(N)
    # the first step makes the states and autotunes; the second only has the call's buffer
    assert want["step2_bytes"] == torchao_step_temporary_bytes(N)
    assert want["step1_bytes"] - want["states_bytes"] - want["step2_bytes"] == (
        torchao_autotune_bytes(N, 2)
    )
    assert mod.main([]) == 0  # no CUDA device (or no torchao) here: a message, exit 0
