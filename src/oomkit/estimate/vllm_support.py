"""Which vLLM releases can load a model at all, and which engine they run it on.

A vLLM release that does not register an architecture fails at start-up, before any memory is
sized: ``ModelRegistry`` raises "Model architectures [...] are not supported for now" for an
architecture added later, and, for one removed since, "was supported in vLLM until vX, and is not
supported anymore" (vllm/model_executor/models/registry.py ``_PREVIOUSLY_SUPPORTED_MODELS``).
An estimate of such a run would be a memory figure for a server that never starts, so oomkit
refuses it with one line (:class:`~oomkit.errors.InvalidSettingError` on ``--runtime-version``,
exit 2) instead of warning: no setting of that release makes the model load, while the fix --
another release -- is the user's to choose. Without ``--runtime-version`` (the newest release
is modelled) a model the newest vLLM no longer loads is modelled on the last release that did,
and the output says so.

Rows (first release that loads it; last release before its removal):

* ``GptOssForCausalLM`` (gpt-oss): vllm PR #22259 ("Support gpt-oss", its wheel
  ``vllm==0.10.1+gptoss``), first released in v0.10.1 (2025-08-18).
* ``MllamaForConditionalGeneration`` (Llama 3.2 Vision): vllm PR #8811, first in v0.6.2
  (2024-09-25); ``_PREVIOUSLY_SUPPORTED_MODELS["MllamaForConditionalGeneration"] = "0.10.2"``
  ("encoder-decoder models except whisper have been removed for V0 deprecation"), so v0.11.0
  (2025-10-02) refuses it.

* ``Gemma3ForConditionalGeneration`` (Gemma 3 4B-27B): vllm PR #14660 ("Add support for Gemma
  3"), first in v0.8.0 (2025-03-18; absent from the v0.7.3 wheel's registry.py). The
  Transformers-backend fallback of 0.7.2-0.7.3 cannot build it: ``TransformersModel`` calls
  ``AutoModel.from_config`` and transformers' ``MODEL_MAPPING_NAMES`` has ``gemma3_text`` but no
  ``gemma3`` ("Unrecognized configuration class ... Gemma3Config for this kind of AutoModel",
  vllm#14723 on a 0.7.4 dev build).
* ``Qwen3ForCausalLM`` / ``Qwen3MoeForCausalLM``: vllm PR #15289 ("Add Qwen3 and Qwen3MoE"),
  first in v0.8.4 (2025-04-14; absent from the v0.8.3 wheel's registry.py).
* ``Gemma3ForCausalLM`` (Gemma 3 270M / 1B, text-only): PR #14660, v0.8.0.

Transformers-backend fallback: from v0.7.2 (2025-02-06; not in the v0.7.1 wheel)
``get_model_architecture`` sends an architecture vLLM does not register to
``resolve_transformers_fallback`` (vllm/model_executor/model_loader/utils.py): it loads through
``TransformersModel`` (``TransformersForCausalLM`` from 0.8) when the installed transformers
defines the class with ``_supports_flex_attn``, which Qwen3/Qwen3-MoE do from transformers 4.51.0
and Gemma3ForCausalLM from 4.50.0. Such a release is not refused: the estimate models vLLM's own
implementation (the fallback keeps vLLM's attention and paged KV cache) and says which
transformers release the load needs.

Encoder-decoder models on the V1 releases before V0's removal (0.8-0.10): Mllama is
``SupportsV0Only`` (vllm/model_executor/models/mllama.py) and
``EngineArgs._is_v1_supported_oracle`` (vllm/engine/arg_utils.py, "No Mamba or Encoder-Decoder
so far": ``if not model_config.is_v1_compatible: _raise_or_fallback(...)``) sends it to V0,
whose ``_set_default_args_v0`` keeps ``max_num_seqs`` 256; vLLM logs
"['MllamaForConditionalGeneration'] is not supported by the V1 Engine. Falling back to V0."
(vllm-project/vllm-ascend#1963, v0.9.2rc1). :func:`v0_fallback_engine` names the V0 engine row.

``VLLM_USE_V1=0`` (vllm/envs.py: ``bool(int(os.getenv("VLLM_USE_V1", "1")))``; V1 is the default
from v0.8.0) runs any model on the V0 engine on the releases that still ship it (0.8.0-0.10.x;
v0.11.0 removed V0): the estimate reads it from the environment, as vLLM does, and
:func:`v0_env_engine` names the V0 engine row (vllm#17431: "same setup with VLLM_USE_V1=0" on
0.8.5; vllm#16199 on 0.8.3).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.model import ModelSpec

__all__ = [
    "MLLAMA_GRAPHS",
    "VLLM_SUPPORT",
    "VllmSupport",
    "mllama_eager",
    "v0_capability_engine",
    "v0_env_engine",
    "v0_env_unavailable",
    "v0_fallback_engine",
    "vllm_model_version",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmSupport:
    """The vLLM releases that load one architecture."""

    architecture: str
    first: str  # first release that loads it
    first_date: str  # its release date (for ``--runtime-version 2025-08`` forms)
    source: str
    last: str | None = None  # last release that loads it (None: still supported)
    removed: str | None = None  # first release without it
    removed_date: str | None = None  # its release date
    #: V1 releases that run it on V0 (encoder-decoder before V0's removal)
    v0_only: bool = False
    #: first release whose Transformers-backend fallback loads it (None: none does)
    fallback: str | None = None
    fallback_date: str | None = None
    #: the transformers release that defines it (what the fallback needs installed)
    transformers: str | None = None


VLLM_SUPPORT: dict[str, VllmSupport] = {
    s.architecture: s
    for s in (
        VllmSupport(
            architecture="GptOssForCausalLM",
            first="0.10.1",
            first_date="2025-08-18",
            source="vllm PR #22259 (vllm==0.10.1+gptoss), first released in v0.10.1",
        ),
        VllmSupport(
            architecture="MllamaForConditionalGeneration",
            first="0.6.2",
            first_date="2024-09-25",
            source="vllm PR #8811 (v0.6.2); registry.py _PREVIOUSLY_SUPPORTED_MODELS: until 0.10.2",
            last="0.10.2",
            removed="0.11.0",
            removed_date="2025-10-02",
            v0_only=True,
        ),
        VllmSupport(
            architecture="Gemma3ForConditionalGeneration",
            first="0.8.0",
            first_date="2025-03-18",
            source="vllm PR #14660, first released in v0.8.0 (not in v0.7.3's registry.py; "
            "the 0.7.2-0.7.3 Transformers fallback fails: AutoModel has no Gemma3Config, "
            "vllm#14723)",
        ),
        VllmSupport(
            architecture="Gemma3ForCausalLM",
            first="0.8.0",
            first_date="2025-03-18",
            source="vllm PR #14660, first released in v0.8.0",
            fallback="0.7.2",
            fallback_date="2025-02-06",
            transformers="4.50.0",
        ),
        VllmSupport(
            architecture="Qwen3ForCausalLM",
            first="0.8.4",
            first_date="2025-04-14",
            source="vllm PR #15289, first released in v0.8.4 (not in v0.8.3's registry.py)",
            fallback="0.7.2",
            fallback_date="2025-02-06",
            transformers="4.51.0",
        ),
        VllmSupport(
            architecture="Qwen3MoeForCausalLM",
            first="0.8.4",
            first_date="2025-04-14",
            source="vllm PR #15289, first released in v0.8.4 (not in v0.8.3's registry.py)",
            fallback="0.7.2",
            fallback_date="2025-02-06",
            transformers="4.51.0",
        ),
    )
}

#: the V0 engine row of :mod:`oomkit.estimate.vllm_engines` that 0.8-0.10 fell back to (the
#: V0 worker's profiling of 0.6.5+: per-instance non-torch increase, PR #10511)
_V0_FALLBACK = "v0-2025"


def _before(version: str, release: str, release_date: str) -> bool:
    """``version`` (a release or a date) is older than ``release`` (out ``release_date``)."""
    from datetime import date

    from oomkit.estimate.generations import _version_tuple, parse_runtime_version

    when = parse_runtime_version("vllm", version)
    if isinstance(when, date):
        return when < date.fromisoformat(release_date)
    return when < _version_tuple(release)


#: Llama 3.2 Vision ran eager before vLLM 0.8.2: ``ModelConfig._verify_cuda_graph`` (vllm/config.py,
#: from PR #8811 of 0.6.2 to 0.8.1) set ``MODEL_NOT_SUPPORT_CUDA_GRAPH = ['mllama']`` and, unless
#: already eager, warned "CUDA graph is not supported for %s yet, fallback to the eager mode" and
#: set ``enforce_eager = True``; PR #14917 ("Enable CUDA graph support for llama 3.2 vision",
#: March 2025, in 0.8.2) removed the block and PR #15413 brought it back for ROCm only
#: (``MODEL_NOT_SUPPORT_CUDA_GRAPH_ROCM``, vllm#15413: "mllama doesn't work in graph mode on ROCm").
MLLAMA_GRAPHS = ("0.8.2", "2025-03-25")


def mllama_eager(spec: ModelSpec, version: str | None, *, rocm: bool) -> str | None:
    """Why vLLM ``version`` runs ``spec`` eager whatever ``--enforce-eager`` says (None: it
    captures CUDA graphs as usual): Mllama before 0.8.2, and on ROCm at every release."""
    if spec.vision_tower is None or spec.vision_tower.kind != "mllama":
        return None
    if not rocm and (version is None or not _before(version, *MLLAMA_GRAPHS)):
        return None
    release = f"vLLM {version}" if version else "vLLM"
    where = " on ROCm (PR #15413)" if rocm else " (before 0.8.2, PR #14917)"
    return (
        f"{release} runs Mllama eager{where}: ModelConfig._verify_cuda_graph 'CUDA graph is not "
        "supported for mllama yet, fallback to the eager mode': no CUDA graphs are captured"
    )


def vllm_model_version(spec: ModelSpec, version: str | None) -> tuple[str | None, tuple[str, ...]]:
    """(the vLLM version to model, notes) for ``spec`` at ``--runtime-version`` ``version``.

    Raises:
        InvalidSettingError: that release cannot load the architecture (see module doc), or
            its ``get_rope`` lacks the model's ``rope_scaling`` type
            (:mod:`oomkit.estimate.vllm_rope`).
    """
    from oomkit.estimate.vllm_rope import check_vllm_rope

    check_vllm_rope(spec, version)
    sup = VLLM_SUPPORT.get(spec.architecture)
    if sup is None:
        return version, ()
    if version is None or not version.strip():
        if sup.last is None:
            return version, ()
        return sup.last, (
            f"current vLLM no longer loads {sup.architecture} (supported until {sup.last}: "
            f"{sup.source}); modelled as vLLM {sup.last}, the last release that does",
        )
    if _before(version, sup.first, sup.first_date):
        if (
            sup.fallback is not None
            and sup.fallback_date is not None
            and not _before(version, sup.fallback, sup.fallback_date)
        ):
            return version, (
                f"vLLM {version} has no {sup.architecture} implementation (first in vLLM "
                f"{sup.first}: {sup.source}); it loads through the Transformers backend "
                f"(resolve_transformers_fallback, vLLM {sup.fallback}+) only with transformers "
                f">= {sup.transformers} installed; modelled as vLLM's own implementation",
            )
        also = (
            ""
            if sup.fallback is None
            else f" ({sup.fallback}+ through the Transformers backend with transformers >= "
            f"{sup.transformers})"
        )
        raise InvalidSettingError(
            f"vLLM {version} cannot load {spec.name} ({sup.architecture} first in vLLM "
            f"{sup.first}); use --runtime-version {sup.first} or later{also}",
            setting="runtime_version",
            value=version,
        )
    if (
        sup.removed is not None
        and sup.removed_date is not None
        and not _before(version, sup.removed, sup.removed_date)
    ):
        raise InvalidSettingError(
            f"vLLM {version} cannot load {spec.name} ({sup.architecture} was removed after "
            f"vLLM {sup.last}); use --runtime-version {sup.last} or earlier",
            setting="runtime_version",
            value=version,
        )
    return version, ()


def v0_fallback_engine(spec: ModelSpec, engine: str) -> str | None:
    """The V0 engine row a V1-era ``engine`` falls back to for ``spec``, or None."""
    sup = VLLM_SUPPORT.get(spec.architecture)
    if sup is None or not sup.v0_only or not engine.startswith("v1"):
        return None
    return _V0_FALLBACK


#: the V1-era engine rows of releases that still ship V0 (0.8.0-0.10.x)
_V1_WITH_V0 = frozenset({"v1-0.8.0", "v1-2025-global", "v1-2025"})


def v0_env_unavailable(engine: str) -> bool:
    """``VLLM_USE_V1=0`` is set but ``engine`` is a release with no V0 left (0.11.0 removed it:
    ``current`` and the ``v1-0.11*`` rows)."""
    raw = os.environ.get("VLLM_USE_V1", "").strip()
    if not raw.lstrip("-").isdigit() or int(raw) != 0:
        return False
    return engine == "current" or engine.startswith("v1-0.")


def v0_env_engine(engine: str) -> str | None:
    """The V0 engine row ``VLLM_USE_V1=0`` selects on a V1-era ``engine``, or None.

    vLLM reads the variable as ``bool(int(...))`` (vllm/envs.py), so only an integer counts;
    V0 exists until v0.11.0 removed it.
    """
    raw = os.environ.get("VLLM_USE_V1", "").strip()
    if engine not in _V1_WITH_V0 or not raw.lstrip("-").isdigit() or int(raw) != 0:
        return None
    return _V0_FALLBACK


#: the V1 oracle's "Need at least Ampere for now (FA support required)" check
_V1_MIN_CC_MAJOR = 8

#: what the estimate says when it applies
CAPABILITY_V0_NOTE = (
    "compute capability < 8.0: this vLLM release runs the V0 engine (EngineArgs."
    "_is_v1_supported_oracle: 'Compute Capability < 8.0' falls back to V0 until PR #23614, "
    "v0.10.2): max_num_seqs 256, no chunked prefill up to 32K"
)


def v0_capability_engine(
    engine: str, devices: tuple[DeviceTarget, ...], *, v1_needs_ampere: bool
) -> str | None:
    """The V0 engine row a V1-era ``engine`` falls back to on a pre-Ampere GPU, or None.

    vLLM 0.8.0-0.10.1.1 (vllm/engine/arg_utils.py ``_is_v1_supported_oracle``, read in the
    0.8.1, 0.9.0, 0.10.0 and 0.10.1.1 wheels): ``if current_platform.is_cuda() and
    get_device_capability().major < 8: _raise_or_fallback(feature_name="Compute Capability <
    8.0")`` - V0 unless ``VLLM_USE_V1=1`` was set explicitly (then it raises); vllm#15853 "[V1]
    Tesla T4 cannot work for V1". PR #23614 ("[V1] Enable V1 for compute capability < 8.0 +
    FP32") and PR #24022 removed the check for v0.10.2 (absent from its wheel).
    ``v1_needs_ampere``: the release's generation row has the check.
    """
    if not v1_needs_ampere or engine not in _V1_WITH_V0:
        return None
    majors = [
        int((d.compute_capability or "").split(".")[0])
        for d in devices
        if d.backend == "cuda" and (d.compute_capability or "").split(".")[0].isdigit()
    ]
    return _V0_FALLBACK if any(m < _V1_MIN_CC_MAJOR for m in majors) else None
