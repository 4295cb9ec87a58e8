"""Ollama engine: the vision encoder's worst-case graph of a Mistral 3 (Pixtral) or Gemma 3 model.

From Ollama v0.7.1 (commit fe623c2cf, "ollamarunner: Multi-modal worst case graph",
2025-04-07) the runner reserves its compute graph with a 2048x2048 image encoded into the batch
(``runner/ollamarunner/runner.go`` ``reserveWorstCaseGraph``: "Encode a 2048x2048 image").
Mistral 3's image processor scales it to the ``longest_edge`` 1540 (``model/models/mistral3/
imageproc.go``), i.e. ``(1540/14)^2 = 12100`` patches, and its vision self-attention calls
``nn.Attention`` without a cache, which before v0.13.2 never takes the fused path ("Only use the
fast SDPA implementation if we have a cache", ``ml/nn/attention.go``): ``key.MulmatFullPrec(
query)`` keeps an F32 score tensor of ``patches^2 x heads`` (softmax in place). The vision
tensors (``v.*``, ``mm.*``) are created on the output layer's backend (``ml/backend/ggml/
ggml.go``: ``strings.HasPrefix(t.Name, "v.") ... createTensor(..., output.bts, ...)``), so the
buffer lands on the GPU only when ``num_gpu`` includes the output layer (``n_layer + 1``).

Modelled buffer: scores ``4 x patches^2 x heads`` + the F32 image ``4 x 3 x 1540^2`` + the
four F32 hidden-state tensors live at the score matmul (residual, roped Q and K, V made
contiguous: ``4 x 4 x patches x hidden``). Real log (ollama/ollama#11355, v0.9.6, A10,
Mistral-Small-3.2 Q4_K_M, ``num_gpu`` 41): ``ggml_gallocr_reserve_n: failed to allocate CUDA0
buffer of size 9646586240``; modelled 9,596,945,600 (-0.5%). Ollama's own estimate of it
(``fs/ggml`` ``VisionGraphSize``, case "mistral3") is ``4 x (1540^2 x 3 + 1024 x 14 +
patches^2 x heads)`` = 9,398,756,544.

v0.13.2 (commit 1108d8b34, "ggml: Enable flash attention for vision encoders") sends encoders
through ``ScaledDotProductAttention``: with flash attention on, no score tensor is kept.

Gemma 3 (``gemma3``, an Ollama-engine model whose GGUF holds the SigLIP tower as ``v.*`` and
the projector as ``mm.*``) goes the same way: ``model/models/gemma3/process_image.go`` resizes
every image to ``vision.image_size`` square (896: ``(896/14)^2 = 4096`` patches) and
``model_vision.go`` calls ``nn.Attention(ctx, query, key, value, scale, nil)``, no cache, so
the worst-case graph holds ``4 x 4096^2 x 16`` bytes of F32 scores (1 GiB) until v0.13.2's
flash-attention path. Ollama's own ``VisionGraphSize`` (``fs/ggml/ggml.go``, case "gemma3",
"mistral3") counts ``4 x (896^2 x 3 + 1152 x 14 + 4096^2 x 16)`` = 1,083,440,640 bytes for it
and the ``v.*`` tensors' size as its weights, placed with the output layer (``llm/memory.go``
``memoryLastLayer := memoryLayerOutput + ollamaEngineProjectorWeights +
ollamaEngineProjectorGraph``, through 0.12.x). The weights are the catalog's
``multimodal_params`` (SigLIP tower + ``mm_input_projection``, from the HF ``vision_config``:
``oomkit.loaders.hf_config_hybrid.gemma3_vision_params``) at F16.

The vision weights (``v.*`` / ``mm.*``, F16) load on the same device: counted from the Pixtral
config (per layer ``4 D^2 + 3 D I + 2 D``, patch conv ``3 P^2 D``, pre-norm, patch merger
``4 D^2``, projector ``D T + T^2``). Only explicit ``num_gpu`` runs are adjusted: with
``num_gpu`` unset, Ollama 0.7.1-0.11 lays out from ``llm/memory.go``, which counts
``VisionGraphSize`` itself; that layout is not modelled here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from oomkit.estimate.breakdown import Component, Estimate
from oomkit.estimate.generations import Generation
from oomkit.spec.model import ModelSpec

__all__ = [
    "Gemma3Vision",
    "PixtralVision",
    "gemma3_vision",
    "ollama_vision_graph",
    "pixtral_vision",
    "worst_case_graph_bytes",
]

_F32 = 4
_F16 = 2
#: runner.go reserveWorstCaseGraph: image.NewGray(image.Rect(0, 0, 2048, 2048))
_WORST_IMAGE_SIDE = 2048
_SOURCE = (
    "ollama runner/ollamarunner/runner.go reserveWorstCaseGraph (commit fe623c2cf, v0.7.1) + "
    "model/models/mistral3 (imageproc.go, model_vision.go) + ml/nn/attention.go"
)


_SOURCE_GEMMA3 = (
    "ollama runner/ollamarunner/runner.go reserveWorstCaseGraph (commit fe623c2cf, v0.7.1) + "
    "model/models/gemma3 (process_image.go, model_vision.go) + ml/nn/attention.go; "
    "fs/ggml/ggml.go VisionGraphSize (case gemma3)"
)


@dataclasses.dataclass(frozen=True, slots=True)
class PixtralVision:
    """A Mistral 3 vision tower (HF ``vision_config`` ``model_type`` ``pixtral``)."""

    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_layers: int
    image_size: int  # longest edge after resizing (Ollama ``vision.longest_edge``)
    patch_size: int
    num_channels: int
    text_hidden_size: int

    @property
    def params(self) -> int:
        d, i, t = self.hidden_size, self.intermediate_size, self.text_hidden_size
        layer = 4 * d * d + 3 * d * i + 2 * d
        patch_conv = self.num_channels * self.patch_size**2 * d
        merger = 4 * d * d  # spatial_merge_size 2: (2x2 x D) -> D
        projector = d * t + t * t + d  # linear_1, linear_2, norm
        return self.num_layers * layer + patch_conv + d + merger + projector


def _catalog_vision_config(spec: ModelSpec) -> Mapping[str, object] | None:
    """The ``vision_config`` of ``spec``'s catalog entry (None: not a catalog name, or none)."""
    try:
        from oomkit.catalog.models import find_model

        config = find_model(spec.name).config
    except Exception:  # not a catalog name
        return None
    vision = config.get("vision_config") if isinstance(config, Mapping) else None
    return vision if isinstance(vision, Mapping) else None


