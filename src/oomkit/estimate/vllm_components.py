"""The vLLM estimate's ``--explain`` lines beyond the plan's totals, each with its source.

The weights of :class:`~oomkit.estimate.vllm.VllmPlan` include the MXFP4 backend's layout above
the checkpoint (:mod:`oomkit.estimate.vllm_mxfp4`) and the vision tower; they get lines of
their own. V0 engines cite V0's worker and model runner, and the Mllama profile run shows its
formula (:mod:`oomkit.estimate.vllm_mm`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import Component
from oomkit.spec.model import ModelSpec

if TYPE_CHECKING:
    from oomkit.estimate.vllm import VllmPlan

__all__ = [
    "V0_ENC_DEC_RUNNER",
    "V0_RUNNER",
    "V0_WORKER",
    "VISION_FORMULA",
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
    return tuple(out)


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
