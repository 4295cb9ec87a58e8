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

What Inductor makes of it was compiled and read, not assumed: ``AdamW8bit([p]).step()`` on CPU,
torch 2.13.0, ``TORCH_LOGS=output_code,fusion`` (bf16 ``p`` and ``grad``; ``grad.float()`` first
because torch 2.13's ``lerp`` meta rejects an fp32 start with a bf16 end, as later torchao does
explicitly). The generated ``call()`` allocates, for a (1024, 1024) parameter::

    buf0 = empty_strided((4096,), (1,), torch.float32)        # new exp_avg scales (amax)
    buf4 = empty_strided((4096,), (1,), torch.float32)        # new exp_avg_sq scales
    buf1 = empty_strided((4096, 256), (256, 1), torch.float32)  # new_exp_avg / scale
    buf5 = empty_strided((4096, 256), (256, 1), torch.float32)  # new_exp_avg_sq / scale

and for (512, 3072), (1024, 3072) and (4096, 3072) ones ``(6144 | 12288 | 49152, 256)`` fp32
buffers (``benchmarks/torchao_adamw8bit_buffers.py`` reproduces it): two fp32 buffers of the
parameter's element count (8 bytes per element) plus two ``numel / 256`` fp32 scales, all
allocated at the start of the compiled call and freed when it returns. The parameter update
recomputes ``new_exp_avg`` from the *old* codes inside its own loop (no buffer). ``buf1`` /
``buf5`` exist because the scheduler refuses to fuse the block-scaling node ([4096, 256]) into
the quantising node ([1024, 1024]) that overwrites the codes in place: ``cannot fuse op1_op5
with op2_op3_op19_op20: memory deps did not match`` (``Scheduler.can_fuse_vertical``): the
producer reads the old codes through ``256*c0 + ModularIndexing(ModularIndexing(256*c0 + c1, 1,
1024), 1, 256)`` while the consumer writes them at ``c0``, so the write-after-read ``WeakDep``
is not recognised as same-index (``fusable_weak_dep``). That check is the backend-independent
scheduler, not the C++ code generator; on CUDA the Triton kernels are separate launches but the
same two buffers are live across them (both scaled tensors come from one horizontally fused
node). Not verified on CUDA: torch 2.13 turns ``loop_ordering_after_fusion`` on for GPU devices
only, which leaves dependencies unnormalised until fusion; it was merged off by default
(pytorch/pytorch#126254, 2024-08), so torch 2.5 of the measured runs normalised as CPU does.

At the step of a parameter the peak is therefore the states plus, for the largest quantised
parameter, ``2 x 4 x (n + n / 256)`` bytes (Llama-3.2-3B's 394M-element tied embedding:
2.94 GiB). A non-quantised parameter's step is purely pointwise: its generated code (1 x 3072)
allocates no buffer.
"""

from __future__ import annotations

from oomkit.units import ceil_div

__all__ = [
    "TORCHAO_BLOCK",
    "TORCHAO_SOURCE",
    "torchao_quantised",
    "torchao_state_bytes",
    "torchao_step_temporary_bytes",
]

TORCHAO_BLOCK = 256  # AdamW8bit(block_size=256) default (adam.py line 224)
_MIN_NUMEL = 4096  # _new_buffer: "follow bitsandbytes, only quantize tensors >= 4096 values"
_QMAP_ENTRIES = 256  # create_dynamic_map(total_bits=8): 2**8 fp32 entries per state
_STATES = 2  # exp_avg, exp_avg_sq (amsgrad=False)
_FP32 = 4
TORCHAO_SOURCE = (
    "torchao v0.6.1 prototype/low_bit_optim/adam.py _AdamBase._new_buffer (l.40-53), step "
    "(l.55-107), single_param_adam (l.115-154); subclass_8bit.py OptimState8bit (l.59-63, "
    "copy_ l.100-104); Inductor output code (oomkit.estimate.training_torchao)"
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
    """fp32 buffers Inductor allocates in the compiled step of one ``n``-element parameter."""
    if not torchao_quantised(n):
        return 0
    return _STATES * _FP32 * (n + ceil_div(n, TORCHAO_BLOCK))
