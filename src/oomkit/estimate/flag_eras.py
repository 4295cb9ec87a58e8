"""When each llama.cpp flag and Ollama environment variable that oomkit emits or accepts first
existed, so a ``--runtime-version`` of an old build neither gets a command line that build
cannot parse nor a verdict for a setting it could not express.

One row per lever: the flag as the runtime spells it, the first release (llama.cpp: the merge
date of the PR, the build where oomkit's other tables know it; Ollama: the first release tag
that contains the commit), the PR and what the flag does. A version is compared as oomkit
reads every ``--runtime-version`` (:func:`oomkit.estimate.generations.parse_runtime_version`):
a llama.cpp build through its date, an Ollama release as a version or a date.

Sources (llama.cpp: the PR threads on github.com/ggml-org/llama.cpp; Ollama: ``git log -S`` and
``git tag --contains`` in github.com/ollama/ollama):

* ``-ctk``/``-ctv`` (``--cache-type-k/v``): PR #4312 "llama : support quantum K cache" (opened
  2023-12-03, on top of #4309 "per-layer KV cache"; it reached master inside #4309, commit
  bcc0eb4, 2023-12-07: ggml-org/ci's run of that commit), in ``common/common.cpp`` for ``main``:
  its description: ``-ctv`` "(not implemented yet)", V cache quantization left for later.
  llama.cpp's ``server`` parsed its own arguments until PR #5684 "server: add KV cache
  quantization options" (opened 2024-02-23; the 2024-02-25 merge date is read from the thread,
  not from a commit: the one date of this table not checked against a commit) added them there.
* ``-fa``/``--flash-attn``: PR #5021 "ggml : add Flash Attention" (commit 9c67c27, 2024-04-30:
  ggml-org/ci's run of that commit), build 2771: ``main: build = 2771 (9c67c277)`` in that run's
  log (ggml-org/ci ``llama.cpp/9c/67c2773d.../ggml-3-arm64-cpu/open_llama_3b_v2-tg-f16.log``;
  the build number is the commit count the ``bNNNN`` release tags carry);
  it also made a quantized V cache possible: ``llama_new_context_with_model`` refuses one
  without flash attention ("V cache quantization requires flash_attn").
* ``-ub``: PR #6017 (b2413, 2024-03-13; :mod:`oomkit.estimate.llamacpp_params` notes it).
* ``llama-server``: PR #7809 "build: rename main -> llama-cli, server -> llama-server"
  (commit 1c641e6, 2024-06-12 UTC: ggml-org/ci's run of that commit), build 3142:
  ``main: build = 3142 (1c641e6a)`` printed by ``./bin/llama-cli`` in that run (ggml-org/ci
  ``llama.cpp/1c/641e6aac.../ggml-2-x86-cpu/pythia_1_4b-tg-f16.log``); before it the binary was
  ``server`` (examples/server).
* ``-ot``/``--override-tensor``: PR #11397 "llama : add option to override model tensor
  buffers" (commit e0e912f, 2025-04-02; llama-bench got ``--override-tensors`` in PR #12922
  that April). Its first build is not pinned: no ggml-org/ci run or release page of e0e912f
  is stored (a third-party table says b5028, not checked), so builds compare by date.
* ``--n-cpu-moe``/``--cpu-moe``: PR #15077 (b6089, 2025-08-04), a shorthand for ``-ot`` rules
  (:func:`oomkit.planner.commands_llamacpp.llamacpp_cpu_moe_flags` prints ``-ot`` before it).
* ``-fa on|off|auto``: PR #15434 (2025-08-30); before it a bare ``-fa`` switch. Its first
  build is not pinned here: mybigday/llama.node PR #102 ("sync llama.cpp to b6327", 2025-08-31)
  already replaces ``flash_attn`` with ``flash_attn_type`` (auto|on|off), so it is b6327 or
  earlier (the b6343 once written in planner/commands_llamacpp.py was too late); no stored
  record maps the merge commit to its tag, so builds are compared through their dates
  (:func:`oomkit.planner.commands_llamacpp.llamacpp_fa_flags`, the generation's
  ``flash_attn_default``).
* ``-md``/``--model-draft``, ``-ngld``, ``--draft-max``/``--draft-min`` in ``llama-server``: PR
  #10455 "server : add speculative decoding support" (2024-11-25; the server's draft context
  size ``-cd`` follows in PR #10586, 2024-11-29); ``-ctkd``/``-ctvd``: PR #13782 "server: args
  for draft model cache types" (merged after its 2025-06-19 review). The same dates as
  :mod:`oomkit.estimate.llamacpp_draft` (``SPEC_SERVER_SINCE``, ``DRAFT_CACHE_TYPES_SINCE``),
  which refuses ``-md`` before the first and ignores ``-ctkd``/``-ctvd`` (f16) before the
  second; no build number is pinned for either.
* ``-c 0`` ("0 = loaded from model", common/arg.cpp): PR #3301 "llama.cpp : split
  llama_context_params into model and context params" (opened 2023-09-21; merged 2023-09-28,
  the date of its commit 16bc66d; first build not pinned): "Uses the model ``n_ctx_train`` as
  the default context size when ``llama_context_params::n_ctx == 0`` or ``-c 0``". Before it a
  context of 0 was not a request for the trained context.
* an explicit ``-c 0`` kept by ``--fit``: PR #19070 "llama-fit-params: keep explicit
  --ctx-size 0" (JohannesGaessler, 2026-01-24, fixing issue #18376 of build 7539: "-c0 ... is
  now defaulting to 4096"): ``-c 0`` sets ``fit_params_min_ctx = UINT32_MAX`` ("disable context
  reduction in llama_params_fit if the user explicitly requests the full context size"). From
  PR #16653 (the fit, December 2025) to it, ``-c 0`` was the default and the fit lowered it.
  The date is the PR's review date (the merge commit is not stored), so builds compare by date.
* Ollama ``OLLAMA_FLASH_ATTENTION``: commit 38255d2af "Use flash attention flag for now"
  (#4580, 2024-05-22; envconfig since 4cc3be303, #4608), first in v0.1.39 (2024-05-28): the
  runner passed ``--flash-attn`` from e15307fdf (#4120, 2024-05-21, also first in v0.1.39),
  so no earlier release has flash attention at all.
* Ollama ``OLLAMA_NUM_PARALLEL``: commit 34b9db5af "Request and model concurrency"
  (2024-03-30), first in v0.1.33 (2024-05-02).
* Ollama ``OLLAMA_KV_CACHE_TYPE``: commit 1bdab9fdb "llm: introduce k/v context quantization
  (vRAM improvements)" (#6279, 2024-12-04), first in v0.5.0 (2024-12-04; v0.4.8-rc0 only).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from oomkit.errors import InvalidSettingError
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "LLAMACPP_FLAG_ERAS",
    "OLLAMA_FLAG_ERAS",
    "FlagEra",
    "check_flag_eras",
    "flag_available",
    "flag_era",
    "llamacpp_server_binary",
]


@dataclass(frozen=True, slots=True)
class FlagEra:
    """One lever and the first release that has it."""

    key: str  # oomkit's name for the lever
    flag: str  # as the runtime spells it
    since: date  # llama.cpp: the PR's merge date; Ollama: the first release's date
    source: str  # PR / commit
    what: str
    build: int | None = None  # llama.cpp: the first build, where known
    release: tuple[int, ...] | None = None  # Ollama: the first release with it

    def first(self) -> str:
        """The first release in words: ``b6089 (2025-08-04)``, ``v0.5.0 (2024-12-04)``."""
        if self.release is not None:
            return f"v{'.'.join(map(str, self.release))} ({self.since.isoformat()})"
        if self.build is not None:
            return f"b{self.build} ({self.since.isoformat()})"
        return f"builds from {self.since.isoformat()}"


LLAMACPP_FLAG_ERAS: tuple[FlagEra, ...] = (
    FlagEra(
        "cache_type",
        "-ctk/-ctv (--cache-type-k/v)",
        date(2023, 12, 7),
        "PR #4312",
        "KV cache type (main; the server got it in PR #5684)",
    ),
    FlagEra(
        "server_cache_type",
        "-ctk/-ctv (--cache-type-k/v) in the server",
        date(2024, 2, 25),
        "PR #5684",
        "KV cache type for the server",
    ),
    FlagEra("ubatch", "-ub (--ubatch-size)", date(2024, 3, 13), "PR #6017", "physical batch", 2413),
    FlagEra(
        "flash_attn",
        "-fa (--flash-attn)",
        date(2024, 4, 30),
        "PR #5021",
        "flash attention (a bare switch until PR #15434)",
        2771,
    ),
    FlagEra(
        "quantized_v",
        "a quantized -ctv (V cache)",
        date(2024, 4, 30),
        "PR #5021",
        "V cache quantization (requires flash attention)",
        2771,
    ),
    FlagEra(
        "llama_server",
        "llama-server (the binary; 'server' before)",
        date(2024, 6, 12),
        "PR #7809",
        "binaries renamed with the llama- prefix",
        3142,
    ),
    FlagEra(
        "override_tensor",
        "-ot (--override-tensor)",
        date(2025, 4, 2),
        "PR #11397",
        "tensor buffer overrides (experts on the CPU)",
    ),
    FlagEra(
        "n_cpu_moe",
        "--n-cpu-moe/--cpu-moe",
        date(2025, 8, 4),
        "PR #15077",
        "experts of the first N layers on the CPU (shorthand for -ot rules)",
        6089,
    ),
    FlagEra(
        "draft_model",
        "-md/--model-draft, -ngld, --draft-max (llama-server)",
        date(2024, 11, 25),
        "PR #10455",
        "speculative decoding in the server: a draft model, its GPU layers, draft tokens",
    ),
    FlagEra(
        "draft_cache_type",
        "-ctkd/-ctvd (--cache-type-k/v-draft)",
        date(2025, 6, 20),
        "PR #13782",
        "the draft's KV cache type (f16 forced before)",
    ),
    FlagEra(
        "ctx_zero",
        "-c 0 (the model's trained context)",
        date(2023, 9, 28),
        "PR #3301",
        "n_ctx 0 = the model's n_ctx_train",
    ),
    FlagEra(
        "ctx_zero_kept",
        "an explicit -c 0 that --fit keeps",
        date(2026, 1, 24),
        "PR #19070",
        "--fit never lowers an explicit -c 0",
    ),
    FlagEra(
        "fa_valued",
        "-fa on|off|auto",
        date(2025, 8, 30),
        "PR #15434",
        "flash attention takes a value, default auto",
    ),
)

OLLAMA_FLAG_ERAS: tuple[FlagEra, ...] = (
    FlagEra(
        "flash_attn",
        "OLLAMA_FLASH_ATTENTION",
        date(2024, 5, 28),
        "ollama 38255d2af (#4580)",
        "flash attention in the llama runner",
        release=(0, 1, 39),
    ),
    FlagEra(
        "cache_type",
        "OLLAMA_KV_CACHE_TYPE",
        date(2024, 12, 4),
        "ollama 1bdab9fdb (#6279)",
        "quantized K/V cache (q8_0, q4_0)",
        release=(0, 5, 0),
    ),
    FlagEra(
        "parallel",
        "OLLAMA_NUM_PARALLEL",
        date(2024, 5, 2),
        "ollama 34b9db5af (Request and model concurrency)",
        "parallel requests per loaded model",
        release=(0, 1, 33),
    ),
)

_TABLES = {"llama.cpp": LLAMACPP_FLAG_ERAS, "ollama": OLLAMA_FLAG_ERAS}


def flag_era(runtime: str, key: str) -> FlagEra:
    """The row of ``key`` for ``runtime`` (``llama.cpp`` or ``ollama``)."""
    for row in _TABLES[runtime]:
        if row.key == key:
            return row
    raise KeyError(f"{runtime}: no flag era {key!r}")


def flag_available(runtime: str, key: str, version: str | None) -> bool:
    """Whether ``runtime`` ``version`` (None or blank: the newest) has the lever ``key``.

    >>> flag_available("llama.cpp", "flash_attn", "b1500")
    False
    >>> flag_available("llama.cpp", "flash_attn", None)
    True
    >>> [flag_available("ollama", "cache_type", v) for v in ("0.3.0", "0.5.0")]
    [False, True]
    >>> [flag_available("llama.cpp", "n_cpu_moe", v) for v in ("b6088", "b6089", "2025-08-04")]
    [False, True, True]
    """
    if version is None or not version.strip() or runtime not in _TABLES:
        return True
    from oomkit.estimate.generations import parse_runtime_version

    row = flag_era(runtime, key)
    build = _build_number(version) if runtime == "llama.cpp" else None
    if build is not None and row.build is not None:
        # a build against the row's first build: build numbers are exact, their interpolated
        # dates (generation_builds.build_date) are not (b6088's date fell after #15077's merge)
        return build >= row.build
    when = parse_runtime_version(runtime, version)
    if isinstance(when, tuple):
        return row.release is None or when >= row.release
    return when >= row.since


def _build_number(version: str) -> int | None:
    """The llama.cpp build of ``b6089`` (or ``6089`` as ``--version`` prints it); None for a
    date."""
    value = version.strip().lower().removeprefix("b")
    return int(value) if value.isdigit() and len(value) <= 6 else None


def llamacpp_server_binary(version: str | None) -> str:
    """``llama-server``, or ``server`` for a build before PR #7809 (2024-06-12)."""
    return "llama-server" if flag_available("llama.cpp", "llama_server", version) else "server"


