"""A PyTorch OOM on a card too small for the job, and how much the process holds (text).

Split out of :mod:`oomkit.diagnose.rules_torch_allocator`, which calls them.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.rules_torch_fixes import _batch_fixes, _fb, _model_fixes
from oomkit.units import GiB

# A card this small (2 GB GeForce / Quadro / laptop parts, 1 GB boards) keeps 0.3-0.6 GiB for the
# CUDA context, the cuDNN/cuBLAS handles and often the display (the message's total minus its
# free minus what PyTorch holds), so about 1.5 GiB is left for the job: see _small_card
_SMALL_CARD = 2 * GiB


def _small_card(
    e: OomEvent, text: str, x: int, t: int, held: int, held_known: bool, free: int
) -> Analysis:
    """A small request that fails on a card of at most 2 GiB: ``model_too_large`` (0.45).

    Mechanism. A small request (under a tenth of the card; larger ones are read as activations
    above) fails when what is already resident fills the card. On a card of <= 2 GiB
    (:data:`_SMALL_CARD`) the CUDA context, the cuDNN/cuBLAS handles and often the display keep
    0.3-0.6 GiB that no setting of the job frees, so the job has about 1.5 GiB: the weights of
    a current model with their gradients and optimizer states (or a diffusion / detection
    pipeline's several models) do not fit that however small the batch, and a smaller batch
    moves the failure by one step's activations at most. So the resident state, not the step,
    is read first, settled at 0.45 (the base rate of larger cards does not apply); what would
    decide otherwise is a run at batch size 1 (or the smallest input) that passes. A traceback
    in forward/backward places the failure in the step and is left to the phase's rule.
    """
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=text + f" The request is small ({100 * x / t:.1f}% of the card) while "
        f"{_held_text(held, held_known, t, free)}, on a card of {_fb(t)}: the CUDA context and "
        "libraries keep 0.3-0.6 GiB of such a card, and what stays resident (weights, "
        "gradients, optimizer states) fills the rest before this step; a smaller batch saves "
        "one step's activations at most. What would decide otherwise: batch size 1 (or the "
        "smallest input) passing.",
        fixes=tuple(_model_fixes() + _batch_fixes(e, None)),
        open_question=False,
    )


def _held_text(held: int, known: bool, total: int, free: int) -> str:
    """What the device holds, in words: a message cut before its "allocated"/"in use" numbers
    states no holding, so it is the card minus the free memory, said as such (not "0 bytes")."""
    if known:
        return f"{_fb(held)} is already held"
    in_use = _fb(max(0, total - free))
    return f"{in_use} of the card is in use (the message is cut before it says by what)"
