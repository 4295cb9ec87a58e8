"""The vLLM rows of the runtime generations table.

Oldest first; every row cites the change that starts it. Gathered with the other runtimes'
rows in :data:`oomkit.estimate.generation_table.ROWS`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["VLLM_ROWS"]

#: Oldest first. Every row cites the change that starts it.
VLLM_ROWS: tuple[Row, ...] = (
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
        kv_len_check=False,
        long_context_chunked=False,
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
        kv_len_check=False,
        long_context_chunked=False,
    ),
    _g(
        "vllm",
        "v0-2023-no-record-stream",
        "vLLM V0 (0.2.6)",
        "2023-12-17",
        "0.2.6",
        "vllm-project/vllm PR #2152 (TORCH_NCCL_AVOID_RECORD_STREAMS=1, CuPy removed)",
        "the profile still charges the allocator's reserve and all GPU memory, but TP "
        "all-reduce inputs are no longer held by record_stream until the NCCL stream "
        "syncs; AWQ linears still hold 8 split-K output copies (awq_gemm; PR #2566, "
        "reviewed 2024-01-31, the day 0.3.0 was tagged, is modelled as first in 0.3.1: "
        "dequantize + matmul at >= 256 tokens); no start-up check of max_model_len "
        "against the KV cache (a longer request hangs)",
        vllm_engine="v0-2023-total",
        mla_latent_kv=False,
        nccl_record_stream=False,
        awq_split_k=True,
        kv_len_check=False,
        long_context_chunked=False,
    ),
    _g(
        "vllm",
        "v0-2023-len-check",
        "vLLM V0 (0.2.7-0.3.0)",
        "2024-01-03",
        "0.2.7",
        "vllm-project/vllm PR #2163 ('Raise error when max_model_len is larger than KV cache "
        "size', 2023-12-18, after the 0.2.6 release: 'vLLM hangs when the length of a single "
        "sequence is larger than the system's KV cache size')",
        "LLMEngine._init_cache refuses to start when max_model_len exceeds block_size x "
        "num_gpu_blocks; otherwise as 0.2.6",
        vllm_engine="v0-2023-total",
        mla_latent_kv=False,
        nccl_record_stream=False,
        awq_split_k=True,
        long_context_chunked=False,
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
        long_context_chunked=False,
    ),
    _g(
        "vllm",
        "v0-2024-nccl-2.20",
        "vLLM V0 (0.5.0-0.5.2, NCCL 2.20)",
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
        long_context_chunked=False,
    ),
    _g(
        "vllm",
        "v0-2024-long-chunked",
        "vLLM V0 (0.5.3-0.6.3, NCCL 2.20)",
        "2024-07-23",
        "0.5.3",
        "vllm-project/vllm PR #6666 ('Enable chunked prefill by default for long context "
        "models', merged 2024-07-23; EngineArgs.create_engine_config of the 0.5.3 sdist: "
        "use_long_context = max_model_len > 32768; 0.5.2's has no such default)",
        "above 32K max_model_len chunked prefill is on by default (no LoRA, prompt adapter, "
        "speculative model, sliding window or prefix caching): the profile batch is 2048 "
        "tokens instead of max(max_model_len, 2048); otherwise as 0.5.0-0.5.2",
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
        "every non-torch byte on the GPU (CUDA context, other processes) is charged to the budget",
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
        "v1-0.8.0",
        "vLLM V1 (0.8.0-0.8.3)",
        "2025-03-18",
        "0.8.0",
        "vllm-project/vllm v0.8.0 release (V1 engine on by default; its worker charges "
        "total - free - torch allocated, PR #10528; EngineArgs._set_default_args_v1: "
        "max_num_seqs 1024)",
        "chunked prefill always (max_num_batched_tokens 2048/8192, 8192/16384 on H100/H200); "
        "1024 sequences by default on every GPU, so the profile warms the sampler up on 1024 "
        "rows; sliding-window layers allocated at full length (no hybrid KV groups before "
        "0.9.1); CUDA graphs captured in the 1 - util headroom; every "
        "non-torch byte on the GPU is charged: the CUDA context and the memory of other "
        "processes",
        vllm_engine="v1-0.8.0",
        mxfp4_hopper="marlin",
        v1_needs_ampere=True,
    ),
    _g(
        "vllm",
        "v1-2025-global",
        "vLLM V1 (0.8.4-0.9.0)",
        # the 0.8.4 wheel on PyPI (files dated 2025-04-14) carries PR #16158; 0.8.3's does not
        "2025-04-14",
        "0.8.4",
        "vllm-project/vllm PR #16158 ('[V1] Revert the default max_num_seqs to V0 values for "
        "most hardware', merged 2025-04-07)",
        "as 0.8.0-0.8.3 but 256 sequences below H100/H200 (1024 on them): chunked prefill "
        "always (max_num_batched_tokens 2048/8192); every non-torch byte on the GPU is "
        "charged: the CUDA context and the memory of other processes",
        vllm_engine="v1-2025-global",
        mxfp4_hopper="marlin",
        v1_needs_ampere=True,
    ),
    _g(
        "vllm",
        "v1-2025",
        "vLLM V1 (0.9.1-0.10.1)",
        "2025-06-10",
        "0.9.1",
        "vllm-project/vllm PR #18974 (V1 memory profiling per instance), then PR #19312",
        "only this instance's non-torch increase since init is charged: other processes "
        "on the GPU no longer shrink the KV cache; gpt-oss MXFP4 experts on Hopper use "
        "the Marlin MoE backend (padded to 256/128) until triton_kernels ships with 0.11; "
        "the profile samples through FlashInfer where it is installed (the vllm-openai "
        "image; PR #15777), the sort path otherwise (pip wheel: a verdict band term)",
        vllm_engine="v1-2025",
        mxfp4_hopper="marlin",
        v1_needs_ampere=True,
    ),
    _g(
        "vllm",
        "v1-0.10.2",
        "vLLM V1 (0.10.2)",
        # the 0.10.2 wheel on PyPI (files dated 2025-09-13) has no "Compute Capability < 8.0"
        # fallback in EngineArgs._is_v1_supported_oracle; 0.10.1.1's (2025-08-20) has it
        "2025-09-13",
        "0.10.2",
        "vllm-project/vllm PR #23614 ('[V1] Enable V1 for compute capability < 8.0 + FP32') "
        "and PR #24022 ('Enable V1 FP16 inference on pre-Ampere GPUs')",
        "as 0.9.1-0.10.1 on every GPU: Turing and Volta run the V1 engine too (before, the V1 "
        "oracle sent compute capability < 8.0 to V0)",
        vllm_engine="v1-2025",
        mxfp4_hopper="marlin",
    ),
    _g(
        "vllm",
        "v1-0.11",
        "vLLM V1 (0.11.0)",
        "2025-10-02",
        "0.11.0",
        "vllm-project/vllm v0.11.0 release (V0 removed, FULL_AND_PIECEWISE CUDA graphs by default)",
        "total x 0.9 - non-KV; CUDA graphs captured after the KV cache in the "
        "1 - util headroom (PR #30515's estimate opt-in); FlashInfer sampler where "
        "installed (the pip wheel requires it only from PR #26443), else the sort; gpt-oss "
        "MXFP4 experts on Hopper through triton_kernels (scales resident twice)",
        vllm_engine="v1-0.11",
    ),
    _g(
        "vllm",
        "v1-0.11.1",
        "vLLM V1 (0.11.1-0.16)",
        "2025-11-18",
        "0.11.1",
        "vllm-project/vllm PR #26859 ('Disable FlashInfer sampler by default', merged "
        "2025-10-15, after v0.11.0); PR #40376 re-enables it (2026-04-20)",
        "the profile run's dummy sampler sorts [max_num_seqs, vocab] fp32 logits (PyTorch-"
        "native top-k/top-p, FlashInfer's opt-in): a larger torch peak, a smaller KV cache",
        vllm_engine="v1-0.11.1",
    ),
    _g(
        "vllm",
        "v1-0.17",
        "vLLM V1 (0.17-0.19)",
        # the 0.17.0 sdist on PyPI (uploaded 2026-03-07) carries PR #33538; 0.16.0's does not
        "2026-03-07",
        "0.17.0",
        "vllm-project/vllm PR #33538 ('Triton-based Top-k and Top-p sampler kernels'): "
        "apply_top_k_top_p calls apply_top_k_top_p_triton from 8 rows on (0.17.0, 0.17.1 "
        "vllm/v1/sample/ops/topk_topp_sampler.py)",
        "the profile run's dummy sampler masks [max_num_seqs, vocab] fp32 logits in place with "
        "a Triton pivot search instead of sorting them: a smaller torch peak, a larger KV cache",
        vllm_engine="v1-0.17",
    ),
    _g(
        "vllm",
        "v1-0.18",
        "vLLM V1 (0.18-0.19)",
        # the 0.18.0 sdist on PyPI (uploaded 2026-03-20); 0.17.0's gpu_worker.py has no
        # profile_cudagraph_memory
        "2026-03-20",
        "0.18.0",
        "vllm-project/vllm PR #30515 ('[UX][Startup] Account for CUDA graphs during memory "
        "profiling'): determine_available_memory runs profile_cudagraph_memory inside "
        "memory_profiling (0.18.0-0.19.1 gpu_worker.py), its estimate applied only with "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (envs.py default '0')",
        "as 0.17: the estimate is only logged ('Estimated CUDA graph memory: X GiB total', 'To "
        "try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1') and the graphs are captured "
        "after the KV cache in the 1 - util headroom; with the variable set to 1 they come out of "
        "the KV budget instead",
        vllm_engine="v1-0.17",
        graph_profiling=True,
    ),
    _g(
        "vllm",
        "v1-0.20",
        "vLLM V1 (0.20)",
        # the 0.20.0 sdist on PyPI (uploaded 2026-04-27); 0.19.1's (2026-04-18) still has "0"
        "2026-04-27",
        "0.20.0",
        "vllm-project/vllm PR #38284 ('[Startup][UX] Enable CUDAGraph memory profiling by "
        "default'): in the 0.20.0 sdist vllm/envs.py reads "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS with default '1' and vllm/config/cache.py "
        "defaults gpu_memory_utilization to 0.92 "
        "(0.19.1: '0' and 0.9), though its messages say 'default since v0.21.0'",
        "ceil(total x 0.92) - non-KV - CUDA-graph estimate: the graphs come out of the KV budget "
        "instead of the 1 - util headroom; top-k/top-p still through the Triton kernel "
        "(FlashInfer's sampler opt-in until 0.21.0)",
        vllm_engine="v1-0.20",
        graph_profiling=True,
    ),
    _g(
        "vllm",
        "v1-0.21",
        "vLLM V1 (0.21)",
        # the 0.21.0 sdist on PyPI (uploaded 2026-05-15)
        "2026-05-15",
        "0.21.0",
        "vllm-project/vllm PR #40376 ('Enable FlashInfer top-k/top-p sampler by default'): "
        "the 0.21.0 sdist's vllm/envs.py reads VLLM_USE_FLASHINFER_SAMPLER as '... else True' "
        "(0.20.x: else None); the CUDA-graph estimate of PR #30515 charged as in 0.20",
        # PR #38284 turned the estimate on and raised the default util from 0.9 to 0.92 (0.20.0)
        "ceil(total x 0.92) - non-KV - CUDA-graph estimate, as 0.20; the profile's dummy "
        "sampler goes through FlashInfer's top-k/top-p kernel where it is installed; the "
        "logged 'GPU KV cache size' is int(max_concurrency x max_model_len) (0.21.0 sdist "
        "kv_cache_utils.py _report_kv_cache_config; 0.20: num_blocks // n_groups x block), "
        "about 10x the tokens for Gemma 4's sliding groups (vllm#43308), the same pool",
        vllm_engine="current",
        graph_profiling=True,
    ),
    _g(
        "vllm",
        "v1-0.22",
        "vLLM V1 (0.22)",
        # the 0.22.0 sdist on PyPI (uploaded 2026-05-29); 0.21.0's vllm/config/vllm.py has no
        # DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
        "2026-05-29",
        "0.22.0",
        "vllm-project/vllm PR #39337 ('Oracle for model runner v2 - qwen3 dense model by "
        "default'): the 0.22.0 sdist's vllm/config/vllm.py line 69 "
        "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {'Qwen3ForCausalLM'}; Model Runner V2's "
        "profile_cudagraph_memory returns 0 (vllm/v1/worker/gpu/model_runner.py line 620)",
        "as 0.21, except a dense unquantized Qwen3ForCausalLM: Model Runner V2 estimates its "
        "CUDA graphs at 0, so the KV cache takes the whole util budget and the graphs are "
        "captured after it in the 1 - util headroom",
        vllm_engine="current",
        graph_profiling=True,
        mrv2_default="qwen3",
    ),
    _g(
        "vllm",
        "v1-0.23",
        "vLLM V1 (0.23)",
        # the 0.23.0 sdist on PyPI (uploaded 2026-06-13)
        "2026-06-13",
        "0.23.0",
        "vllm-project/vllm v0.23.0 release (sdist vllm/config/vllm.py lines 69-75): "
        "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {'LlamaForCausalLM', 'MistralForCausalLM', "
        "'Qwen3ForCausalLM'} (not MoE, not quantized); gpu/model_runner.py line 660 "
        "profile_cudagraph_memory still returns 0",
        "as 0.22 for dense unquantized Llama and Mistral too: no CUDA-graph reservation, "
        "a larger KV cache, the graphs in the 1 - util headroom (djl-serving PR #3055: "
        "Llama-3-8B TP=4 on L4 '15.41 -> 16.19 GiB' of KV from 0.22 to 0.23, then OOM "
        "capturing 35 FULL graphs)",
        vllm_engine="current",
        graph_profiling=True,
        mrv2_default="llama",
    ),
    _g(
        "vllm",
        "v1-0.24",
        "vLLM V1 (0.24)",
        # the 0.24.0 sdist on PyPI (uploaded 2026-06-30)
        "2026-06-30",
        "0.24.0",
        "vllm-project/vllm v0.24.0 release (sdist vllm/config/vllm.py lines 68-76): DeepseekV2, "
        "Qwen2Moe and GraniteMoe join the V2 list and _is_default_v2_model_runner_model "
        "drops its MoE / quantization test",
        "as 0.23, also for quantized checkpoints of the listed models and the three MoE "
        "architectures: no CUDA-graph reservation",
        vllm_engine="current",
        graph_profiling=True,
        mrv2_default="listed",
    ),
    _g(
        "vllm",
        "v1-0.25",
        "vLLM V1 (0.25-0.28)",
        # the 0.25.0 sdist on PyPI (uploaded 2026-07-11)
        "2026-07-11",
        "0.25.0",
        "vllm-project/vllm PR #44443 ('[ModelRunner V2] Enable by default for all dense "
        "models', merged 2026-07-02): _is_default_v2_model_runner_model returns listed or "
        "not model_config.is_moe, hybrid and attention-free models excluded (0.25.0-0.28.0 "
        "sdists); issue #49224 ('Model Runner V2 (now default for dense models) skips CUDA "
        "graph memory reservation')",
        "every dense generative model (and the listed MoE) runs Model Runner V2: its CUDA "
        "graphs come out of the 1 - util headroom, not the KV budget",
        vllm_engine="current",
        graph_profiling=True,
        mrv2_default="dense",
        # vLLM #49672 / PR #49749 (2026-07-24): a compiled pooling model's profile charges
        # more than its eager forward (vllm_compiled_pooling)
        compiled_pooling_unmodelled=True,
    ),
    _g(
        "vllm",
        "current",
        "vLLM V1 (0.29+)",
        # the 0.29.0 sdist on PyPI (uploaded 2026-09-09)
        "2026-09-09",
        "0.29.0",
        "vllm-project/vllm v0.29.0 release (sdist vllm/v1/worker/gpu/model_runner.py line "
        "896): Model Runner V2's profile_cudagraph_memory returns _profile_cudagraph_memory(self) "
        "(a measured estimate) instead of 0",
        "ceil(total x 0.92) - non-KV - CUDA-graph estimate on either model runner, as 0.21",
        vllm_engine="current",
        graph_profiling=True,
        compiled_pooling_unmodelled=True,  # the 0.29.0-0.33.0 test keeps util 0.98 (PR #49749)
    ),
)