def _refuse(runtime: str, key: str, version: str, setting: str, value: object) -> None:
    row = flag_era(runtime, key)
    name = "llama.cpp" if runtime == "llama.cpp" else "Ollama"
    raise InvalidSettingError(
        f"{name} {version} has no {row.flag}: it appeared in {row.source} ({row.first()}); "
        f"drop the setting or give a later --runtime-version",
        setting=setting,
        value=value,
    )


def _quantized(kv: str | None) -> bool:
    return kv is not None and kv.strip().lower() not in ("f16", "f32", "bf16")


def check_flag_eras(settings: InferenceSettings, runtime: str) -> None:
    """Refuse a setting the llama.cpp build / Ollama release of ``settings.runtime_version``
    cannot express (one line naming the flag, the release it appeared in and its PR).

    Raises:
        InvalidSettingError: the flag is newer than the release asked for.
    """
    version = settings.runtime_version
    if version is None or not version.strip() or runtime not in _TABLES:
        return

    def need(key: str, setting: str, value: object) -> None:
        if not flag_available(runtime, key, version):
            _refuse(runtime, key, version, setting, value)

    if runtime == "ollama":
        if settings.flash_attn:
            need("flash_attn", "flash_attn", True)
        if _quantized(settings.cache_type_k) or _quantized(settings.cache_type_v):
            need("cache_type", "cache_type_k", settings.cache_type_k or settings.cache_type_v)
        if settings.parallel and settings.parallel > 1:
            need("parallel", "parallel", settings.parallel)
        return
    if _quantized(settings.cache_type_k) or _quantized(settings.cache_type_v):
        kv = settings.cache_type_k or settings.cache_type_v
        need("cache_type", "cache_type_k", kv)
        if settings.llama_server is not False:  # the server parsed -ctk/-ctv from PR #5684
            need("server_cache_type", "cache_type_k", kv)
    if settings.flash_attn:
        need("flash_attn", "flash_attn", True)
    if settings.ubatch is not None:
        # before PR #6017 the argument loop knew no -ub: gpt_params_parse / the server's
        # server_params_parse answer "error: unknown argument: -ub" and exit 1
        need("ubatch", "ubatch", settings.ubatch)
    if _quantized(settings.cache_type_v):
        need("quantized_v", "cache_type_v", settings.cache_type_v)
    if settings.override_tensor or settings.n_cpu_moe:
        # --n-cpu-moe before PR #15077 is printed as the -ot rules it stands for
        need("override_tensor", "override_tensor", settings.override_tensor or settings.n_cpu_moe)


