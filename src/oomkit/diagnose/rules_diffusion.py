"""The VAE decode of a stable-diffusion.cpp generation: the image's activations.

See :mod:`oomkit.diagnose.parse_diffusion` for how the log places the failure.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = ["vae_decode_in_flight"]

# the stage as stable-diffusion.cpp logs it (parse_diffusion); any other stage is a Metal
# command buffer's VAE decode read from a traceback frame or the text (parse_diffusion
# _metal_vae_decode)
_SDCPP_STAGE = re.compile(
    r"\bdecoding \d{1,5} latents?\b|\bvae compute buffer size\b|\bvae: failed to allocate"
)


def vae_decode_in_flight(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The log places the failure in stable-diffusion.cpp's VAE decode: ``batch_or_activations``.

    Mechanism. ``generate_image`` decodes only after sampling finished, so the weights of every
    model (text encoders, diffusion model, VAE) were placed and the sampler's steps ran: they
    fit. ``decode_first_stage`` then builds the VAE decoder's graph for the whole image, and
    ``GGMLRunner::alloc_compute_buffer`` reserves one compute buffer for it whose size grows with
    width x height (x frames for video models): the decoder upsamples the latent 8x with wide
    convolutions, several GiB at 1024x1024 and above. With ``--vae-tiling`` (LocalAI:
    ``vae_tiling``) the decoder runs tile by tile and the buffer is sized by the tile instead, so
    the lever is the image's size, not the model. This holds whether the device's memory ran
    out or the one buffer exceeded the driver's per-allocation limit (Vulkan
    ``maxMemoryAllocationSize``): tiling shrinks both. Read at 0.5: the log does not say whether
    ``--free-params-immediately`` gave the diffusion model's memory back before the decode, so
    a card that holds the weights with little to spare may still call for a smaller model.
    A failure the rule already read as host RAM stays there (where it ran out is RAM).
    """
    if ctx.diffusion_stage is None or not fallback(result) or result.cause == "host_ram":
        return None
    if result.cause == "batch_or_activations" and result.confidence >= 0.5:
        return None
    if not _SDCPP_STAGE.search(ctx.diffusion_stage):
        return _metal_vae_decode(result, ctx.diffusion_stage)
    return Analysis(
        cause="batch_or_activations",
        confidence=0.5,
        explanation=result.explanation + f" The log places the failure in stable-diffusion.cpp's "
        f"VAE decode ({ctx.diffusion_stage[:120].strip()!r}): sampling had finished, so the "
        "weights fit, and the decoder's compute buffer, sized by the image's width x height, "
        "did not. What would decide: whether the same image decodes with --vae-tiling or at a "
        "smaller size.",
        fixes=(
            generic(
                "Decode the VAE in tiles",
                "the decoder's compute buffer is then sized by the tile, not the whole image.",
                ("--vae-tiling", "vae_tiling: true   # LocalAI model config"),
            ),
            generic(
                "Generate a smaller image",
                "the VAE decode's buffer grows with width x height.",
                ("-W 768 -H 768",),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def _metal_vae_decode(result: Analysis, stage: str) -> Analysis:
    """A Metal command buffer that ran out of memory in a VAE decode (diffusers, ComfyUI, a
    ggml video pipeline): the decoder's activations at the image's size, not a KV cache.

    Mechanism. The VAE decoder runs after sampling finished (the weights fit) and upsamples the
    latent 8x with wide convolutions at full resolution (x frames for video): the largest
    activation peak of a generation. diffusers bounds it with ``AutoencoderKL.enable_tiling``
    (``tiled_decode``, src/diffusers/models/autoencoders/autoencoder_kl.py) and
    ``enable_slicing`` (one image of the batch at a time); ComfyUI with its ``VAEDecodeTiled``
    node (nodes.py). Read at 0.5 as the stable-diffusion.cpp case: the text does not say whether
    the diffusion model was released before the decode.
    """
    return Analysis(
        cause="batch_or_activations",
        confidence=0.5,
        explanation=result.explanation + f" The text places the failure in a VAE decode "
        f"({stage[:120].strip()!r}): sampling had finished, so the weights fit, and the "
        "decoder's activations, sized by the image's width x height (x frames), did not fit "
        "the Metal working set. What would decide: whether the same image decodes tiled or at "
        "a smaller size.",
        fixes=(
            generic(
                "Decode the VAE in tiles",
                "the decoder's activations are then sized by the tile, not the whole image.",
                (
                    "pipe.vae.enable_tiling()   # diffusers",
                    "VAE Decode (Tiled) node   # ComfyUI",
                ),
            ),
            generic(
                "Generate a smaller image (or fewer frames)",
                "the VAE decode's activations grow with width x height x frames.",
                ("height=768, width=768",),
            ),
            # (the runtime rule's context fixes read an LLM's KV cache: none here)
            *(f for f in result.fixes if "context" not in f.title.lower()),
        ),
        open_question=False,
    )
