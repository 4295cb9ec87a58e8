"""A loader's own line that it is moving a model onto the GPU, right before the OOM (docpost20).

Training tools announce each model they place: SimpleTuner logs "Moving text encoder 1 to cuda
from cpu" (helpers/training/trainer.py ``init_load_base_model`` / the text-embed cache's
``move_text_encoders``), kohya's sd-scripts and diffusers-based trainers log "move model to
device"-style lines, and a pipeline's ``.to("cuda")`` follows them. When the OOM comes within two
lines of such an announcement, nothing ran between the move and the failure: the allocation that
failed is that model's weights (phase ``model_load``), as an unfinished "Loading checkpoint
shards" bar says for transformers (``parse_torch_frames._loading_bar``). A move line further back
(training steps logged since) says nothing about the failure, and a traceback frame, which names
the phase itself, comes first (this is the last fallback of ``parse_torch_frames._frames``).
Only the head of a paste is read (:data:`HEAD`): the announcement precedes the first OOM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["HEAD", "moved_to_device"]

#: lines read from the start of the paste
HEAD = 400

_MOVE = re.compile(
    r"\b(?:Moving|Transferring|Placing|Sending|Loading)\s+(?:the\s+)?(?:[\w.-]{1,30}\s+){0,3}?"
    r"(?:model|encoder|transformer|unet|vae|pipeline|weights|controlnet)s?\b(?:\s+\d{1,2})?"
    r"\s+(?:to|onto)\s+(?:the\s+)?(?:cuda(?::\d{1,2})?|gpu|device|vram)\b",
    re.IGNORECASE,
)
_OOM = re.compile(r"out of memory|\bOOM\b", re.IGNORECASE)


def moved_to_device(text: Sequence[str]) -> str | None:
    """The move line within two lines before the first OOM line of the head, else ``None``."""
    for i, raw in enumerate(text[:HEAD]):
        if ("emory" in raw or "OOM" in raw) and _OOM.search(raw) is not None:
            for back in range(i - 1, max(-1, i - 3), -1):
                if ("to" in text[back]) and (m := _MOVE.search(text[back])) is not None:
                    return m.group(0)[:300]
            return None
    return None