def _positive(vision: Mapping[str, object], key: str, default: int) -> int:
    """A positive int field of a vision config, or ``default``."""
    value = vision.get(key, default)
    return value if isinstance(value, int) and value > 0 else default


def pixtral_vision(spec: ModelSpec) -> PixtralVision | None:
    """The Pixtral tower of a catalog Mistral 3 model (None for anything else)."""
    if spec.architecture != "Mistral3ForConditionalGeneration" or spec.source != "catalog":
        return None
    vision = _catalog_vision_config(spec)
    if vision is None or vision.get("model_type") != "pixtral":  # not a catalog tower
        return None

    def num(key: str, default: int) -> int:
        return _positive(vision, key, default)

    return PixtralVision(
        hidden_size=num("hidden_size", 1024),
        intermediate_size=num("intermediate_size", 4096),
        num_heads=num("num_attention_heads", 16),
        num_layers=num("num_hidden_layers", 24),
        image_size=num("image_size", 1540),
        patch_size=num("patch_size", 14),
        num_channels=num("num_channels", 3),
        text_hidden_size=spec.hidden_size,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Gemma3Vision:
    """A Gemma 3 SigLIP tower (HF ``vision_config`` ``model_type`` ``siglip_vision_model``)."""

    hidden_size: int
    num_heads: int
    image_size: int  # every image is resized to this square (process_image.go)
    patch_size: int
    num_channels: int
    params: int  # tower + projector (ModelSpec.multimodal_params)
    name: str = "Gemma 3"


def gemma3_vision(spec: ModelSpec) -> Gemma3Vision | None:
    """The SigLIP tower of a Gemma 3 model with a vision tower (None for anything else)."""
    if spec.architecture != "Gemma3ForConditionalGeneration" or spec.multimodal_params <= 0:
        return None
    # not a catalog name: Gemma3Config's SigLIP defaults (all sizes share them)
    vision = _catalog_vision_config(spec) or {}

    def num(key: str, default: int) -> int:
        return _positive(vision, key, default)

    return Gemma3Vision(
        hidden_size=num("hidden_size", 1152),
        num_heads=num("num_attention_heads", 16),
        image_size=num("image_size", 896),
        patch_size=num("patch_size", 14),
        num_channels=num("num_channels", 3),
        params=spec.multimodal_params,
    )


def worst_case_graph_bytes(tower: PixtralVision | Gemma3Vision, *, fused_attention: bool) -> int:
    """The vision part of reserveWorstCaseGraph's buffer for the 2048x2048 image.

    >>> t = PixtralVision(1024, 4096, 16, 24, 1540, 14, 3, 5120)
    >>> worst_case_graph_bytes(t, fused_attention=False)
    9596945600
    """
    if isinstance(tower, Gemma3Vision):  # resized to image_size square, whatever it was
        side = tower.image_size
    else:
        scale = max(_WORST_IMAGE_SIDE / tower.image_size, 1.0)
        side = int(_WORST_IMAGE_SIDE / scale)  # imageproc.go: floor(size / ratio)
    per_side = (side - 1) // tower.patch_size + 1
    patches = per_side * per_side
    side = per_side * tower.patch_size
    image = _F32 * tower.num_channels * side * side
    hidden = _F32 * patches * tower.hidden_size
    scores = 0 if fused_attention else _F32 * patches * patches * tower.num_heads
    return scores + image + 4 * hidden


def ollama_vision_graph(
    spec: ModelSpec,
    est: Estimate,
    gen: Generation | None,
    *,
    n_gpu_layers: int | None,
    flash_attn: bool,
) -> Estimate:
    """``est`` with the Mistral 3 / Gemma 3 vision weights and worst-case graph on the
    output's GPU.

    Applies to Ollama releases whose generation carries ``vision_graph`` (0.7.1 on), for an
    explicit ``num_gpu`` that includes the output layer; otherwise ``est`` unchanged.
    """
    mode = None if gen is None else gen.effects.get("vision_graph")
    if mode not in ("image_2048", "image_2048_sdpa") or n_gpu_layers is None:
        return est
    tower: PixtralVision | Gemma3Vision | None = pixtral_vision(spec) or gemma3_vision(spec)
    if tower is None or n_gpu_layers < spec.num_hidden_layers + 1:
        return est
    gpus = [i for i, d in enumerate(est.devices) if d.device != "cpu"]
    if not gpus:
        return est
    gemma = isinstance(tower, Gemma3Vision)
    fused = mode == "image_2048_sdpa" and flash_attn
    graph = worst_case_graph_bytes(tower, fused_attention=fused)
    weights = tower.params * _F16
    last = est.devices[gpus[-1]]
    comps = (
        Component(
            category="weights",
            label="vision encoder + projector (v.*, mm.*, F16)",
            n_bytes=weights,
            formula="multimodal_params (SigLIP tower + mm_input_projection) x 2"
            if gemma
            else "Pixtral params (layers x (4D^2 + 3DI + 2D) + patch conv + merger + "
            "projector) x 2",
            inputs={"params": tower.params, "hidden_size": tower.hidden_size},
            source="ollama ml/backend/ggml/ggml.go (v.* / mm.* on the output layer's backend)",
        ),
        Component(
            category="activations",
            label="vision worst-case graph (2048x2048 image)",
            n_bytes=graph,
            formula="4 x patches^2 x heads (F32 scores; 0 with fused attention) + "
            "4 x 3 x side^2 (image) + 4 x 4 x patches x hidden",
            inputs={"image_side": _WORST_IMAGE_SIDE, "heads": tower.num_heads, "fused": fused},
            source=_SOURCE_GEMMA3 if gemma else _SOURCE,
        ),
    )
    devices = list(est.devices)
    devices[gpus[-1]] = dataclasses.replace(last, components=(*last.components, *comps))
    note = (
        f"Ollama engine (0.7.1+): the {'Gemma 3' if gemma else 'Mistral 3'} vision encoder "
        f"({tower.params / 1e9:.2f} B "
        f"params, F16) and its worst-case graph for a 2048x2048 image ({graph / 2**30:.2f} GiB"
        + (", flash attention" if fused else ", F32 scores unfused")
        + ") go on the GPU holding the output layer"
    )
    return dataclasses.replace(
        est,
        # (Gemma 3's tower is in multimodal_params, already in the model's count)
        model=est.model
        if gemma
        else dataclasses.replace(est.model, params=est.model.params + tower.params),
        devices=tuple(devices),
        assumptions=(*est.assumptions, note),
    )
