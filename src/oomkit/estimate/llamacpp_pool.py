"""llama.cpp's CUDA pool while quantized prompt matmuls use cuBLAS (2023-10 on; V100 only later).

PR #3776 (commit 2f9ec7e, merged 2023-10-27, build b1430: "cuda : new cublas gemm branch for
multi-batch quantized src0", "use MMQ only for small batches") made every quantized matmul with
more than 32 tokens dequantize its weight to FP16 in a pool buffer and call cuBLAS
(``ggml_cuda_op_mul_mat_cublas``: ``src0_as_f16`` rows x cols, the activations as FP16
``src1_as_f16`` tokens x cols, and an FP16 result ``dst_f16`` rows x tokens, 2 bytes each).
The test for tensor cores was the compile-time ``CUDA_USE_TENSOR_CORES``, so Pascal took the
FP16 path as well until PR #4682 (2023-12-29, "With Pascal use_tensor_cores is evaluated as
true", llama.cpp#3869 shows a P40 at b1447 printing ``CUDA_USE_TENSOR_CORES: yes``); from then
on only compute capability >= 7.0. The pool (``ggml_cuda_pool``; the VMM pool of PR #4606 from
Dec 2023 maps physical memory as it grows and never unmaps it, the legacy pool caches freed
buffers) keeps its high-water mark: the largest such matmul on the device. Until PR #6122
(commit 557410b, 2024-03-26: "skip computing unused logits") the output matrix (n_vocab x
n_embd) ran over every prompt token too, and it is usually the largest matrix. PR #8075
(2024-06-24, "CUDA: use MMQ instead of cuBLAS by default") put quantized prompt matmuls back
in MMQ kernels on GPUs with int8 tensor cores (Turing and newer). ``ggml_cuda_should_use_mmq``
of that PR (ggml-cuda/mmq.cu) keeps cuBLAS where FP16 tensor cores exist without int8 ones:
``return cc < CC_VOLTA || ne11 < MMQ_DP4A_MAX_BATCH_SIZE`` (64) on NVIDIA, so a V100 (cc 7.0)
still dequantizes every quantized weight it multiplies over 64 or more tokens; the function
of today (``!fp16_mma_hardware_available(cc) || ne11 < MMQ_DP4A_MAX_BATCH_SIZE``) does the
same, so this is modelled (``cublas_pool="volta"``) from PR #8075 on. Not modelled: types
without an MMQ kernel (i-quants until PR #8278/#8495, Jul 2024), ROCm (hipBLAS on some AMD
GPUs for large batches, an assumption the estimate states: :func:`pool_notes`), and
the FP16 batched GEMM of the attention (PR #3749) without flash attention.

Nothing of this appears in llama.cpp's buffer log (the pool is outside ggml-alloc): it is what
made a run that "fits" by its logged buffers die on the first long-enough prompt, as in
xinference#1036 (Yi-34B Q4_K_M on a 22 GB 2080 Ti: 2k context runs, 4k dies "in
ggml_cuda_pool_malloc_vmm" on the first request).
"""

from __future__ import annotations

from oomkit.estimate.breakdown import Component
from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.estimate.llamacpp_placement import Placement
from oomkit.quant.ggml_types import GGML_TYPES
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec

__all__ = [
    "MMQ_DP4A_MAX_BATCH",
    "MMQ_MAX_BATCH",
    "attention_pool_growth_bytes",
    "attn_pool_growth",
    "cublas_pool_bytes",
    "pool_component",
    "pool_notes",
    "tensor_cores",
]

#: PR #3776: MMQ for batches up to 32 tokens, cuBLAS above
MMQ_MAX_BATCH = 32
#: PR #8075 (ggml-cuda/mmq.cuh ``MMQ_DP4A_MAX_BATCH_SIZE``): on a GPU with FP16 but no int8
#: tensor cores (V100) MMQ serves batches below 64 tokens, cuBLAS the larger ones
MMQ_DP4A_MAX_BATCH = 64


def tensor_cores(gpu: DeviceTarget) -> bool | None:
    """Compute capability >= 7.0 (FP16 tensor cores); None when not an NVIDIA CUDA device or
    the capability is unknown."""
    if gpu.backend != "cuda" or not gpu.compute_capability:
        return None
    try:
        return float(gpu.compute_capability) >= 7.0
    except ValueError:
        return None