def era_kvs(
    runtime: str, kvs: tuple[str, ...], version: str | None, *, server: bool = True
) -> tuple[str, ...]:
    """The planner's KV levers ``kvs`` (``f16``, ``f16+fa``, ``q8_0``, ...) that ``runtime``
    ``version`` can express: a quantized cache needs ``-ctk``/``-ctv`` (llama-server: PR
    #5684) and a quantized V its flash attention (PR #5021; the planner quantizes K and V
    alike), ``f16+fa`` needs ``-fa``; Ollama's need OLLAMA_KV_CACHE_TYPE (v0.5.0). ``f16``
    and ``auto`` are always there.

    Raises:
        InvalidSettingError: none is left (a pinned ``--kv`` the release does not have).

    >>> era_kvs("llama.cpp", ("f16", "f16+fa", "q8_0", "q4_0"), "b1500")
    ('f16',)
    >>> era_kvs("ollama", ("f16", "q8_0", "q4_0"), "0.4.7")
    ('f16',)
    """
    if runtime not in _TABLES or version is None or not version.strip():
        return kvs
    need: dict[str, tuple[str, ...]] = {}
    if runtime == "ollama":
        quantized: tuple[str, ...] = ("cache_type",)
    else:
        quantized = ("cache_type", "quantized_v", *(("server_cache_type",) if server else ()))
        need["f16+fa"] = ("flash_attn",)
    out = []
    for kv in kvs:
        keys = need.get(kv, quantized if _quantized(kv) and kv != "f16+fa" else ())
        missing = [k for k in keys if not flag_available(runtime, k, version)]
        if not missing:
            out.append(kv)
        elif len(kvs) == 1:
            _refuse(runtime, missing[0], version, "kv", kv)
    return tuple(out)
