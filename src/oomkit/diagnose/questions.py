"""The deciding question: the one fact a pasted message lacks, asked and answered.

Most messages the doctor cannot decide lack one fact the user knows in a minute: does it still
fail at batch size 1, does ``nvidia-smi`` show another process, does memory grow step after
step, does it fail at load, is the model alone larger than the card. When a diagnosis is open
or below confidence 0.6 it carries a :class:`Question` (one of :data:`QUESTIONS`, picked for the
pair of causes it leaves open), each answer naming the cause the doctor gives **with** that
answer. The answer is a fact the doctor re-runs with (``oomkit doctor LOG --answer ID=VALUE``,
``{"answers": {...}}`` on the web), never a cause override: the same rules decide first, then
:func:`with_answers` reads the fact (a cause the numbers settled at >= 0.6 keeps it, and the
answer is echoed), and the explanation says what the answer changed.

The set (docs/doctor-causes.md section 8b), one question per cause pair left open:

* ``when`` (load / first-step / later): model vs batch vs growth. The same fact as ``--when``
  (:mod:`oomkit.diagnose.user_phase` applies it, before the base rate).
* ``batch1`` (yes / no): batch_or_activations vs the resident model. One sample of the
  shortest input needs little activation memory, so a failure at batch size 1 is what stays
  resident (weights, optimizer states; a KV pool sized by the context stays the context's).
* ``other_process`` (yes / no): another process's memory vs this job's.
* ``growth`` (yes / no): leak_or_accumulation vs a larger input at that step
  (``torch.cuda.memory_allocated()`` per step).
* ``model_fits`` (no / yes): model_too_large vs what the run adds (the KV cache for an
  engine that sizes it by the context; the batch otherwise).
* ``short_context`` (yes / no): the weights vs kv_cache_or_context.
* ``expandable`` (yes / no): fragmentation vs memory really used
  (``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` maps segments so freed blocks merge).
* ``host_ram`` (yes / no): system memory vs the GPU's.
* ``gpu_balance`` (yes / no): one overloaded GPU of several (the placement) vs the whole job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.errors import InvalidSettingError

__all__ = [
    "ASK_BELOW",
    "QUESTIONS",
    "AppliedAnswer",
    "Choice",
    "Question",
    "QuestionSpec",
    "check_answers",
    "parse_answer_pairs",
    "with_answers",
]

#: a diagnosis below this confidence (or open) carries the question; an answer decides only
#: below it (the rules' own reading at or above it keeps its cause)
ASK_BELOW = 0.6
#: the confidence of a cause an answer decided (as ``--when first-step``/``later``)
ANSWERED = 0.6
#: the cause "the weights alone are larger than the card" decides (as ``--when load``)
ANSWERED_STRONG = 0.7

MODEL = "model_too_large"
BATCH = "batch_or_activations"
KV = "kv_cache_or_context"
OTHER = "other_process_holding_memory"
LEAK = "leak_or_accumulation"
FRAG = "fragmentation"
HOST = "host_ram"
MULTI = "multi_gpu_imbalance"
#: the runtimes whose engine sizes a KV pool by the context at start-up (what a run adds)
_POOL_RUNTIMES = frozenset(
    {"llama.cpp", "ollama", "lmstudio", "vllm", "sglang", "tgi", "tensorrt-llm", "lmdeploy"}
)
#: positive answer -> the causes it rules out (stated in the answer), when the reading is that
_IN_JOB = frozenset({MODEL, BATCH, LEAK, FRAG})


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer of a question: its value (``--answer ID=VALUE``), what the user says, the
    cause it points at (``None``: the next likeliest once ``rules_out`` is removed; ``"pool"``:
    the KV cache for an engine that sizes a pool by the context, else the batch) and the causes
    the fact rules out."""

    value: str
    text: str
    points_at: str | None
    rules_out: frozenset[str]
    said: str  # how the explanation repeats it: "You said ..."


@dataclass(frozen=True, slots=True)
class QuestionSpec:
    """One question of the set: what it asks, which causes it decides between, its answers."""

    id: str
    text: str
    decides: tuple[str, ...]
    choices: tuple[Choice, ...]

    def values(self) -> tuple[str, ...]:
        """The accepted values, in the order the question lists them."""
        return tuple(c.value for c in self.choices)

    def choice(self, value: str) -> Choice:
        """The choice of ``value`` (checked by :func:`check_answers`)."""
        return next(c for c in self.choices if c.value == value)


def _c(value: str, text: str, points_at: str | None, rules_out: Sequence[str], said: str) -> Choice:
    return Choice(value, text, points_at, frozenset(rules_out), said)


