"""Runtime generations: dated releases whose memory behaviour differs, as data.

A run is made with the runtime of its day. Each :class:`Generation` below starts at the upstream
change that separates it from the previous one (``change`` names the PR/commit/release), says
what differs in memory (``memory``) and carries the switches the estimators read (``effects``).
:func:`resolve_generation` turns a version (``"0.6.3"``, ``"b4500"``, ``"v0.5.7"``) or a date
(``"2024-06"``, ``"2024-06-15"``) into the generation in force; no version means the newest.
llama.cpp takes builds and dates only; a pre-release of X (``0.6.3rc1``) resolves as X; a year
or an undashed date (``2024``, ``20240615``) is an error (:func:`parse_runtime_version`).

Effects read by the estimators (absent key = today's behaviour):

* llama.cpp / Ollama's llama runner: ``flash_attn_default`` (False before PR #15434: no FA
  unless ``-fa``, so the compute buffer holds the n_ctx-wide KQ matrix), ``mla_cache`` (False:
  DeepSeek-V2/V3 cache full K/V heads, ``n_head x (qk_nope + qk_rope)`` K and
  ``n_head x v_head_dim`` V per layer and token, before PR #12801), ``mla_v_cache`` (the
  latent is stored twice, K and V, until PR #19067),
  ``swa_cache`` (False: sliding-window layers cache the whole context, before PR #13194),
  ``kv_streams`` (False: one unified stream whatever ``-np``, before PR #14363),
  ``n_ctx_pad_no_fa`` (cells padding without flash attention: 32 from PR #7257 until PR #16812),
  ``cublas_pool`` (``"none"`` before PR #3776, ``"all"``/``"tensor_cores"`` until PR #8075,
  absent: ``"volta"``, V100 only), ``all_logits``/``attn_pool``
  (:mod:`oomkit.estimate.llamacpp_pool`),
  ``ubatch_split`` (False before PR #6017: a prompt step is ``-b`` tokens, 512 by default, and
  there is no ``-ub``).
* Ollama: ``num_ctx`` default, ``flash_attention`` default, ``llamacpp_date`` (the date of the
  vendored llama.cpp whose generation applies, for releases after the per-release table of
  :mod:`oomkit.estimate.ollama_vendored`, which dates the pin of 0.1.0-0.6.5; present: the
  llama runner runs every model).
* vLLM: ``vllm_engine`` (a key of :data:`oomkit.estimate.vllm_engines.VLLM_ENGINES`),
  ``mxfp4_hopper`` (``"marlin"`` before 0.11: gpt-oss experts padded for the Marlin MoE kernel;
  ``"triton"`` from 0.11, :mod:`oomkit.estimate.vllm_mxfp4`),
  ``mla_latent_kv`` (False before 0.7.1: DeepSeek cached as full 256-dim K/V heads),
  ``nccl_record_stream`` (False from 0.2.6: all-reduce inputs are not pinned, PR #2152),
  ``awq_split_k`` (True before 0.3.1: ``awq_gemm``'s 8 split-K output copies at any batch, PR
  #2566; :mod:`oomkit.estimate.vllm_awq`).
* SGLang: ``mem_fraction`` (``"tp_table"``: SGLang <= 0.4 TP table; ``"gpu_memory"``: PR #10975).
* transformers: ``full_logits`` (True: ``generate`` computes logits for every prompt position and
  upcasts them to fp32, before ``logits_to_keep``/``num_logits_to_keep`` of PR #31292, 4.45).

llama.cpp builds are dated through :data:`LLAMACPP_BUILD_DATES` (release tags ``bNNNN``; anchors
approximate to a few days, b5274 = 2025-05-03 from a log in the validation set): generations
are bounded by dates, so a build number is compared through its date.

The table is written as rows of text and turned into :class:`Generation` objects (with their
``date``) when :data:`GENERATIONS` is first used: an estimate without ``--runtime-version``
echoes the newest generation from the text (:func:`generation_details`) and never imports
:mod:`datetime` (~1 ms of a cold start, issue 10).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from oomkit.errors import InvalidSettingError

if TYPE_CHECKING:
    from datetime import date

__all__ = [
    "GENERATIONS",
    "LLAMACPP_BUILD_DATES",
    "Generation",
    "generation_details",
    "generation_effect",
    "parse_runtime_version",
    "predates_generations",
    "resolve_generation",
]

Effect = bool | int | float | str


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """One dated generation of a runtime."""

    runtime: str
    key: str
    label: str  # what the output echoes: "vLLM V1 (0.8+)"
    since: date  # first day (release/merge date of ``change``)
    since_version: tuple[int, ...] | None  # first release carrying it (None: date only)
    change: str  # the upstream PR/commit/release that starts it
    memory: str  # what differs in memory from the previous generation
    effects: Mapping[str, Effect] = field(default_factory=dict)
    #: what shows the difference: ``test:<file>::<function>`` (a test comparing this generation
    #: with its neighbour), ``run:<id>`` (a real run of tests/fixtures/verdict_runs whose outcome
    #: turns on it) or ``log:<url>`` (a public log that shows it)
    evidence: tuple[str, ...] = ()


#: one row of the table as written: runtime, key, label, since (ISO date), version, change,
#: memory, effects
_Row = tuple[str, str, str, str, str | None, str, str, dict[str, Effect]]


def _g(
    runtime: str,
    key: str,
    label: str,
    since: str,
    version: str | None,
    change: str,
    memory: str,
    **effects: Effect,
) -> _Row:
    return (runtime, key, label, since, version, change, memory, effects)


def _generation(row: _Row) -> Generation:
    from datetime import date

    from oomkit.estimate.generation_evidence import EVIDENCE

    runtime, key, label, since, version, change, memory, effects = row
    return Generation(
        runtime=runtime,
        key=key,
        label=label,
        since=date.fromisoformat(since),
        since_version=None if version is None else _version_tuple(version),
        change=change,
        memory=memory,
        effects=MappingProxyType(effects),
        evidence=EVIDENCE.get((runtime, key), ()),
    )


#: parts a version is padded to: "0.8" is 0.8.0.0, so it compares as 0.8.0 does
_VERSION_PARTS = 4


def _version_tuple(text: str) -> tuple[int, ...]:
    """``"0.8"`` -> ``(0, 8, 0, 0)``: padded, so a two-part version compares as its ``.0``
    release (a bare ``(0, 8)`` sorts below ``(0, 8, 0)`` and picked the generation before)."""
    parts = tuple(int(p) for p in text.split("."))
    return parts + (0,) * (_VERSION_PARTS - len(parts))


_OLD_LLAMACPP = {
    "flash_attn_default": False,
    "mla_cache": False,
    "mla_v_cache": True,
    "swa_cache": False,
    "kv_streams": False,
    "n_ctx_pad_no_fa": 32,
}

#: Oldest first, per runtime. Every row cites the change that starts it.
_ROWS: Mapping[str, tuple[_Row, ...]] = MappingProxyType(
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
            ),
            _g(
                "llama.cpp",
                "2026-01-vless",
                "llama.cpp 2026-01+ (V-less MLA cache)",
                "2026-01-24",
                None,
                "ggml-org/llama.cpp PR #19067 (kv-cache: support V-less cache)",
                "MLA models keep only the K latent: about half the KV of the previous builds",
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
                "vLLM V0 (0.3.1-0.6.2)",
                "2024-02-14",
                "0.3.1",
                "vllm-project/vllm PR #2863 (peak = init free - free: memory other processes held "
                "at init is no longer charged; merged 2024-02-14, first in 0.3.1)",
                "the CUDA context and other processes' memory at init are not charged; the "
                "profile still charges the allocator's reserve and NCCL's buffers",
                vllm_engine="v0-2023",
                mla_latent_kv=False,
                nccl_record_stream=False,
            ),
            _g(
                "vllm",
                "v0-2024",
                "vLLM V0 (0.6.3-0.6.4)",
                "2024-10-14",
                "0.6.3",
                "vllm-project/vllm PR #9352 (gpu_memory_utilization became a whole-GPU limit)",
                "every non-torch byte on the GPU (CUDA context, other processes) is charged to "
                "the budget",
                vllm_engine="v0-2024",
                mla_latent_kv=False,
            ),
            _g(
                "vllm",
                "v0-2025",
                "vLLM V0 (0.6.5-0.7)",
                "2024-12-17",
                "0.6.5",
                "vllm-project/vllm PR #10511 and PR #12126 (per-instance budget again)",
                "only the non-torch increase since init is charged; V0 batch defaults",
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
                "SGLang <=0.5.2 (mem_fraction_static by TP)",
                "2024-01-01",
                "0.1.0",
                "sgl-project/sglang server_args.py ServerArgs.__post_init__ TP table "
                "(release v0.4.x)",
                "mem_fraction_static 0.88/0.87/0.85/0.81/0.79 for tp 1/2/4/8/16 whatever the "
                "GPU size",
                mem_fraction="tp_table",
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
            ),
        ),
    }
)

if TYPE_CHECKING:
    #: llama.cpp release tag -> date (:mod:`oomkit.estimate.generation_builds`, imported on
    #: first use, see ``__getattr__``)
    LLAMACPP_BUILD_DATES: tuple[tuple[int, date], ...]


@cache
def _generations() -> Mapping[str, tuple[Generation, ...]]:
    return MappingProxyType(
        {rt: tuple(_generation(row) for row in rows) for rt, rows in _ROWS.items()}
    )


class _Generations(Mapping[str, tuple[Generation, ...]]):
    """:data:`GENERATIONS`: the table's Generation objects, built on first use (which runtimes
    have generations is known from the rows)."""

    def __getitem__(self, runtime: str) -> tuple[Generation, ...]:
        return _generations()[runtime]

    def __iter__(self) -> Iterator[str]:
        return iter(_ROWS)

    def __len__(self) -> int:
        return len(_ROWS)

    def __contains__(self, runtime: object) -> bool:
        return runtime in _ROWS

    def __repr__(self) -> str:
        return repr(dict(_generations()))


#: runtime -> its generations, oldest first
GENERATIONS: Mapping[str, tuple[Generation, ...]] = _Generations()


def __getattr__(name: str) -> Any:
    """``LLAMACPP_BUILD_DATES``, built when first asked for (PEP 562)."""
    if name == "LLAMACPP_BUILD_DATES":
        from oomkit.estimate.generation_builds import LLAMACPP_BUILD_DATES

        return LLAMACPP_BUILD_DATES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_RUNTIME_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "hf": "transformers"}


@cache
def _version_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(date, llama.cpp build, release) forms of ``--runtime-version``: compiled when a
    version is first read (an estimate without one reads none). A release may carry a
    pre-release (``rc1``, ``a1``, ``b2``, ``dev3``), post-release (``.post1``) or local
    (``+cu121``) suffix; anything else after the numbers (``2024-06-15T00``) is not a release."""
    return (
        re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$"),
        re.compile(r"^b(\d{3,6})$"),
        re.compile(
            r"^v?(\d+(?:\.\d+){0,3})"
            r"(?:[-.]?(?:rc|a|alpha|b|beta|dev|pre|post)[-.]?\d*|\+[0-9a-z][0-9a-z.]*)*$"
        ),
    )


