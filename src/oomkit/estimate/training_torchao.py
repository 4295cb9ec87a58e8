"""torchao's ``AdamW8bit`` (``torchao.prototype.low_bit_optim``): states and step temporaries.

State layout (torchao v0.6.1 ``prototype/low_bit_optim/adam.py`` ``_AdamBase._new_buffer``,
lines 40-53, and ``subclass_8bit.py`` ``OptimState8bit.zeros``, lines 59-63): a parameter with
``numel >= 4096`` and ``numel % block_size == 0`` (``block_size`` = 256) gets, per state
(``exp_avg``, ``exp_avg_sq``), ``uint8`` codes of the parameter's shape, one fp32 scale per
256-element block and a 256-entry fp32 ``qmap``; any other parameter gets
``torch.zeros_like(p)`` (the parameter's own dtype, not fp32 as in bitsandbytes).

Step temporaries. ``_AdamBase.step`` (adam.py lines 55-107) loops over the parameters and calls
``torch.compile(single_param_adam, fullgraph=True, dynamic=False)`` on each one; with torchtune's
``optimizer_in_bwd`` every parameter has its own optimizer, stepped from its post-accumulate-grad
hook. ``single_param_adam`` (adam.py lines 115-154) computes ``new_exp_avg`` /
``new_exp_avg_sq`` in fp32 (``lerp`` on the dequantised states), ``copy_`` s them into the 8-bit
states (``subclass_8bit.py`` lines 100-104: ``scale_tensor`` = ``view(-1, 256).abs().amax(-1)``
then ``input / scale``, ``quantize_8bit_with_qmap``: an 8-step binary search over ``qmap``) and
reads them again for the update.

What Inductor makes of it was generated and read, for the stack of the runs this models
(torch 2.5.1 with its Triton 3.1, torchao v0.6.1 and the nightly of 2024-11-09, whose
``single_param_adam`` upcasts ``p`` and ``grad`` first): ``benchmarks/torchao_adamw8bit_triton.py``
captures the AOT graph and has Inductor generate its *CUDA* output code on a machine without a
GPU (A100 properties; the code is generated, never run). For every Llama-3.2-3B shape
((128256 | 8192 | 3072 | 1024, 3072), (3072, 8192)) the whole step is ONE fused Triton reduction
kernel (both block amaxes, the quantising binary searches, the in-place code/scale writes and
the parameter update), and the wrapper allocates exactly one buffer::

    buf8 = empty_strided_cuda((128256, 3072), (3072, 1), torch.float32)

``step_size * exp_avg / denom``, stored by the kernel and never read (a dead store Inductor
keeps): 4 bytes per element, freed when the call returns. (torch 2.5.1's CPU backend keeps the
same buffer plus two fp32 scaled states and two scale vectors; torch 2.13's CPU backend only the
latter four: ``benchmarks/torchao_adamw8bit_buffers.py``. torch 2.13's CUDA code, generated the
same way with the CPU build and Triton 3.9, is three kernels and also the latter four buffers,
8 n + n / 32 bytes, and its first call autotunes a pointwise kernel that mutates the parameter
and both code tensors (clones 8 n). What is modelled is torch 2.5.1's CUDA code, the stack of the
published figures; a torch-version switch for training is not there yet.)

First call. The kernel is ``@triton_heuristics.reduction`` with ``ReductionHint.DEFAULT``, for
which torch 2.5.1 ``_reduction_configs`` returns six configs, so the first launch autotunes
(``CachingAutotuner.run`` -> ``autotune_to_one_config`` -> ``bench``): every launch of every
config runs on ``clone_args`` copies of the arguments named in ``mutated_arg_names``, and the
generated kernel names each mutated tensor twice (``in_ptr`` and ``out_ptr``: the parameter, both
code tensors, both scale vectors), each cloned separately (``clone_preserve_strides``); Triton's
``do_bench`` (triton 3.1 ``testing.py``) also holds a 256e6-byte L2-flush buffer. That is
``2 x (n x elem + 2 n + 2 x 4 n / 256) + 256e6`` bytes on top of the call's buffer, once per
distinct parameter shape per process (the chosen config is reused; a warm Inductor autotune
cache on disk skips it). torchtune logs every step's peak (``get_memory_stats`` resets it), so
the first step's is among the logged figures. With ``optimizer_in_bwd`` a tied embedding steps
last, at the end of the first backward, when every state already exists: for Llama-3.2-3B
4 n + 8 n + n / 16 + 256e6 = 4.66 GiB on top of weights, states and its gradient. (A steady step
has only the 4 n buffer.)

A parameter torchao does not quantise gets a pointwise step; its generated code (1 x 3072)
allocates no buffer (torch 2.13 CPU), and its tiny clones are not counted.
"""

