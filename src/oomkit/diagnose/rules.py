"""From events and context to a :class:`Diagnosis`: cause, confidence, arithmetic, ranked fixes.

The rules pick the most informative event (the one stating the most numbers, ties going to the
latest), send it to its runtime's analysis (``rules_torch``, ``rules_llamacpp``,
``rules_serving``), then ask every *fix provider* for more fixes and rank all fixes by expected
saving.

Fix providers are the extension hook for model-aware estimators: any callable taking a
:class:`Finding` and returning a sequence of :class:`~oomkit.diagnose.fixes.Fix`::

    def my_provider(finding: Finding) -> list[Fix]:
        if finding.cause == "kv_cache_or_context" and finding.context.model_name:
            ...  # compute the context that fits from the model's config
        return []

    diagnose(events, context, fix_providers=[my_provider])

A provider's fix may carry ``supersedes`` (title prefixes, see
:class:`oomkit.diagnose.model_fixes.EstimatedFix`): the rule's fixes whose titles start with one
of them are dropped, since the provider recomputed the same change; a rule fix sized from the
log's own numbers with the very title of a provider fix stays, with the provider's arithmetic
added to its ``why``. A provider that raises is
skipped (its error is noted in ``Diagnosis.notes``), so a broken estimator can never hide the
diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from oomkit.diagnose.analysis import CAUSES, Analysis
from oomkit.diagnose.cause_order import lever_of_cause_first
from oomkit.diagnose.consistency import drop_contradictions, label_hardware
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic, rank, size_text
from oomkit.diagnose.gpu_api_status import analyze_gpu_api_status
from oomkit.diagnose.model_cause import ModelFacts, batch_levers_first, with_model_facts
from oomkit.diagnose.parse_llamacpp_fit import FIT_FORMAT
from oomkit.diagnose.priors import MODEL_ASK, is_open, with_prior
from oomkit.diagnose.question_pick import AskedQuestion
from oomkit.diagnose.questions import AppliedAnswer, Question
from oomkit.diagnose.rules_apps import analyze_apps
from oomkit.diagnose.rules_backends import analyze_backends
from oomkit.diagnose.rules_engines import analyze_engines
from oomkit.diagnose.rules_evidence import refine_by_evidence
from oomkit.diagnose.rules_extra import analyze_extra, growth_across_events
from oomkit.diagnose.rules_families import analyze_families, decide_by_log_facts
from oomkit.diagnose.rules_frameworks import analyze_frameworks
from oomkit.diagnose.rules_hosts import analyze_hosts
from oomkit.diagnose.rules_jetson import analyze_jetson
from oomkit.diagnose.rules_libs import analyze_libs
from oomkit.diagnose.rules_llamacpp import analyze_llamacpp
from oomkit.diagnose.rules_llamacpp_fit import fit_shortfall
from oomkit.diagnose.rules_notmemory import analyze_not_memory
from oomkit.diagnose.rules_ollama import analyze_ollama
from oomkit.diagnose.rules_preload import analyze_preload
from oomkit.diagnose.rules_recognise import analyze_recognised
from oomkit.diagnose.rules_serving import analyze_other, analyze_serving
from oomkit.diagnose.rules_smi import with_smi_table
from oomkit.diagnose.rules_torch import analyze_torch
from oomkit.diagnose.rules_usage import analyze_usage
from oomkit.diagnose.rules_warnings import analyze_warning
from oomkit.diagnose.stack_status import analyze_stack_status
from oomkit.diagnose.taxonomy import allocation_of, phase_of
from oomkit.diagnose.user_phase import with_user_phase

__all__ = ["CAUSES", "SCHEMA_VERSION", "Diagnosis", "Finding", "FixProvider", "diagnose"]

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """What a fix provider receives: the events, the context, the primary event and the cause."""

    events: tuple[OomEvent, ...]
    context: LogContext
    primary: OomEvent | None
    cause: str
    confidence: float


FixProvider = Callable[[Finding], Sequence[Fix]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """The doctor's answer. ``events`` empty means no OOM was found (cause ``unknown``)."""

    events: tuple[OomEvent, ...]
    context: LogContext
    cause: str
    confidence: float
    explanation: str
    fixes: tuple[Fix, ...]
    primary: OomEvent | None = None
    notes: tuple[str, ...] = ()
    allocation: str = "unknown"  # which allocation failed (taxonomy.ALLOCATIONS)
    phase: str = "unknown"  # phase of the run (taxonomy.PHASES)
    #: the rules left the cause open: it is the base rate's guess, or unknown when that is flat
    #: (oomkit.diagnose.priors)
    open_question: bool = False
    #: the deciding question, when the cause is open or below 0.6 (oomkit.diagnose.questions)
    question: Question | None = None
    #: the user's answers the doctor re-ran with, and what each did
    answers: tuple[AppliedAnswer, ...] = ()

    @property
    def oom_found(self) -> bool:
        """True when the log holds at least one OOM event."""
        return bool(self.events)

    def to_dict(self) -> dict[str, Any]:
        """The ``doctor --json`` document (DESIGN.md contract, plus ``context``/``notes``)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "events": [e.to_dict() for e in self.events],
            "cause": self.cause,
            "confidence": round(self.confidence, 3),
            "explanation": self.explanation,
            "fixes": [f.to_dict() for f in self.fixes],
            "primary_event": self.events.index(self.primary)
            if self.primary in self.events
            else None,
            "context": self.context.to_dict(),
            "notes": list(self.notes + self.context.notes),
            "allocation": self.allocation,
            "phase": self.phase,
            "question": None if self.question is None else self.question.to_dict(),
            "answers": [a.to_dict() for a in self.answers],
        }


_NUMERIC = tuple(
    f.name
    for f in fields(OomEvent)
    if f.name.endswith(("_bytes", "_len", "_tokens")) or f.name in {"device", "shape"}
)
_WEAK_KINDS = frozenset({"runner_terminated", "killed", "cuda_error_oom", "library_alloc_failed"})


def _score(e: OomEvent) -> int:
    n = sum(1 for k in _NUMERIC if getattr(e, k) is not None) + len(e.other_processes)
    return n + (0 if e.kind in _WEAK_KINDS else 3)


def _primary(events: Sequence[OomEvent]) -> OomEvent | None:
    best: OomEvent | None = None
    for e in events:
        if best is None or _score(e) >= _score(best):
            best = e
    return best


def _analyze(e: OomEvent, ctx: LogContext) -> Analysis:
    # rules_warnings, rules_usage, rules_jetson
    use = analyze_warning(e, ctx) or analyze_usage(e, ctx) or analyze_jetson(e, ctx)
    if use is not None:
        return use
    guard = analyze_not_memory(e, ctx)  # a size guard or a catch-all retry: no memory ran out
    if guard is not None:
        return guard
    hst = analyze_hosts(e, ctx)
    if hst is not None:
        return hst
    eng = analyze_engines(e, ctx)  # TensorRT scratch, TensorRT-LLM KV blocks, GPUStack
    if eng is not None:
        return eng
    pre = analyze_preload(e)  # a loader's refusal before any allocation (rules_preload)
    if pre is not None:
        return pre
    frm = analyze_frameworks(e, ctx)
    if frm is not None:
        return frm
    bke = analyze_backends(e, ctx)
    if bke is not None:
        return bke
    rec = analyze_recognised(e, ctx)
    if rec is not None:
        return rec
    app = analyze_apps(e, ctx)
    if app is not None:
        return app
    api = analyze_gpu_api_status(e, ctx)  # ncnn's Vulkan status lines, Metal's debug layer
    if api is not None:
        return api
    stk = analyze_stack_status(e, ctx)  # WebGPU/D3D12 device loss, OpenCL, a wasm heap
    if stk is not None:
        return stk
    lib = analyze_libs(e, ctx)
    if lib is not None:
        return lib
    fam = analyze_families(e, ctx)
    if fam is not None:
        return fam
    extra = analyze_extra(e, ctx)
    if extra is not None:
        return extra
    if e.runtime == "pytorch" and e.kind != "killed":
        return analyze_torch(e, ctx)
    if e.format == FIT_FORMAT:
        return fit_shortfall(e, ctx)
    if e.runtime == "llama.cpp":
        from oomkit.diagnose.rules_ollama_runner import ollama_runner_reading

        return ollama_runner_reading(e, ctx, analyze_llamacpp(e, ctx))
    if e.runtime == "ollama":
        if e.kind in {"host_oom", "killed", "runner_terminated"}:
            return analyze_ollama(e, ctx)
        return analyze_ollama(e, ctx)
    if e.runtime in {"vllm", "sglang", "tgi", "tensorrt-llm"}:
        return analyze_serving(e, ctx)
    return analyze_other(e, ctx)


_MAX_GENERIC_BESIDE_COMPUTED = 1


def _prune_generic(fixes: tuple[Fix, ...]) -> tuple[Fix, ...]:
    """Generic advice only when nothing better is known: beside log-specific fixes keep at most
    one generic fix (the first the rule listed, usually the most relevant)."""
    if not any(not f.generic for f in fixes):
        return fixes
    out: list[Fix] = []
    kept = 0
    for f in fixes:
        if f.generic:
            if kept >= _MAX_GENERIC_BESIDE_COMPUTED:
                continue
            kept += 1
        out.append(f)
    return tuple(out)


def _merge_provider_fixes(extra: Sequence[Fix], fixes: tuple[Fix, ...]) -> list[Fix]:
    """Provider fixes and the rule's, without two fixes for one change.

    A provider fix may carry ``supersedes`` (title prefixes): the rule's fixes with those titles
    are dropped, since the provider recomputed the same change. When a provider fix has the very
    title of a rule fix sized from the log's own numbers, the measured one keeps its place and
    saving and the provider's arithmetic is added to its ``why``.
    """
    measured = {f.title: f for f in fixes if f.expected_saving_bytes is not None}
    kept: list[Fix] = []
    merged: dict[str, Fix] = {}
    for f in extra:
        rule = measured.get(f.title)
        if rule is None or f.title in merged:
            kept.append(f)
            continue
        merged[f.title] = replace(
            rule,
            why=f"{rule.why} The model-aware estimate puts it at "
            f"{size_text(f.expected_saving_bytes)}: {f.why}",
            # whether it makes the run fit is the estimate's answer for this very change
            fits=rule.fits if f.fits is None else f.fits,
            order=rule.order if f.order is None else f.order,
        )
    prefixes = tuple(p for f in extra for p in getattr(f, "supersedes", ()))
    rest = [
        merged.get(f.title, f)
        for f in fixes
        if f.title in merged or not (prefixes and f.title.startswith(prefixes))
    ]
    return [*kept, *rest]


# What would decide an ambiguous diagnosis, per cause (appended when confidence is low and the
# rule's explanation does not already name a deciding fact).
_DECIDING_FACT = {
    "other_process_holding_memory": "Run `oomkit gpus` (or nvidia-smi) to see which processes "
    "hold the GPU; if none, the cause is inside this job.",
    "model_too_large": "Compare the model's resident size with the GPU (`oomkit estimate "
    "MODEL`): if it fits with room to spare, the batch/context is the cause instead.",
    "batch_or_activations": "If it still fails at batch size 1 / the shortest input, the "
    "resident model is the cause instead.",
    "kv_cache_or_context": "If it still fails at a short context, the weights are the cause "
    "instead.",
    "fragmentation": "If it still fails with expandable_segments:True, the memory is really "
    "used, not fragmented.",
    "leak_or_accumulation": "Memory that grows step after step (torch.cuda.memory_allocated() "
    "per step) confirms it.",
    "multi_gpu_imbalance": "The free memory of each GPU at load (`oomkit gpus`) confirms it.",
    "host_ram": "`free -h` and dmesg at the time of the failure confirm it.",
    "unknown": "The full message (with sizes) and `oomkit gpus` (free memory, other processes) "
    "would decide the cause.",
}
_DECIDE_WORDS = ("decide", "oomkit gpus", "confirm", "would ", "instead")
_LOW_CONFIDENCE = 0.6


def _with_deciding_fact(result: Analysis, primary: OomEvent | None = None) -> Analysis:
    if result.confidence >= _LOW_CONFIDENCE or any(w in result.explanation for w in _DECIDE_WORDS):
        return result
    if (
        result.cause == "unknown"
        and primary is not None
        and primary.requested_bytes is not None
        and (primary.allowed_bytes or primary.free_bytes or primary.total_bytes)
    ):
        # "the full message (with sizes) would decide" is false where the sizes were read
        # (review 17: a TensorRT scratch message with both sizes): what decides is the setting
        # that sized the failing pool, which the message does not name
        return replace(
            result,
            explanation=result.explanation.rstrip()
            + " What would decide it is not in the message: the setting that capped this "
            "memory (a pool or workspace size, a MIG slice, a per-process or cgroup limit).",
        )
    fact = _DECIDING_FACT.get(result.cause)
    if fact is None:
        return result
    return replace(result, explanation=f"{result.explanation} {fact}")


def _with_growth(result: Analysis, events: Sequence[OomEvent]) -> Analysis:
    """Growth across repeated OOMs of one process outranks the single-event cause (except host
    RAM and KV-pool sizing, which growth does not explain, and other processes the message
    names: memory this process's allocator gained is not theirs)."""
    growth = growth_across_events(events)
    named_others = any(e.other_processes for e in events)
    if (
        growth is None
        or result.cause in {"host_ram", "kv_cache_or_context"}
        or (result.cause == "other_process_holding_memory" and named_others)
    ):
        return result
    return Analysis(
        cause="leak_or_accumulation",
        confidence=0.6,
        explanation=result.explanation + growth,
        fixes=(
            generic(
                "Stop keeping tensors alive across steps",
                "accumulate Python numbers, detach what you store, free the previous model.",
                (
                    "total_loss += loss.item()",
                    "history.append(out.detach().cpu())",
                    "del model; gc.collect(); torch.cuda.empty_cache()",
                ),
            ),
            *result.fixes,
        ),
    )


def _run_provider(provider: FixProvider, finding: Finding, notes: list[str]) -> list[Fix]:
    try:
        return list(provider(finding))
    except Exception as exc:  # a provider must never hide the diagnosis
        notes.append(f"fix provider {getattr(provider, '__name__', provider)!r} failed: {exc}")
        return []


def diagnose(
    events: Sequence[OomEvent],
    context: LogContext,
    *,
    fix_providers: Sequence[FixProvider] = (),
    model: ModelFacts | None = None,
    training: bool = False,
    when: str | None = None,
    shown_phase: str | None = None,
    answers: Mapping[str, str] | None = None,
) -> Diagnosis:
    """Diagnose parsed events. Pure: no I/O.

    Args:
        events: OOM events in log order (from :func:`oomkit.diagnose.parse.parse_log`).
        context: what the log says about the run.
        fix_providers: extra fix sources (e.g. a model-aware estimator); see the module docstring.
        model: what the model that ran weighs (:mod:`oomkit.diagnose.model_cause`), when known.
        training: the log shows a training run (weights are not all a training step holds).
        when: the user's answer to "when does it fail" (:mod:`oomkit.diagnose.user_phase`).
        shown_phase: the phase a training log shows beyond the traceback parser's
            (``optimizer_step`` from a DeepSpeed frame); ``context.frame_phase`` otherwise.
        answers: the user's answers to deciding questions, checked
            (:mod:`oomkit.diagnose.questions`; ``when`` is the same fact as ``when``).

    Returns:
        A Diagnosis; with no events, cause ``unknown``, confidence 0 and no fixes.
    """
    evs = tuple(events)
    primary = _primary(evs)
    if primary is None:
        return Diagnosis(
            events=evs,
            context=context,
            cause="unknown",
            confidence=0.0,
            explanation="No out-of-memory message was found in this text.",
            fixes=(),
        )
    decided = decide_by_log_facts(_analyze(primary, context), context, primary)
    decided = refine_by_evidence(decided, primary, context)
    # the base rate answers only what the rules, the log facts and a pasted nvidia-smi table left
    # open (docs/doctor-causes.md section 8); growth across events still outranks it
    pre = with_model_facts(
        with_smi_table(decided, context, primary), model, primary, context, training=training
    )
    asked = AskedQuestion(
        pre,
        primary,
        context,
        lambda a: _with_growth(with_prior(a, primary, context), evs),  # the steps after the rules
        shown=context.frame_phase or shown_phase,
        answers=answers,
        when=when,
    )
    smi = with_user_phase(pre, asked.when, asked.shown)
    opened = is_open(smi)
    answered, applied = asked.last(smi)
    result = _with_deciding_fact(answered, primary)
    others = [e for e in evs if e is not primary]
    explanation = result.explanation
    if model is not None:  # the model is known: the deciding question does not ask for it
        explanation = explanation.replace(MODEL_ASK, "")
    if others:
        kinds = sorted({f"{e.runtime}:{e.format or e.kind}" for e in others})
        explanation += f" ({len(others)} related message(s) also found: {', '.join(kinds[:6])}.)"
    finding = Finding(
        events=evs,
        context=context,
        primary=primary,
        cause=result.cause,
        confidence=result.confidence,
    )
    # an answer that decided or confirmed the cause closes the question
    still_open = opened and result.cause != "leak_or_accumulation" and not asked.closed(applied)
    extra: list[Fix] = []
    notes: list[str] = []
    for provider in fix_providers:
        extra.extend(_run_provider(provider, finding, notes))
    return Diagnosis(
        events=evs,
        context=context,
        cause=result.cause,
        confidence=max(0.0, min(1.0, result.confidence)),
        explanation=explanation,
        fixes=_prune_generic(
            tuple(
                drop_contradictions(
                    lever_of_cause_first(
                        batch_levers_first(
                            rank(label_hardware(_merge_provider_fixes(extra, result.fixes))),
                            result.cause,
                        ),
                        result.cause,
                    ),
                    context,
                )
            )
        ),
        primary=primary,
        notes=tuple(notes),
        allocation=allocation_of(primary, context, result.cause),
        phase=phase_of(primary, context, result.cause == "leak_or_accumulation"),
        open_question=still_open,
        question=asked.question(result, still_open),
        answers=asked.applied(applied),
    )