#: no runtime modelled has a major version this large: ``2024`` or ``20240615`` is a date
_MAX_MAJOR = 999
_LOOKS_LIKE_A_DATE = "reads as a year or a date (write a date as 2024-06-15); "


def _accepted_forms(runtime: str) -> str:
    if runtime == "llama.cpp":
        return (
            "give a llama.cpp build such as b4500 (or 4500, as 'llama-cli --version' prints "
            "it) or a date such as 2024-06 or 2024-06-15"
        )
    return "give a release such as 0.6.3 (v0.6.3, 0.6.3rc1) or a date such as 2024-06 or 2024-06-15"


def parse_runtime_version(runtime: str, text: str) -> date | tuple[int, ...]:
    """A date (``2024-06``, ``2024-06-15``, a llama.cpp ``b4500``) or a version tuple.

    llama.cpp has no release numbers, only builds (``b4500``, or ``4500`` as its ``--version``
    prints it) and dates; the other runtimes take releases (``0.6.3``, ``v0.5.7``) and dates.
    A pre-release or post-release is read as its release: ``0.6.3rc1``, ``0.6.3.dev5`` and
    ``0.6.3.post1`` are all ``0.6.3`` and resolve to 0.6.3's generation (a release candidate
    is cut from the release's branch and carries the changes that start its generation).

    Raises:
        InvalidSettingError: none of those forms, a dotted version for llama.cpp, or a
            "version" that is a date written another way (``2024``, ``20240615``,
            ``2024-06-15T00``).
    """
    from datetime import date

    from oomkit.estimate.generation_builds import build_date

    value = text.strip().lower()
    date_re, build_re, version_re = _version_patterns()
    why = ""
    m = date_re.match(value)
    if m:
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3) or 1))
        except ValueError:
            why = "not a calendar date; "
    elif runtime == "llama.cpp":
        if b := build_re.match(value):
            return build_date(int(b.group(1)))
        if value.isdigit() and len(value) <= 6:
            return build_date(int(value))  # "version: 4500 (abc)" as llama.cpp prints it
        if value.isdigit():
            why = _LOOKS_LIKE_A_DATE
        elif version_re.match(value):
            why = "llama.cpp has no release numbers; "
    elif (b := build_re.match(value)) and runtime == "ollama":
        return build_date(int(b.group(1)))  # the vendored llama.cpp build
    elif v := version_re.match(value):
        parts = _version_tuple(v.group(1))
        if parts[0] <= _MAX_MAJOR:
            return parts
        why = _LOOKS_LIKE_A_DATE
    raise InvalidSettingError(
        f"Invalid --runtime-version {text!r} for {runtime}: {why}{_accepted_forms(runtime)}.",
        setting="runtime_version",
        value=text,
    )


