"""The Ollama rows of the runtime generations table.

Oldest first; every row cites the change that starts it. Gathered with the other runtimes'
rows in :data:`oomkit.estimate.generation_table.ROWS`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["OLLAMA_ROWS"]

#: Oldest first. Every row cites the change that starts it.
OLLAMA_ROWS: tuple[Row, ...] = (
    _g(
        "ollama",
        "llama-runner-2k",
        "Ollama <0.1.45 (llama.cpp runner, default num_ctx 2048)",
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
        "nvml-index-0.1.45",
        "Ollama 0.1.45-0.3.x (Windows: NVML free memory by CUDA index; default num_ctx 2048)",
        "2024-06-20",
        "0.1.45",
        "ollama/ollama commit 434dfe30c ('Reintroduce nvidia nvml library for windows', first "
        "in release v0.1.45): gpu/gpu.go refreshes free memory with nvml_get_free(gpu.index), "
        "NVML's bus-order index taken for CUDA's; commit 6fd04ca92 (same release) passes "
        "--tensor-split from memory.go's per-GPU counts",
        "as before, except on Windows with GPUs whose CUDA (fastest-first) and bus orders "
        "differ: each GPU is believed to have the other's free memory, Ollama sorts them by it "
        "and the smaller card, listed first, gets the larger share of the split "
        "(oomkit.estimate.ollama_nvml_order)",
        num_ctx=2048,
        flash_attention=False,
        llamacpp_date="2025-01-15",
        nvml_by_index=True,
    ),
    _g(
        "ollama",
        "nvml-uuid-0.4.0",
        "Ollama 0.4.0-0.6.3 (NVML looked up by UUID; default num_ctx 2048)",
        "2024-11-05",
        "0.4.0",
        "ollama/ollama PR #7473 (commit 29ab9fa7d, 'nvidia libs have inconsistent ordering', "
        "first in release v0.4.0): nvml_get_free takes the device UUID",
        "as 0.1.0-0.1.44: every GPU's free memory is its own again",
        num_ctx=2048,
        flash_attention=False,
        llamacpp_date="2025-01-15",
    ),
    _g(
        "ollama",
        "llama-runner-4k",
        "Ollama 0.6.4-0.6.6 (Ollama engine for some architectures; default num_ctx 2048)",
        "2025-04-01",
        "0.6.4",
        "ollama/ollama v0.6.4 release (its envconfig.ContextLength default is still 2048: the "
        "4096 default is commit 44b466eeb, first in v0.6.7)",
        "default num_ctx 2048; Ollama's own engine for some architectures, llama runner "
        "and old estimator otherwise; vendored llama.cpp with MLA but full SWA cache",
        num_ctx=2048,
        flash_attention=False,
        llamacpp_date="2025-04-20",
    ),
    _g(
        "ollama",
        "ctx-4k-0.6.7",
        "Ollama 0.6.7-0.7.0 (default num_ctx 4096)",
        "2025-04-30",
        "0.6.7",
        "ollama/ollama commit 44b466eeb ('config: update default context length to 4096', "
        "first in release v0.6.7): envconfig.ContextLength defaults to 4096",
        "as 0.6.4, except that a request without num_ctx gets 4096 tokens, not 2048: twice "
        "the KV cache",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
    ),
    _g(
        "ollama",
        "mm-worst-case-0.7.1",
        "Ollama 0.7.1-0.10 (worst-case graph with a 2048x2048 image)",
        "2025-05-22",
        "0.7.1",
        "ollama/ollama commit fe623c2cf ('ollamarunner: Multi-modal worst case graph', first "
        "in release v0.7.1): reserveWorstCaseGraph encodes a 2048x2048 image into the batch",
        "default num_ctx 4096; the Ollama engine reserves its compute graph with a full-size "
        "image: a Mistral 3 vision encoder keeps unfused F32 scores (patches^2 x heads, ~8.7 "
        "GiB) on the output layer's device (oomkit.estimate.ollama_vision_graph)",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
        vision_graph="image_2048",
    ),
    # gpt-oss (0.11.0-0.11.11): always the Ollama engine (ollamarunner), its graph estimate in
    # fs/ggml/ggml.go GraphSize's "gptoss" case and its attention built in Go
    # (oomkit.estimate.ollama_gptoss); other models keep the 0.6.4 row's behaviour
    _g(
        "ollama",
        "gptoss-0.11.0",
        "Ollama 0.11.0-0.11.2 (gpt-oss: graph estimate x2, sinks concatenated)",
        "2025-08-05",
        "0.11.0",
        "ollama/ollama PR #11672 (commit fa7776fd2, gpt-oss): GraphSize 'gptoss' full = "
        "4 x heads/heads_kv x kv/6, partial = 2 x full; model/models/gptoss attention "
        "Concat(scores, sinks) before Softmax",
        "gpt-oss: Ollama's partial-offload graph estimate is twice the full one (a graph that "
        "does not fit any GPU sends the whole model to the CPU, llm/server.go); its real "
        "attention keeps two F32 score tensors alive; its num_ctx is raised to at least 8192 "
        "(server/routes.go scheduleRunner; from 0.11.4 only with 20 GiB or more of total VRAM, "
        "qwen3vl too from 0.12.7, until 0.15.4: oomkit.estimate.ollama_num_ctx.ollama_ctx_floor)",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
        gptoss_graph="partial_2x_full",
        gptoss_sinks="concat",
        gptoss_flash="never",
        vision_graph="image_2048",
    ),
    _g(
        "ollama",
        "gptoss-0.11.3",
        "Ollama 0.11.3-0.11.4 (gpt-oss: partial graph = full)",
        "2025-08-06",
        "0.11.3",
        "ollama/ollama PR #11700 (commit fcec04bf4, 'gptoss: fix memory calc'): partialOffload "
        "= fullOffload",
        "gpt-oss: the partial-offload graph estimate halves, so a large context now lands on "
        "the GPUs instead of the CPU; the attention still concatenates the sinks",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
        gptoss_graph="partial_eq_full",
        gptoss_sinks="concat",
        gptoss_flash="never",
        vision_graph="image_2048",
    ),
    _g(
        "ollama",
        "gptoss-0.11.5",
        "Ollama 0.11.5-0.11.7 (gpt-oss: sinks in the softmax, graph estimate halved)",
        "2025-08-19",
        "0.11.5",
        "ollama/ollama PR #11823 (commit 1a19df1f3, 'update vendored llama.cpp and ggml'): "
        "nn.AttentionWithSinks (ggml_soft_max_add_sinks) and GraphSize partial = 2 x "
        "heads/heads_kv x kv/6",
        "gpt-oss: one F32 score tensor (the sinks go into the softmax); Ollama's graph "
        "estimate is half the 0.11.3 one; SupportsFlashAttention no longer excludes gptoss "
        "(OLLAMA_FLASH_ATTENTION applies)",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
        gptoss_graph="partial_half",
        gptoss_sinks="softmax",
        gptoss_flash="user",
        vision_graph="image_2048",
    ),
    _g(
        "ollama",
        "gptoss-0.11.8",
        "Ollama 0.11.8-0.11.11 (gpt-oss: flash attention by default)",
        "2025-08-29",
        "0.11.8",
        "ollama/ollama PR #11996 (commit 85ccf7354, 'gptoss: enable flash attention by "
        "default'): GraphSize with flash attention (4 x num_parallel + context/1024 + 110) MiB",
        "gpt-oss: flash attention on where the GPUs support it, no score tensor; Ollama's "
        "graph estimate becomes a small fixed figure",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
        gptoss_graph="partial_half_fa",
        gptoss_sinks="softmax",
        gptoss_flash="default",
        vision_graph="image_2048",
    ),
    _g(
        "ollama",
        "engine-0.12",
        "Ollama 0.12+ (Ollama engine, new memory estimates)",
        "2025-09-11",
        "0.12.0",
        "ollama/ollama PR #12252 (new memory estimates on by default for the Ollama engine)",
        "Ollama-engine models are laid out from their real allocations and get flash "
        "attention by default; llama-runner models keep the old estimator",
        vision_graph="image_2048",
        engine_archs="required",
    ),
    _g(
        "ollama",
        "vision-sdpa-0.13.2",
        "Ollama 0.13.2+ (Ollama engine, new memory estimates, flash-attention vision)",
        "2025-12-07",
        "0.13.2",
        "ollama/ollama commit 1108d8b34 ('ggml: Enable flash attention for vision encoders', "
        "first in release v0.13.2): nn.Attention takes ScaledDotProductAttention without a cache",
        "as 0.12; a vision encoder's worst-case graph no longer keeps the F32 score tensor "
        "when flash attention is on",
        vision_graph="image_2048_sdpa",
        engine_archs="required",
    ),
    _g(
        "ollama",
        "llama-runner-fa-auto-0.13.4",
        "Ollama 0.13.4-0.15.4 (llama runner: flash attention auto)",
        "2025-12-15",
        "0.13.4",
        "ollama/ollama PR #13052 (commit bd6c1d6b4, 'flash attn: add auto mode for llama "
        "engine', first in release v0.13.4): NewContextParams passes LLAMA_FLASH_ATTN_TYPE_AUTO "
        "when OLLAMA_FLASH_ATTENTION is unset",
        "as 0.13.2; the llama runner (architectures outside OllamaEngineRequired: llama, "
        "qwen2, mistral, gemma2, ...) gets llama.cpp's flash attention 'auto' and drops a "
        "quantized KV cache type to f16 unless OLLAMA_FLASH_ATTENTION is set "
        "(oomkit.estimate.ollama_runner)",
        vision_graph="image_2048_sdpa",
        engine_archs="required",
        llama_runner_fa="auto",
    ),
    _g(
        "ollama",
        "vram-ctx-0.15.5",
        "Ollama 0.15.5-0.29 (default num_ctx from total VRAM: 4k/32k/256k)",
        "2026-02-05",
        "0.15.5",
        "ollama/ollama commit 0334ffa62 ('server: use tiered VRAM-based default context "
        "length', first in release v0.15.5): server/routes.go Serve sets defaultNumCtx from "
        "the summed TotalMemory of the GPUs (>= 47 GiB: 262144, >= 23 GiB: 32768, else 4096); "
        "envconfig.ContextLength's default becomes 0",
        "as 0.13.4, except that a request without num_ctx (and no OLLAMA_CONTEXT_LENGTH) "
        "gets 32768 tokens on 23-47 GiB of total VRAM and 262144 (capped at the trained "
        "context) from 47 GiB: the KV cache of a default load grows 8x or 64x "
        "(oomkit.estimate.ollama_num_ctx); gpt-oss's and qwen3vl's floor of 8192 is gone",
        vision_graph="image_2048_sdpa",
        engine_archs="required",
        llama_runner_fa="auto",
        num_ctx_vram_tiers=True,
    ),
    _g(
        "ollama",
        "llama-server-0.30",
        "Ollama 0.30+ (llama-server for every GGUF model)",
        "2026-06-01",
        "0.30.0",
        "ollama/ollama PR #16031 (commit 9db4bdbad, 'runner: Remove CGO engines, use "
        "llama-server exclusively for GGML models', first in release v0.30.0)",
        "upstream llama-server runs every GGUF; modelled with flash attention on and "
        "num_parallel outputs reserved for the families of OLLAMA_ENGINE_ARCHS, as a 2026 "
        "RTX 5070 log measures (qwen2.5:7b, 29/29 layers, compute buffer 136 MiB: not the "
        "297 MiB of 512 f32 logit rows); the llama-server mechanism is not traced here",
        vision_graph="image_2048_sdpa",
        runner="llama-server",
        num_ctx_vram_tiers=True,
    ),
)
