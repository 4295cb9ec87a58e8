"""Which runner an Ollama release starts for a model, and what that runner asks llama.cpp for.

From 0.12 until llama-server replaced both runners (0.30.0), ``llm/server.go``
``NewLlamaServer`` starts Ollama's own Go engine (ollamarunner) only when
``envconfig.NewEngine()`` (``OLLAMA_NEW_ENGINE``, off by default) or
``f.KV().OllamaEngineRequired()`` (fs/ggml/ggml.go) says so; every other architecture runs on the
llama runner (runner/llamarunner, llama.cpp through cgo). ``OllamaEngineRequired`` never listed
``llama``, ``qwen2``, ``mistral`` or ``gemma2`` (v0.12.0: gemma3, gemma3n, mistral3, qwen3,
llama4, mllama, qwen25vl, gptoss; qwen3moe from v0.12.3; deepseek2, qwen3vl, olmo3, ... later,
through v0.20): Qwen2.5 and Llama 3 GGUFs keep the llama runner.

What the llama runner asks llama.cpp for (``llama/llama.go`` ``NewContextParams``):

* outputs: nothing limits them, so llama.cpp reserves its worst-case graph with
  ``n_outputs = n_tokens`` (llama-context.cpp: ``graph_reserve(n_tokens, n_seqs, n_tokens)``);
  the logits of a whole micro-batch sit in the compute buffer, and with the output layer on the
  CPU the main GPU stages that layer's weight for the large-batch matmul (op_offload). The
  Ollama engine reserves ``num_parallel`` outputs instead.
* KV: ``kv_unified`` is never set, so llama.cpp's default applies (one stream per sequence
  since PR #14363).
* flash attention: until 0.13.3 ``envconfig.FlashAttention(f.FlashAttention())``, whose default
  list (``GGML.FlashAttention``) names only Ollama-engine architectures: off on the llama runner
  unless ``OLLAMA_FLASH_ATTENTION=1``. From v0.13.4 (PR #13052, commit bd6c1d6b4, "flash attn:
  add auto mode for llama engine") a llama runner whose user set no ``OLLAMA_FLASH_ATTENTION``
  gets ``LLAMA_FLASH_ATTN_TYPE_AUTO`` (llama.cpp PR #15434's ``-fa auto``), and a quantized
  ``OLLAMA_KV_CACHE_TYPE`` is dropped to f16 ("OLLAMA_FLASH_ATTENTION must be enabled to use a
  quantized OLLAMA_KV_CACHE_TYPE"); without flash attention no release from 0.5.0 passes the
  cache type at all (llm/server.go: "quantized kv cache requested but flash attention
  disabled").
"""

from __future__ import annotations

from datetime import date

from oomkit.estimate.generations import Generation, parse_runtime_version
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "OLLAMA_ENGINE_ARCHS",
    "OLLAMA_ENGINE_REQUIRED",
    "OLLAMA_ENGINE_REQUIRED_HF",
    "engine_archs_required",
    "engine_required",
    "llama_runner_fa_auto",
    "runner_attention",
    "runs_llama_server",
    "server_output_rows",
]

#: model families oomkit runs on the Ollama engine's terms (flash attention on, num_parallel
#: outputs reserved) where the release picks no runner by ``OllamaEngineRequired``: before 0.12
#: (then only gpt-oss has a case of its own) and from 0.30 (llama-server; its row cites the
#: measured log those terms match)
OLLAMA_ENGINE_ARCHS: frozenset[str] = frozenset(
    {
        "llama",
        "mistral",
        "mistral3",
        "qwen2",
        "qwen3",
        "qwen3_moe",
        "gemma2",
        "gemma3",
        "gemma3_text",
        "gpt_oss",
        "llama4",
        "llama4_text",
    }
)

#: HF model types whose GGUF architecture is in ``OllamaEngineRequired`` (fs/ggml/ggml.go) of the
#: releases 0.12.x-0.2x: mistral3, qwen3 (qwen3moe from v0.12.3), gemma3, gptoss, llama4
OLLAMA_ENGINE_REQUIRED: frozenset[str] = frozenset(
    {
        "mistral3",
        "qwen3",
        "qwen3_moe",
        "gemma3",
        "gemma3_text",
        "gpt_oss",
        "llama4",
        "llama4_text",
    }
)


#: HF architectures whose GGUF is an ``OllamaEngineRequired`` one whatever the text model's type:
#: Mistral Small 3.x (text config ``mistral``) is ``mistral3`` in Ollama's library, Qwen2.5-VL
#: ``qwen25vl``, Llama 3.2 Vision ``mllama``
OLLAMA_ENGINE_REQUIRED_HF: frozenset[str] = frozenset(
    {
        "Mistral3ForConditionalGeneration",
        "Gemma3ForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "MllamaForConditionalGeneration",
        "Llama4ForConditionalGeneration",
    }
)


