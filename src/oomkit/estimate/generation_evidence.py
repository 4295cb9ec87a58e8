"""What shows each runtime generation's difference (data for :mod:`oomkit.estimate.generations`).

Every generation names at least one of: ``test:<file>::<function>`` (a test comparing it with
its neighbour), ``run:<id>`` (a real run of ``tests/fixtures/verdict_runs`` whose outcome turns
on it) or ``log:<url>`` (a public log or PR that shows it).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["EVIDENCE"]

_TG = "test:tests/test_generations.py::"
_TV = "test:tests/test_verdict.py::"
_TM = "test:tests/test_llamacpp_mla_kv_types.py::"
_TP = "test:tests/test_llamacpp_pool.py::"
_TS = "test:tests/test_sglang.py::"
_TO = "test:tests/test_ollama_gptoss.py::"
_TGT = "test:tests/test_sglang_graph_tables.py::"
_SG_MM = "test_multimodal_policy_follows_the_model_runner_of_each_release"
_SG_FRAC = "test_multimodal_fraction_lowers_an_explicit_value_until_0_4_9"
_SG_DEF = "test_default_fraction_follows_each_release"
_SG_VIS = "test_vision_tower_is_loaded_whole_or_split_by_release"
_VLLM = "log:https://github.com/vllm-project/vllm/"
#: (runtime, generation key) -> evidence; tests/test_generations.py checks every reference
EVIDENCE: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("llama.cpp", "2023-06-metal-one-buffer"): (
        _TG + "test_llamacpp_metal_one_buffer_until_pr_1826",
        "run:lcpp-1815-llama33b-q40-m2pro32-metal",
        "run:lcpp-pr1826-chinesealpaca33b-q4km-m1max32",
        "log:https://github.com/ggml-org/llama.cpp/issues/1815 ('ggml_metal_add_buffer: "
        "buffer 'data' size 18300780544 is larger than buffer maximum of 17179869184', M2 32 GB)",
    ),
    ("llama.cpp", "2023-07-graph-eval"): (
        _TG + "test_llamacpp_metal_scratch_buffers_until_pr_2325",
        "log:https://github.com/ggml-org/llama.cpp/pull/2325 (build 878 -> 879, 7B: 'mem "
        "required = 5287.72 MB' -> '4013.72 MB')",
    ),
    ("llama.cpp", "2023-06-metal-views"): (
        _TG + "test_llamacpp_metal_one_buffer_until_pr_1826",
        _TG + "test_llamacpp_metal_scratch_buffers_until_pr_2325",
        "run:lcpp-lcpppy438-llama13b-q51-m2pro16",
        "run:lcpp-pr1826-chinesealpaca33b-q3km-m1max32",
        "log:https://github.com/meta-llama/llama/issues/964 (Dec 2023, M3 Pro 36 GB: the data "
        "buffer allocated as views of 20736.00 MiB and 7391.97 MiB)",
    ),
    ("llama.cpp", "2023-08-q2k-3bit"): (
        _TG + "test_llamacpp_q2k_file_is_the_mix_of_its_day",
        "run:ollama-llama964-llama2-70b-q2k-m3pro36",
        "log:https://github.com/ggml-org/llama.cpp/pull/2807 (LLaMA-v2-70B Q2_K '27.11 GiB' "
        "-> '27.27 GiB')",
    ),
    ("llama.cpp", "2024-01-moe-kquants"): (
        "test:tests/test_llamacpp_moe_legacy_mix.py::test_december_2023_mixtral_files",
        "test:tests/test_llamacpp_moe_legacy_mix.py::"
        "test_after_pr_4872_the_m_mixes_bump_half_of_ffn_down",
        "log:https://github.com/ggml-org/llama.cpp/pull/4872 (Mixtral-8x7B: 'Q2_K (Master)' "
        "14.57 GiB, 'Q3_K_M (Master)' 18.96 GiB -> 20.93 GiB)",
    ),
    ("llama.cpp", "2024-01-sched"): (
        "test:tests/test_llamacpp_sched_staging.py::test_staging_starts_with_the_scheduler",
        "test:tests/test_llamacpp_sched_staging.py::"
        "test_december_2023_mixtral_at_30_layers_on_a_3090_is_no_longer_gigabytes_over",
        "log:https://github.com/ggml-org/llama.cpp/pull/4766 (llama : ggml-backend integration)",
    ),
    ("llama.cpp", "2024-01-q2k-2bit"): (
        _TG + "test_llamacpp_q2k_file_is_the_mix_of_its_day",
        "log:https://github.com/ggml-org/llama.cpp/pull/5060 ('Old Q2_K 27.11' GiB; 'Q2_K has "
        "become an actual 2-bit quantization ... 23.71 GiB')",
    ),
    ("llama.cpp", "2023-mmq"): (_TP + "test_cublas_pool_only_between_pr_3776_and_pr_8075",),
    ("llama.cpp", "2023-10-batched-attn"): (
        _TP + "test_legacy_pool_keeps_one_attention_buffer_per_prompt_step",
        _TP + "test_llamacpp_3780_batched_attention_pool_from_pr_3749_until_pr_3882",
        "log:https://github.com/ggml-org/llama.cpp/issues/3780 ('b1428 OOM error on 3x P40 "
        "setup': b1428 predates PR #3776; 'B1412 is the newest commit which works for me')",
    ),
    ("llama.cpp", "2023-10-cublas"): (
        _TP + "test_cublas_pool_only_between_pr_3776_and_pr_8075",
        _TP + "test_pascal_pooled_until_pr_4682_and_small_batches_use_mmq",
        _TP + "test_xinference_1036_yi34b_pool_holds_the_output_matrix",
        "log:https://github.com/xorbitsai/inference/issues/1036 (Yi-34B Q4_K_M, 22 GB 2080 Ti: "
        "2k runs, 4k dies in ggml_cuda_pool_malloc_vmm on the first request)",
    ),
    ("llama.cpp", "2023-11-batched-attn-tc"): (
        _TP + "test_llamacpp_3780_batched_attention_pool_from_pr_3749_until_pr_3882",
        "log:https://github.com/ggml-org/llama.cpp/pull/3882 ('brings pp512 on my Tesla P40 "
        "back to pre-#3749 speeds': Pascal off the batched GEMM)",
    ),
    ("llama.cpp", "2023-12-tensor-cores"): (
        _TP + "test_pascal_pooled_until_pr_4682_and_small_batches_use_mmq",
        "log:https://github.com/ggml-org/llama.cpp/issues/3869 (P40 at b1447: "
        "'CUDA_USE_TENSOR_CORES: yes', FP16 cuBLAS prompt processing)",
    ),
    ("llama.cpp", "2024-03-ubatch"): (
        _TP + "test_physical_batch_was_b_before_pr_6017_and_never_exceeds_n_ctx",
    ),
    ("llama.cpp", "2024-03-offload-splits"): (
        "test:tests/test_llamacpp_offload_splits.py::test_one_weight_copy_per_split_from_pr_6083",
        "test:tests/test_llamacpp_offload_splits.py::"
        "test_r1_udiq1s_8_layers_on_a_3090_at_8k_is_not_over",
        "log:https://github.com/ggml-org/llama.cpp/pull/6083 ('backend : offload large batches "
        "to GPU': a new split at each offloaded weight)",
        "log:https://github.com/ggml-org/llama.cpp/issues/11474 (DeepSeek-R1 UD-IQ1_S, 8/62 "
        "layers on an RTX 3090, n_ctx 8192, -ctk q4_0: ran, 3.28 tokens/s)",
    ),
    ("llama.cpp", "2024-03-outputs"): (
        _TP + "test_xinference_1036_yi34b_pool_holds_the_output_matrix",
    ),
    ("llama.cpp", "2024-04-moe-one-mul-mat-id"): (
        "test:tests/test_llamacpp_legacy_scratch.py::test_moe_slot_loop_until_pr_6505",
        "log:https://github.com/ggml-org/llama.cpp/issues/4381 (Mixtral-8x7B, n_ctx 512, 22/33 "
        "layers, 2023-12-13: 'VRAM scratch buffer: 114.54 MiB', the per-slot graph's size)",
    ),
    ("llama.cpp", "2024-06-mmq"): (
        _TP + "test_cublas_pool_only_between_pr_3776_and_pr_8075",
        _TP + "test_v100_keeps_cublas_for_64_token_batches_after_pr_8075",
    ),
    ("llama.cpp", "2024-10-loader"): (
        "test:tests/test_llamacpp.py::test_row_split_places_layers_and_kv_by_build",
        "log:https://github.com/ggml-org/llama.cpp/issues/10152 (b4017, 3x P40, -sm row: "
        "'split mode row equally distributes both model weights and kv cache across all GPU's, "
        "while previously it would load the kv cache on GPU1')",
    ),
    ("llama.cpp", "2024-11-sycl-kq-cpu"): (
        "test:tests/test_llamacpp_sycl.py::test_b4069_holds_kq_twice_and_passes_the_4_gib_limit",
        "run:lcpp-10421-qwen25-3b-q41-a770-112k-np48-b4069",
        "run:lcpp-10421-qwen25-3b-q41-a770-112k-np48-pre-b4069",
        "log:https://github.com/ggml-org/llama.cpp/issues/10421 (Arc A770, Windows, version "
        "4069: 'ggml_gallocr_reserve_n: failed to allocate SYCL0 buffer of size 7573604352'; "
        "'command line works fine on builds < b4069')",
    ),
    ("llama.cpp", "2024-11-sycl-revert"): (
        "test:tests/test_llamacpp_sycl.py::test_b4069_holds_kq_twice_and_passes_the_4_gib_limit",
        "log:https://github.com/ggml-org/llama.cpp/pull/10385 (reverts the MUL_MAT check of "
        "PR #10257)",
    ),
    ("llama.cpp", "2024"): (
        _TG + "test_llamacpp_pre_mla_deepseek_caches_full_kv",
        _TG + "test_llamacpp_before_swa_cache_gemma3_caches_every_layer",
        "run:lcpp-10052-llama32-1b-iq3m-2080-128k-nofa",
        "run:lcpp-10052-llama32-1b-iq3m-2080-128k-fa",
    ),
    ("llama.cpp", "2025-04-mla"): (_TG + "test_llamacpp_pre_mla_deepseek_caches_full_kv",),
    ("llama.cpp", "2025-05-swa"): (
        _TG + "test_llamacpp_before_swa_cache_gemma3_caches_every_layer",
        _TG + "test_llamacpp_streams_and_padding",
    ),
    ("llama.cpp", "2025-07-streams"): (_TG + "test_llamacpp_streams_and_padding",),
    ("llama.cpp", "2025-08-fa-auto"): (
        _TG + "test_llamacpp_flash_attention_off_by_default_before_pr_15434",
    ),
    ("llama.cpp", "2025-10-compute-chunks"): (
        "test:tests/test_vulkan_maxalloc.py::"
        "test_one_compute_buffer_blocks_only_before_the_chunking_build",
        "log:https://github.com/ggml-org/llama.cpp/issues/15009 (Strix Halo, Vulkan, 2025-08: "
        "'Device memory allocation of size 4757131264 failed ... failed to allocate compute pp "
        "buffers')",
        "log:https://github.com/ggml-org/llama.cpp/pull/15815 ('This allows eg. the Vulkan "
        "backend to process graphs which require >4 GB of memory')",
    ),
    ("llama.cpp", "2025-11-server-slots"): (
        "test:tests/test_llamacpp_fit.py::test_server_auto_slots_from_pr_16736",
        "log:https://github.com/ggml-org/llama.cpp/issues/17300 (b7079: 'initializing "
        "slots, n_slots = 4' without -np)",
    ),
    ("llama.cpp", "2025-11-pad256"): (_TG + "test_llamacpp_streams_and_padding",),
    ("llama.cpp", "2025-12-fit"): (
        "test:tests/test_llamacpp_fit.py::test_fit_lowers_the_trained_context_to_keep_1_gib",
        "test:tests/test_llamacpp_fit.py::test_builds_before_pr_16653_keep_4096",
        "log:https://github.com/ggml-org/llama.cpp/pull/16653 (build 7003: "
        "'llama_params_fit_impl: projected to use 410593 MiB of device memory vs. 97017 MiB "
        "of free device memory')",
    ),
    ("llama.cpp", "2026-01-vless"): (
        _TG + "test_llamacpp_pre_mla_deepseek_caches_full_kv",
        _TM + "test_v_less_builds_ignore_the_v_type",
    ),
    ("llama.cpp", "2026-06-server-outputs"): (
        "test:tests/test_llamacpp_outputs.py::"
        "test_llmfit778_qwen25_14b_server_drops_the_staged_output_head",
        "test:tests/test_llamacpp_outputs.py::test_builds_before_pr_23861_keep_the_micro_batch_rows",
        "log:https://github.com/ggml-org/llama.cpp/issues/23527 (b9272, Qwen3.6-35B-A3B at -ub "
        "4096: capping graph_reserve's n_outputs to n_seqs saves ~3 GB of compute buffer)",
    ),
    ("llama.cpp", "2026-07-mla-kv-types"): (
        _TM + "test_builds_since_pr_25871_refuse_the_pair",
        _TM + "test_13978_b5572_keeps_a_q8_0_latent_and_an_f16_v_and_dies",
        _TM + "test_11474_pre_mla_build_keeps_full_heads_q4_0_k_and_f16_v_and_serves",
        "log:https://github.com/ggml-org/llama.cpp/issues/26382 (build 10216, GLM-5.2 at "
        "-ctk q5_1: 'model does not support different K (q5_1) and V (f16) cache types'; "
        "'-ctv was a placebo for MLA models in previous versions')",
    ),
    ("llama.cpp", "2026-09-moe-fusion-deps"): (
        "test:tests/test_llamacpp_cuda_moe_deps.py::"
        "test_estimate_on_the_h100_before_and_after_the_change",
        "test:tests/test_gpu_results.py::test_llamacpp_cuda_buffers_and_total_on_the_h100",
        "log:https://github.com/GenerelSchwerz/llama.cpp/issues/80 (CUDA compute reservation "
        "+512.53 MiB with the fusion for Qwen3.6-35B-A3B at n_ubatch 8192, none with "
        "GGML_CUDA_DISABLE_FUSION=1)",
    ),
    ("ollama", "llama-runner-2k"): (
        _TG + "test_ollama_old_runner_defaults",
        # each release runs the llama.cpp it vendored (oomkit.estimate.ollama_vendored)
        "test:tests/test_ollama_vendored.py::test_ollama_0_1_x_gets_the_cublas_pool_of_its_llamacpp",
        "run:ollama-5136-deepseek-v2-lite-q8-16gb-rocm-23l",
        "run:ollama-5136-deepseek-v2-lite-q8-16gb-rocm-20l",
        # llm/memory.go picks -ngl / --tensor-split from blk.0 up (oomkit.estimate.ollama_memory_go)
        "test:tests/test_ollama_memory_go.py::test_ollama_8776_r1_on_3x_mi210_model_buffer_of_the_last_gpu",
        "log:https://github.com/ollama/ollama/issues/8776 (R1 Q4_K_M on 3x MI210: 'allocating "
        "70139.08 MiB on device 0: cudaMalloc failed')",
        # memory.go's own KV and deepseek2 GraphSize figures, reproduced to the printed digit
        "test:tests/test_ollama_memory_go.py::test_ollama_5136_log_figures_reproduce_at_16384_cells",
        "log:https://github.com/ollama/ollama/issues/5136 ('memory.required.kv=4.2 GiB ... "
        "memory.graph.full=568.0 MiB memory.graph.partial=759.4 MiB')",
    ),
    # Windows NVML lookup by CUDA index (oomkit.estimate.ollama_nvml_order)
    ("ollama", "nvml-index-0.1.45"): (
        "test:tests/test_ollama_nvml_order.py::test_ollama_5239_split_crossed_on_0_1_45_not_on_0_1_43",
        "log:https://github.com/ollama/ollama/issues/5239 (0.1.45, RTX 2080 Ti listed as device 0 "
        "ahead of the RTX 4090; 'allocating 11597' = 38 Codestral-22B Q6_K blocks; 0.1.43 loaded)",
    ),
    ("ollama", "nvml-uuid-0.4.0"): (
        "test:tests/test_ollama_nvml_order.py::test_release_range_and_os",
        "log:https://github.com/ollama/ollama/pull/7473 ('The runtime and management libraries "
        "may not always have identical ordering, so use the device UUID')",
    ),
    ("ollama", "ctx-4k-0.6.7"): (
        "test:tests/test_ollama_num_ctx.py::test_default_num_ctx_by_release_and_total_vram",
    ),
    ("ollama", "llama-runner-4k"): (
        _TG + "test_ollama_old_runner_defaults",
        "run:ollama-10855-gemma3-27b-4090-1070-20k",
    ),
    # Mistral 3 vision worst-case graph (oomkit.estimate.ollama_vision_graph)
    ("ollama", "mm-worst-case-0.7.1"): (
        "test:tests/test_ollama_vision_graph.py::test_ollama_11355_v0_9_6_buffer_and_verdicts",
        "log:https://github.com/ollama/ollama/issues/11355 (v0.9.6, num_gpu 41: "
        "'ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 9646586240'; "
        "v0.6.8 'compute graph' 164 MB)",
    ),
    ("ollama", "vision-sdpa-0.13.2"): (
        "test:tests/test_ollama_vision_graph.py::test_flash_attention_drops_the_scores_from_0_13_2",
    ),
    # gpt-oss on 0.11.x (oomkit.estimate.ollama_gptoss): GraphSize 'gptoss' per release
    ("ollama", "gptoss-0.11.0"): (
        _TO + "test_graph_reproduces_ollama_11711_log_at_0_11_2",
        _TO + "test_ollama_11744_v0_11_2_graph_estimate_sends_the_model_to_the_cpu",
        'log:https://github.com/ollama/ollama/issues/11711 (\'memory.graph.full="2.0 GiB" '
        'memory.graph.partial="4.0 GiB"\')',
        "log:https://github.com/ollama/ollama/issues/11744 (0.11.2 'runs flawlessly', 0.11.3 "
        "'running out of memory', same num_gpu 25)",
    ),
    ("ollama", "gptoss-0.11.3"): (
        _TO + "test_graph_and_kv_reproduce_ollama_11753_log_at_0_11_3",
        _TO + "test_ollama_11744_v0_11_3_puts_num_gpu_25_on_the_gpus_and_dies",
        'log:https://github.com/ollama/ollama/issues/11753 (\'memory.graph.full="9.0 GiB" '
        'memory.graph.partial="9.0 GiB"\', CUDA OOM ~30 s into a 34k request)',
    ),
    ("ollama", "gptoss-0.11.5"): (
        _TO + "test_graph_reproduces_ollama_11982_log_at_0_11_5",
        _TO + "test_ollama_11753_sinks_concat_and_pool_copy",
        "log:https://github.com/ollama/ollama/issues/11982 (0.11.5, KvSize 75000: "
        '\'memory.graph.full="13.7 GiB" memory.graph.partial="13.7 GiB"\')',
    ),
    ("ollama", "gptoss-0.11.8"): (
        _TO + "test_flash_attention_per_release",
        _TO + "test_flash_attention_from_0_11_8_drops_the_scores",
    ),
    ("ollama", "engine-0.12"): (
        _TG + "test_ollama_engine_generation_uses_ollamarunner_and_flash_attention",
    ),
    ("ollama", "llama-runner-fa-auto-0.13.4"): (
        "test:tests/test_ollama_runner.py::test_aifood_a40_8q_llama_runner_buffers",
        "test:tests/test_ollama_runner.py::test_fa_auto_from_0_13_4_drops_a_quantized_kv_type",
        "log:https://github.com/San2k/aifood/blob/d5216cdfe402ff1f3933889013a2f8a64e6bb9ca/"
        "GPU_OPTIMIZATION_RESULTS.md (Ollama, 2026-03-02, qwen2.5:14b num_gpu 30 at 8192: "
        "'CUDA0 model buffer: 4693 MiB, CUDA0 KV buffer: 960 MiB, CUDA0 compute buffer: 956 MiB')",
    ),
    ("ollama", "vram-ctx-0.15.5"): (
        "test:tests/test_ollama_num_ctx.py::test_default_num_ctx_by_release_and_total_vram",
        "test:tests/test_ollama_num_ctx.py::test_estimate_cli_on_a_48gb_card",
        "log:https://github.com/ollama/ollama/issues/14073 (a 0.15.5+ load at the new "
        "VRAM-tiered default context)",
    ),
    ("ollama", "llama-server-0.30"): (
        "test:tests/test_ollama.py::test_ollama_engine_reserves_few_outputs",
    ),
    ("vllm", "v0-2023-allocated"): (
        _TG + "test_vllm_before_pr_2031_charges_only_torch_allocations",
        _VLLM + "pull/2031 (profile_num_available_blocks: peak_memory was "
        "torch.cuda.max_memory_allocated(), replaced by total - free)",
    ),
    ("vllm", "v0-2023"): (
        _TG + "test_vllm_record_stream_pinning_only_before_0_2_6",
        _VLLM + "pull/2031 (Llama-2-70B TP4: 31615 -> 20865 GPU blocks)",
        "run:vllm-2031-llama2-70b-tp4-a100",
        _TG + "test_vllm_awq_split_k_buffer_only_before_pr_2566",
    ),
    ("vllm", "v0-2023-no-record-stream"): (
        _TG + "test_vllm_record_stream_pinning_only_before_0_2_6",
        _TG + "test_vllm_before_pr_2863_charges_all_gpu_memory",
        "run:vllm-2856-llama2-70b-awq-8xa10g-tp8",
        _TG + "test_vllm_awq_split_k_buffer_only_before_pr_2566",
        "run:vllm-1234-leo-hessianai7b-awq-3060-8k",
        _VLLM + "pull/2566 (awq_gemm -> awq_dequantize + torch.matmul at >= 256 tokens)",
    ),
    ("vllm", "v0-2023-len-check"): (
        "test:tests/test_vllm_len_check.py::test_no_start_up_length_check_before_0_2_7",
        _VLLM + "pull/2163 ('Currently, vLLM hangs when the length of a single sequence is "
        "larger than the system's KV cache size')",
    ),
    ("vllm", "v0-2024-init-free"): (
        _TG + "test_vllm_before_pr_2863_charges_all_gpu_memory",
        "run:vllm-7495-gemma2-27b-2xl40-u09",
    ),
    ("vllm", "v0-2024-nccl-2.20"): (
        "test:tests/test_vllm_nvls.py::test_vllm6746_405b_fp8_8xh100_default_length_refused",
        _VLLM + "issues/6746 (Llama 3.1 405B FP8 on 8x H100, 2024-07-24: 'Loading model weights "
        "took 57.7520 GB', then only 79392 KV tokens for max_model_len 131072)",
        # Gemma 2 capped to its sliding window (vllm_gemma2), PR #5908 until PR #10584
        "test:tests/test_vllm_gemma2_cap.py::test_sglang1869_a10_u095_starts_at_4096_but_not_at_8192",
        "log:https://github.com/sgl-project/sglang/issues/1869 (gemma-2-9b bf16 served by vLLM "
        "at util 0.95 on a 24 GB card in 2024-11, no --max-model-len)",
        _VLLM + "pull/5908 ('this PR temporarily truncates the model's maximum length to 4K')",
        # V0's encoder-decoder profile run (vllm_mm): one Mllama image per max_num_seqs
        "test:tests/test_vllm_mllama_profile.py::test_v0_default_256_sequences_oom_on_a100_and_32_start",
        _VLLM + "issues/9445 (0.6.3, A100 80GB: default 256 sequences OOM, 32 + eager start)",
        _VLLM + "issues/11251 (same 2x V100 and command: 'about 3000' GPU blocks on 0.6.3.post1, "
        "'about 5000' on 0.6.4.post1, which first ships PR #9352)",
    ),
    ("vllm", "v0-2024-long-chunked"): (
        "test:tests/test_vllm_long_context_chunked.py::"
        "test_0_5_2_profiles_the_whole_length_and_0_5_3_a_chunk",
        _VLLM + "pull/6666 ('enables chunked prefill by default for long context (>32K) models, "
        "to avoid possible OOM errors during the initial memory profiling')",
        "test:tests/test_vllm_long_context_chunked.py::"
        "test_capybara_200k_on_2x4090_dies_in_2023_and_8192_starts",
        "run:hf-thebloke-nous-capybara34b-awq-fastchat-vllm-2x4090-tp2-200k-oom",
    ),
    ("vllm", "v0-2024"): (
        _TG + "test_vllm_generations_change_the_kv_pool",
        _VLLM + "issues/10517 (0.6.4: non_torch_memory 0.35 GiB, the CUDA context included)",
        "run:vllm-10517-llama31-8b-3090-29k",
        _VLLM + "issues/9630 (96 GB H100: 256 sequences OOM at max_model_len 32, 128 start)",
    ),
    ("vllm", "v0-2025"): (
        _TG + "test_vllm_generations_change_the_kv_pool",
        _VLLM + "pull/12126 (non_torch_memory 0.16 GiB: the increase since init only)",
    ),
    ("vllm", "v0-2025-mla"): (
        _TG + "test_vllm_before_mla_caches_deepseek_as_full_heads",
        "run:vllm-17431-qwen3-8b-a800-u04-v0",
    ),
    ("vllm", "v1-0.8.0"): (
        "test:tests/test_vllm_v1_seqs_1024.py::test_15457_pool_is_the_1024_row_warm_up",
        "test:tests/test_vllm_v1_seqs_1024.py::test_opt125m_l4_log",
        _VLLM + "issues/16342 (0.8.3 on an A100 80GB: out of memory 'when handling 1024 dummy "
        "requests'; Qwen2.5-14B-AWQ)",
        _VLLM + "pull/16158 ('many people have run into OOM when using V1')",
    ),
    ("vllm", "v1-2025-global"): (
        _TV + "test_vllm_v1_before_0_9_1_charges_other_processes",
        _VLLM + "pull/14419 (util 0.2 next to a process holding 70%: 'No available memory')",
        "run:vllm-17431-qwen3-8b-a800-u04-v1",
        "run:vllm-17469-qwen3-30b-a3b-4xa10-graphs",
    ),
    ("vllm", "v1-2025"): (
        _TV + "test_vllm_v1_before_0_9_1_charges_other_processes",
        _VLLM + "pull/21429 (0.10 on H200: non-torch increase 2.04 GiB, torch peak 5.62 GiB)",
        "test:tests/test_vllm_mxfp4.py::test_hopper_marlin_before_0_11_matches_the_log",
        _VLLM + "issues/23278 (0.10.1 H100, Marlin MXFP4: 'Model loading took 65.9651 GiB')",
        "run:vllm-21348-qwen3-235b-fp8-tp4-h100",
    ),
    ("vllm", "v1-0.10.2"): (
        "test:tests/test_vllm_pre_ampere_v0.py::test_0_10_2_runs_v1_on_turing",
        "test:tests/test_vllm_pre_ampere_v0.py::test_18478_2080ti_runs_v0_and_does_not_fit",
        _VLLM + "issues/15853 ('[V1] Testla T4 cannot work for V1', 0.8.x)",
    ),
    ("vllm", "v1-0.11"): (
        _TG + "test_vllm_current_charges_its_graph_estimate",
        _TG + "test_vllm_graphs_in_the_headroom_until_0_21",
        "test:tests/test_vllm_mxfp4.py::test_hopper_triton_keeps_the_scales_twice",
        _VLLM + "issues/33155 (0.14.1 H100, 'Using Triton backend': 'Model loading took 64.38 "
        "GiB'; util 0.97 leaves 2.4 GiB for the graphs and it OOMs at 5k context)",
        _VLLM + "pull/30515 (0.17.0rc1 log: the graph profiler 'not enabled' by default)",
    ),
    ("vllm", "v1-0.11.1"): (
        _TG + "test_vllm_sort_sampler_from_0_11_1_until_flashinfer_returns",
        "log:https://github.com/llm-d/llm-d-benchmark/blob/4f4d44943c39b76b28e30dfa1fb0dfaf1ee894b5/"
        "config_explorer/empirical-vllm-memory-results.md (vllm-openai:latest, Jan 2026, H100: "
        "peak activation 5.64 GiB for Qwen3-32B, 5.56 GiB for Qwen3-0.6B; Qwen3-32B FAILED at "
        "32000, the verdict run vllm-llmd-qwen3-32b-bf16-h100-32k of heldout8)",
    ),
    ("vllm", "v1-0.17"): (
        "test:tests/test_vllm_triton_sampler.py::test_non_kv_matches_the_0_17_1_logs_of_a_3090",
        "test:tests/test_vllm_triton_sampler.py::test_qwen_util_0_65_is_at_the_edge_on_0_17_1",
        "log:https://github.com/TheBuccaneer/vllm-offload-profiles/blob/547be9005dd6483d21e15e32"
        "416ffab96d1a2e63/data/provenance/gpu_memory_configuration/kv_vram_qwen_gmem065_offload0"
        ".log (0.17.1, RTX 3090, util 0.65: 'Model loading took 14.25 GiB', 'Available KV cache "
        "memory: 0.49 GiB')",
    ),
    ("vllm", "v1-0.18"): (
        "test:tests/test_vllm_graph_estimate_0_20.py::"
        "test_the_variable_switches_the_estimate_where_the_release_profiles_graphs",
        "test:tests/test_vllm_graph_estimate_0_20.py::"
        "test_151b_lora_run_on_0_19_1_only_logged_its_graph_estimate",
        "log:https://github.com/Panteaforoutan/151B_SP26_Competition_/blob/b30c3a2c86a3ef1566ffb78f"
        "9927d70e4aa0475e/vllm_error.log (0.19.1: 'Profiling CUDA graph memory: PIECEWISE=102 "
        "(largest=512), FULL=70 (largest=256)', 'Estimated CUDA graph memory: 4.79 GiB total', "
        "'Available KV cache memory: 0.85 GiB', then OOM capturing the graphs)",
    ),
    ("vllm", "v1-0.20"): (
        "test:tests/test_vllm_graph_estimate_0_20.py::test_release_rows",
        "test:tests/test_vllm_graph_estimate_0_20.py::"
        "test_0_20_takes_the_graphs_out_of_a_0_92_budget_with_0_19s_sampler",
        "test:tests/test_vllm_graph_estimate_0_20.py::"
        "test_151b_lora_run_on_0_19_1_only_logged_its_graph_estimate",
        "log:https://github.com/Panteaforoutan/151B_SP26_Competition_/blob/b30c3a2c86a3ef1566ffb78f"
        "9927d70e4aa0475e/vllm_error.log (0.19.1: 'Estimated CUDA graph memory: 4.79 GiB total', "
        "'In v0.19, CUDA graph memory profiling will be enabled by default ... To try it now, set "
        "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1': logged, not charged, before 0.20.0)",
    ),
    ("vllm", "v1-0.21"): (
        _TG + "test_vllm_graphs_in_the_headroom_until_0_21",
        "test:tests/test_vllm_graph_estimate_0_20.py::test_release_rows",
        "log:https://github.com/gpustack/runner/pull/251 ('Estimated CUDA graph memory: "
        "0.36 GiB total' charged to the budget: 'CUDA graph memory profiling is enabled "
        "(default since v0.21.0)')",
        _VLLM + "pull/41099 (review of vllm/envs.py: 'Enabled by default as of v0.21.0')",
    ),
    ("vllm", "v1-0.22"): (
        "test:tests/test_vllm_mrv2.py::test_which_models_run_v2",
        "test:tests/test_vllm_mrv2.py::test_release_rows",
    ),
    ("vllm", "v1-0.23"): (
        "test:tests/test_vllm_mrv2.py::test_0_23_gives_the_graph_estimate_to_the_kv_cache",
        "test:tests/test_vllm_mrv2.py::test_the_djl_serving_records",
        "log:https://github.com/deepjavalibrary/djl-serving/pull/3055 ('vLLM 0.23 reserves "
        "~0.78 GiB more KV cache than 0.22 (15.41 -> 16.19 GiB on this llama-3-8b / TP=4 "
        "config)', then OOM capturing 35 FULL graphs on 22.04 GiB L4s)",
    ),
    ("vllm", "v1-0.24"): ("test:tests/test_vllm_mrv2.py::test_which_models_run_v2",),
    ("vllm", "v1-0.25"): (
        "test:tests/test_vllm_mrv2.py::test_which_models_run_v2",
        _VLLM + "issues/49224 ('Model Runner V2 (now default for dense models) skips CUDA "
        "graph memory reservation - profile_cudagraph_memory() returns 0')",
    ),
    ("vllm", "current"): (
        "test:tests/test_vllm_mrv2.py::test_0_23_gives_the_graph_estimate_to_the_kv_cache",
        "test:tests/test_vllm_mrv2.py::test_release_rows",
    ),
    ("sglang", "tp-table"): (_TG + "test_sglang_tp_table_before_pr_10975", _TS + _SG_MM),
    ("sglang", "mm-0.95"): (_TS + _SG_MM,),
    ("sglang", "mm-0.95-listed"): (_TS + _SG_MM, _TS + _SG_FRAC, _TS + _SG_VIS),
    ("sglang", "mm-0.90"): (_TS + _SG_MM, _TS + _SG_FRAC),
    ("sglang", "llama4-mm"): (
        _TS + _SG_MM,
        _TS + _SG_VIS,
        _TS + "test_without_chunked_prefill_a_full_context_request_must_fit_the_rest",
        "log:https://github.com/sgl-project/sglang/issues/5212 (Llama-4-Scout, 8x H100, "
        "--context-length 1000000: a 400K-token request dies in forward_extend through "
        "mllama4.py general_mm_embed_routine, trace of 2025-04-09)",
    ),
    ("sglang", "llama4-text"): (
        _TS + _SG_MM,
        _TS + _SG_DEF,
        _TS + "test_without_chunked_prefill_a_full_context_request_must_fit_the_rest",
    ),
    ("sglang", "mm-disabled-models"): (
        _TS + _SG_MM,
        _TGT + "test_pr_6273_maverick_512k_local_block_table_is_20_gib_before_the_fix",
    ),
    ("sglang", "frac-96g"): (
        _TS + _SG_DEF,
        _TGT + "test_only_chunked_attention_models_and_dated_rows_get_tables",
    ),
    ("sglang", "mm-chunked-prefill"): (
        _TS + _SG_MM,
        _TS + _SG_VIS,
        _TGT + "test_scout_2m_on_8xh200_runs_only_without_cuda_graphs",
    ),
    ("sglang", "frac-180g"): (_TS + _SG_DEF,),
    ("sglang", "frac-reserved"): (_TS + _SG_DEF,),
    ("sglang", "mm-0.90-default"): (_TS + _SG_FRAC, _TS + _SG_DEF),
    ("sglang", "mm-vit-adjusted"): (_TS + _SG_MM, _TS + _SG_DEF, _TS + _SG_VIS),
    ("sglang", "gpu-memory"): (_TG + "test_sglang_tp_table_before_pr_10975", _TS + _SG_DEF),
    ("sglang", "swa-gemma-off"): ("test:tests/test_sglang_swa.py::test_gemma3_27b_only_in_0_4_10",),
    ("sglang", "swa-gpt-oss"): (
        "test:tests/test_sglang_swa.py::test_gpt_oss_20b_split_from_0_5_8",
    ),
    ("sglang", "swa-memory-split"): (
        "test:tests/test_sglang_swa.py::test_gpt_oss_20b_split_from_0_5_8",
        "test:tests/test_sglang_swa.py::test_speculative_0_5_8_and_the_memory_rule",
    ),
    ("transformers", "eager-attention"): (
        "test:tests/test_transformers_eager_release.py::"
        "test_pre_4_36_scores_are_a_band_term_not_in_the_total",
    ),
    ("transformers", "full-logits"): (
        _TG + "test_transformers_full_logits_before_4_45",
        "test:tests/test_transformers_eager_release.py::"
        "test_pre_4_36_scores_are_a_band_term_not_in_the_total",
    ),
    ("transformers", "logits-to-keep"): (_TG + "test_transformers_full_logits_before_4_45",),
    ("transformers", "dynamic-sliding-window"): (
        _TG + "test_transformers_sliding_layers_hold_the_prompt_from_4_56",
        "log:https://github.com/huggingface/transformers/pull/40039 (DynamicSlidingWindowLayer: "
        "'the cache stops growing after reaching the window size'; the prefill's states are "
        "kept as a view, cache_utils.py)",
    ),
    ("transformers", "v5-fused-experts"): (
        "test:tests/test_fused_experts_bnb.py::test_transformers_v5_keeps_fused_experts_unquantized",
    ),
}