QUESTIONS: Mapping[str, QuestionSpec] = {
    q.id: q
    for q in (
        QuestionSpec(
            "when",
            "When does it fail?",
            (MODEL, BATCH, LEAK),
            (
                _c("load", "while loading the model", MODEL, (), "it fails while loading"),
                _c(
                    "first-step",
                    "on the first batch or request",
                    BATCH,
                    (),
                    "it fails on the first batch or request",
                ),
                _c(
                    "later",
                    "only after some steps completed",
                    LEAK,
                    (),
                    "it fails only after steps completed",
                ),
            ),
        ),
        QuestionSpec(
            "batch1",
            "Does it still fail at batch size 1 with a short input (a small image, a short "
            "sequence)?",
            (BATCH, MODEL),
            (
                _c(
                    "yes",
                    "yes, it fails even at batch size 1 with a short input",
                    MODEL,
                    (BATCH,),
                    "it still fails at batch size 1 with a short input, so what stays "
                    "resident (weights, optimizer states, a KV pool sized by the context) does "
                    "not fit, not the batch's activations",
                ),
                _c(
                    "no",
                    "no, a smaller batch or input runs",
                    BATCH,
                    (MODEL,),
                    "a smaller batch or input runs, so the resident model fits and the "
                    "batch's activations are what does not",
                ),
            ),
        ),
        QuestionSpec(
            "other_process",
            "Does nvidia-smi (or `oomkit gpus`) show another process holding memory on that GPU?",
            (OTHER, BATCH, MODEL),
            (
                _c(
                    "yes",
                    "yes, another process holds GPU memory",
                    OTHER,
                    tuple(_IN_JOB),
                    "another process holds memory on that GPU, so this job gets less than the card",
                ),
                _c(
                    "no",
                    "no, this job is the only one",
                    None,
                    (OTHER,),
                    "no other process holds memory on that GPU, so the memory is this job's",
                ),
            ),
        ),
        QuestionSpec(
            "growth",
            "Does GPU memory grow step after step (torch.cuda.memory_allocated() or nvidia-smi "
            "per step)?",
            (LEAK, BATCH),
            (
                _c(
                    "yes",
                    "yes, it grows every step until it fails",
                    LEAK,
                    (BATCH, MODEL, FRAG),
                    "memory grows step after step: something is kept alive across steps",
                ),
                _c(
                    "no",
                    "no, it stays flat, then one step fails",
                    BATCH,
                    (LEAK,),
                    "memory stays flat across steps, so one larger input (or batch) at that "
                    "step is what does not fit",
                ),
            ),
        ),
        QuestionSpec(
            "model_fits",
            "Does the model alone fit the card (its weights at this dtype, `oomkit estimate "
            "MODEL`)?",
            (MODEL, BATCH, KV),
            (
                _c(
                    "no",
                    "no, the weights alone are larger than the card",
                    MODEL,
                    (BATCH, KV, LEAK, FRAG, OTHER),
                    "the weights alone are larger than the card: no batch or context setting "
                    "makes them fit",
                ),
                _c(
                    "yes",
                    "yes, the weights fit with room to spare",
                    "pool",
                    (MODEL,),
                    "the weights fit with room to spare, so what the run adds (the KV cache, "
                    "the batch's activations) does not",
                ),
            ),
        ),
        QuestionSpec(
            "short_context",
            "Does it still fail with a short context (e.g. 2048 tokens)?",
            (KV, MODEL),
            (
                _c(
                    "yes",
                    "yes, it fails even with a short context",
                    MODEL,
                    (KV,),
                    "it fails even with a short context, so the weights (not the KV cache) do "
                    "not fit",
                ),
                _c(
                    "no",
                    "no, a short context runs",
                    KV,
                    (MODEL, BATCH),
                    "a short context runs, so the KV cache the long context needs does not fit",
                ),
            ),
        ),
        QuestionSpec(
            "expandable",
            "Does it still fail with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True?",
            (FRAG, BATCH, MODEL),
            (
                _c(
                    "yes",
                    "yes, it still fails",
                    None,
                    (FRAG,),
                    "it still fails with expandable segments, so the memory is really used, "
                    "not fragmented",
                ),
                _c(
                    "no",
                    "no, it runs with it",
                    FRAG,
                    (BATCH, MODEL, LEAK),
                    "it runs with expandable segments, so free memory was split into blocks "
                    "too small for the request",
                ),
            ),
        ),
        QuestionSpec(
            "host_ram",
            "Does host RAM run out when it fails (`free -h`; dmesg shows the OOM killer)?",
            (HOST, MODEL, BATCH),
            (
                _c(
                    "yes",
                    "yes, system RAM (or swap) is exhausted",
                    HOST,
                    (MODEL, BATCH, KV, LEAK, FRAG, OTHER),
                    "host RAM runs out when it fails, so the allocation that fails is in system "
                    "memory (loading, pinned buffers, the data pipeline), not on the GPU",
                ),
                _c(
                    "no",
                    "no, RAM has room",
                    None,
                    (HOST,),
                    "host RAM has room when it fails, so the memory that runs out is the GPU's",
                ),
            ),
        ),
        QuestionSpec(
            "gpu_balance",
            "On a multi-GPU run: does one GPU fill up while the others have room (nvidia-smi / "
            "`oomkit gpus` per GPU)?",
            (MULTI, MODEL),
            (
                _c(
                    "yes",
                    "yes, one GPU is full, the others have room",
                    MULTI,
                    (MODEL, BATCH, KV, OTHER),
                    "one GPU fills while the others have room, so the placement (device_map, a "
                    "checkpoint loaded onto cuda:0, the split) overloads it",
                ),
                _c(
                    "no",
                    "no, all GPUs fill alike (or it is one GPU)",
                    None,
                    (MULTI,),
                    "the GPUs fill alike, so the split is not what overflows",
                ),
            ),
        ),
    )
}

