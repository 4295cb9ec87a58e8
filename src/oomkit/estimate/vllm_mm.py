"""vLLM V0's encoder-decoder profile run for Mllama (Llama 3.2 Vision): one image per sequence.

``EncoderDecoderModelRunner.profile_run`` (vllm/worker/enc_dec_model_runner.py, V0) builds
``max_num_seqs`` dummy sequences and gives each the encoder dummy data of the model
(``dummy_encoder_data_for_mllama``: ``limit_mm_per_prompt`` images, 1 by default, each a
1024x1024 image that the processor cuts into ``max_num_tiles`` tiles), then runs ONE forward over
all of them. ``MllamaVisionModel.forward`` (vllm/model_executor/models/mllama.py, added with
Mllama in PR #8811, vLLM 0.6.2) encodes every image of the batch at once, so the profile peak
grows with ``max_num_seqs``, not with ``max_num_batched_tokens``. What is live per image at its
peak (the final ``torch.cat``), with ``T`` the image's tokens padded to 8 per tile, ``T_u``
unpadded, ``D`` the vision width, ``S`` the saved layers (``intermediate_layers_indices``):

* the aspect-ratio attention mask ``[1, T, T]`` in the model dtype
  (``_prepare_aspect_ratio_attention_mask``: an outer product of the tile mask, kept through
  both encoders);
* the ``S`` saved hidden states, held twice: the encoder's tuple (``output[1]``) and its
  ``torch.stack``: ``2 S T D``;
* the stacked states sliced to ``T_u`` and reshaped (a copy, the slice is not contiguous):
  ``S T_u D``; the global encoder's output ``T D``, and the local encoder's last state
  ``T D``, still referenced by the ``output`` tuple;
* the concatenation ``[hidden, intermediates]``: ``(S + 1) T_u D``.

That is ``T^2 + (2S + 2) T D + (2S + 1) T_u D`` elements per image: 0.43 GiB for Llama 3.2 11B
Vision (T = 4 x 1608), so the default 256 sequences ask ~110 GiB of an 80 GiB A100 while 32
ask ~14 GiB (vllm#9445: "Fixed the issue by decreasing max_num_seqs to 32"; vllm#9630 on a
96 GB H100: 256 sequences OOM at ``max_model_len`` 32, 128 start with 2252 blocks; the
offline example of vLLM sets ``max_num_seqs=16`` for this model with "The default setting of
max_num_seqs (256) and max_model_len (131072) for this model may cause OOM").
Afterwards the projector's ``cross_attention_states`` ``[T_u, text_hidden]`` per image stay
alive while the decoder runs.
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec, VisionTowerSpec

__all__ = [
    "mllama_cross_states_bytes",
    "mllama_vision_peak_bytes",
    "vision_profile",
    "vision_profile_images",
]


def mllama_vision_peak_bytes(tower: VisionTowerSpec, *, images: int, elem_bytes: int) -> int:
    """Peak bytes of ``MllamaVisionModel.forward`` over ``images`` images (see module doc)."""
    t, tu, d, s = (
        tower.tokens_per_image,
        tower.tokens_per_image_unpadded,
        tower.hidden_size,
        tower.saved_layers,
    )
    per_image = t * t + (2 * s + 2) * t * d + (2 * s + 1) * tu * d
    return images * per_image * elem_bytes


def mllama_cross_states_bytes(
    tower: VisionTowerSpec, *, images: int, text_hidden: int, elem_bytes: int
) -> int:
    """``cross_attention_states`` after the projector: ``images x T_u x text_hidden``."""
    return images * tower.tokens_per_image_unpadded * text_hidden * elem_bytes


def vision_profile_images(spec: ModelSpec, *, max_num_seqs: int, engine: str) -> int:
    """Images in the profile run: one per dummy sequence for Mllama under V0's
    encoder-decoder runner (``engine`` a ``v0-*`` row), else 0 (not modelled)."""
    tower = spec.vision_tower
    if tower is None or tower.kind != "mllama" or not engine.startswith("v0"):
        return 0
    return max_num_seqs


def vision_profile(
    spec: ModelSpec,
    act: int,
    fwd: int,
    *,
    max_num_seqs: int,
    engine: str,
    elem_bytes: int,
    pp_rank: int,
) -> tuple[int, int, tuple[str, ...]]:
    """(vision peak, profile peak, notes): ``act`` (the text profile peak) raised to the vision
    encoder's peak and to ``fwd`` (one text layer's live set) plus the cross-attention states,
    on the first pipeline stage of a V0 engine; unchanged otherwise."""
    tower = spec.vision_tower
    images = vision_profile_images(spec, max_num_seqs=max_num_seqs, engine=engine)
    if not images or tower is None or pp_rank != 0:
        return 0, act, ()
    vision = mllama_vision_peak_bytes(tower, images=images, elem_bytes=elem_bytes)
    cross = mllama_cross_states_bytes(
        tower, images=images, text_hidden=spec.hidden_size, elem_bytes=elem_bytes
    )
    note = (
        f"V0 encoder-decoder profile: {images} dummy images (one per max_num_seqs) through the "
        f"Mllama vision encoder at once: {vision / 2**30:.1f} GiB"
    )
    return vision, max(act, vision, fwd + cross), (note,)