def resolve_generation(runtime: str, version: str | None = None) -> Generation:
    """The generation of ``runtime`` in force at ``version`` (newest when None).

    >>> resolve_generation("vllm", "0.6.3").key
    'v0-2024'
    >>> resolve_generation("llama.cpp", "2024-06").key
    '2024'
    >>> resolve_generation("ollama").key
    'engine-0.12'
    """
    rt = runtime.strip().lower()
    rt = _RUNTIME_ALIASES.get(rt, rt)
    gens = _generations().get(rt)
    if gens is None:
        raise InvalidSettingError(
            f"No runtime generations for 'runtime' ({runtime!r}): known " + ", ".join(_ROWS) + ".",
            setting="runtime",
            value=runtime,
        )
    if version is None or not version.strip():
        return gens[-1]
    from datetime import date

    when = parse_runtime_version(rt, version)
    chosen = gens[0]
    for gen in gens:
        if isinstance(when, date):
            if gen.since <= when:
                chosen = gen
        elif gen.since_version is not None and gen.since_version <= when:
            chosen = gen
    return chosen


def predates_generations(runtime: str, version: str | None) -> bool:
    """``version`` is older than every modelled generation of ``runtime`` (which
    :func:`resolve_generation` then answers with the oldest one).

    >>> predates_generations("vllm", "0.0.1"), predates_generations("vllm", "0.2.5")
    (True, False)
    """
    if version is None or not version.strip():
        return False
    rt = _RUNTIME_ALIASES.get(runtime.strip().lower(), runtime.strip().lower())
    gens = _generations().get(rt, ())
    if not gens:
        return False
    from datetime import date

    when = parse_runtime_version(rt, version)
    if isinstance(when, date):
        return all(gen.since > when for gen in gens)
    return all(gen.since_version is None or gen.since_version > when for gen in gens)