_LEAD_FIX: Mapping[str, Fix] = {
    MODEL: generic(
        # software only: splitting over more devices is a hardware step (consistency.py labels
        # and ranks it last), never folded into the fix an answer puts first
        "Load the weights smaller (bf16, 8-bit, 4-bit)",
        "the resident weights do not fit whatever the batch.",
        ("from_pretrained(name, torch_dtype=torch.bfloat16)", "load_in_4bit=True"),
    ),
    BATCH: generic(
        "Halve the batch size / input length",
        "activation memory scales linearly with batch and sequence length.",
        ("batch_size = max(1, batch_size // 2)",),
    ),
    LEAK: generic(
        "Stop keeping tensors alive across steps",
        "accumulate Python numbers, detach what you store, free per-step outputs.",
        ("total_loss += loss.item()", "history.append(out.detach().cpu())"),
    ),
    OTHER: generic(
        "Find and stop what else holds the GPU",
        "another process (or a stale kernel) holds part of the device.",
        ("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",),
    ),
    KV: generic(
        "Use a shorter context (or fewer parallel sequences)",
        "the KV cache grows linearly with context x sequences.",
        ("--max-model-len 8192   # vLLM", "-c 8192   # llama.cpp", "num_ctx 8192   # Ollama"),
    ),
    FRAG: generic(
        "Let the allocator map expandable segments",
        "freed blocks then merge instead of leaving gaps too small for the request.",
        ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",),
    ),
}


@dataclass(frozen=True, slots=True)
class Question:
    """The question a diagnosis carries, with the cause each answer leads to (computed by
    re-running the doctor's last steps with it, :func:`pick_question`)."""

    id: str
    text: str
    answers: tuple[tuple[str, str, str], ...]  # (value, text, leads_to cause)

    def to_dict(self) -> dict[str, Any]:
        """The ``question`` of ``doctor --json``."""
        return {
            "id": self.id,
            "text": self.text,
            "answers": [{"value": v, "text": t, "leads_to": c} for v, t, c in self.answers],
        }


@dataclass(frozen=True, slots=True)
class AppliedAnswer:
    """An answer the doctor re-ran with, and what it did (``decided``, ``confirmed``,
    ``consistent``: the cause stays and the answer agrees; ``kept``: the rules' reading is
    settled and the answer did not change it)."""

    id: str
    value: str
    effect: str
    cause_before: str

    def to_dict(self) -> dict[str, Any]:
        """One entry of ``answers`` in ``doctor --json``."""
        return {
            "id": self.id,
            "value": self.value,
            "effect": self.effect,
            "cause_before": self.cause_before,
        }


def parse_answer_pairs(pairs: Sequence[str], *, flag: str = "--answer") -> dict[str, str]:
    """``ID=VALUE`` strings (the CLI's repeated ``--answer``) as a checked mapping.

    Raises:
        InvalidSettingError: no ``=``, an unknown id or value, or one id given twice with two
            values (the message names ``flag`` and the valid choices).
    """
    out: dict[str, str] = {}
    for pair in pairs:
        qid, sep, value = pair.partition("=")
        if not sep:
            raise InvalidSettingError(
                f"{flag} {pair!r}: expected ID=VALUE, e.g. batch1=yes; ids: {', '.join(QUESTIONS)}",
                setting=flag,
                value=pair,
            )
        qid, value = qid.strip(), value.strip()
        if qid in out and out[qid] != value:
            raise InvalidSettingError(
                f"{flag} {qid}: given twice ({out[qid]} and {value}); give one answer",
                setting=flag,
                value=pair,
            )
        out[qid] = value
    return check_answers(out, flag=flag)


