"""The llama.cpp rows of the runtime generations table from 2023 (Metal buffers to tensor cores).

Oldest first; every row cites the change that starts it: the Metal one-buffer and view
layouts, the graph evaluator, the k-quant mixes, MMQ, the batched attention GEMM and the legacy
cuBLAS pool, tensor cores. Also the older generations' values of the newer effects
(:data:`OLD_EFFECTS`), which the rows before 2025-07 start from. Gathered by
:mod:`oomkit.estimate.generation_rows_llamacpp`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["LLAMACPP_2023_ROWS", "OLD_EFFECTS"]

#: the older generations' values of the newer effects, which the rows up to 2025-07 start from
OLD_EFFECTS: dict[str, bool | int] = {
    "cuda_moe_fusion_deps": False,
    "flash_attn_default": False,
    "mla_cache": False,
    "mla_v_cache": True,
    "mla_kv_types_equal": False,
    "swa_cache": False,
    "kv_streams": False,
    "n_ctx_pad_no_fa": 32,
    "compute_chunks": False,
    "server_outputs": False,
    "fit_params": False,
    "server_auto_slots": False,
}

#: Oldest first. Every row cites the change that starts it.
LLAMACPP_2023_ROWS: tuple[Row, ...] = (
    _g(
        "llama.cpp",
        "2023-06-metal-one-buffer",
        "llama.cpp 2023-06 (Metal: the model file as one buffer)",
        "2023-06-04",
        None,
        "ggml-org/llama.cpp PR #1642 (Metal inference: ggml_metal_add_buffer maps the model "
        "file as ONE Metal buffer 'data'; PR #1706, 2023-06-05, refuses it above "
        "maxBufferLength); the CUDA switches are the next rows' (modelled as before)",
        "Metal: a model file larger than the device's maxBufferLength (half the installed "
        "memory) does not load ('buffer data size ... is larger than buffer maximum'), "
        "whatever the working set; the compute memory is the fixed eval + scr0 + scr1 "
        "buffers by model size (2 GiB for a 13B, 2.25 GiB for a 30B), each a Metal buffer",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="none",
        metal_views=False,
        metal_scratch=True,
        q2k_mix="k-quants-2023-06",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-06-metal-views",
        "llama.cpp 2023-06 (Metal buffers split into views)",
        "2023-06-18",
        None,
        "ggml-org/llama.cpp PR #1826 (metal : handle buffers larger than device's "
        "maxBufferLength: overlapping views of at most maxBufferLength)",
        "Metal: a model file above maxBufferLength loads as several views (each overlapping "
        "the next by the largest tensor); the working set is the limit",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="none",
        metal_scratch=True,
        q2k_mix="k-quants-2023-06",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-07-graph-eval",
        "llama.cpp 2023-07 (eval buffer sized per graph)",
        "2023-07-22",
        None,
        "ggml-org/llama.cpp PR #2325 (commit b47b8a9, build 879: 'llama : optimize memory "
        "buffers', MEM_REQ_EVAL no longer needed, computed for each graph)",
        "the fixed eval buffer by model size (768 MiB for 7B ... 1536 MiB for 65B) and the "
        "512-1024 MiB scratch buffers are gone (-1.2 GB for a 7B); Metal's compute memory is "
        "modelled from the graph again (approximately: scratch buffers stayed until ggml-alloc "
        "reached Metal in PR #2627, 2023-08-17)",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="none",
        q2k_mix="k-quants-2023-06",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-08-q2k-3bit",
        "llama.cpp 2023-08 (Q2_K mostly 3-bit)",
        # the PR's thread has comments of 2023-08-22/23; its merge day is not in the threads
        # read: dated at the first
        "2023-08-22",
        None,
        "ggml-org/llama.cpp PR #2707 (Quantization improvements for k_quants: Q2_K 'a mostly "
        "3-bit quantization', PR #4872) with PR #2807 (2023-08-26, 70B attn_v Q5_K)",
        "a Q2_K file is Q3_K but for attn_q/attn_k (Q2_K): LLaMA-v2-70B 27.27 GiB, not the "
        "23.71 GiB of the January 2024 mix (PR #5060)",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="none",
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-mmq",
        "llama.cpp 2023 (MMQ prompt processing)",
        "2023-08-30",
        None,
        "ggml-org/llama.cpp PR #2912 (mul_mat_q on by default)",
        "quantized prompt matmuls in MMQ kernels: no dequantized weights in the pool",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="none",
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-10-batched-attn",
        "llama.cpp 2023-10 (batched cuBLAS attention)",
        "2023-10-24",
        None,
        "ggml-org/llama.cpp PR #3749 (commit 2b4ea35: batched cuBLAS GEMM for faster attention)",
        "KQ and KQV over all heads in one FP16 GEMM whose buffers come from the legacy "
        "CUDA pool, which keeps one larger buffer per prompt step",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="none",
        attn_pool="all",
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-10-cublas",
        "llama.cpp 2023-10 (cuBLAS prompt processing, logits for every token)",
        "2023-10-27",
        None,
        "ggml-org/llama.cpp PR #3776 (commit 2f9ec7e, build b1430: cuBLAS instead of MMQ "
        "for batches above 32 tokens)",
        "every quantized matmul over more than 32 tokens dequantizes its weight to FP16 "
        "in the CUDA pool, which keeps the high-water mark (Pascal too: the tensor-core "
        "test was a compile-time macro); the output matrix runs over every prompt token",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="all",
        all_logits=True,
        attn_pool="all",
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-11-batched-attn-tc",
        "llama.cpp 2023-11 (batched cuBLAS attention on Volta+ only)",
        "2023-11-01",
        None,
        "ggml-org/llama.cpp PR #3882 (do not use batched GEMM when tensor cores are "
        "not available); the VMM pool of PR #4606 (Dec 2023) ends the growth, "
        "approximated by the next row",
        "Pascal and older attend per head again; Volta+ keep the batched GEMM and its "
        "growing legacy-pool buffers",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="all",
        all_logits=True,
        attn_pool="tensor_cores",
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
    _g(
        "llama.cpp",
        "2023-12-tensor-cores",
        "llama.cpp 2023-12 (cuBLAS prompt processing on Volta+ only)",
        "2023-12-29",
        None,
        "ggml-org/llama.cpp PR #4682 (fix tensor core logic for Pascal and HIP)",
        "GPUs below compute capability 7.0 go back to MMQ: only Volta and newer pool FP16 "
        "weight copies",
        **OLD_EFFECTS,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="tensor_cores",
        all_logits=True,
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
)
