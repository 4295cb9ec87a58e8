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

(docfix22) A Metal command buffer that ran out of memory (``Insufficient Memory
(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)``, the IOGPU status Metal reports for a
command buffer; PyTorch's MPS backend, MLX and ggml-metal print it) in a VAE decode: the
traceback's decode frame (diffusers ``AutoencoderKL.decode`` / ``vae.decode(``, the
CompVis/ldm ``decode_first_stage``, ComfyUI's ``VAEDecode`` node in ``nodes.py``) or the text's
own "VAE decode" / "decoding the latents / frames / clip". The decoder upsamples the latent 8x
at the image's (and clip's) size, an activation peak after sampling finished; diffusers'
``AutoencoderKL.enable_tiling`` (``tiled_decode``) and ComfyUI's ``VAEDecodeTiled`` bound it.
Read only where the text shows no LLM context (``llama_decode``, ``n_ctx``, a KV cache): a
language model's decode on Metal is its context's KV cache (rules_evidence
``_metal_command_buffer``).
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


_METAL_OOM = re.compile(
    r"kIOGPUCommandBufferCallbackErrorOutOfMemory|"
    r"\[METAL\] Command buffer execution failed: Insufficient Memory"
)
_VAE_DECODE = re.compile(
    r"\bvae\.decode\(|\bAutoencoderKL\w{0,20}\.decode\b|\bdecode_first_stage\b|"
    r"\bVAEDecode\w{0,10}\b|\bvae[ _-]decod\w{0,4}\b|"
    r"\bdecod(?:e|es|ed|ing) (?:the |all |every )?(?:whole |entire |full )?"
    r"(?:latents?|frames|clip|video|image)\b",
    re.IGNORECASE,
)
# a language model's decode: llama.cpp's llama_decode / llama_context, a context size, a KV cache,
# mlx_lm (not "prompt": ComfyUI logs "got prompt" for every queued workflow)
_LLM = re.compile(
    r"\bllama_(?:decode|context)\b|\bn_ctx\b|\bKV cache\b|\bkv_self\b|\bmlx_lm\b", re.I
)


def _metal_vae_decode(lines: Lines) -> str | None:
    """The text's VAE-decode marker when it shows a Metal command-buffer OOM and no LLM."""
    if not any("kIOGPUCommandBuffer" in t or "[METAL]" in t for t in lines.text):
        return None
    text = "\n".join(lines.text)
    if _METAL_OOM.search(text) is None or _LLM.search(text) is not None:
        return None
    m = _VAE_DECODE.search(text)
    if m is None:
        return None
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    return clean(text[start : end if end >= 0 else len(text)])[:300]


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
    if begun is None:
        begun = _metal_vae_decode(lines)
    return {"diffusion_stage": begun} if begun is not None else {}