def check_answers(answers: Mapping[str, str], *, flag: str = "answers") -> dict[str, str]:
    """``answers`` with every id and value checked against :data:`QUESTIONS`.

    Raises:
        InvalidSettingError: an unknown id or value (the message names ``flag`` and the choices).
    """
    for qid, value in answers.items():
        spec = QUESTIONS.get(qid)
        if spec is None:
            raise InvalidSettingError(
                f"{flag}: unknown question id {qid!r}; valid ids: {', '.join(QUESTIONS)}",
                setting=flag,
                value=qid,
            )
        if value not in spec.values():
            raise InvalidSettingError(
                f"{flag} {qid}={value}: not an answer of {qid}; valid values: "
                f"{', '.join(spec.values())}",
                setting=flag,
                value=value,
            )
    return dict(answers)


def _pool(e: OomEvent | None) -> bool:
    return e is not None and e.runtime in _POOL_RUNTIMES


def _next_likeliest(ruled_out: frozenset[str], e: OomEvent, ctx: LogContext) -> str:
    """The likeliest cause of this kind of message once ``ruled_out`` is removed: the base rate
    of its key (:func:`oomkit.diagnose.priors.base_rate`) without those causes, else unknown."""
    from oomkit.diagnose.priors import base_rate, prior_key

    rate = base_rate(prior_key(e, ctx))
    if rate is None:
        return "unknown"
    left = [(c, n) for c, n in rate.counts if c not in ruled_out and c != "unknown"]
    return left[0][0] if left else "unknown"


def _apply_one(
    result: Analysis, qid: str, choice: Choice, e: OomEvent, ctx: LogContext
) -> tuple[Analysis, str]:
    """``result`` with one answer read, and the effect (see :class:`AppliedAnswer`)."""
    cause = result.cause
    settled = result.confidence >= ASK_BELOW and result.open_question is not True
    target = choice.points_at
    if target == "pool":
        target = KV if _pool(e) else BATCH
    if settled:
        if cause in choice.rules_out or (target is not None and target != cause):
            text = (
                f" You said {choice.said}; the facts above settle {cause} (confidence "
                f"{result.confidence:.2f}), so the answer does not change it. If both are right, "
                "check the model, dtype and GPU the doctor was given."
            )
            return replace(result, explanation=result.explanation + text), "kept"
        return result, "consistent"
    if cause == target:
        return (
            replace(
                result,
                confidence=max(result.confidence, ANSWERED),
                explanation=result.explanation + f" You said {choice.said}: that confirms {cause}.",
                open_question=False,
            ),
            "confirmed",
        )
    if cause not in choice.rules_out and cause != "unknown":
        return (
            replace(
                result,
                explanation=result.explanation + f" You said {choice.said}; that does not rule "
                f"out {cause}, which stays.",
            ),
            "consistent",
        )
    if target is None:
        target = _next_likeliest(choice.rules_out | {cause}, e, ctx)
    conf = ANSWERED_STRONG if (qid, choice.value) == ("model_fits", "no") else ANSWERED
    if target == "unknown":
        conf = min(result.confidence, 0.3)
    lead = _LEAD_FIX.get(target)
    fixes = result.fixes
    if lead is not None and all(f.title != lead.title for f in fixes):
        fixes = (lead, *fixes)
    return (
        Analysis(
            cause=target,
            confidence=conf,
            explanation=result.explanation
            + f" You said {choice.said}: the cause is {target}"
            + (f", not {cause}." if cause != "unknown" else "."),
            fixes=fixes,
            open_question=False,
        ),
        "decided",
    )


def with_answers(
    result: Analysis, answers: Mapping[str, str] | None, e: OomEvent, ctx: LogContext
) -> tuple[Analysis, tuple[AppliedAnswer, ...]]:
    """``result`` read with the user's answers (all but ``when``, which
    :func:`oomkit.diagnose.user_phase.with_user_phase` applies before the base rate), in the
    order of :data:`QUESTIONS`; and what each did. Pure; ``answers`` must be checked
    (:func:`check_answers`)."""
    if not answers:
        return result, ()
    applied: list[AppliedAnswer] = []
    for qid, spec in QUESTIONS.items():
        value = answers.get(qid)
        if value is None or qid == "when":
            continue
        before = result.cause
        result, effect = _apply_one(result, qid, spec.choice(value), e, ctx)
        applied.append(AppliedAnswer(qid, value, effect, before))
    return result, tuple(applied)
