"""Where a stable-diffusion.cpp run stood when an allocation failed: the VAE decode.

stable-diffusion.cpp (and the servers built on it: LocalAI's image backend, sd-server) logs each
stage of a generation. ``generate_image`` samples the latents, logs ``generating N latent images
completed`` (older releases ``sampling completed, taking Ns``), then ``decoding N latents`` and
calls ``decode_first_stage`` for each latent (``stable-diffusion.cpp``); the VAE runner
(``ggml_extend.hpp`` ``GGMLRunner::alloc_compute_buffer``) logs ``vae compute buffer size: N
MB(VRAM)`` when its graph buffer is reserved and ``vae: failed to allocate the compute buffer``
when it is not. A failure after ``decoding N latents`` and before the decode completed (``latent
N decoded`` / ``decode_first_stage completed``), or one that names the VAE's compute buffer, is
therefore the VAE decode's compute buffer: sampling (and loading) had already succeeded.
:func:`oomkit.diagnose.rules_diffusion.vae_decode_in_flight` reads the cause from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.text import Lines, clean

__all__ = ["diffusion_stage_of"]

# the decode began: sd.cpp's LOG_INFO before decode_first_stage, the VAE runner's buffer size
_DECODE_BEGUN = re.compile(r"\bdecoding \d{1,5} latents?\b|\bvae compute buffer size\b")
# the VAE's own compute buffer named as what failed (wherever the line stands)
_VAE_FAILED = re.compile(r"\bvae: failed to allocate the compute buffer")
# the decode finished: a later failure is another stage's (saving, the next request)
_DECODE_DONE = re.compile(
    r"\blatent \d{1,5} decoded\b|\bdecode_first_stage completed\b|\bgenerate_image completed\b"
    r"|\b(?:txt2img|img2img) completed\b|\bsave result image\b"
)


def diffusion_stage_of(lines: Lines, events: Sequence[OomEvent]) -> dict[str, Any]:
    """``{"diffusion_stage": <the line>}`` when the first OOM event fell in the VAE decode."""
    if not events:
        return {}
    first = min(e.line for e in events)
    begun: str | None = None
    for i, raw in enumerate(lines.text):
        if "vae" in raw and _VAE_FAILED.search(raw):
            return {"diffusion_stage": lines.cleaned(i)[:300]}
        if lines.number[i] > first:
            continue
        if ("decod" in raw or "vae" in raw) and _DECODE_BEGUN.search(raw):
            begun = clean(raw)[:300]
        elif begun is not None and _DECODE_DONE.search(raw):
            begun = None
    return {"diffusion_stage": begun} if begun is not None else {}
