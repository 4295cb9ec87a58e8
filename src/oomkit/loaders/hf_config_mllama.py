"""``config.json`` adapter for Llama 3.2 Vision (``MllamaForConditionalGeneration``).

The text model (``text_config``) is read as Llama: its ``cross_attention_layers`` are layers of
``num_hidden_layers`` with q/k/v/o, SwiGLU and a KV cache of their own (vLLM caches the encoder
keys/values in them), so the Llama layer table counts them. The vision side follows
transformers ``MllamaVisionModel`` + ``multi_modal_projector`` (parameters, into
``multimodal_params``) and is described by a :class:`~oomkit.spec.model.VisionTowerSpec` for the
runtimes that size activations from it (vLLM V0's encoder-decoder profile run).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from oomkit.loaders.hf_config_fields import Fields
from oomkit.spec.model import ModelSpec, VisionTowerSpec

__all__ = ["ADAPTERS", "mllama_aspect_ratios", "mllama_vision"]

#: vLLM's mllama encoder pads each tile's tokens to a multiple of 8 (``num_padding_patches``)
_TILE_PAD = 8


def mllama_aspect_ratios(max_num_tiles: int) -> int:
    """Number of supported tile layouts ``(w, h)`` with ``w x h <= max_num_tiles``
    (transformers ``get_all_supported_aspect_ratios``; 8 for 4 tiles)."""
    return sum(
        1
        for w in range(1, max_num_tiles + 1)
        for h in range(1, max_num_tiles + 1)
        if w * h <= max_num_tiles
    )


def mllama_vision(f: Fields, text_hidden: int) -> tuple[int, VisionTowerSpec | None]:
    """(vision + projector parameters, tower shape) from ``vision_config``.

    Parameters (transformers ``MllamaVisionModel``): patch conv ``[D, C, P, P]`` (no bias), class
    embedding ``[D]``, gated position embedding ``[N, D]`` + gate, tile position embedding
    ``[R + 1, T x N x D]``, pre/post tile embeddings ``[R + 1, T x D]`` + gates, two LayerNorms,
    ``num_hidden_layers`` local and ``num_global_layers`` gated layers (q/k/v/o without bias,
    fc1/fc2 with bias, two LayerNorms; two gates per global layer); projector
    ``[text_hidden, vision_output_dim]`` + bias. ``N = (image_size / patch_size)**2 + 1``,
    ``T = max_num_tiles``, ``R`` the number of supported aspect ratios. Defaults are
    MllamaVisionConfig's.
    """
    vc = f.top.get("vision_config")
    if not isinstance(vc, Mapping):
        f.note("No vision_config: the Mllama vision encoder is not counted.")
        return 0, None
    v = Fields(vc, name=f.name, architecture=f.architecture, path=f.path)
    d = v.integer("hidden_size", default=1280)
    inter = v.integer("intermediate_size", default=5120)
    local = v.integer("num_hidden_layers", default=32)
    glob = v.integer("num_global_layers", default=8)
    image, patch = v.integer("image_size", default=448), v.integer("patch_size", default=14)
    channels = v.integer("num_channels", default=3)
    tiles = v.integer("max_num_tiles", default=4)
    out_dim = v.integer("vision_output_dim", default=7680)
    saved = v.int_list("intermediate_layers_indices") or (3, 7, 15, 23, 30)
    n = (image // patch) ** 2 + 1
    rows = mllama_aspect_ratios(tiles) + 1
    per_layer = 4 * d * d + (d * inter + inter) + (inter * d + d) + 4 * d
    embed = d * channels * patch * patch + d + (n * d + 1) + rows * tiles * n * d
    embed += 2 * (rows * tiles * d + 1) + 4 * d
    params = embed + (local + glob) * per_layer + 2 * glob + text_hidden * out_dim + text_hidden
    padded = n + (-n) % _TILE_PAD
    tower = VisionTowerSpec(
        kind="mllama",
        hidden_size=d,
        intermediate_size=inter,
        num_layers=local,
        num_global_layers=glob,
        tokens_per_image=tiles * padded,
        tokens_per_image_unpadded=tiles * n,
        saved_layers=len(saved),
    )
    return params, tower


def _mllama(f: Fields, source: str) -> ModelSpec:
    """Llama 3.2 Vision: the Llama text stack (cross-attention layers included) + the tiled ViT."""
    from oomkit.loaders.hf_config_decoder import decoder_kwargs, finish
    from oomkit.loaders.hf_config_llama import llama_layers

    kw = llama_layers(f, decoder_kwargs(f))
    params, tower = mllama_vision(f, kw["hidden_size"])
    kw.update(multimodal_params=params, vision_tower=tower)
    f.note(
        "Mllama cross-attention layers are counted as self-attention layers of the same shape "
        "(q/k/v/o + MLP)."
    )
    return finish(f, kw, source)


ADAPTERS: dict[str, Callable[[Fields, str], ModelSpec]] = {
    "MllamaForConditionalGeneration": _mllama,
}
