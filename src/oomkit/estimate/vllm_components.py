"""The vLLM estimate's ``--explain`` lines beyond the plan's totals, each with its source.

The weights of :class:`~oomkit.estimate.vllm.VllmPlan` include the MXFP4 backend's layout above
the checkpoint (:mod:`oomkit.estimate.vllm_mxfp4`) and the vision tower; they get lines of
their own. V0 engines cite V0's worker and model runner, and the Mllama profile run shows its
formula (:mod:`oomkit.estimate.vllm_mm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import Component, DeviceUsage
from oomkit.estimate.vllm_lora import lora_components
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

if TYPE_CHECKING:
    from oomkit.estimate.vllm import VllmPlan

__all__ = [
    "V0_ENC_DEC_RUNNER",
    "V0_RUNNER",
    "V0_WORKER",
    "VISION_FORMULA",
    "estimate_settings",
    "host_usage",
    "vision_inputs",
    "weight_extras",
]

V0_WORKER = "vllm/worker/worker.py determine_num_available_blocks"
V0_RUNNER = "vllm/worker/model_runner.py profile_run"
V0_ENC_DEC_RUNNER = (
    "vllm/worker/enc_dec_model_runner.py profile_run + vllm/model_executor/models/mllama.py "
    "MllamaVisionModel.forward"
)
VISION_FORMULA = (
    "vision encoder over one image per sequence: images x (T^2 + (2S+2) T D + (2S+1) T_u D) x dtype"
)


def weight_extras(spec: ModelSpec, p: VllmPlan) -> tuple[Component, ...]:
    """The weights lines beyond the checkpoint's text tensors: the MXFP4 layout and the
    vision tower, each with its source."""
    out: list[Component] = []
    if p.mxfp4_extra_bytes:
        backend = p.mxfp4_backend
        out.append(
            Component(
                category="weights",
                label="MXFP4 expert layout",
                n_bytes=p.mxfp4_extra_bytes,
                formula=f"{backend} backend's padded/duplicated expert tensors - checkpoint",
                inputs={"tp": p.tp, "backend": backend},
                source="vllm/model_executor/layers/quantization/mxfp4.py Mxfp4MoEMethod "
                "create_weights / process_weights_after_loading",
            )
        )
    if p.vision_weights_bytes:
        out.append(
            Component(
                category="weights",
                label="vision encoder + projector",
                n_bytes=p.vision_weights_bytes,
                formula="multimodal_params x dtype / tp",
                inputs={"multimodal_params": spec.multimodal_params, "tp": p.tp},
                source="vllm/model_executor/models/mllama.py MllamaVisionModel"
                if spec.vision_tower is not None and spec.vision_tower.kind == "mllama"
                else "vllm/model_executor/models (vision tower)",
            )
        )
    if p.lora is not None:
        out.extend(lora_components(p.lora, p.tp))
    return tuple(out)


def estimate_settings(
    settings: InferenceSettings, p0: VllmPlan, pp: int, quant: str | None = None
) -> dict[str, int | float | str | bool | None]:
    """The settings the estimate reports: the ones given and vLLM's defaults it resolved
    (``quant``: the weight format priced, :func:`oomkit.estimate.hf_weights.weights_format`)."""
    lora = p0.lora
    return {
        "runtime": "vllm",
        "quant": quant or settings.quant,
        "ctx": p0.max_model_len,
        "tp": p0.tp,
        **({"pp": pp} if pp > 1 else {}),
        "gpu_memory_utilization": p0.util,
        "max_num_seqs": p0.max_num_seqs,
        "kv_dtype": settings.cache_type_k or "auto",
        "max_num_batched_tokens": p0.max_num_batched_tokens,
        "block_size": p0.block_size,
        "cpu_offload_bytes": settings.cpu_offload_bytes or 0,
        "enforce_eager": bool(settings.enforce_eager),
        **{k: True for k in ("prompt_logprobs", "llm_class", "pooling") if getattr(settings, k)},
        **(
            {
                "speculative_method": settings.speculative_method,
                "speculative_model": settings.speculative_model,
                "num_speculative_tokens": p0.speculative.k if p0.speculative else None,
                # the config's other keys, as given (estimate.speculative_keys)
                **(
                    {"speculative_extra": settings.speculative_extra}
                    if settings.speculative_extra
                    else {}
                ),
            }
            if settings.speculative_method is not None
            else {}
        ),
        **(
            {"enable_lora": True, "max_loras": lora.max_loras, "max_lora_rank": lora.max_lora_rank}
            if lora is not None
            else {}
        ),
    }


def host_usage(settings: InferenceSettings, plans: Sequence[VllmPlan]) -> DeviceUsage:
    """The CPU side: the weights ``--cpu-offload-gb`` moved there, summed over the ranks."""
    return DeviceUsage(
        device="cpu",
        components=(
            Component(
                category="weights",
                label="CPU-offloaded weights",
                n_bytes=sum(p.cpu_offload_bytes for p in plans),
                formula="sum over ranks of min(--cpu-offload-gb, the rank's weights)",
            ),
        )
        if settings.cpu_offload_bytes
        else (),
    )


def vision_inputs(spec: ModelSpec, p: VllmPlan) -> dict[str, int]:
    """The inputs of :data:`VISION_FORMULA` (empty without a vision profile)."""
    tower = spec.vision_tower
    if not p.vision_bytes or tower is None:
        return {}
    return {
        "images": p.vision_images,
        "T": tower.tokens_per_image,
        "T_u": tower.tokens_per_image_unpadded,
        "D": tower.hidden_size,
        "S": tower.saved_layers,
    }


def draft_kv_share(p: VllmPlan, kv: int) -> int:
    """The draft layers' part of the shared KV block pool (their bytes per token over all)."""
    d = p.speculative
    if d is None or not d.kv_bytes_per_token or not p.bytes_per_token:
        return 0
    return kv * d.kv_bytes_per_token // p.bytes_per_token