def _volta(gpu: DeviceTarget) -> bool:
    """FP16 tensor cores without int8 ones: ``fp16_mma_available`` but not
    ``int8_mma_available`` (cc >= 7.0 and < 7.5, ggml-cuda/common.cuh)."""
    try:
        return 7.0 <= float(gpu.compute_capability or "") < 7.5
    except ValueError:
        return False


def cublas_pool_bytes(
    placement: Placement,
    device: str,
    gpu: DeviceTarget,
    *,
    n_ubatch: int,
    n_experts: int,
    all_logits: bool,
    gpus: str = "tensor_cores",
) -> int:
    """The pool's high-water mark on ``device``: the largest dequantize-and-GEMM of one
    quantized weight over ``n_ubatch`` tokens (see module doc). 0 when the batch is served by
    MMQ (<= 32 tokens), the device is not an NVIDIA GPU with a known compute capability, or
    ``gpus`` is ``"tensor_cores"`` and the GPU has none. ``gpus="volta"`` (PR #8075 on): only a
    GPU with FP16 but no int8 tensor cores (7.0 <= cc < 7.5) and only for 64 or more tokens.

    Expert tensors (``*_exps``) are multiplied one expert at a time (``mul_mat_id`` of that
    era), so one expert's slice is dequantized.

    A model without ``output.weight`` (Gemma, tied embeddings) multiplies by the embedding
    matrix: llama.cpp creates it again as the output tensor, ``TENSOR_DUPLICATED`` ("same as
    tok_embd, duplicated to allow offloading", llm_load_tensors), which the placement names
    ``output.weight(tied)``; it is the output matmul's weight like a separate one.
    """
    tc = tensor_cores(gpu)
    if tc is None or n_ubatch <= MMQ_MAX_BATCH or (gpus == "tensor_cores" and not tc):
        return 0
    if gpus == "volta" and (not _volta(gpu) or n_ubatch < MMQ_DP4A_MAX_BATCH):
        return 0
    peak = 0
    for t in placement.tensors:
        name = t.name.removesuffix("(tied)")
        if t.device != device or not name.endswith(".weight") or t.ne0 <= 1:
            continue
        gt = GGML_TYPES.get(t.type_name.upper())
        if gt is None or gt.block_size == 1 or "norm" in name:
            continue  # not quantized: F16/F32 weights need no dequantized copy
        if name.startswith("token_embd"):
            continue  # get_rows, not a matmul
        if name.startswith("output.") and not all_logits:
            continue  # one logits row per sequence: a matrix-vector product
        n_el = t.n_bytes // gt.type_size * gt.block_size
        if "_exps" in name and n_experts > 1:
            n_el //= n_experts
        rows, cols = n_el // t.ne0, t.ne0
        peak = max(peak, 2 * (rows * cols + n_ubatch * cols + rows * n_ubatch))
    return peak


def pool_component(
    placement: Placement, dev: str, gpu: DeviceTarget, params: LlamaCppParams, spec: ModelSpec
) -> Component | None:
    """The CUDA pool of builds that dequantized weights for cuBLAS (None when not modelled)."""
    opts = params.options
    if not opts.cublas_pool or opts.force_mmq:
        return None
    n_exp = spec.moe.num_experts if spec.moe is not None else 1
    b = cublas_pool_bytes(
        placement,
        dev,
        gpu,
        n_ubatch=params.n_ubatch,
        n_experts=n_exp,
        all_logits=opts.all_logits,
        gpus=opts.cublas_pool,
    )
    if b <= 0:
        return None
    return Component(
        category="activations",
        label="CUDA pool (cuBLAS dequantized weight)",
        n_bytes=b,
        formula=(
            "largest quantized matmul over n_ubatch tokens: weight dequantized to FP16 "
            "+ FP16 activations + FP16 result"
            + ("; the output matrix included (logits for every token)" if opts.all_logits else "")
        ),
        inputs={"n_ubatch": params.n_ubatch, "compute_capability": gpu.compute_capability},
        source=(
            "ggml-cuda ggml_cuda_op_mul_mat_cublas, PR #3776 (PR #4682: Volta+) until PR #8075"
            + (
                "; from PR #8075 V100 only, ggml_cuda_should_use_mmq: no int8 tensor cores, "
                f"cuBLAS for >= {MMQ_DP4A_MAX_BATCH} tokens"
                if opts.cublas_pool == "volta"
                else ""
            )
        ),
    )


