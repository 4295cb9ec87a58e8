"""vLLM V0's profile batch: chunked prefill by default above 32K, and what keeps it off.

Without chunked prefill V0's ``SchedulerConfig`` sets ``max_num_batched_tokens =
max(max_model_len, 2048)`` and the profile run pushes that many tokens through the model. PR
#6666 ("Enable chunked prefill by default for long context models", first in the 0.5.3 sdist)
turns chunked prefill on in ``EngineArgs.create_engine_config`` when ``max_model_len > 32768``
"to avoid OOM errors in the initial memory profiling phase", and then the batch is 2048 tokens;
but only when none of a release's conditions holds (read in the sdists):

* 0.5.3-0.10 (every release with the default): ``is_gpu and not use_sliding_window and not
  use_spec_decode and not self.enable_lora and not self.enable_prompt_adapter``, where
  ``use_sliding_window = model_config.get_sliding_window() is not None`` (vllm/config.py
  ``get_hf_config_sliding_window``: the config's ``sliding_window``, but None when the config
  has ``use_sliding_window: false``, as Qwen1.5/Qwen2's have; Gemma 2's is switched off by
  ``disable_sliding_window`` and its length capped to the window);
* 0.5.3-0.6.1: ``and not self.enable_prefix_caching`` (dropped in the 0.6.2 sdist; the V0
  default of ``enable_prefix_caching`` is False in every one of these releases, and oomkit has
  no setting for it, so the default is modelled);
* 0.5.4-0.6.2: ``and not has_seqlen_agnostic_layers`` (``contains_seqlen_agnostic_layers``:
  Mamba/SSM layers, Jamba; gone from the 0.6.3 sdist);
* 0.6.2 on: ``use_long_context and not model_config.is_multimodal_model`` (0.6.6-0.7:
  ``enable_chunked_prefill = bool(VLLM_USE_V1)`` for a multimodal model; 0.8-0.10 V0: "Chunked
  prefill not supported for Multimodal or MLA in V0");
* 0.6.6 on: ``and not current_platform.is_rocm()`` (0.8-0.10: ``is_gpu =
  current_platform.is_cuda()``);
* 0.8-0.10 V0: ``model_config.use_mla`` (DeepSeek's MLA) keeps it off.

The speculative model and prompt adapters have no setting in oomkit (they are never on).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "V0_CHUNKED_ABOVE",
    "V0_MIN_BATCHED",
    "Release",
    "v0_batched_tokens",
    "v0_chunked_blockers",
    "v0_release",
    "vllm_sliding_window",
]

V0_CHUNKED_ABOVE = 32768  # ``use_long_context = max_model_len > 32768`` (PR #6666)
V0_MIN_BATCHED = 2048  # SchedulerConfig: max(max_model_len, 2048) without chunked prefill

#: a release (padded version tuple) or the day its sdist reached PyPI, as
#: :func:`oomkit.estimate.generations.parse_runtime_version` reads ``--runtime-version``
Release = date | tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Window:
    """Releases ``[first, until)`` that carry a condition, by number and by PyPI upload day."""

    first: tuple[int, ...]
    first_day: date
    until: tuple[int, ...] | None = None
    until_day: date | None = None

    def holds(self, release: Release | None) -> bool:
        if release is None:  # no release given: only the conditions of every release
            return False
        if isinstance(release, date):
            return release >= self.first_day and (
                self.until_day is None or release < self.until_day
            )
        return release >= self.first and (self.until is None or release < self.until)


# PyPI upload days of the sdists (https://pypi.org/simple/vllm/): 0.5.4 2024-08-05, 0.6.2
# 2024-09-25, 0.6.3 2024-10-14, 0.6.6 2024-12-27, 0.8.0 2025-03-18 (the V1 default)
_SEQLEN_AGNOSTIC = _Window((0, 5, 4), date(2024, 8, 5), (0, 6, 3), date(2024, 10, 14))
_MULTIMODAL = _Window((0, 6, 2), date(2024, 9, 25))
_ROCM = _Window((0, 6, 6), date(2024, 12, 27))
_MLA = _Window((0, 8, 0), date(2025, 3, 18))


def vllm_sliding_window(spec: ModelSpec) -> int | None:
    """The window ``ModelConfig.get_sliding_window()`` reports for ``spec`` (V0, 0.5-0.10).

    The loaders keep the config's ``sliding_window`` and drop it where ``use_sliding_window``
    is false (Qwen2), as vLLM's ``get_hf_config_sliding_window`` does. Two readings differ:
    Gemma 2 (vLLM sets ``disable_sliding_window`` and caps the length to the window, so its
    length never passes 32K) and Llama 4, whose ``attention_chunk_size`` oomkit models as a
    window but whose config has no ``sliding_window``.

    >>> from oomkit.catalog.models import find_model
    >>> vllm_sliding_window(find_model("phi-3.5-mini").spec())
    262144
    >>> vllm_sliding_window(find_model("qwen2.5-7b").spec()) is None
    True
    """
    if spec.model_type == "gemma2" or spec.architecture.startswith("Llama4"):
        return None
    return spec.sliding_window


def v0_chunked_blockers(
    spec: ModelSpec,
    settings: InferenceSettings,
    *,
    release: Release | None,
    backend: str = "cuda",
    multimodal_chunked: bool = True,
) -> tuple[str, ...]:
    """Why ``release``'s V0 engine keeps chunked prefill off above 32K (empty: it turns it on).

    ``release`` None: the conditions of the newest V0 releases are not applied, only those of
    every release (LoRA, sliding window) and ``multimodal_chunked=False`` (the caller's V0
    fallback of 0.8-0.10).
    """
    why: list[str] = []
    if settings.enable_lora:
        why.append("--enable-lora")
    window = vllm_sliding_window(spec)
    if window is not None:
        why.append(f"a sliding window ({window} tokens) in the model config")
    if spec.vision_tower is not None and (not multimodal_chunked or _MULTIMODAL.holds(release)):
        why.append("a multimodal model")
    if spec.recurrent is not None and _SEQLEN_AGNOSTIC.holds(release):
        why.append("Mamba/SSM (sequence-length agnostic) layers")
    if backend == "rocm" and _ROCM.holds(release):
        why.append("ROCm")
    if spec.mla is not None and _MLA.holds(release):
        why.append("MLA (DeepSeek)")
    return tuple(why)


def v0_release(runtime_version: str | None) -> Release | None:
    """``--runtime-version`` as a release tuple or a date (None: not given)."""
    if runtime_version is None:
        return None
    from oomkit.estimate.generations import parse_runtime_version

    return parse_runtime_version("vllm", runtime_version)


def v0_batched_tokens(
    spec: ModelSpec,
    settings: InferenceSettings,
    max_len: int,
    *,
    backend: str = "cuda",
    multimodal: bool = True,
) -> tuple[int, tuple[str, ...]]:
    """V0's ``max_num_batched_tokens`` and a note when a condition keeps the whole length.

    The release is ``settings.runtime_version``; ``multimodal=False``: a multimodal model never
    chunks whatever the release (the V0 fallback of 0.8-0.10). A value the user set is kept; at
    most 32K the batch is ``max(max_model_len, 2048)``.
    """
    if settings.max_num_batched_tokens:
        return settings.max_num_batched_tokens, ()
    whole = max(max_len, V0_MIN_BATCHED)
    if max_len <= V0_CHUNKED_ABOVE:
        return whole, ()
    release = v0_release(settings.runtime_version)
    why = v0_chunked_blockers(
        spec, settings, release=release, backend=backend, multimodal_chunked=multimodal
    )
    if not why:
        return V0_MIN_BATCHED, ()
    if why == ("a multimodal model",) and not multimodal:
        return whole, ()  # the caller's V0-fallback note already says so
    note = (
        f"V0 keeps chunked prefill off above 32K for {', '.join(why)} (EngineArgs."
        f"create_engine_config, PR #6666's conditions): the profile batch is the whole "
        f"{whole} tokens"
    )
    return whole, (note,)
