"""The llama.cpp rows of the runtime generations table from 2024 (the scheduler era).

Oldest first; every row cites the change that starts it: MoE k-quants, the backend scheduler,
Q2_K's 2-bit mix, micro-batches, offload splits, the output buffer, one MUL_MAT_ID per MoE
layer, MMQ by default again, the backend-registry loader and SYCL's KQ placement. Gathered by
:mod:`oomkit.estimate.generation_rows_llamacpp`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g
from oomkit.estimate.generation_rows_llamacpp_2023 import OLD_EFFECTS

__all__ = ["LLAMACPP_2024_ROWS"]

#: Oldest first. Every row cites the change that starts it.
LLAMACPP_2024_ROWS: tuple[Row, ...] = (
    _g(
        "llama.cpp",
        "2024-01-moe-kquants",
        "llama.cpp 2024-01 (k-quant mixes reach MoE experts)",
        "2024-01-11",
        None,
        "ggml-org/llama.cpp PR #4872 ('Restore intended k-quants quantization mixes for MoE "
        "models', 2024-01-11: before it 'QX_K_M being mostly equivalent to QX_K_S'), with "
        "PR #4906 (attn_output Q5_K on 8-expert models, 2024-01-13) and PR #4927 (ffn_down "
        "chosen per layer, 2024-01-14)",
        "a predicted k-quant MoE file gets today's ffn_down bumps: Mixtral-8x7B Q4_K_M "
        "28.4 GB, not the 26.44 GB of the December 2023 files",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="tensor_cores",
        all_logits=True,
        q2k_mix="3bit-2023-08",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2024-01-sched",
        "llama.cpp 2024-01 (ggml_backend_sched: CPU weights staged in the compute buffer)",
        "2024-01-12",
        None,
        "ggml-org/llama.cpp PR #4766 ('llama : ggml-backend integration', 2024-01-12: the CUDA "
        "backend under ggml_backend_sched)",
        "under partial offload the main GPU's compute buffer holds copies of one CPU layer's "
        "weights (and of the output head when the output layer stays on the CPU) for the "
        "large-batch matmuls the scheduler sends to it; before, ggml-cuda copied one weight "
        "tensor at a time into its memory pool",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="tensor_cores",
        offload_op_splits=False,
        all_logits=True,
        q2k_mix="3bit-2023-08",
    ),
    _g(
        "llama.cpp",
        "2024-01-q2k-2bit",
        "llama.cpp 2024-01 (Q2_K 2-bit)",
        "2024-01-21",
        None,
        "ggml-org/llama.cpp PR #5060 (2024-01-21, 'Add Q3_K_XS': 'After the recent changes, "
        "Q2_K has become an actual 2-bit quantization'; the change itself is one of the 2-bit/"
        "importance-matrix PRs between #4872, 2024-01-11, and it, not dated in the threads "
        "read: dated at #5060)",
        "a Q2_K file is today's 2-bit mix (Q3_K only for attn_v/attn_output/ffn_down): "
        "LLaMA-v2-70B 23.71 GiB",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="tensor_cores",
        offload_op_splits=False,
        all_logits=True,
    ),
    _g(
        "llama.cpp",
        "2024-03-ubatch",
        "llama.cpp 2024-03 (micro-batches: -b 2048, -ub 512)",
        "2024-03-13",
        None,
        "ggml-org/llama.cpp PR #6017 (commit f30ea47, build b2413: pipeline parallelism, n_ubatch)",
        "a prompt step is n_ubatch tokens (-ub, 512) out of a logical -b 2048 batch; "
        "before, it was -b tokens (512 by default): the pool's dequantized matmuls and "
        "the compute buffer follow -b no more",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        cublas_pool="tensor_cores",
        offload_op_splits=False,
        all_logits=True,
    ),
    _g(
        "llama.cpp",
        "2024-03-offload-splits",
        "llama.cpp 2024-03 (one offloaded weight per scheduler split)",
        "2024-03-18",
        None,
        "ggml-org/llama.cpp PR #6083 ('backend : offload large batches to GPU', 2024-03-18)",
        "the main GPU holds one offloaded CPU weight at a time (a split each), not a CPU layer",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        cublas_pool="tensor_cores",
        all_logits=True,
    ),
    _g(
        "llama.cpp",
        "2024-03-outputs",
        "llama.cpp 2024-03 (logits only where needed)",
        "2024-03-26",
        None,
        "ggml-org/llama.cpp PR #6122 (commit 557410b: greatly reduce output buffer "
        "memory usage, skip unused logits)",
        "the output matrix multiplies only the tokens whose logits are wanted",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        cublas_pool="tensor_cores",
    ),
    _g(
        "llama.cpp",
        "2024-04-moe-one-mul-mat-id",
        "llama.cpp 2024-04 (all experts in one mul_mat_id)",
        "2024-04-18",
        None,
        "ggml-org/llama.cpp PR #6505 ('ggml : group all experts in a single ggml_mul_mat_id'; "
        "the per-slot loop is in the llama.cpp of llama-cpp-python 0.2.62, 2024-04-18, and gone "
        "in 0.2.63, 2024-04-20)",
        "a MoE layer's up/gate/down are one mul_mat_id over all n_expert_used slots "
        "(n_ff x n_expert_used x n_tokens): the compute buffer holds every slot's expert "
        "activations at once, not one slot's (Mixtral-8x7B, 512 tokens: ~115 -> ~190 MiB)",
        **OLD_EFFECTS,
        row_main_gpu=True,
        cublas_pool="tensor_cores",
    ),
    _g(
        "llama.cpp",
        "2024",
        "llama.cpp 2024 (before the MLA latent cache)",
        "2024-05-13",
        None,
        "ggml-org/llama.cpp PR #7257 (KV padding 32 without flash attention)",
        "DeepSeek-V2/V3 cache full K/V heads (~9x the latent: 128 heads x (192 + 128) "
        "vs 576 per token and layer); sliding-window layers cache the whole context; "
        "one KV stream whatever -np; cells padded to 32 without FA",
        **OLD_EFFECTS,
        row_main_gpu=True,
        cublas_pool="tensor_cores",
    ),
    _g(
        "llama.cpp",
        "2024-06-mmq",
        "llama.cpp 2024-06 (MMQ by default again)",
        "2024-06-24",
        None,
        "ggml-org/llama.cpp PR #8075 (CUDA: use MMQ instead of cuBLAS by default)",
        "int8 tensor-core GPUs: MMQ again, no dequantized weights in the CUDA pool; "
        "V100 (FP16 but no int8 tensor cores) keeps cuBLAS for 64+ token batches",
        **OLD_EFFECTS,
        row_main_gpu=True,
    ),
    _g(
        "llama.cpp",
        "2024-10-loader",
        "llama.cpp 2024-10 (backend-registry model loader)",
        "2024-10-30",
        None,
        "ggml-org/llama.cpp PR #10026 (commit c5b0f4b, 'llama : refactor model loader "
        "with backend registry': '-sm row: KV and other non-matrix weights are split "
        "among the available GPUs in the same way as split by layer mode')",
        "-sm row: each layer, its KV cache and its part of the compute graph go to the "
        "GPU --tensor-split gives the layer, as with -sm layer (before: all on the main "
        "GPU); the layer's matrices still spread their rows over every GPU",
        **OLD_EFFECTS,
    ),
    _g(
        "llama.cpp",
        "2024-11-sycl-kq-cpu",
        "llama.cpp b4069-b4126 (SYCL: KQ on the CPU)",
        "2024-11-13",
        None,
        "ggml-org/llama.cpp PR #10257 (b4069, commit 2e82ffa4a, 'sycl : Fixes to broken "
        "builds and test-backend-ops': ggml_backend_sycl_device_supports_op returns false for "
        "a MUL_MAT with a permuted operand)",
        "SYCL without flash attention: the KQ product (permuted K view x permuted Q) runs on "
        "the CPU and the SYCL compute buffer holds a second f32 KQ tensor; one compute "
        "buffer above Level Zero's 4 GiB allocation limit fails ('half the context limit', "
        "llama.cpp#10421)",
        **OLD_EFFECTS,
        sycl_kq_on_cpu=True,
    ),
    _g(
        "llama.cpp",
        "2024-11-sycl-revert",
        "llama.cpp 2024-11 (SYCL MUL_MAT support restored)",
        "2024-11-19",
        None,
        "ggml-org/llama.cpp PR #10385 (b4127, commit 557924f22, 'sycl: Revert MUL_MAT_OP "
        "support changes')",
        "SYCL: permuted MUL_MATs run on the GPU again; one KQ tensor in the compute buffer, "
        "as before b4069",
        **OLD_EFFECTS,
    ),
)
