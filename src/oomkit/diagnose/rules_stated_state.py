"""Prose that places a training OOM where only the full training state is allocated.

Written after the retired parts heldout36-38 (docpost18). Two phases of a training run allocate
something the batch does not size, so "halve the batch" cannot help there:

* **the checkpoint save**. With FSDP, ``state_dict()`` under ``StateDictType.FULL_STATE_DICT``
  all-gathers every unsharded parameter onto the GPU of each rank (``torch/distributed/fsdp``
  ``FullStateDictConfig(offload_to_cpu=False, rank0_only=False)`` by default;
  ``_full_post_state_dict_hook`` clones each tensor and warns "Failed to clone() tensor with
  name ..." when that clone runs out); DeepSpeed ZeRO-3's ``save_16bit_model`` gathers the same
  way. A run that trains and then fails when it saves ("When saving the checkpoint, it
  encounters with OOM") has a full model that does not fit next to what one GPU already holds.
* **the optimizer step**. Adam's two moments (8 bytes a parameter in fp32) are allocated by the
  first ``optimizer.step()`` (``torch/optim/adam.py`` ``_init_group``: ``exp_avg``,
  ``exp_avg_sq`` created lazily), after the forward and backward have already fitted: a failure
  "during the step function" is the training state of the whole model (weights + gradients +
  moments), which an 8-bit or CPU-offloaded optimizer, ZeRO sharding or LoRA shrinks.

Both read ``model_too_large`` at 0.45, only where the runtime rule left the cause open
(:func:`oomkit.diagnose.rules_stated.fallback`) and in the OOM's own sentence. Not read: saving
memory, activations or a graph, "after saving" (a later phase), a learning-rate "step size", a
save placed on one GPU by a missing device setting ("w/o setting device id": the first GPU's).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = ["SAVE_FIX", "save_phase", "stated_training_state_phase"]

_OOM = r"(?:oom(?:s|ed|ing)?|out[\s-]of[\s-]memory)"
_SENT = r"[^.;\n]{0,80}?"
_SAVE = (
    r"\b(?:when|while|during|at|on)\s+(?:the\s+)?(?:sav(?:e|ing)|checkpointing|gathering)\s+"
    r"(?:the\s+|a\s+|my\s+)?(?:final\s+|full\s+|last\s+)?(?:model|checkpoints?|ckpts?|weights"
    r"|state[_ ]dicts?)\b"
    r"|\bmodel\s+sav(?:e|ing)\b|\bcheckpoint\s+sav(?:e|ing)\b"
)
_STEP = (
    r"\b(?:during|in|at|on|when\s+(?:calling|running))\s+(?:the\s+)?(?:optimizer\.step\(\)|"
    r"optimi[sz]er(?:'s)?\s+step|step\s+function|optimizer\s+update)"
)
_SAVE_RE = re.compile(
    r"(?i)"
    + _OOM
    + _SENT
    + r"(?:"
    + _SAVE
    + r")|(?:"
    + _SAVE
    + r")"
    + _SENT
    + r"\b"
    + _OOM
    # PyTorch FSDP's _full_post_state_dict_hook, when the clone of a gathered tensor fails
    + r"|Failed to clone\(\) tensor with name \S{1,200}[^\n]{0,400}?\bout of memory"
)
# the save placed on one device by a missing device setting ("when saving the checkpoint w/o
# setting device id": every rank's tensors land on cuda:0) is the first GPU's, not the model's
# (rules_stated_alloc.stated_checkpoint_on_first_gpu)
_PLACEMENT = re.compile(
    r"(?i)\bdevice[ _-]?ids?\b|\bcuda:0\b|\bmap_location\b|\bset_device\b|\blocal_rank\b"
    r"|\b(?:first|same|one)\s+gpu\b|\bgpu\s?0\b"
)
_STEP_RE = re.compile(
    r"(?i)\b" + _OOM + _SENT + r"(?:" + _STEP + r")|(?:" + _STEP + r")" + _SENT + r"\b"
    r"(?:goes\s+|went\s+|runs?\s+|ran\s+)?" + _OOM
)


SAVE_FIX = generic(
    "Save without gathering the full model on the GPU",
    "FSDP's FULL_STATE_DICT (and its full optimizer state dict) all-gathers every parameter "
    "before it is written; DeepSpeed ZeRO-3 gathers a 16-bit copy.",
    (
        "FullStateDictConfig(offload_to_cpu=True, rank0_only=True)",
        "StateDictType.SHARDED_STATE_DICT",
        'fsdp_config: {"state_dict_type": "SHARDED_STATE_DICT"}   # transformers/accelerate',
        # a DeepSpeed config JSON member (the ``config:`` prompt: oomkit.diagnose.script_lines)
        '"zero_optimization": {"stage3_gather_16bit_weights_on_model_save": false}'
        "   # DeepSpeed config",
    ),
)


def save_phase(base: str, frame: str | None) -> Analysis:
    """revfix18e: a traceback whose frames place the OOM in the checkpoint save
    (``LogContext.frame_phase == "checkpoint_save"``, parse_torch_frames): the gather of the
    full (optimizer) state, which no training step held at once, is what failed. The batch does
    not size it, so it outranks the request-size reading; ``model_too_large`` at 0.55, as a
    traceback in ``optimizer.step()``."""
    return Analysis(
        cause="model_too_large",
        confidence=0.55,
        explanation=base + f" The traceback places it in the checkpoint save ({frame}): saving "
        "gathers the full (optimizer) state that the training steps held sharded, and the batch "
        "does not size it. What would decide: whether a sharded save (or a CPU-offloaded, "
        "rank-0-only gather) completes.",
        fixes=(SAVE_FIX,),
    )


def stated_training_state_phase(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The OOM placed at the checkpoint save or the optimizer step: ``model_too_large``."""
    del ctx
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    m = _SAVE_RE.search(e.text)
    if m is not None and not _PLACEMENT.search(e.text):
        return Analysis(
            cause="model_too_large",
            confidence=0.45,
            explanation=result.explanation + f" The text places it at the save ({m.group(0)!r}):"
            " a full state dict gathers every parameter, unsharded, on the GPU, which the "
            "training steps never held at once. What would decide: whether a sharded save (or a "
            "CPU-offloaded, rank-0-only gather) completes.",
            fixes=(SAVE_FIX, *result.fixes),
            open_question=False,
        )
    m = _STEP_RE.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + f" The text places it at the optimizer step "
        f"({m.group(0)!r}): Adam's moments are allocated by the first step, after forward and "
        "backward fitted, and their size is the model's, not the batch's. What would decide: "
        "whether an 8-bit or CPU-offloaded optimizer gets past the step.",
        fixes=(
            generic(
                "Shrink or offload the optimizer state",
                "the moments (8 bytes a parameter) are allocated at the first step.",
                (
                    "bnb.optim.AdamW8bit",
                    '"zero_optimization": {"offload_optimizer": {"device": "cpu"}}'
                    "   # DeepSpeed config",
                    "LoRA instead of full fine-tuning",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
