"""What a training OOM's own numbers say about the run the doctor sizes.

The training fixes (:mod:`oomkit.diagnose.training_fixes`) rebuild the run from what the log
states and fill the rest with the estimator's defaults (full fine-tuning, AdamW, no gradient
checkpointing, micro-batch 1 x 2048). A PyTorch message also states what the process held when
it failed, and a progress bar how many steps it had completed; those rule setups out:

* the model states that stay resident between steps (weights, the optimizer's states once a step
  ran: the estimate's ``forward_end`` phase less its activations) cannot exceed what PyTorch had
  allocated at the failure (``N GiB is allocated by PyTorch``);
* every phase the log shows completed must have fit the card: the failing step's forward when it
  failed in the backward (and its backward when it failed in the step), and, once a step
  completed, the optimizer step (its size does not depend on the batch).

:func:`consistent_settings` keeps the assumed run when it passes, else tries the unstated facts
in order of departure from it (LoRA, then QLoRA for an unstated method; gradient checkpointing
when unstated; 8-bit AdamW for an unstated optimizer) and returns the first that passes, with
the sentence that says why; the fixes are then sized from that run and say so.

:func:`logits_match` reads the failing request: an exact multiple of the vocabulary is the
logits (or their gradient) of ``tokens = micro-batch x sequence``. transformers computes the
causal-LM loss in fp32 over every position and the whole vocabulary: ``logits = logits.float()``
in ``ForCausalLMLoss`` (``src/transformers/loss/loss_utils.py``, "Upcast to float if we need to
compute the loss", read at v4.47.0; earlier ``DefaultCrossEntropyLoss`` in ``loss_utils.py``, and
before that in each model's ``forward``, ``modeling_llama.py`` ``logits = logits.float()``), and
its backward holds fp32 B·S·V gradients (``log_softmax`` backward). PyTorch prints sizes with two
decimals (``c10/cuda/CUDACachingAllocator.cpp`` ``format_size``), so the match allows half the
last printed digit; the token count must split into the micro-batch and sequence the log states,
else into at most 16 sequences of a power-of-two length (padded or packed to a ``max_length`` /
``block_size``), and be the only such count in that window: a request near a multiple of the
vocabulary by chance is not named.

Pure: values in, values out.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oomkit.diagnose.fixes import size_text
from oomkit.units import GiB, KiB, MiB

if TYPE_CHECKING:
    from oomkit.diagnose.events import OomEvent
    from oomkit.diagnose.training_context import TrainingLogSetup
    from oomkit.estimate.breakdown import Estimate
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import TrainingSettings

__all__ = [
    "LogitsMatch",
    "Observed",
    "ObservedRun",
    "consistent_settings",
    "logged_a_step",
    "logits_match",
    "observed_run",
    "resident_bytes",
]

# HF Trainer's log line (Trainer._maybe_log_save_evaluate -> self.log(logs)): printed after
# `logging_steps` optimizer steps, so a step completed: {'loss': 1.81, 'grad_norm': ..., 'epoch': }
_TRAINER_LOGS = re.compile(r"\{'loss': [-\d.e]+, '(?:grad_norm|learning_rate)': ")
_MAX_MICRO_BATCH = 16  # an unstated micro-batch read off a request: at most this


@dataclass(frozen=True, slots=True)
class LogitsMatch:
    """The failing request is a B·S·V logits tensor: ``tokens`` = B·S, ``elem`` bytes each."""

    tokens: int
    elem: int  # 4: fp32 (the loss upcast and its gradient); 2: bf16/fp16
    micro_batch: int
    seq: int

    def describe(self, vocab: int) -> str:
        kind = "fp32" if self.elem == 4 else "16-bit"
        return (f"the {kind} logits (or their gradient) of {self.tokens} tokens x the "
                f"{vocab}-token vocabulary (micro-batch {self.micro_batch} x sequence "
                f"{self.seq})")  # fmt: skip


def logged_a_step(text: str) -> bool:
    """True when ``text`` holds an HF Trainer loss log line: at least one step completed."""
    return _TRAINER_LOGS.search(text) is not None


def _print_tolerance(n: int) -> int:
    """Half the last digit PyTorch prints for ``n`` bytes (``%.2f`` in KiB/MiB/GiB)."""
    unit = GiB if n >= GiB else MiB if n >= MiB else KiB
    return unit // 200


def _split(t: int, mb: int | None, seq: int | None, default_seq: int) -> tuple[int, int] | None:
    """(micro-batch, sequence) for ``t`` tokens: the stated facts must agree; an unstated
    sequence is a power of two of at least 128 (``default_seq`` when it divides) and an
    unstated micro-batch at most :data:`_MAX_MICRO_BATCH`."""
    if mb and seq:
        return (mb, seq) if mb * seq == t else None
    if seq:
        return (t // seq, seq) if t % seq == 0 and t // seq <= _MAX_MICRO_BATCH else None
    if mb:
        s = t // mb
        return (mb, s) if t % mb == 0 and s >= 128 and s & (s - 1) == 0 else None
    for s in (default_seq, *(1 << k for k in range(15, 6, -1))):
        if s >= 128 and s & (s - 1) == 0 and t % s == 0 and t // s <= _MAX_MICRO_BATCH:
            return t // s, s
    return None


def logits_match(
    requested: int | None, vocab: int | None, setup: TrainingLogSetup, default_seq: int
) -> LogitsMatch | None:
    """The logits tensor ``requested`` bytes is (fp32 first), or None (see the module docs).

    The token count must split into a micro-batch and a sequence the log allows
    (:func:`_split`), and be the only such count within the printed precision.
    """
    if not requested or not vocab or vocab < 1000:
        return None
    tol = _print_tolerance(requested)
    for elem in (4, 2):
        per_token = vocab * elem
        lo, hi = -(-(requested - tol) // per_token), (requested + tol) // per_token
        found = [
            (t, split)
            for t in range(max(1, lo), hi + 1)
            if (split := _split(t, setup.micro_batch, setup.seq, default_seq)) is not None
        ]
        if len(found) == 1:
            t, (mb, seq) = found[0]
            return LogitsMatch(tokens=t, elem=elem, micro_batch=mb, seq=seq)
    return None


def resident_bytes(est: Estimate, steps_done: bool) -> int:
    """What stays allocated between steps: the weights and (once a step ran) the optimizer's
    states, each at its smallest over the phases (the 16-bit compute copy of fp32 weights lives
    only from the forward to the backward, the step's temporaries only in the step)."""
    cats = est.runtime_details.get("phase_categories")
    if not isinstance(cats, dict) or not cats:
        return 0
    keep = ("weights", "optimizer") if steps_done else ("weights",)
    return sum(min(int(c.get(k, 0)) for c in cats.values()) for k in keep)


@dataclass(frozen=True, slots=True)
class Observed:
    """What the message and the progress say the process held and completed."""

    allocated: int | None  # allocated by PyTorch at the failure
    capacity: int | None
    phase: str | None  # the failing phase (forward | backward | optimizer_step)
    steps_done: bool  # a completed step shown before the OOM
    #: the failing step's micro-batch x sequence is known (stated, or read off the logits):
    #: only then can its completed phases, which scale with it, rule a run out
    tokens_known: bool = False

    @classmethod
    def of(
        cls, e: OomEvent, phase: str | None, completed_steps: int | None, tokens_known: bool
    ) -> Observed:
        return cls(e.allocated_bytes, e.total_bytes, phase, bool(completed_steps), tokens_known)

    def rules_out(self, est: Estimate, *, phases_too: bool = True) -> str | None:
        """Why the log rules the estimated run out, or None when it is consistent.

        ``phases_too=False`` checks only the resident states (parameter counts times bytes,
        exact); the completed phases depend on the activation model as well."""
        resident = resident_bytes(est, self.steps_done)
        if self.allocated is not None and resident > self.allocated:
            held = "after completed steps " if self.steps_done else ""
            return (f"its weights and optimizer states alone would be {size_text(resident)}, "
                    f"but PyTorch had {size_text(self.allocated)} allocated {held}when it "
                    f"failed")  # fmt: skip
        phases = est.runtime_details.get("phases")
        if not phases_too or self.capacity is None or not isinstance(phases, dict):
            return None
        done: tuple[str, ...] = ()
        if self.tokens_known:
            done = {
                "backward": ("forward_end",),
                "optimizer_step": ("forward_end", "backward"),
            }.get(self.phase or "", ())
        if self.steps_done:
            done = (*done, "optimizer_step")
        for key in done:
            need = phases.get(key)
            if isinstance(need, int) and need > self.capacity:
                return (f"its {key.replace('_', ' ').replace(' end', '')} would need "
                        f"{size_text(need)} on the {size_text(self.capacity)} GPU, yet the log "
                        f"shows that phase completed")  # fmt: skip
        return None


def _candidates(
    base: TrainingSettings, setup: TrainingLogSetup, assumed: tuple[str, ...], tokens: bool
) -> list[tuple[TrainingSettings, tuple[str, ...]]]:
    """Runs that differ from ``base`` only in facts the log does not state, least change first,
    each with the facts it changed (for the sentence)."""
    stated = " ".join(assumed)
    methods = ["full", "lora", "qlora"] if setup.method is None and "method" in stated else [None]
    gcs = ["none", "full"] if tokens and "gradient checkpointing" in stated else [None]
    opts = ["adamw", "adamw8bit"] if setup.optimizer is None and base.optimizer == "adamw" else [
        None
    ]  # fmt: skip
    out = []
    for method, gc, opt in itertools.product(methods, gcs, opts):
        s = base
        changed: list[str] = []
        if method not in (None, base.method):
            s = dataclasses.replace(s, method=method)
            changed.append("QLoRA (4-bit base)" if method == "qlora" else "LoRA")
        if gc not in (None, base.grad_checkpointing):
            s = dataclasses.replace(s, grad_checkpointing=gc)
            changed.append("gradient checkpointing")
        if opt not in (None, base.optimizer):
            s = dataclasses.replace(s, optimizer=opt)
            changed.append("8-bit AdamW")
        if changed:
            out.append((s, tuple(changed)))
    return out


#: (docfix15) a LoRA/QLoRA + checkpointing run is not rejected on its completed phases alone when
#: the same run with fused cross-entropy fits them: oomkit's estimates of such runs are within
#: -1.6%..-0.5% of measured H200 steps, never above them (benchmarks/
#: training_lora_phases_results.txt, max_memory_allocated), so a card below
#: the estimate's phase most likely means the loss never held the B x S x V logits (Liger's
#: LigerFusedLinearCrossEntropyLoss, Unsloth's fused CE) or sequences padded shorter than assumed
_LOWER_LOG = (
    "; the card is below oomkit's figure for that run's completed phases ({why}), while oomkit's "
    "LoRA + checkpointing estimates are 0.5-1.6% below measured steps, so the run most likely "
    "used fused cross-entropy (Liger / Unsloth) or sequences padded shorter than assumed"
)


def _allowed(
    observed: Observed,
    s: TrainingSettings,
    est: Estimate,
    run: Callable[[TrainingSettings], Estimate | None],
    *,
    loss_open: bool,
) -> tuple[bool, str]:
    """Whether the log's numbers allow ``s`` (with every check), and the note when only a fused
    cross-entropy loss reconciles its completed phases with the card (:data:`_LOWER_LOG`)."""
    why = observed.rules_out(est)
    if why is None:
        return True, ""
    if (
        not loss_open
        or s.method not in ("lora", "qlora")
        or s.grad_checkpointing == "none"  # measured with checkpointing only
        or s.loss != "standard"
    ):
        return False, ""
    if observed.rules_out(est, phases_too=False) is not None:
        return False, ""  # the resident states (exact parameter counts) rule it out
    fused = run(dataclasses.replace(s, loss="fused"))
    if fused is None or observed.rules_out(fused) is not None:
        return False, ""
    return True, _LOWER_LOG.format(why=why)


def consistent_settings(
    base: TrainingSettings,
    setup: TrainingLogSetup,
    assumed: tuple[str, ...],
    observed: Observed,
    run: Callable[[TrainingSettings], Estimate | None],
    *,
    loss_open: bool = False,
) -> tuple[TrainingSettings, str | None]:
    """``base`` when the log's numbers allow it, else the first unstated-fact variant they allow.

    ``loss_open``: the log states no loss and its request is not the logits, so a LoRA/QLoRA
    run whose completed phases exceed the card only by what a fused cross-entropy saves is kept
    (with a note), not rejected on that check alone.

    Returns:
        The run to size and, when it is not ``base``, the sentence that says why (the log's
        numbers that rule ``base`` out and what was inferred, or that nothing tried fits them).
    """
    est = run(base)
    # the resident states decide whether the assumed run is out; the completed phases (which
    # rest on the activation model too) only choose among the runs that replace it
    why = observed.rules_out(est, phases_too=False) if est is not None else None
    if why is None:
        return base, None
    lead = f"the log rules out the assumed run ({base.method} fine-tuning, {base.optimizer}): {why}"
    runs = [(s, changed, run(s)) for s, changed in _candidates(base, setup, assumed,
                                                               observed.tokens_known)]  # fmt: skip
    for s, changed, e2 in runs:
        ok, lower = (False, "") if e2 is None else _allowed(observed, s, e2, run,
                                                            loss_open=loss_open)  # fmt: skip
        if ok:
            inferred = f"{' + '.join(changed)} (inferred, not stated in the log){lower}"
            return s, f"{lead}; sized for the least different run its numbers allow: {inferred}"
    for s, changed, e2 in runs:
        if e2 is not None and observed.rules_out(e2, phases_too=False) is None:
            return s, (f"{lead}; sized for the least different run its numbers allow: "
                       f"{' + '.join(changed)} (inferred, not stated in the log)")  # fmt: skip
    return base, f"{lead}; no run oomkit tried fits the log's numbers, treat these sizes as rough"


@dataclass(frozen=True, slots=True)
class ObservedRun:
    """The run to size, the facts still assumed, and what the log's numbers decided."""

    settings: TrainingSettings
    assumed: tuple[str, ...]
    #: why the assumed run was replaced (or could not be), for every fix's basis; None: kept
    note: str | None
    logits: LogitsMatch | None
    #: the log's shortfall (requested - free): a fix of an inferred run is judged against it
    shortfall: int | None


def observed_run(
    spec: ModelSpec,
    settings: TrainingSettings,
    setup: TrainingLogSetup,
    assumed: tuple[str, ...],
    e: OomEvent,
    hw: Hardware,
    completed_steps: int | None,
) -> ObservedRun:
    """``settings`` checked against the log's numbers (see the module docstring)."""
    from oomkit.errors import OomkitError
    from oomkit.estimate.training import estimate_training

    def run(s: TrainingSettings) -> Estimate | None:
        try:
            return estimate_training(spec, s, hw)
        except (OomkitError, ValueError):
            return None

    logits = logits_match(e.requested_bytes, spec.vocab_size, setup, settings.seq)
    if logits is not None and (setup.micro_batch is None or setup.seq is None):
        settings = dataclasses.replace(settings, micro_batch=logits.micro_batch, seq=logits.seq)
        assumed = tuple(a for a in assumed if not a.startswith(("micro-batch", "sequence")))
        assumed = (*assumed, f"micro-batch {logits.micro_batch} x sequence {logits.seq} "
                   f"(from the failing request: the logits of {logits.tokens} tokens)")  # fmt: skip
    tokens = logits is not None or (setup.micro_batch is not None and setup.seq is not None)
    observed = Observed.of(e, setup.phase, completed_steps, tokens)
    # a request that is the logits shows the loss held them (no fused cross-entropy)
    loss_open = logits is None and setup.loss is None
    chosen, note = consistent_settings(settings, setup, assumed, observed, run, loss_open=loss_open)
    if chosen is not settings:
        method_set = chosen.method != settings.method
        assumed = tuple(
            a for a in assumed
            if not (method_set and a.startswith("method"))
            and not (chosen.grad_checkpointing != settings.grad_checkpointing
                     and a.startswith("gradient checkpointing"))
            and not (chosen.optimizer != settings.optimizer and a.startswith("optimizer"))
        )  # fmt: skip
        if method_set:
            assumed = (*assumed, f"LoRA rank {chosen.lora_rank}", "LoRA targets: PEFT's defaults")
    shortfall = None
    if note is not None and e.requested_bytes is not None and e.free_bytes is not None:
        shortfall = max(0, e.requested_bytes - e.free_bytes)
    return ObservedRun(chosen, assumed, note, logits, shortfall)
