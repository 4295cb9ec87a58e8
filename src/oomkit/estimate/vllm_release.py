"""What a vLLM release changes in :func:`oomkit.estimate.vllm.plan_vllm`, resolved once.

``settings.runtime_version`` (a vLLM release or a date) picks the engine generation through
:func:`oomkit.estimate.generations.resolve_generation`; its effects are the engine row
(profiling rule, ``max_num_seqs`` / ``max_num_batched_tokens`` defaults, whether the CUDA-graph
pool is charged to the KV budget) and the per-release switches ``plan_vllm`` takes. Both
:func:`oomkit.estimate.vllm.estimate_vllm` and the doctor's vLLM fixes
(:mod:`oomkit.diagnose.model_fixes_hf`) plan through :func:`release_rules`, so a fix is sized
by the same release the estimate models (vLLM 0.6.3: ``max_num_seqs`` 256 and a 2048-token
profile batch, ``vllm/engine/arg_utils.py`` / ``vllm/config.py`` ``SchedulerConfig`` of that
release; the graphs captured after the KV cache is sized).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oomkit.estimate.vllm_compiled_pooling import compiled_pooling
from oomkit.estimate.vllm_engines import (
    DEFAULT_ENGINE,
    graph_estimate_charged,
    v0_full_profile_batch,
    vllm_engine,
)
from oomkit.estimate.vllm_gemma2 import gemma2_window_ctx
from oomkit.estimate.vllm_mrv2 import mrv2_note, runs_model_runner_v2
from oomkit.estimate.vllm_support import (
    CAPABILITY_V0_NOTE,
    mllama_eager,
    v0_capability_engine,
    v0_env_engine,
    v0_env_unavailable,
    v0_fallback_engine,
    vllm_model_version,
)

if TYPE_CHECKING:
    from oomkit.estimate.vllm import VllmPlan
    from oomkit.spec.hardware import DeviceTarget, Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = ["ReleaseRules", "release_rules"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseRules:
    """The engine row and ``plan_vllm`` switches of one vLLM release (or current vLLM)."""

    settings: InferenceSettings  # the settings as that release runs them
    engine: str
    mla_latent_kv: bool = True
    nccl_record_stream: bool = True
    mxfp4_hopper: str = "triton"
    awq_split_k: bool = False
    nvls_nccl: str | None = None
    v0_multimodal_chunked: bool = True
    #: max_model_len checked against the KV cache at start-up (0.2.7+)
    len_check: bool = True
    #: PR #30515's graph profiling (0.18.0 on)
    profiles_graphs: bool = False
    #: 0.22-0.28: the model runs Model Runner V2, whose graph estimate is 0 (vllm_mrv2)
    model_runner_v2: bool = False
    #: 0.25.0 on: a compiled pooling model's profile is not modelled (vllm_compiled_pooling)
    compiled_pooling: bool = False
    support_notes: tuple[str, ...] = ()
    #: the release's generation runs another engine row (why)
    engine_switch: str | None = None

    def plan(self, spec: ModelSpec, device: DeviceTarget, *, pp_rank: int = 0) -> VllmPlan:
        """``plan_vllm`` of one rank under this release."""
        from oomkit.estimate.vllm import plan_vllm

        return plan_vllm(
            spec,
            self.settings,
            device,
            engine=self.engine,
            mla_latent_kv=self.mla_latent_kv,
            nccl_record_stream=self.nccl_record_stream,
            pp_rank=pp_rank,
            mxfp4_hopper=self.mxfp4_hopper,
            awq_split_k=self.awq_split_k,
            nvls_nccl=self.nvls_nccl,
            v0_multimodal_chunked=self.v0_multimodal_chunked,
            charge_graphs=not self.model_runner_v2
            and graph_estimate_charged(
                vllm_engine(self.engine), profiles_graphs=self.profiles_graphs
            ),
        )


def release_rules(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware, engine: str = DEFAULT_ENGINE
) -> ReleaseRules:
    """The rules ``settings.runtime_version`` runs ``spec`` under (``engine`` other than the
    default: that engine row as given, no release resolved)."""
    mla_latent = True
    record_stream = True
    mxfp4_hopper = "triton"
    awq_split_k = False
    len_check = True
    nvls_nccl: str | None = None
    mm_chunked = True
    support_notes: tuple[str, ...] = ()
    engine_switch: str | None = None
    profiles_graphs = engine == DEFAULT_ENGINE
    mrv2 = False
    compiled_pool = engine == DEFAULT_ENGINE  # current vLLM (no version): the 0.29+ row's rule
    if engine == DEFAULT_ENGINE:
        # a release that cannot load the model is refused; without a version, a model the
        # newest vLLM dropped is modelled on the last release that loads it
        version, support_notes = vllm_model_version(spec, settings.runtime_version)
        settings = dataclasses.replace(settings, runtime_version=version)
    if settings.runtime_version is not None and engine == DEFAULT_ENGINE:
        from oomkit.estimate.generations import resolve_generation

        gen = resolve_generation("vllm", settings.runtime_version)
        engine = str(gen.effects["vllm_engine"])
        mla_latent = bool(gen.effects.get("mla_latent_kv", True))
        record_stream = bool(gen.effects.get("nccl_record_stream", True))
        mxfp4_hopper = str(gen.effects.get("mxfp4_hopper", "triton"))
        awq_split_k = bool(gen.effects.get("awq_split_k", False))
        len_check = bool(gen.effects.get("kv_len_check", True))
        profiles_graphs = bool(gen.effects.get("graph_profiling", False))
        compiled_pool = bool(gen.effects.get("compiled_pooling_unmodelled", False))
        rule = gen.effects.get("mrv2_default")
        if isinstance(rule, str) and runs_model_runner_v2(spec, settings, rule):
            mrv2 = True
            support_notes = (*support_notes, mrv2_note(settings.runtime_version))
        if not gen.effects.get("long_context_chunked", True):  # before PR #6666 (0.5.3)
            settings = v0_full_profile_batch(spec, settings)
        nccl = gen.effects.get("nvls_nccl")
        nvls_nccl = nccl if isinstance(nccl, str) else None
        if gen.effects.get("gemma2_window_cap", False):
            settings, why = gemma2_window_ctx(spec, settings)
            support_notes = (*support_notes, *why)
        fallback = v0_fallback_engine(spec, engine)
        if fallback is not None:
            engine, mm_chunked = fallback, False
            engine_switch = "V0 engine (V1 has no encoder-decoder support)"
            support_notes = (
                *support_notes,
                f"vLLM {settings.runtime_version} runs {spec.architecture} on the V0 engine: V1 "
                "has no encoder-decoder support (EngineArgs._is_v1_supported_oracle falls back "
                "to V0: max_num_seqs 256, no chunked prefill for a multimodal model)",
            )
        cc = bool(gen.effects.get("v1_needs_ampere"))  # 0.8.0-0.10.1: V0 below Ampere
        if (v0 := v0_capability_engine(engine, hardware.devices, v1_needs_ampere=cc)) is not None:
            engine, mm_chunked, engine_switch = v0, False, "V0 engine (compute capability < 8.0)"
            support_notes = (*support_notes, CAPABILITY_V0_NOTE)
        env_v0 = v0_env_engine(engine)
        if env_v0 is not None:
            engine, mm_chunked, engine_switch = env_v0, False, "V0 engine (VLLM_USE_V1=0)"
            support_notes = (
                *support_notes,
                f"VLLM_USE_V1=0: vLLM {settings.runtime_version} runs the V0 engine (vllm/"
                "envs.py; EngineArgs._set_default_args_v0: max_num_seqs 256, chunked prefill "
                "only above 32K and never for a multimodal model)",
            )
    rocm = any(d.backend == "rocm" for d in hardware.devices)
    eager = mllama_eager(spec, settings.runtime_version, rocm=rocm)
    if eager is not None and not settings.enforce_eager:
        settings = dataclasses.replace(settings, enforce_eager=True)
        support_notes = (*support_notes, eager)
    if v0_env_unavailable(engine):
        release = f"vLLM {settings.runtime_version}" if settings.runtime_version else "current vLLM"
        support_notes = (
            *support_notes,
            f"VLLM_USE_V1=0 ignored: {release} has no V0 engine (removed in 0.11.0); "
            "modelled as V1",
        )
    return ReleaseRules(
        settings=settings,
        engine=engine,
        mla_latent_kv=mla_latent,
        nccl_record_stream=record_stream,
        mxfp4_hopper=mxfp4_hopper,
        awq_split_k=awq_split_k,
        nvls_nccl=nvls_nccl,
        v0_multimodal_chunked=mm_chunked,
        len_check=len_check,
        profiles_graphs=profiles_graphs,
        model_runner_v2=mrv2,
        compiled_pooling=compiled_pooling(settings, unmodelled=compiled_pool),
        support_notes=support_notes,
        engine_switch=engine_switch,
    )
