"""The SGLang rows of the runtime generations table.

Oldest first; every row cites the change that starts it. Gathered with the other runtimes'
rows in :data:`oomkit.estimate.generation_table.ROWS`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["SGLANG_ROWS"]

#: Oldest first. Every row cites the change that starts it.
SGLANG_ROWS: tuple[Row, ...] = (
    _g(
        "sglang",
        "tp-table",
        "SGLang <=0.2.14 (mem_fraction_static by TP)",
        "2024-01-01",
        "0.1.0",
        "sgl-project/sglang server_args.py ServerArgs.__post_init__ TP table (release v0.4.x)",
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
        "(server_args.py); with CUDA graphs the fa3 backend's local_block_table for Llama 4 "
        "is max_bs x ceil(ctx / 8192)^2 x 8192 int32 (PR #5479 decode local attention, "
        "2025-04-16, until PR #6273)",
        mem_fraction="tp_table_13g",
        mm_fraction=0.90,
        mm_chunked_off="all",
        mm_text_only="Llama4ForConditionalGeneration",
        vision="Gemma3ForConditionalGeneration:replicated,Llama4ForConditionalGeneration:replicated",
        fa3_local_table="per_seq",
        graph_bs="160",
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
        fa3_local_table="per_seq",
        graph_bs="160",
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
        fa3_local_table="per_seq",
        graph_bs="160_256",
    ),
    _g(
        "sglang",
        "mm-chunked-prefill",
        "SGLang 0.4.6.post5 (chunked prefill for most VLMs)",
        "2025-05-24",
        None,
        "sgl-project/sglang release v0.4.6.post5 configs/model_config.py "
        "is_multimodal_chunked_prefill_supported",
        "chunked prefill stays off only for Grok-1 vision, LLaVA-Llama, Mllama and CLIP; "
        "the fa3 local_block_table is max_bs x ceil(ctx / chunk) x chunk int32 (PR #6273: "
        "the PyPI wheel sglang==0.4.6.post5 allocates [max_virtual_batches, "
        "max_pages_per_block], sglang==0.4.6.post4 still [max_virtual_batches, "
        "max_blocks_per_seq x max_pages_per_block], flashattention_backend.py "
        "init_cuda_graph_state; the version string 0.4.6.post5 resolves to 0.4.6 as every "
        "post-release does, so this row is reached by date)",
        mem_fraction="tp_table_96g",
        mm_fraction=0.90,
        mm_chunked_off="unsupported",
        mm_text_only="Gemma3ForConditionalGeneration,Llama4ForConditionalGeneration",
        vision="Gemma3ForConditionalGeneration:sharded,Llama4ForConditionalGeneration:replicated",
        fa3_local_table="per_chunk",
        graph_bs="160_256",
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
        fa3_local_table="per_chunk",
        graph_bs="160_256",
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
        fa3_local_table="per_chunk",
        graph_bs="160_256",
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
        fa3_local_table="per_chunk",
        graph_bs="160_256",
    ),
    _g(
        "sglang",
        "mm-vit-adjusted",
        "SGLang 0.4.10-0.5.2 (multimodal fraction from the ViT size)",
        "2025-07-31",
        "0.4.10",
        "sgl-project/sglang release v0.4.10 server_args.py adjust_mem_fraction_for_vlm",
        "the default fraction of a VLM scales with its vision tower (0.95 x a factor "
        "in 0.8-1.05 from vision_config layers x hidden^2): not modelled, left as is; "
        "the hybrid sliding-window pool (model_runner.py set_num_token_hybrid, "
        "--swa-full-tokens-ratio 0.8) on for Gemma 2/3/3n (sglang_swa)",
        mem_fraction="reserved_tier",
        mm_chunked_off="unsupported",
        fa3_local_table="per_chunk",
        graph_bs="160_256",
        hybrid_swa="Gemma2ForCausalLM,Gemma3ForCausalLM,Gemma3ForConditionalGeneration,Gemma3nForCausalLM,Gemma3nForConditionalGeneration",
        swa_split="tokens",
    ),
    _g(
        "sglang",
        "swa-gemma-off",
        "SGLang 0.4.10.post2-0.5.2 (hybrid SWA pool off for Gemma)",
        # the sglang-0.4.10.post2 sdist on PyPI (uploaded 2025-08-03); 0.4.10.post1's
        # (2025-08-01) server_args.py has no Gemma rule
        "2025-08-03",
        None,
        "sgl-project/sglang release v0.4.10.post2 (PyPI sdist) server_args.py "
        "ServerArgs.__post_init__ (Gemma2/3/3n: 'FIXME: PR #7367 is not compatible with "
        "gemma2 model', disable_hybrid_swa_memory = True)",
        "Gemma 2/3/3n back on the uniform token pool; no catalog model gets the hybrid "
        "sliding-window pool (GPT-OSS has it off too)",
        mem_fraction="reserved_tier",
        mm_chunked_off="unsupported",
        fa3_local_table="per_chunk",
        graph_bs="160_256",
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
        fa3_local_table="per_chunk",
    ),
    _g(
        "sglang",
        "swa-gpt-oss",
        "SGLang 0.5.8 (hybrid SWA pool for GPT-OSS)",
        # the sglang-0.5.8 sdist on PyPI (uploaded 2026-01-23); 0.5.7's server_args.py turns
        # it off for GPT-OSS unconditionally
        "2026-01-23",
        "0.5.8",
        "sgl-project/sglang release v0.5.8 (PyPI sdist) configs/model_config.py "
        "is_hybrid_swa_model "
        "(Llama4ForConditionalGeneration, GptOssForCausalLM, MiMoV2FlashForCausalLM); "
        "server_args.py: off for GPT-OSS only with trtllm_mha or speculative decoding",
        "GPT-OSS's token pool split: full layers int(T x 36 / (0.8 x 18 + 18)) = 1.11 T tokens, "
        "sliding ones 0.8 x that, from the same memory (sglang_swa)",
        mem_fraction="gpu_memory",
        fa3_local_table="per_chunk",
        hybrid_swa="GptOssForCausalLM",
        swa_split="tokens",
        swa_off_speculative=True,
    ),
    _g(
        "sglang",
        "swa-memory-split",
        "SGLang 0.5.9+ (hybrid SWA split by memory)",
        # the sglang-0.5.9 sdist on PyPI (uploaded 2026-02-23)
        "2026-02-23",
        "0.5.9",
        "sgl-project/sglang release v0.5.9 (PyPI sdist) "
        "model_executor/model_runner_kv_cache_mixin.py "
        "_resolve_hybrid_swa_tokens (full_tokens = T x (F n_full + S n_swa) / (F n_full + "
        "ratio x S n_swa)); server_args.py no longer turns it off for speculative GPT-OSS",
        "the split weighs a full and a sliding layer's bytes per token (equal on GPT-OSS: "
        "the same counts as 0.5.8)",
        mem_fraction="gpu_memory",
        fa3_local_table="per_chunk",
        hybrid_swa="GptOssForCausalLM",
        swa_split="memory",
    ),
)