def pool_notes(
    gpus: list[DeviceTarget] | tuple[DeviceTarget, ...], params: LlamaCppParams
) -> tuple[str, ...]:
    """The assumption an estimate states where the pool is not modelled although the build
    may dequantize for BLAS: ROCm GPUs (hipBLAS; from PR #8075 RDNA3 for batches of 64 tokens
    or more, ``return cc < CC_RDNA3 || ne11 < MMQ_DP4A_MAX_BATCH_SIZE``; 2025 builds add CDNA,
    ``GGML_CUDA_CC_IS_CDNA``)."""
    if not params.options.cublas_pool or params.n_ubatch <= MMQ_MAX_BATCH:
        return ()
    if not any(g.backend == "rocm" for g in gpus):
        return ()
    return (
        "ROCm: llama.cpp's hipBLAS path (a quantized weight dequantized to FP16 in the pool "
        "for a prompt batch; which AMD GPUs and batch sizes take it depends on the build, "
        "ggml_cuda_should_use_mmq: RDNA3 at 64+ tokens from PR #8075) is not modelled: up to "
        "one FP16 weight matrix more than counted",
    )


#: ``ggml_cuda_pool_malloc`` (legacy pool, 2023): a new buffer is 5% larger than asked,
#: rounded up to 256 bytes
_LOOK_AHEAD = 1.05
#: KV cells were a multiple of 32 (``GGML_PAD(llama_kv_cache_cell_max, 32)``)
_KV_PAD = 32


def attention_pool_growth_bytes(n_head: int, n_ctx: int, n_batch: int) -> int:
    """What the legacy CUDA pool holds after a prompt of ``n_ctx`` tokens went through the
    batched attention GEMM of PR #3749 (``ggml_cuda_mul_mat_mat_batched_cublas``).

    Each prompt step of ``n_batch`` tokens multiplies Q by the ``n_kv`` cells in use in one
    cuBLAS batched GEMM whose FP16 result (``dst_f16``, ``n_head x n_batch x n_kv x 2``
    bytes; the softmax converted to FP16 for KQV is the same size) comes from the pool. The
    legacy pool (``ggml_cuda_pool_malloc``) reuses the smallest cached buffer that is large
    enough and otherwise ``cudaMalloc``s ``1.05 x`` the request, and ``ggml_cuda_pool_free``
    keeps every buffer: as ``n_kv`` grows by ``n_batch`` a step the request outgrows every
    cached buffer, so the pool ends up holding one buffer per step, not just the largest.
    """
    if n_head <= 0 or n_ctx <= 0 or n_batch <= 0:
        return 0
    cached: list[int] = []
    done = 0
    while done < n_ctx:
        step = min(n_batch, n_ctx - done)
        done += step
        n_kv = min(n_ctx, -(-done // _KV_PAD) * _KV_PAD)
        need = n_head * step * n_kv * 2
        fit = [b for b in cached if b >= need]
        if not fit:
            cached.append(-(-int(_LOOK_AHEAD * need) // 256) * 256)
    return sum(cached)


def attn_pool_growth(
    placement: Placement, dev: str, gpu: DeviceTarget, params: LlamaCppParams, spec: ModelSpec
) -> int:
    """:func:`attention_pool_growth_bytes` on ``dev`` for the builds that have it: 0 when the
    generation has no batched attention GEMM, flash attention is on, the device is not an
    NVIDIA GPU with a known compute capability (ROCm's legacy pool is not modelled), the
    generation needs tensor cores and the GPU has none (PR #3882), or no layer of ``dev``
    holds attention. The prompt is the longest the context admits (``n_ctx`` tokens): a shorter
    one leaves a smaller pool, so the verdict counts this in its band, not in the total."""
    mode = params.options.attn_pool
    tc = tensor_cores(gpu)
    if mode is None or params.flash_attn or tc is None or (mode == "tensor_cores" and not tc):
        return 0
    if dev not in placement.layer_device:
        return 0
    # builds of 2023 had no separate micro-batch: a prompt step was -b tokens, 512 by default,
    # which is what n_ubatch holds for them (LlamaCppOptions.ubatch_split False, PR #6017)
    return attention_pool_growth_bytes(spec.num_attention_heads, params.n_ctx, params.n_ubatch)