#: ollama/ollama v0.30.5 (commit 455f57457, PR #16511, 2026-06-04) pins llama.cpp b9509 in
#: LLAMA_CPP_VERSION, "which includes the upstream Gemma 4 12B multimodal projector fixes":
#: llama.cpp PR #24088, merged 2026-06-03 after issue #24085 on build 9495. llama.cpp builds
#: number master's commits in order, so b9509 also holds PR #23861 (merged 2026-06-01). v0.30.0
#: (b9452, pinned 2026-06-01 by commit 630882621) to v0.30.4 (b9493) may predate the merge: the
#: source does not show it, so they keep the rows of the ``llama-server-0.30`` generation
SERVER_OUTPUTS_RELEASE = (0, 30, 5)
SERVER_OUTPUTS_DATE = date(2026, 6, 4)


def server_output_rows(version: str | None) -> bool:
    """The Ollama release's llama-server reserves ``min(n_batch, n_parallel)`` output rows for
    every GGUF (llama.cpp PR #23861's ``server_n_outputs_max``; Ollama's llm/llama_server.go
    passes ``-np numParallel`` and ``-b``/``-ub`` of ``num_batch``): v0.30.5 and later, and
    the newest release when none is given. A date stands for the releases of that day."""
    if version is None or not version.strip():
        return True
    when = parse_runtime_version("ollama", version)
    if isinstance(when, tuple):
        return when >= SERVER_OUTPUTS_RELEASE
    return when >= SERVER_OUTPUTS_DATE


def engine_required(spec: ModelSpec) -> bool:
    """``OllamaEngineRequired`` (0.12-0.2x) for the GGUF of ``spec``."""
    return spec.model_type in OLLAMA_ENGINE_REQUIRED or spec.architecture in (
        OLLAMA_ENGINE_REQUIRED_HF
    )


def engine_archs_required(gen: Generation | None) -> bool:
    """The release ``gen`` picks the runner by ``OllamaEngineRequired`` (0.12.0 until 0.30.0)."""
    return gen is not None and gen.effects.get("engine_archs") == "required"


def llama_runner_fa_auto(gen: Generation | None) -> bool:
    """The release ``gen`` hands the llama runner flash attention ``auto`` when
    ``OLLAMA_FLASH_ATTENTION`` is unset (v0.13.4 on, PR #13052)."""
    return gen is not None and gen.effects.get("llama_runner_fa") == "auto"


def runs_llama_server(gen: Generation | None) -> bool:
    """The release ``gen`` (None: the newest) runs every GGUF on upstream llama-server (0.30+,
    ollama PR #16031 'use llama-server exclusively for GGML models'): no Ollama engine, no
    llama runner; the families of :data:`OLLAMA_ENGINE_ARCHS` keep that engine's terms only as
    the measured llama-server memory they match (the ``llama-server-0.30`` generation row)."""
    from oomkit.estimate.generations import resolve_generation

    return (gen or resolve_generation("ollama")).effects.get("runner") == "llama-server"


def runner_attention(
    settings: InferenceSettings,
    gen: Generation | None,
    new_engine: bool,
    kv: str | None,
    notes: list[str],
) -> tuple[bool | None, str | None, bool | None]:
    """(flash_attn, KV cache type, kv_unified) that the runner of ``gen`` asks llama.cpp for,
    given the user's ``settings`` and the ``OLLAMA_KV_CACHE_TYPE`` ``kv``; appends its notes.

    ``flash_attn`` None is llama.cpp's ``auto`` (the llama runner from 0.13.4 when
    ``OLLAMA_FLASH_ATTENTION`` is unset); ``kv_unified`` None is llama.cpp's default (the llama
    runner of 0.12+ never sets it), True the single stream oomkit assumes elsewhere."""
    fa_auto = settings.flash_attn is None and not new_engine and llama_runner_fa_auto(gen)
    if settings.flash_attn is not None:
        flash: bool | None = settings.flash_attn
    else:
        flash = None if fa_auto else new_engine
        notes.append(
            "OLLAMA_FLASH_ATTENTION not set: "
            + (
                "on (llama-server as Ollama 0.30+ starts it for this family, as a 2026 log "
                "measures)"
                if new_engine and runs_llama_server(gen)
                else "on (the Ollama engine enables it where supported)"
                if new_engine
                else "'auto' on the llama runner (0.13.4+, ollama PR #13052)"
                if fa_auto
                else "off"
            )
        )
    if kv in ("q8_0", "q4_0") and (fa_auto or flash is False):
        # llm/server.go (0.5.0+) passes OLLAMA_KV_CACHE_TYPE only with flash attention on
        notes.append(
            f"OLLAMA_KV_CACHE_TYPE {kv} needs OLLAMA_FLASH_ATTENTION set on the llama runner "
            "(0.13.4+, llm/server.go): f16 cache"
            if fa_auto
            else f"OLLAMA_KV_CACHE_TYPE {kv} without flash attention: Ollama passes no cache "
            "type ('quantized kv cache requested but flash attention disabled'): f16 cache"
        )
        kv = None
    unified = None if engine_archs_required(gen) and not new_engine else True
    return flash, kv, unified
