"""vLLM: a pooling (embedding) model under torch.compile profiles a peak oomkit does not model.

vLLM compiles by default (``CompilationMode.VLLM_COMPILE`` with the Inductor backend);
``--enforce-eager`` turns it off ("Enforce eager set, disabling torch.compile and CUDAGraphs",
vllm/config/vllm.py line 1162 of the 0.26.0 sdist: ``compilation_config.mode =
CompilationMode.NONE``). The start-up profile (``Worker.determine_available_memory``,
vllm/v1/worker/gpu_worker.py) charges the torch peak of ``profile_run`` (the first, compiling,
forward over ``max_num_batched_tokens`` plus ``_dummy_pooler_run`` for a pooling model) and the
non-torch increase to the KV budget.

For a compiled pooling model that charge is larger than oomkit's per-layer forward model, by
an amount no source explains and that moved with the PyTorch release:

* vllm-project/vllm issue #49672 (2026-07-24, main at 0d77325b10, torch 2.13.0):
  BAAI/bge-multilingual-gemma2 (a Gemma-2-9B embedding model), ``--runner pooling --dtype
  bfloat16 --max-model-len 2048 -cc.cudagraph_mode=none``, one L4, default util 0.92
  (vllm/config/cache.py line 68, 0.26.0): "Model loading took 17.22 GiB memory / Available KV
  cache memory: -0.45 GiB". So the profile charged 0.92 x 22.03 - 17.22 + 0.45 = 3.50 GiB of
  peak and non-torch memory where oomkit's 2048-token forward and non-torch rows come to 0.36
  GiB. No CUDA graphs are captured in that run, so it is not the graph estimate. The test runs
  the same server with ``-cc.mode=NONE`` (and stock torch.compile) first; only the
  ``VLLM_COMPILE`` + inductor variant failed (tests/compile/fullgraph/test_basic_correctness.py,
  0.26.0 sdist).
* vllm-project/vllm PR #49749 (merged 2026-07-24, the fix): "After the PyTorch 2.13 upgrade,
  the ``VLLM_COMPILE`` + inductor path has about ``-0.45 GiB`` available for KV cache at the
  default utilization, versus ``1.21 GiB`` in the earlier nightly" (torch 2.11 in the 0.25.x and
  0.26.0 sdists' requirements/cuda.txt: a 1.84 GiB charge, still 1.48 GiB above the model),
  "(Do we need pytorch people to find out what happened?)"; the fix is
  ``--gpu-memory-utilization 0.98`` in the test, which the 0.28.0, 0.29.0 and 0.33.0 sdists
  still carry (torch 2.13.0 from 0.28.0): the runtime was not changed.
* vllm-project/vllm PR #49351 (2026-07-21): the same Gemma2 embedding model through the LLM
  class at 2048 tokens (8192 batched tokens, PIECEWISE graphs charged) had 0.64 GiB of KV where
  oomkit's rows leave 1.57 GiB.

A year earlier (PR #20144, June 2025) the compiled 8192-token profile of that model matched
oomkit's rows (1.63 GiB of KV against the log's 1.64), so the excess is dated, not a constant of
the model. oomkit does not know the PyTorch build or whether the compile excess strikes at a
given size, so on these releases (the generation rows' ``compiled_pooling_unmodelled``
effect: 0.25.0 on, and current vLLM) a compiled pooling model's KV pool margin carries a band
term of the whole KV pool (the charge took all of it in #49672): "tight", never "fits", with the
fact named and ``--enforce-eager`` as the safe change; eager runs are left to the model. No
constant is fitted to the logs: the figures above are only quoted.
"""

from __future__ import annotations

from oomkit.estimate.breakdown import Estimate
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "CHANGE",
    "DETAIL",
    "LABEL",
    "NOTE",
    "PLAN_NOTE",
    "compiled_pooling",
    "pool_terms",
    "unmodelled_at",
]

#: runtime_details key: the run is a compiled pooling model on a release the rule covers
DETAIL = "compiled_pooling_profile"
#: the pool margin's band term: the unmodelled charge may take up to the whole KV budget (it
#: took all of it and 0.45 GiB more in #49672)
LABEL = (
    "a pooling model's torch.compile (VLLM_COMPILE) profile oomkit does not model, up to the "
    "whole KV pool (vLLM #49672 / PR #49749: Gemma-2-9B embedding at 2048 tokens on an L4 "
    "had 1.21 GiB of KV, then -0.45 GiB after the PyTorch 2.13 upgrade, where the eager "
    "forward leaves 2.7 GiB)"
)
CHANGE = (
    "--enforce-eager (no torch.compile: vLLM #49672 failed in the VLLM_COMPILE variant only) "
    "or a higher --gpu-memory-utilization (the vLLM test moved to 0.98, PR #49749)"
)
NOTE = (
    "--pooling under torch.compile (vLLM's default; --enforce-eager turns it off): the compiled "
    "profile of a pooling model charges more than the eager forward modelled here, by an amount "
    "that moved with the PyTorch build (vLLM #49672, PR #49749), so the verdict is at best tight"
)

#: plan's note when it plans a pooling model eager because the rule covers the release
PLAN_NOTE = "--pooling: planned with --enforce-eager (vLLM PR #49749: unmodelled compile)"


def compiled_pooling(settings: InferenceSettings, *, unmodelled: bool) -> bool:
    """Whether the rule applies: a pooling model (``settings.pooling``), compiled (not
    ``--enforce-eager``), on a release whose generation row says ``compiled_pooling_unmodelled``
    (``unmodelled``).

    >>> compiled_pooling(InferenceSettings(runtime="vllm", pooling=True), unmodelled=True)
    True
    >>> s = InferenceSettings(runtime="vllm", pooling=True, enforce_eager=True)
    >>> compiled_pooling(s, unmodelled=True)
    False
    >>> compiled_pooling(InferenceSettings(runtime="vllm"), unmodelled=True)
    False
    """
    return bool(unmodelled and settings.pooling and not settings.enforce_eager)


def unmodelled_at(version: str | None) -> bool:
    """Whether the vLLM release ``version`` (None: the newest) is one this rule covers: its
    generation row's ``compiled_pooling_unmodelled`` (as :func:`release_rules` reads it).

    >>> unmodelled_at(None), unmodelled_at("0.29.0"), unmodelled_at("0.24.0")
    (True, True, False)
    """
    if version is None:
        return True
    from oomkit.estimate.generations import resolve_generation

    gen = resolve_generation("vllm", version)
    return bool(gen.effects.get("compiled_pooling_unmodelled", False))


def pool_terms(est: Estimate, terms: list[tuple[str, int]], free: int) -> list[tuple[str, int]]:
    """The KV pool margin's band terms, with :data:`LABEL` at the whole KV pool for a compiled
    pooling run (``runtime_details[DETAIL]``): the pool exceeds the headroom ``free`` by one
    request's KV, so the margin is "tight" whatever the other terms. Unchanged when the pool is
    already short (the verdict says so) or unknown."""
    pool = est.runtime_details.get("available_kv_cache_bytes")
    if est.runtime != "vllm" or not est.runtime_details.get(DETAIL) or free <= 0:
        return terms
    if not isinstance(pool, int) or isinstance(pool, bool) or pool <= 0:
        return terms
    return sorted([*terms, (LABEL, pool)], key=lambda t: -t[1])