from __future__ import annotations

from oomkit.units import ceil_div

__all__ = [
    "TORCHAO_BLOCK",
    "TORCHAO_SOURCE",
    "torchao_autotune_bytes",
    "torchao_quantised",
    "torchao_state_bytes",
    "torchao_step_temporary_bytes",
]

TORCHAO_BLOCK = 256  # AdamW8bit(block_size=256) default (adam.py line 224)
_MIN_NUMEL = 4096  # _new_buffer: "follow bitsandbytes, only quantize tensors >= 4096 values"
_QMAP_ENTRIES = 256  # create_dynamic_map(total_bits=8): 2**8 fp32 entries per state
_STATES = 2  # exp_avg, exp_avg_sq (amsgrad=False)
_FP32 = 4
#: triton 3.1 ``testing.do_bench``: ``torch.empty(int(256e6 // 4), dtype=torch.int)``
_DO_BENCH_FLUSH_BYTES = 256 * 10**6
#: each mutated tensor is named twice in the generated kernel (in_ptr and out_ptr)
_CLONES_PER_MUTATED = 2
TORCHAO_SOURCE = (
    "torchao v0.6.1 prototype/low_bit_optim/adam.py _AdamBase._new_buffer (l.40-53), step "
    "(l.55-107), single_param_adam (l.115-154); subclass_8bit.py OptimState8bit (l.59-63, "
    "copy_ l.100-104); torch 2.5.1 Inductor CUDA output code and triton_heuristics autotuning "
    "(oomkit.estimate.training_torchao)"
)


def torchao_quantised(n: int) -> bool:
    """Whether a parameter of ``n`` elements gets 8-bit states (``_new_buffer``)."""
    return n >= _MIN_NUMEL and n % TORCHAO_BLOCK == 0


def torchao_state_bytes(n: int, elem: int) -> int:
    """Bytes of ``exp_avg`` + ``exp_avg_sq`` for a parameter of ``n`` elements of ``elem`` bytes."""
    if not torchao_quantised(n):
        return _STATES * n * elem
    per_state = n + _FP32 * (n // TORCHAO_BLOCK) + _FP32 * _QMAP_ENTRIES
    return _STATES * per_state


def torchao_step_temporary_bytes(n: int) -> int:
    """The fp32 buffer Inductor's CUDA wrapper allocates in the compiled step of one
    ``n``-element parameter (every step)."""
    if not torchao_quantised(n):
        return 0
    return _FP32 * n


def torchao_autotune_bytes(n: int, elem: int) -> int:
    """Extra bytes of the *first* compiled step of an ``n``-element parameter of ``elem`` bytes
    per element: the autotuning clones of its mutated arguments and ``do_bench``'s flush buffer
    (the largest of them alive at once; see the module docstring)."""
    if not torchao_quantised(n):
        return 0
    mutated = n * elem + _STATES * n + _STATES * _FP32 * ceil_div(n, TORCHAO_BLOCK)
    return _CLONES_PER_MUTATED * mutated + _DO_BENCH_FLUSH_BYTES
