"""The llama.cpp rows of the runtime generations table.

Oldest first; every row cites the change that starts it. Gathered with the other runtimes'
rows in :data:`oomkit.estimate.generation_table.ROWS`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["LLAMACPP_ROWS"]

#: the older generations' values of the newer effects, which the rows up to 2025-07 start from
_OLD_LLAMACPP = {
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
LLAMACPP_ROWS: tuple[Row, ...] = (
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
        moe_slot_loop=True,
        row_main_gpu=True,
        ubatch_split=False,
        cublas_pool="tensor_cores",
        all_logits=True,
        q2k_mix="3bit-2023-08",
        moe_mix="pre-4872",
        sched_staging=False,
    ),
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
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
        **_OLD_LLAMACPP,
    ),
    _g(
        "llama.cpp",
        "2025-04-mla",
        "llama.cpp 2025-04 (MLA latent cache, full SWA)",
        "2025-04-15",
        None,
        "ggml-org/llama.cpp PR #12801 (DeepSeek V2/V3 MLA implementation)",
        "MLA models cache the latent c^KV + rope key (576) as K and the latent again as "
        "V; Gemma-2/3 sliding-window layers still cache the whole context",
        **{**_OLD_LLAMACPP, "mla_cache": True},
    ),
    _g(
        "llama.cpp",
        "2025-05-swa",
        "llama.cpp 2025-05 (SWA cache)",
        "2025-05-09",
        None,
        "ggml-org/llama.cpp PR #13194 (kv-cache: add SWA support)",
        "sliding-window layers cache pad(n_swa x n_seq + n_batch) cells instead of "
        "n_ctx (Gemma-3: ~5/6 of the KV gone)",
        **{**_OLD_LLAMACPP, "mla_cache": True, "swa_cache": True},
    ),
    _g(
        "llama.cpp",
        "2025-07-streams",
        "llama.cpp 2025-07 (per-sequence KV streams)",
        "2025-07-16",
        None,
        "ggml-org/llama.cpp PR #14363 (high-throughput mode, kv_unified)",
        "without --kv-unified each of -np sequences gets its own stream of n_ctx/np "
        "cells (padded per stream); SWA cells are per stream",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        flash_attn_default=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        compute_chunks=False,
        fit_params=False,
        server_auto_slots=False,
    ),
    _g(
        "llama.cpp",
        "2025-08-fa-auto",
        "llama.cpp 2025-08 (flash attention on by default)",
        "2025-08-30",
        None,
        "ggml-org/llama.cpp PR #15434 (use FA + max. GPU layers by default)",
        "-fa auto: no n_head x n_ubatch x n_ctx f32 KQ matrix in the compute buffer "
        "when the backend supports FA (before: FA off unless -fa)",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        compute_chunks=False,
        fit_params=False,
        server_auto_slots=False,
    ),
    _g(
        "llama.cpp",
        "2025-10-compute-chunks",
        "llama.cpp 2025-10 (compute buffers in chunks)",
        # PR opened 2025-09-05; the latest dated comment seen in its thread is the
        # author's of 2025-10-02. The merge day is not in the threads read: dated at that
        # comment, so runs in between are modelled as the older, single-buffer builds
        "2025-10-02",
        None,
        "ggml-org/llama.cpp PR #15815 (ggml : split graph allocations according to "
        "backend max buffer size; ggml-alloc vbuffer of up to 16 chunks)",
        "the compute buffer is several backend buffers of at most the backend's max size "
        "(Vulkan: no single >4 GiB compute buffer any more); one tensor larger than the "
        "device's allocation limit still fails",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        fit_params=False,
        server_auto_slots=False,
    ),
    _g(
        "llama.cpp",
        "2025-11-server-slots",
        "llama.cpp 2025-11 (llama-server: 4 slots on a unified KV cache)",
        # PR opened 2025-10-23; its review discussion r2483744206 is of about 2025-11-01 and
        # build 7079 (issue #17300, 2025-11-16) starts 4 slots. Dated at that discussion
        "2025-11-01",
        None,
        "ggml-org/llama.cpp PR #16736 (server : support unified cache across slots; "
        "tools/server/server.cpp: 'n_parallel is set to auto, using n_parallel = 4 and "
        "kv_unified = true'; -np default -1, PR #17997's help text)",
        "llama-server without -np: 4 slots on one unified cache of n_ctx cells (the KV of "
        "one sequence for full-attention layers; sliding-window layers keep 4 x n_swa cells, "
        "recurrent models 4 states); llama-cli and the C API keep one sequence",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        fit_params=False,
    ),
    _g(
        "llama.cpp",
        "2025-11-pad256",
        "llama.cpp 2025-11 (cells padded to 256)",
        "2025-11-06",
        None,
        "ggml-org/llama.cpp PR #16812 then PR #17046 (KV size padded to 256)",
        "KV cells padded to 256 with or without flash attention",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        fit_params=False,
    ),
    _g(
        "llama.cpp",
        "2025-12-fit",
        "llama.cpp 2025-12+ (--fit: unset -c/-ngl fitted to free memory)",
        # PR #18070 of 2025-12-15 fixes the already merged PR; issue #18097 of 2025-12-16
        # names build 7437 and the fit commit b1f3a6e5d as its first bad commit
        "2025-12-15",
        None,
        "ggml-org/llama.cpp PR #16653 (llama_params_fit, today common_fit_params in "
        "common/fit.cpp; -fit on by default, -fitt 1024 MiB, -fitc 4096; common_params.n_ctx "
        "0 = the model's trained context)",
        "llama-server/llama-cli: with -c unset the context is the model's trained context, "
        "lowered (not below 4096) until 1 GiB stays free per device; with -ngl unset too, "
        "layers (MoE: expert tensors first) leave the GPU until it does "
        "(:mod:`oomkit.estimate.llamacpp_fit`); before: -c 4096 and every layer",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
    ),
    _g(
        "llama.cpp",
        "2026-01-vless",
        "llama.cpp 2026-01+ (V-less MLA cache)",
        "2026-01-24",
        None,
        "ggml-org/llama.cpp PR #19067 (kv-cache: support V-less cache)",
        "MLA models keep only the K latent: about half the KV of the previous builds; "
        "-ctv sets nothing there (V is a view of K), so a K type other than V's is accepted",
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
    ),
    _g(
        "llama.cpp",
        "2026-06-server-outputs",
        "llama.cpp 2026-06+ (llama-server reserves -np outputs)",
        "2026-06-01",
        None,
        "ggml-org/llama.cpp PR #23861 (llama: limit max outputs of llama_context; "
        "llama_context_params.n_outputs_max, set by tools/server/server-context.cpp)",
        "llama-server only: the reserve graph holds n_parallel output rows instead of the "
        "micro-batch's (logits n_vocab x n_ubatch f32, and an output layer left on the CPU "
        "is no longer staged on the GPU for a 512-row matmul); llama-bench / llama-cli "
        "keep n_outputs_max = n_batch",
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
    ),
    _g(
        "llama.cpp",
        "2026-07-mla-kv-types",
        "llama.cpp 2026-07+ (MLA: one type for K and V)",
        # PR opened and approved 2026-07-18; build 10216 (876a43211, llama.cpp#26382 of
        # 2026-07-31) refuses GLM-5.2 at -ctk q5_1 with V f16. Dated at the PR
        "2026-07-18",
        None,
        "ggml-org/llama.cpp PR #25871 (llama : enforce the same K and V cache types for "
        "DeepSeek V4; extended in review to every hparams.is_mla() model, whose V cache is "
        "a view of K)",
        "no memory change: an MLA model with -ctk other than -ctv no longer starts "
        "('model does not support different K (...) and V (...) cache types')",
        cuda_moe_fusion_deps=False,
    ),
    _g(
        "llama.cpp",
        "2026-09-moe-fusion-deps",
        "llama.cpp 2026-09+ (CUDA MoE fusion keeps its inputs)",
        "2026-09-02",
        None,
        "ggml-org/llama.cpp PR #25952 (commit 3466812d: cuda: fuse MoE weighted expert "
        "reduction, using add_alloc_dep of PR #27301)",
        "CUDA/HIP compute buffer of MoE models: the expert outputs stay allocated until "
        "the weighted sum is done, so the weighted copy no longer reuses them (+ n_embd x "
        "n_expert_used x n_ubatch x 4 bytes)",
    ),
)
