"""The runtime generations table as written (data for :mod:`oomkit.estimate.generations`).

One row per dated generation of a runtime, oldest first: runtime, key, label, first day (ISO
date), first release, the upstream change that starts it, what differs in memory, and the
effects the estimators read (listed in :mod:`oomkit.estimate.generations`' docstring). Rows are
text so that importing them costs no :mod:`datetime` (issue 10); :mod:`~oomkit.estimate.
generations` turns them into :class:`~oomkit.estimate.generations.Generation` objects on first
use.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["ROWS", "Effect", "Row"]

Effect = bool | int | float | str

#: one row of the table as written: runtime, key, label, since (ISO date), version, change,
#: memory, effects
Row = tuple[str, str, str, str, str | None, str, str, dict[str, Effect]]


def _g(
    runtime: str,
    key: str,
    label: str,
    since: str,
    version: str | None,
    change: str,
    memory: str,
    **effects: Effect,
) -> Row:
    return (runtime, key, label, since, version, change, memory, effects)


_OLD_LLAMACPP = {
    "cuda_moe_fusion_deps": False,
    "flash_attn_default": False,
    "mla_cache": False,
    "mla_v_cache": True,
    "swa_cache": False,
    "kv_streams": False,
    "n_ctx_pad_no_fa": 32,
    "compute_chunks": False,
}

#: Oldest first, per runtime. Every row cites the change that starts it.
ROWS: Mapping[str, tuple[Row, ...]] = MappingProxyType(
    {
        "llama.cpp": (
            _g(
                "llama.cpp",
                "2023-mmq",
                "llama.cpp 2023 (MMQ prompt processing)",
                "2023-08-30",
                None,
                "ggml-org/llama.cpp PR #2912 (mul_mat_q on by default)",
                "quantized prompt matmuls in MMQ kernels: no dequantized weights in the pool",
                **_OLD_LLAMACPP,
                row_main_gpu=True,
                ubatch_split=False,
                cublas_pool="none",
            ),
            _g(
                "llama.cpp",
                "2023-10-batched-attn",
                "llama.cpp 2023-10 (batched cuBLAS attention)",
                "2023-10-24",
                None,
                "ggml-org/llama.cpp PR #3749 (commit 2b4ea35: batched cuBLAS GEMM for faster "
                "attention)",
                "KQ and KQV over all heads in one FP16 GEMM whose buffers come from the legacy "
                "CUDA pool, which keeps one larger buffer per prompt step",
                **_OLD_LLAMACPP,
                row_main_gpu=True,
                ubatch_split=False,
                cublas_pool="none",
                attn_pool="all",
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
                row_main_gpu=True,
                ubatch_split=False,
                cublas_pool="all",
                all_logits=True,
                attn_pool="all",
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
                row_main_gpu=True,
                ubatch_split=False,
                cublas_pool="all",
                all_logits=True,
                attn_pool="tensor_cores",
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
                row_main_gpu=True,
                ubatch_split=False,
                cublas_pool="tensor_cores",
                all_logits=True,
            ),
            _g(
                "llama.cpp",
                "2024-03-ubatch",
                "llama.cpp 2024-03 (micro-batches: -b 2048, -ub 512)",
                "2024-03-13",
                None,
                "ggml-org/llama.cpp PR #6017 (commit f30ea47, build b2413: pipeline parallelism, "
                "n_ubatch)",
                "a prompt step is n_ubatch tokens (-ub, 512) out of a logical -b 2048 batch; "
                "before, it was -b tokens (512 by default): the pool's dequantized matmuls and "
                "the compute buffer follow -b no more",
                **_OLD_LLAMACPP,
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
                n_ctx_pad_no_fa=32,
                flash_attn_default=False,
                cuda_moe_fusion_deps=False,
                compute_chunks=False,
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
                n_ctx_pad_no_fa=32,
                cuda_moe_fusion_deps=False,
                compute_chunks=False,
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
                n_ctx_pad_no_fa=32,
                cuda_moe_fusion_deps=False,
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
                cuda_moe_fusion_deps=False,
            ),
            _g(
                "llama.cpp",
                "2026-01-vless",
                "llama.cpp 2026-01+ (V-less MLA cache)",
                "2026-01-24",
                None,
                "ggml-org/llama.cpp PR #19067 (kv-cache: support V-less cache)",
                "MLA models keep only the K latent: about half the KV of the previous builds",
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
        ),
        "ollama": (
            _g(
                "ollama",
                "llama-runner-2k",
                "Ollama <0.6.4 (llama.cpp runner, num_ctx 2048)",
                "2023-09-25",
                "0.1.0",
                "ollama/ollama llm/memory.go estimator + vendored llama.cpp of its day "
                "(per release: oomkit.estimate.ollama_vendored, the v0.1.0 release on)",
                "llama runner for every model; default num_ctx 2048; flash attention off unless "
                "OLLAMA_FLASH_ATTENTION=1; vendored llama.cpp before MLA/SWA caches (DeepSeek "
                "full K/V, Gemma full SWA)",
                num_ctx=2048,
                flash_attention=False,
                llamacpp_date="2025-01-15",
            ),
            _g(
                "ollama",
                "llama-runner-4k",
                "Ollama 0.6.4-0.11 (num_ctx 4096)",
                "2025-04-01",
                "0.6.4",
                "ollama/ollama v0.6.4 release (default context 4096)",
                "default num_ctx 4096; Ollama's own engine for some architectures, llama runner "
                "and old estimator otherwise; vendored llama.cpp with MLA but full SWA cache",
                num_ctx=4096,
                flash_attention=False,
                llamacpp_date="2025-04-20",
            ),
            _g(
                "ollama",
                "engine-0.12",
                "Ollama 0.12+ (Ollama engine, new memory estimates)",
                "2025-09-11",
                "0.12.0",
                "ollama/ollama PR #12252 (new memory estimates on by default for the Ollama "
                "engine)",
                "Ollama-engine models are laid out from their real allocations and get flash "
                "attention by default; llama-runner models keep the old estimator",
            ),
        ),
        "vllm": (
            _g(
                "vllm",
                "v0-2023-allocated",
                "vLLM V0 (0.1.0-0.2.4)",
                "2023-06-20",
                "0.1.0",
                "vllm-project/vllm worker.py profile_num_available_blocks (peak = "
                "torch.cuda.max_memory_allocated() after profiling, until PR #2031)",
                "only torch allocations are charged: no CUDA context, NCCL buffers, other "
                "processes or allocator reserve; no CUDA graphs; AWQ linears hold 8 split-K "
                "output copies (awq_gemm, before PR #2566)",
                vllm_engine="v0-2023-allocated",
                mla_latent_kv=False,
                awq_split_k=True,
            ),
            _g(
                "vllm",
                "v0-2023",
                "vLLM V0 (0.2.5)",
                "2023-12-13",
                "0.2.5",
                "vllm-project/vllm PR #2031 (peak = total - free after profiling)",
                "profile charges the caching allocator's reserve and every other byte on the GPU "
                "(CUDA context, other processes); with TP the record_stream'd all-reduce inputs "
                "stay reserved; profile batch max(max_model_len, 2048); DeepSeek MLA cached as "
                "full 256-dim K/V heads (no latent cache before 0.7.1); AWQ linears hold 8 "
                "split-K output copies (awq_gemm, before PR #2566)",
                vllm_engine="v0-2023-total",
                mla_latent_kv=False,
                awq_split_k=True,
            ),
            _g(
                "vllm",
                "v0-2023-no-record-stream",
                "vLLM V0 (0.2.6-0.3.0)",
                "2023-12-17",
                "0.2.6",
                "vllm-project/vllm PR #2152 (TORCH_NCCL_AVOID_RECORD_STREAMS=1, CuPy removed)",
                "the profile still charges the allocator's reserve and all GPU memory, but TP "
                "all-reduce inputs are no longer held by record_stream until the NCCL stream "
                "syncs; AWQ linears still hold 8 split-K output copies (awq_gemm; PR #2566, "
                "reviewed 2024-01-31, the day 0.3.0 was tagged, is modelled as first in 0.3.1: "
                "dequantize + matmul at >= 256 tokens)",
                vllm_engine="v0-2023-total",
                mla_latent_kv=False,
                nccl_record_stream=False,
                awq_split_k=True,
            ),
            _g(
                "vllm",
                "v0-2024-init-free",
                "vLLM V0 (0.3.1-0.4.3)",
                "2024-02-14",
                "0.3.1",
                "vllm-project/vllm PR #2863 (peak = init free - free: memory other processes held "
                "at init is no longer charged; merged 2024-02-14, first in 0.3.1)",
                "the CUDA context and other processes' memory at init are not charged; the "
                "profile still charges the allocator's reserve and NCCL's buffers; Gemma 2 "
                "(0.5.1+, PR #5908) capped to its 4096-token sliding window",
                vllm_engine="v0-2023",
                mla_latent_kv=False,
                nccl_record_stream=False,
                # Gemma 2 (loads from 0.5.1, PR #5908) is capped to its 4096 window until 0.6.5
                gemma2_window_cap=True,
            ),
            _g(
                "vllm",
                "v0-2024-nccl-2.20",
                "vLLM V0 (0.5.0-0.6.3, NCCL 2.20)",
                "2024-06-11",
                "0.5.0",
                "vllm-project/vllm v0.5.0 release (torch 2.3.0, whose wheel requires "
                "nvidia-nccl-cu12 2.20.5; vLLM's own communicator loads torch's NCCL, "
                "find_nccl_library, instead of vllm-nccl-cu12 2.18)",
                "the profile rule of 0.3.1+; with TP > 2 on an NVSwitch node each of the TP "
                "group's two NCCL communicators binds NCCL 2.20's NVLS buffers (2 x channels x "
                "6 MiB x GPUs), charged to the KV budget; Gemma 2 capped to its 4096-token "
                "sliding window",
                vllm_engine="v0-2023",
                mla_latent_kv=False,
                nccl_record_stream=False,
                gemma2_window_cap=True,
                nvls_nccl="2.20",
            ),
            _g(
                "vllm",
                "v0-2024",
                "vLLM V0 (0.6.4)",
                # PR #9352 was opened on 2024-10-14 (the 0.6.3 release day) and still under
                # review on 10-15: the 0.6.3.post1 wheel (built 2024-10-17) keeps
                # peak = init free - free; the 0.6.4 wheel (built 2024-11-15) has the new rule
                "2024-11-15",
                "0.6.4",
                "vllm-project/vllm PR #9352 (gpu_memory_utilization became a whole-GPU limit; "
                "first released in 0.6.4: vllm/worker/worker.py of 0.6.3.post1 still charges "
                "init free - free)",
                "every non-torch byte on the GPU (CUDA context, other processes) is charged to "
                "the budget",
                vllm_engine="v0-2024",
                mla_latent_kv=False,
                gemma2_window_cap=True,
            ),
            _g(
                "vllm",
                "v0-2025",
                "vLLM V0 (0.6.5-0.7)",
                "2024-12-17",
                "0.6.5",
                "vllm-project/vllm PR #10511 and PR #12126 (per-instance budget again); PR #10584 "
                "(Gemma 2 full context length)",
                "only the non-torch increase since init is charged; V0 batch defaults; Gemma 2 "
                "serves its full 8192 tokens (no longer capped to the 4096 sliding window)",
                vllm_engine="v0-2025",
                mla_latent_kv=False,
            ),
            _g(
                "vllm",
                "v0-2025-mla",
                "vLLM V0 (0.7.1-0.7.3, MLA latent cache)",
                "2025-02-01",
                "0.7.1",
                "vllm-project/vllm v0.7.1 release (MLA for DeepSeek-V2/V3; WIP in PR #10927)",
                "DeepSeek-V2/V3 cache the 576-element latent instead of 128 heads x 2 x 256",
                vllm_engine="v0-2025",
            ),
            _g(
                "vllm",
                "v1-2025-global",
                "vLLM V1 (0.8.0-0.9.0)",
                "2025-03-18",
                "0.8.0",
                "vllm-project/vllm v0.8.0 release (V1 engine on by default; its worker charges "
                "total - free - torch allocated, PR #10528)",
                "chunked prefill always (max_num_batched_tokens 2048/8192); hybrid KV groups; "
                "CUDA graphs captured in the 1 - util headroom; every non-torch byte on the GPU "
                "is charged: the CUDA context and the memory of other processes",
                vllm_engine="v1-2025-global",
                mxfp4_hopper="marlin",
            ),
            _g(
                "vllm",
                "v1-2025",
                "vLLM V1 (0.9.1-0.10)",
                "2025-06-10",
                "0.9.1",
                "vllm-project/vllm PR #18974 (V1 memory profiling per instance), then PR #19312",
                "only this instance's non-torch increase since init is charged: other processes "
                "on the GPU no longer shrink the KV cache; gpt-oss MXFP4 experts on Hopper use "
                "the Marlin MoE backend (padded to 256/128) until triton_kernels ships with 0.11",
                vllm_engine="v1-2025",
                mxfp4_hopper="marlin",
            ),
            _g(
                "vllm",
                "v1-0.11",
                "vLLM V1 (0.11-0.20)",
                "2025-10-02",
                "0.11.0",
                "vllm-project/vllm v0.11.0 release (V0 removed, FULL_AND_PIECEWISE CUDA graphs "
                "by default), gpu_memory_utilization 0.92",
                "ceil(total x 0.92) - non-KV; CUDA graphs captured after the KV cache in the "
                "1 - util headroom (PR #30515's estimate opt-in); FlashInfer sampler; gpt-oss "
                "MXFP4 experts on Hopper through triton_kernels (scales resident twice)",
                vllm_engine="v1-0.11",
            ),
            _g(
                "vllm",
                "current",
                "vLLM V1 (0.21+)",
                # v0.21.0: after v0.20.0 (PyPI by 2026-04-29), before v0.22.1 (2026-06-05)
                "2026-05-15",
                "0.21.0",
                "vllm-project/vllm PR #30515 (profile_cudagraph_memory); "
                "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by default as of v0.21.0 "
                "(vllm/envs.py)",
                "ceil(total x 0.92) - non-KV - CUDA-graph estimate: the graphs come out of the "
                "KV budget instead of the 1 - util headroom",
                vllm_engine="current",
            ),
        ),
        "sglang": (
            _g(
                "sglang",
                "tp-table",
                "SGLang <=0.2.14 (mem_fraction_static by TP)",
                "2024-01-01",
                "0.1.0",
                "sgl-project/sglang server_args.py ServerArgs.__post_init__ TP table "
                "(release v0.4.x)",
                "mem_fraction_static 0.88/0.87/0.85/0.81/0.79 for tp 1/2/4/8/16 whatever the "
                "GPU size; multimodal models not adjusted (v0.1.16 model_runner.py)",
                mem_fraction="tp_table",
                mm_fraction=1.0,
                mm_chunked_off="not_modelled",
                mm_text_only="",
                vision="",
            ),
            _g(
                "sglang",
                "mm-0.95",
                "SGLang 0.2.14.post2-0.4.0 (multimodal: x0.95, no chunked prefill)",
                "2024-08-28",
                "0.2.14",
                "sgl-project/sglang release v0.2.14.post2 model_runner.py ModelRunner.__init__ "
                "(is_multimodal_model: chunked_prefill_size = None, mem_fraction_static *= 0.95)",
                "multimodal models: mem_fraction_static x 0.95 and chunked prefill off, so one "
                "request is prefilled in one forward out of the 1 - mem_fraction_static rest",
                mem_fraction="tp_table",
                mm_fraction=0.95,
                mm_chunked_off="all",
                mm_text_only="",
                vision="",
            ),
            _g(
                "sglang",
                "mm-0.95-listed",
                "SGLang 0.4.1-0.4.4 (multimodal: x0.95, chunked prefill off for listed VLMs)",
                "2024-12-25",
                "0.4.1",
                "sgl-project/sglang release v0.4.1 model_runner.py model_specific_adjustment "
                "(chunked prefill off only for Mllama / Qwen2-VL; Qwen2.5-VL, DeepSeek-VL2 "
                "added in v0.4.4.post2)",
                "multimodal models keep x 0.95; chunked prefill stays on except for the listed "
                "architectures",
                mem_fraction="tp_table",
                mm_fraction=0.95,
                mm_chunked_off="listed",
                mm_text_only="",
                vision="Gemma3ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "mm-0.90",
                "SGLang 0.4.5 (multimodal: x0.90, no chunked prefill)",
                "2025-04-07",
                "0.4.5",
                "sgl-project/sglang release v0.4.5 model_runner.py model_specific_adjustment "
                "(is_multimodal: mem_fraction_static *= 0.90; chunked_prefill_size = -1)",
                "every multimodal model: x 0.90 and chunked prefill off; Llama 4 runs text-only "
                "(not yet in multimodal_model_archs)",
                mem_fraction="tp_table",
                mm_fraction=0.90,
                mm_chunked_off="all",
                mm_text_only="Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "llama4-mm",
                "SGLang 0.4.5.post1-post2 (Llama 4 served as multimodal)",
                "2025-04-09",
                None,
                "sgl-project/sglang main after release v0.4.5 (Llama4ForConditionalGeneration in "
                "multimodal_model_archs; v0.4.5.post1 configs/model_config.py compares "
                "hf_config.architectures, a list, with a string, so --enable-llama4-multimodal "
                "unset enables it); in force in the #5212 trace of 2025-04-09",
                "Llama 4 takes the multimodal path: x 0.90 and no chunked prefill, so a long "
                "request is prefilled in one forward",
                mem_fraction="tp_table",
                mm_fraction=0.90,
                mm_chunked_off="all",
                mm_text_only="",
                vision="Gemma3ForConditionalGeneration:replicated,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "llama4-text",
                "SGLang 0.4.5.post3 (Llama 4 text-only by default)",
                "2025-04-22",
                None,
                "sgl-project/sglang release v0.4.5.post3 configs/model_config.py "
                "(hf_config.architectures[0] == 'Llama4ForConditionalGeneration')",
                "Llama 4 text-only again unless --enable-llama4-multimodal: chunked prefill on; "
                "default mem_fraction_static above 81920 MiB is (gpu_mem - 13 GiB) / gpu_mem "
                "(server_args.py)",
                mem_fraction="tp_table_13g",
                mm_fraction=0.90,
                mm_chunked_off="all",
                mm_text_only="Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:replicated,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "mm-disabled-models",
                "SGLang 0.4.6 (Gemma 3 and Llama 4 text-only by default)",
                "2025-04-27",
                "0.4.6",
                "sgl-project/sglang release v0.4.6 configs/model_config.py (mm_disabled_models: "
                "Gemma3ForConditionalGeneration, Llama4ForConditionalGeneration)",
                "Gemma 3 and Llama 4 run text-only unless --enable-multimodal: no x 0.90, "
                "chunked prefill on",
                mem_fraction="tp_table_13g",
                mm_fraction=0.90,
                mm_chunked_off="all",
                mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:replicated,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "frac-96g",
                "SGLang 0.4.6.post2-post4 (default fraction by tp x pp, large-GPU rule)",
                "2025-05-01",
                None,
                "sgl-project/sglang release v0.4.6.post2 server_args.py ServerArgs.__post_init__ "
                "(parallel_size = tp x pp; gpu_mem > 96 * 1024 rule)",
                "default mem_fraction_static: the TP table by tp x pp up to 81920 MiB, 0.88 "
                "above, and above 96 GiB min(f + 48 GiB x (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / "
                "gpu_mem)",
                mem_fraction="tp_table_96g",
                mm_fraction=0.90,
                mm_chunked_off="all",
                mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:replicated,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "mm-chunked-prefill",
                "SGLang 0.4.6.post5 (chunked prefill for most VLMs)",
                "2025-05-24",
                None,
                "sgl-project/sglang release v0.4.6.post5 configs/model_config.py "
                "is_multimodal_chunked_prefill_supported",
                "chunked prefill stays off only for Grok-1 vision, LLaVA-Llama, Mllama and CLIP",
                mem_fraction="tp_table_96g",
                mm_fraction=0.90,
                mm_chunked_off="unsupported",
                mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:sharded,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "frac-180g",
                "SGLang 0.4.7 (0.79 on GPUs above 180 GB)",
                "2025-06-10",
                "0.4.7",
                "sgl-project/sglang release v0.4.7 server_args.py ServerArgs.__post_init__ "
                "(gpu_mem > 180 * 1000 and is_cuda(): mem_fraction_static = 0.79)",
                "default mem_fraction_static 0.79 above 180000 MiB (B200), else as v0.4.6.post2",
                mem_fraction="tp_table_180g",
                mm_fraction=0.90,
                mm_chunked_off="unsupported",
                mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:sharded,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "frac-reserved",
                "SGLang 0.4.8 (default fraction from reserved memory by GPU tier)",
                "2025-06-24",
                "0.4.8",
                "sgl-project/sglang release v0.4.8 server_args.py ServerArgs.__post_init__ "
                "(reserved_mem by gpu_mem tier: 2.8 / 9.5 / 12 GiB + tp x pp share, 32 GiB)",
                "default mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3): higher "
                "than the TP table on large TP groups of small GPUs",
                mem_fraction="reserved_tier",
                mm_fraction=0.90,
                mm_chunked_off="unsupported",
                mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:sharded,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "mm-0.90-default",
                "SGLang 0.4.9 (multimodal x0.90 of the default fraction only)",
                "2025-07-06",
                "0.4.9",
                "sgl-project/sglang release v0.4.9 server_args.py ServerArgs.__post_init__ "
                "(model_config.is_multimodal: mem_fraction_static *= 0.90 inside the default)",
                "an explicit --mem-fraction-static is no longer lowered for multimodal models",
                mem_fraction="reserved_tier",
                mm_fraction=0.90,
                mm_fraction_default_only=True,
                mm_chunked_off="unsupported",
                mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
                vision="Gemma3ForConditionalGeneration:sharded,Llama4ForConditionalGeneration:replicated",
            ),
            _g(
                "sglang",
                "mm-vit-adjusted",
                "SGLang 0.4.10-0.5.2 (multimodal fraction from the ViT size)",
                "2025-07-31",
                "0.4.10",
                "sgl-project/sglang release v0.4.10 server_args.py adjust_mem_fraction_for_vlm",
                "the default fraction of a VLM scales with its vision tower (0.95 x a factor "
                "in 0.8-1.05 from vision_config layers x hidden^2): not modelled, left as is",
                mem_fraction="reserved_tier",
                mm_chunked_off="unsupported",
            ),
            _g(
                "sglang",
                "gpu-memory",
                "SGLang 0.5.3+ (mem_fraction_static from GPU memory)",
                "2025-10-01",
                "0.5.3",
                "sgl-project/sglang PR #10975 (_handle_gpu_memory_settings)",
                "reserve = 512 MiB + chunked prefill x 1.5 + graph bs x 2 + tp x pp / 8 GiB, "
                "at least 10 GiB above 60 GiB: a larger static fraction on big GPUs",
                mem_fraction="gpu_memory",
            ),
        ),
        "transformers": (
            _g(
                "transformers",
                "full-logits",
                "transformers <4.45 (full-sequence logits)",
                "2023-01-01",
                "4.0.0",
                "huggingface/transformers before PR #31292",
                "prefill computes logits for every prompt token and upcasts them to fp32: "
                "B x S x V x (e + 4) instead of B x V x (e + 4)",
                full_logits=True,
                bnb_fused_experts_unquantized=False,
            ),
            _g(
                "transformers",
                "logits-to-keep",
                "transformers 4.45+ (logits_to_keep=1)",
                "2024-09-25",
                "4.45.0",
                "huggingface/transformers PR #31292 (num_logits_to_keep in generate)",
                "only the last position's logits at prefill; DynamicCache/StaticCache "
                "(cache_implementation) as today",
                bnb_fused_experts_unquantized=False,
            ),
            _g(
                "transformers",
                "v5-fused-experts",
                "transformers 5.0+ (fused MoE experts)",
                "2026-01-26",
                "5.0.0",
                "huggingface/transformers release v5.0.0: MoE experts are fused 3-D nn.Parameters "
                "(MixtralExperts.gate_up_proj, models/mixtral/modeling_mixtral.py), which "
                "replace_with_bnb_linear (nn.Linear only) leaves unquantized: "
                "bitsandbytes-foundation/bitsandbytes#1849",
                "load_in_4bit / load_in_8bit quantize attention and dense MLP linears only; an "
                "MoE model's experts stay in the load dtype",
                bnb_fused_experts_unquantized=True,
            ),
        ),
    }
)