def speculative_components(p: VllmPlan, kv: int) -> tuple[Component, ...]:
    """The draft's lines (speculative decoding): its weights and its share of the KV pool."""
    d = p.speculative
    if d is None:
        return ()
    from oomkit.estimate.speculative import draft_weights_component

    out = [draft_weights_component(d, "vllm", tp=p.tp)]
    if d.layers:
        out.append(
            Component(
                category="kv_cache",
                label=f"draft KV cache ({d.n_layers} layer(s), in the shared block pool)",
                n_bytes=draft_kv_share(p, kv),
                formula="KV pool x draft bytes/token / (target + draft bytes/token): the draft "
                "layers take a share of every block",
                inputs={
                    "draft_bytes_per_token": d.kv_bytes_per_token,
                    "bytes_per_token": p.bytes_per_token,
                },
                source="vllm/v1/core/kv_cache_utils.py get_kv_cache_config (draft layers in "
                "get_kv_cache_spec)",
            )
        )
    return tuple(out)


def rank_components(spec: ModelSpec, p: VllmPlan, kv: int, src: str) -> tuple[Component, ...]:
    """One rank's lines: weights (text, MXFP4 layout, vision tower), rotary cache, KV pool
    (``kv`` bytes), profile-run peak, non-torch and CUDA graphs, each with its source (``src``:
    the V1 worker's KV budget; V0 engines cite V0's code)."""
    v0 = p.engine.startswith("v0")
    return (
        Component(
            category="weights",
            label="weights",
            n_bytes=p.weights_bytes
            - p.mxfp4_extra_bytes
            - p.vision_weights_bytes
            - (p.lora.load_bytes if p.lora is not None else 0)
            - (p.speculative.weights_bytes if p.speculative is not None else 0),
            formula="checkpoint tensors per rank"
            + (" (text model)" if p.vision_weights_bytes else ""),
            inputs={"tp": p.tp},
            source="vllm/model_executor/layers/linear.py",
        ),
        *weight_extras(spec, p),
        Component(
            category="weights",
            label="rotary cos/sin cache",
            n_bytes=p.rope_cache_bytes,
            formula="max_position x rotary_dim x dtype",
            source="vllm/model_executor/layers/rotary_embedding.py",
        ),
        *speculative_components(p, kv),
        Component(
            category="kv_cache",
            label="KV cache pool",
            n_bytes=kv - draft_kv_share(p, kv),
            formula=(
                "util x total - weights - activations - non_torch"
                + (" - CUDA graphs" if p.cudagraph_charged else "")
                if p.kv_pool_bytes is not None and p.kv_pool_bytes > 0
                else "one sequence of max_model_len (capacity unknown or short)"
            ),
            inputs={
                "util": p.util,
                "bytes_per_token": p.bytes_per_token,
                "block_size": p.block_size,
            },
            source=V0_WORKER if v0 else src,
        ),
        Component(
            category="activations",
            label="profile-run peak",
            n_bytes=p.activation_bytes + p.pinned_allreduce_bytes,
            formula=(
                "peak of max(one layer's live set over max_num_batched_tokens, "
                "hidden states + sampler over min(max_num_seqs, tokens) rows"
                + (", " + VISION_FORMULA if p.vision_bytes else "")
                + ")"
                + (" + record_stream'd all-reduce inputs" if p.pinned_allreduce_bytes else "")
                + (
                    "; the sampler side + the rejection sampler's 2 x rows x vocab fp32 logits"
                    if p.rejection_sampler_bytes
                    else ""
                )
            ),
            inputs={
                "max_num_batched_tokens": p.max_num_batched_tokens,
                "max_num_seqs": p.max_num_seqs,
                "forward_bytes": p.forward_bytes,
                "sampler_bytes": p.sampler_bytes,
                **(
                    {"rejection_sampler_bytes": p.rejection_sampler_bytes}
                    if p.rejection_sampler_bytes
                    else {}
                ),
                "vision_encoder_bytes": p.vision_bytes,
                **vision_inputs(spec, p),
                "engine": p.engine,
            },
            source=(
                (V0_ENC_DEC_RUNNER if p.vision_bytes else V0_RUNNER)
                if v0
                else "vllm/v1/worker/gpu_model_runner.py profile_run"
            ),
        ),
        Component(
            category="overhead",
            label="non-torch (modules, workspaces, NCCL)",
            n_bytes=p.non_torch_bytes,
            formula=p.non_torch_why,
            inputs={"tp": p.tp},
            source="vllm/utils MemorySnapshot (total - free - torch reserved)",
        ),
        Component(
            category="overhead",
            label="CUDA graphs",
            n_bytes=p.cudagraph_bytes,
            formula=(
                "captured sizes x layers x per-layer graph memory + the largest size's pool "
                "(vllm_cudagraph; 0 with --enforce-eager)"
                + (
                    f" x {p.lora.graph_sets} (cudagraph_specialize_lora: with and without LoRA)"
                    if p.lora is not None and p.lora.graph_sets > 1
                    else ""
                )
                + (
                    f"; sizes for 1 + {p.speculative.k} tokens per sequence and the draft's "
                    f"{p.speculative.n_layers} layer(s) (_set_cudagraph_sizes decode_query_len)"
                    if p.speculative is not None and p.cudagraph_bytes
                    else ""
                )
                + "; "
                + (
                    "subtracted from the KV budget (profile_cudagraph_memory)"
                    if p.cudagraph_charged
                    else "captured after the KV cache, in the 1 - util headroom"
                )
            ),
            source=(
                "vllm/worker/model_runner.py capture_model"
                if v0
                else "vllm/v1/worker/gpu_model_runner.py capture_model"
            ),
        ),
    )