def generation_details(runtime: str, version: str | None) -> dict[str, str | None] | None:
    """What an estimate echoes as ``runtime_details["generation"]``: the generation of
    ``runtime`` (a key of :data:`GENERATIONS`) in force at ``version``; None when the runtime
    has no generations.

    Without a version it is the newest row, read from the table's text: the dated table (and
    :mod:`datetime`) is not built for it. ``tests/test_generations.py`` checks both ways agree.
    """
    rows = _ROWS.get(runtime)
    if rows is None:
        return None
    if version is None or not version.strip():
        _, key, label, since, _, change, memory, _ = rows[-1]
    else:
        gen = resolve_generation(runtime, version)
        key, label, since = gen.key, gen.label, gen.since.isoformat()
        change, memory = gen.change, gen.memory
    return {
        "key": key,
        "label": label,
        "requested": version,
        "since": since,
        "change": change,
        "memory": memory,
    }


def generation_effect(gen: Generation, name: str, default: Effect) -> Effect:
    """``gen.effects[name]`` or ``default`` (today's behaviour)."""
    return gen.effects.get(name, default)


def llamacpp_options(version: str | None, options: object | None) -> object | None:
    """``options`` (a ``LlamaCppOptions`` or None) with the llama.cpp generation's switches.

    ``version`` None keeps today's behaviour (``options`` unchanged).
    """
    if version is None:
        return options
    import dataclasses

    from oomkit.estimate.llamacpp_params import LlamaCppOptions

    gen = resolve_generation("llama.cpp", version)
    base = options if isinstance(options, LlamaCppOptions) else LlamaCppOptions()
    pad = gen.effects.get("n_ctx_pad_no_fa")
    pool = gen.effects.get("cublas_pool", "volta")
    return dataclasses.replace(
        base,
        flash_attn_default=bool(gen.effects.get("flash_attn_default", True)),
        mla_cache=bool(gen.effects.get("mla_cache", True)),
        mla_v_cache=bool(gen.effects.get("mla_v_cache", base.mla_v_cache)),
        swa_cache=bool(gen.effects.get("swa_cache", True)),
        kv_streams=bool(gen.effects.get("kv_streams", True)),
        n_ctx_pad_no_fa=pad if isinstance(pad, int) else None,
        cublas_pool=None if pool == "none" else str(pool),
        all_logits=bool(gen.effects.get("all_logits", False)),
        attn_pool=str(gen.effects["attn_pool"]) if "attn_pool" in gen.effects else None,
        ubatch_split=bool(gen.effects.get("ubatch_split", True)),
    )
