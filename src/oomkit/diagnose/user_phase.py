"""The user's answer to the doctor's deciding question: when did it fail (``--when``)?

When neither the numbers nor the traceback place the failure, the doctor asks "does it fail at
load, on the first batch, or only after N steps?" (``Diagnosis.open_question``). ``oomkit doctor
LOG --when load|first-step|later`` answers it, and the answer decides what the rules left open
(a rule that settled the cause at confidence >= 0.5 keeps it; host RAM and KV-pool sizing are
not phase questions):

* ``load``: the weights (and what the loader allocates with them) do not fit:
  ``model_too_large``.
* ``first-step``: the model loaded, the first batch or request failed: what that step adds
  (activations, logits, KV cache) does not fit: ``batch_or_activations``. A training run that
  fails in ``optimizer.step()`` is placed by its traceback (optimizer states:
  ``model_too_large``), not by this answer.
* ``later``: steps completed before it failed, so what stays resident fit: memory grew across
  steps or a later input was larger: ``leak_or_accumulation``.
"""

from __future__ import annotations

from dataclasses import replace

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.fixes import generic

__all__ = ["WHEN", "with_user_phase"]

#: the accepted answers (the CLI's ``--when`` choices)
WHEN = ("load", "first-step", "later")
_SETTLED = 0.5
_NOT_PHASE = frozenset({"host_ram", "kv_cache_or_context"})
#: the cause each answer decides, and how the explanation repeats the answer
_IMPLIES = {
    "load": "model_too_large",
    "first-step": "batch_or_activations",
    "later": "leak_or_accumulation",
}
_SHOWN = {
    "forward": "the forward pass",
    "backward": "backward()",
    "optimizer_step": "optimizer.step()",
    "generate": "generate()",
}
_SAID = {
    "load": "while loading",
    "first-step": "on the first batch or request",
    "later": "only after steps completed",
}


#: phases of a traceback (LogContext.frame_phase, a training log's phase) after the load
_AFTER_LOAD = frozenset({"forward", "backward", "optimizer_step", "generate"})


def with_user_phase(result: Analysis, when: str | None, shown: str | None = None) -> Analysis:
    """``result``, decided by the user's ``--when`` answer where the rules left it open.

    ``shown`` is the phase the log's traceback shows (``model_load``, ``forward``, ``backward``,
    ``optimizer_step``, ``generate``), which outranks the answer: "load" beside a traceback in a
    step is echoed and not applied, and "first-step" in ``optimizer.step()`` is the optimizer
    states, allocated at the first step beside weights and gradients (``model_too_large``).
    """
    if when is None:
        return result
    if when not in WHEN:
        raise ValueError(f"--when must be one of {', '.join(WHEN)}, got {when!r}")
    from oomkit.diagnose.priors import is_open

    if when == "load" and shown in _AFTER_LOAD and result.cause not in _NOT_PHASE:
        return replace(
            result,
            explanation=result.explanation + f" You said it fails while loading, but the log's "
            f"traceback shows it in {_SHOWN[shown]}, after the load: the answer does not change "
            "the reading (is this log from the run you mean?).",
        )
    if when == "first-step" and shown == "optimizer_step" and result.cause not in _NOT_PHASE:
        if result.cause == "model_too_large" and result.confidence >= 0.7:
            return result
        if result.confidence < _SETTLED or is_open(result):
            return Analysis(
                cause="model_too_large",
                confidence=0.7,
                explanation=result.explanation + " You said the first step fails, and the "
                "traceback shows it in optimizer.step(): the optimizer states, allocated at the "
                "first step, do not fit beside the weights and gradients (8-bit or paged "
                "optimizer states, ZeRO/FSDP sharding or LoRA shrink them).",
                fixes=result.fixes,
                open_question=False,
            )

    if result.cause in _NOT_PHASE or (result.confidence >= _SETTLED and not is_open(result)):
        if result.cause == _IMPLIES[when]:
            return result
        # never dropped silently: the answer is echoed, and why it did not decide
        why = (
            f"when it fails does not decide {result.cause}"
            if result.cause in _NOT_PHASE
            else f"the facts above settle {result.cause} (confidence {result.confidence:.2f})"
        )
        return replace(
            result,
            explanation=result.explanation + f" You said it fails {_SAID[when]}; that alone "
            f"would point at {_IMPLIES[when]}, but {why}, so the answer does not change it. If "
            "both are right, check the model, dtype and GPU the doctor was given.",
        )
    if when == "load":
        return Analysis(
            cause="model_too_large",
            confidence=0.7,
            explanation=result.explanation + " You said it fails while loading: the weights "
            "(and what the loader allocates with them) do not fit, whatever the batch.",
            fixes=result.fixes,
            open_question=False,
        )
    if when == "first-step":
        return Analysis(
            cause="batch_or_activations",
            confidence=0.6,
            explanation=result.explanation + " You said the model loads and the first batch "
            "or request fails: the weights fit, and what that step adds (activations, logits, "
            "KV cache) does not, so the batch or the input length is the lever.",
            fixes=(
                generic(
                    "Halve the batch size / input length",
                    "activation memory scales linearly with batch and sequence length.",
                    ("batch_size = max(1, batch_size // 2)",),
                ),
                *result.fixes,
            ),
            open_question=False,
        )
    return Analysis(
        cause="leak_or_accumulation",
        confidence=0.6,
        explanation=result.explanation + " You said steps completed before it failed: what "
        "stays resident (weights, optimizer states) fit, so memory grew across steps (tensors "
        "kept alive, a growing cache) or a later input was larger. torch.cuda.memory_allocated() "
        "per step decides: rising means accumulation, flat means a larger input at that step.",
        fixes=(
            generic(
                "Stop keeping tensors alive across steps",
                "accumulate Python numbers, detach what you store, free per-step outputs.",
                ("total_loss += loss.item()", "history.append(out.detach().cpu())"),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
