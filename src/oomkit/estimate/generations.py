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
  latent is stored twice, K and V, until PR #19067), ``mla_kv_types_equal`` (False before
  PR #25871, July 2026: an MLA model with a K cache type other than V's starts; before
  PR #19067 its V cache is its own tensor of the V type, after it there is none),
  ``swa_cache`` (False: sliding-window layers cache the whole context, before PR #13194),
  ``kv_streams`` (False: one unified stream whatever ``-np``, before PR #14363),
  ``n_ctx_pad_no_fa`` (cells padding without flash attention: 32 from PR #7257 until PR #16812),
  ``cublas_pool`` (``"none"`` before PR #3776, ``"all"``/``"tensor_cores"`` until PR #8075,
  absent: ``"volta"``, V100 only), ``all_logits``/``attn_pool``
  (:mod:`oomkit.estimate.llamacpp_pool`),
  ``ubatch_split`` (False before PR #6017: a prompt step is ``-b`` tokens, 512 by default, and
  there is no ``-ub``), ``row_main_gpu`` (True before PR #10026: ``-sm row`` keeps every
  offloaded layer, its KV and the compute graph on the main GPU), ``cuda_moe_fusion_deps``
  (False before PR #25952: the CUDA backend's MoE fusions add no allocation dependencies),
  ``server_auto_slots`` (False before PR #16736, about 2025-11-01: llama-server without
  ``-np`` runs one sequence; from it 4 slots on a unified KV cache),
  ``fit_params`` (False before PR #16653, Dec 2025: no ``--fit``, ``-c`` 4096 and every layer
  when unset; from it the trained context and layers are fitted to free memory,
  :mod:`oomkit.estimate.llamacpp_fit`),
  ``server_outputs`` (False before PR #23861, June 2026: llama-server reserves output rows for
  the whole micro-batch like the C API; :mod:`oomkit.estimate.llamacpp_outputs`),
  ``compute_chunks`` (False before PR #15815: ggml-alloc reserves each backend's compute buffer
  as ONE buffer, which a Vulkan device's per-allocation limit caps;
  :mod:`oomkit.estimate.llamacpp_maxalloc`), ``sycl_kq_on_cpu`` (True for b4069-b4126, PR
  #10257 until its revert PR #10385: ggml-sycl refuses a permuted MUL_MAT, the KQ product runs
  on the CPU and the SYCL compute buffer holds it twice; :mod:`oomkit.estimate.llamacpp_sycl`),
  ``metal_views`` (False before PR #1826, June
  2023: ggml-metal makes the whole model file ONE Metal buffer, refused above the device's
  ``maxBufferLength``, half the installed memory; :mod:`oomkit.estimate.llamacpp_metal`),
  ``metal_scratch`` (True before PR #2325, 2023-07-22: the Metal compute memory is the fixed
  ``eval``/``scr0``/``scr1`` buffers sized by model type), ``q2k_mix`` (a Q2_K file is
  llama-quantize's mix of the day: ``"k-quants-2023-06"`` from PR #1684, ``"3bit-2023-08"``
  from PR #2707, mostly Q3_K, until January 2024; :mod:`oomkit.quant.llamacpp_q2k_legacy`),
  ``sched_staging`` (False before PR #4766, 2024-01-12: no ``ggml_backend_sched``, so a partial
  offload's large-batch matmuls over CPU weights copy one tensor at a time into ggml-cuda's pool
  instead of staging a CPU layer and the output head in the main GPU's compute buffer),
  ``offload_op_splits`` (False before PR #6083, 2024-03-18: the scheduler did not yet start a
  split at each offloaded CPU weight, so the main GPU is charged a whole CPU layer's weights;
  from it one weight copy at a time, :mod:`oomkit.estimate.llamacpp_offload_splits`),
  ``moe_mix`` (``"pre-4872"`` before PR #4872, 2024-01-11: a k-quant MoE file keeps every
  expert matrix at the file type's default type; :mod:`oomkit.quant.llamacpp_moe_legacy`),
  ``moe_slot_loop`` (True before PR #6505, April 2024: the MoE graph runs one mul_mat_id per
  selected-expert slot, so the compute buffer holds one slot's expert activations at a time).
* Ollama: ``num_ctx`` default, ``flash_attention`` default, ``llamacpp_date`` (the date of the
  vendored llama.cpp whose generation applies, for releases after the per-release table of
  :mod:`oomkit.estimate.ollama_vendored`, which dates the pin of 0.1.0-0.6.5; present: the
  llama runner runs every model), and for gpt-oss on 0.11.x (the Ollama engine) ``gptoss_graph``
  (the release's ``GraphSize`` 'gptoss' case), ``gptoss_sinks`` (``"concat"``: a second F32
  score tensor until 0.11.4) and ``gptoss_flash`` (never / the user's / on by default;
  :mod:`oomkit.estimate.ollama_gptoss`); ``vision_graph`` (from 0.7.1 the Ollama engine
  reserves its graph with a 2048x2048 image, ``"image_2048"``; ``"image_2048_sdpa"`` from
  0.13.2, where flash attention fuses the encoder's attention;
  :mod:`oomkit.estimate.ollama_vision_graph`); ``engine_archs`` (``"required"`` for 0.12-0.2x:
  only ``OllamaEngineRequired`` architectures run on the Ollama engine, the rest on the llama
  runner with llama.cpp's own output reserve and KV streams), ``llama_runner_fa`` (``"auto"``
  from 0.13.4, PR #13052), ``num_ctx_vram_tiers`` (True from 0.15.5: the default num_ctx
  follows the total VRAM, :mod:`oomkit.estimate.ollama_num_ctx`) and ``runner``
  (``"llama-server"`` from 0.30.0;
  :mod:`oomkit.estimate.ollama_runner`); ``nvml_by_index`` (0.1.45-0.3.x: on Windows each
  GPU's free memory is NVML's at its CUDA index, :mod:`oomkit.estimate.ollama_nvml_order`).
* vLLM: ``vllm_engine`` (a key of :data:`oomkit.estimate.vllm_engines.VLLM_ENGINES`),
  ``mxfp4_hopper`` (``"marlin"`` before 0.11: gpt-oss experts padded for the Marlin MoE kernel;
  ``"triton"`` from 0.11, :mod:`oomkit.estimate.vllm_mxfp4`),
  ``mla_latent_kv`` (False before 0.7.1: DeepSeek cached as full 256-dim K/V heads),
  ``nccl_record_stream`` (False from 0.2.6: all-reduce inputs are not pinned, PR #2152),
  ``gemma2_window_cap`` (True from Gemma 2's arrival, PR #5908 in 0.5.1, until PR #10584 in
  0.6.5: its max_model_len is capped to the 4096-token sliding window,
  :mod:`oomkit.estimate.vllm_gemma2`),
  ``nvls_nccl`` (``"2.20"`` for 0.5.0-0.6.3, torch 2.3/2.4's NCCL: NVLS buffers of the TP
  group's two communicators on an NVSwitch node with TP > 2, :mod:`oomkit.estimate.vllm_nvls`),
  ``awq_split_k`` (True before 0.3.1: ``awq_gemm``'s 8 split-K output copies at any batch, PR
  #2566; :mod:`oomkit.estimate.vllm_awq`), ``kv_len_check`` (False before 0.2.7: no start-up
  check of ``max_model_len`` against the KV cache, PR #2163; a longer request hangs),
  ``long_context_chunked`` (False before 0.5.3: V0 never turns chunked prefill on by itself,
  so above 32K the profile batch is the whole ``max_model_len``, PR #6666;
  :func:`oomkit.estimate.vllm_engines.v0_full_profile_batch`),
  ``v1_needs_ampere`` (True for 0.8.0-0.10.1: the V1 oracle sends compute capability < 8.0 to
  V0 until PR #23614, :func:`oomkit.estimate.vllm_support.v0_capability_engine`),
  ``graph_profiling`` (True from 0.18.0: PR #30515's ``profile_cudagraph_memory`` runs, so
  ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` switches the estimate on or off,
  :func:`oomkit.estimate.vllm_engines.graph_estimate_charged`),
  ``mrv2_default`` (0.22-0.28: which models run Model Runner V2 by default, whose CUDA-graph
  estimate is 0, so the graphs go to the ``1 - util`` headroom: ``"qwen3"``, ``"llama"``,
  ``"listed"``, ``"dense"``; :mod:`oomkit.estimate.vllm_mrv2`),
  ``compiled_pooling_unmodelled`` (True from 0.25.0: a pooling model under torch.compile
  profiles more than its eager forward, vLLM #49672 / PR #49749; the verdict is at best
  "tight", :mod:`oomkit.estimate.vllm_compiled_pooling`).
* SGLang: ``mem_fraction`` (``"tp_table"``: SGLang <= 0.4 TP table; ``"gpu_memory"``: PR #10975);
  for multimodal architectures (:func:`oomkit.estimate.sglang.multimodal_policy`)
  ``mm_fraction`` (the ``mem_fraction_static`` factor; absent: none modelled),
  ``mm_fraction_default_only`` (True from v0.4.9: an explicit fraction is left alone),
  ``mm_chunked_off`` (``"all"``, ``"listed"``, ``"unsupported"`` or ``"not_modelled"``: which
  VLMs run without chunked prefill), ``mm_text_only`` (architectures served text-only by
  default, comma-separated) and ``vision`` (``Arch:replicated`` / ``Arch:sharded``, comma-
  separated: how those architectures' vision towers are built on each rank),
  ``fa3_local_table`` (``"per_seq"`` before PR #6273, ``"per_chunk"`` after: the fa3 backend's
  CUDA-graph ``local_block_table`` for chunked-attention models,
  :mod:`oomkit.estimate.sglang_graph_tables`) and ``graph_bs`` (``"160"``, or ``"160_256"``: 256
  on GPUs above 80 GiB, PR #5893; absent: PR #10975's defaults), ``hybrid_swa`` (architectures
  whose token pool is split between full and sliding-window layers, comma-separated),
  ``swa_split`` (``"tokens"``: by layer count, v0.4.10-v0.5.8; ``"memory"``: by bytes, v0.5.9)
  and ``swa_off_speculative`` (True: no split with speculative decoding, v0.5.8):
  :mod:`oomkit.estimate.sglang_swa`. Post-releases
  resolve as their release (``0.4.5.post1`` is 0.4.5), so the rows that start at one (Llama 4's
  multimodal window, v0.4.6.post2, v0.4.6.post5) are dated only: give a date for them.
* transformers: ``full_logits`` (True: ``generate`` computes logits for every prompt position and
  upcasts them to fp32, before ``logits_to_keep``/``num_logits_to_keep`` of PR #31292, 4.45),
  ``bnb_fused_experts_unquantized`` (True from 5.0: MoE experts are fused 3-D parameters that
  bitsandbytes' ``nn.Linear`` replacement skips, so ``load_in_4bit``/``8bit`` leaves them in the
  load dtype; bitsandbytes#1849), ``moe_experts`` (``"loop"``: a Python loop over the experts
  with each expert's tokens; ``"grouped_mm"`` from 5.0: ``grouped_mm_experts_forward`` sorts the
  B·S·k token-expert rows and keeps four B·S·k·h buffers alive at its peak),
  ``default_attn`` (``"eager"`` before 4.36: no ``attn_implementation`` and no SDPA path, PR
  #26572; the prompt's B·a·S² scores are a verdict band term, ``eager_scores_bytes``),
  ``sliding_prefill_full`` (True from 4.56, PR #40039: a ``DynamicSlidingWindowLayer`` keeps a
  view of the whole prefill's K/V, so at the prefill's peak a sliding layer holds the prompt,
  not its window; before: the Hub default of Gemma-2/3, the static ``HybridCache``),
  ``phi3_rope_recompute`` (True from 4.45, PR #33129: Phi-3-family models drop the cache and
  re-prefill the whole sequence when it first crosses ``original_max_position_embeddings``,
  with the old cache still held).

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
from oomkit.estimate.generation_table import ROWS as _ROWS
from oomkit.estimate.generation_table import Effect
from oomkit.estimate.generation_table import Row as _Row

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

    >>> resolve_generation("vllm", "0.6.4").key
    'v0-2024'
    >>> resolve_generation("llama.cpp", "2024-06").key
    '2024'
    >>> resolve_generation("ollama").key
    'llama-server-0.30'
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
    from oomkit.estimate.llamacpp_unified import metal_op_offload

    gen = resolve_generation("llama.cpp", version)
    base = options if isinstance(options, LlamaCppOptions) else LlamaCppOptions()
    pad = gen.effects.get("n_ctx_pad_no_fa")
    pool = gen.effects.get("cublas_pool", "volta")
    return dataclasses.replace(
        base,
        flash_attn_default=bool(gen.effects.get("flash_attn_default", True)),
        mla_cache=bool(gen.effects.get("mla_cache", True)),
        mla_v_cache=bool(gen.effects.get("mla_v_cache", base.mla_v_cache)),
        mla_kv_types_equal=bool(gen.effects.get("mla_kv_types_equal", True)),
        swa_cache=bool(gen.effects.get("swa_cache", True)),
        kv_streams=bool(gen.effects.get("kv_streams", True)),
        n_ctx_pad_no_fa=pad if isinstance(pad, int) else None,
        cublas_pool=None if pool == "none" else str(pool),
        all_logits=bool(gen.effects.get("all_logits", False)),
        attn_pool=str(gen.effects["attn_pool"]) if "attn_pool" in gen.effects else None,
        ubatch_split=bool(gen.effects.get("ubatch_split", True)),
        row_main_gpu=bool(gen.effects.get("row_main_gpu", False)),
        cuda_moe_fusion_deps=bool(gen.effects.get("cuda_moe_fusion_deps", True)),
        sched_staging=bool(gen.effects.get("sched_staging", True)),
        offload_op_splits=bool(gen.effects.get("offload_op_splits", True)),
        metal_op_offload=metal_op_offload(version),
        server_outputs=bool(gen.effects.get("server_outputs", True)),
        server_auto_slots=bool(gen.effects.get("server_auto_slots", True)),
        compute_chunks=bool(gen.effects.get("compute_chunks", True)),
        sycl_kq_on_cpu=bool(gen.effects.get("sycl_kq_on_cpu", False)),
        metal_views=bool(gen.effects.get("metal_views", True)),
        metal_scratch=bool(gen.effects.get("metal_scratch", False)),
        q2k_mix=str(gen.effects["q2k_mix"]) if "q2k_mix" in gen.effects else None,
        moe_mix=str(gen.effects["moe_mix"]) if "moe_mix" in gen.effects else None,
        moe_slot_loop=bool(gen.effects.get("moe_slot_loop", False)),
    )
