"""Public entry point of the OOM doctor: text in, :class:`Diagnosis` out.

>>> d = diagnose_text("model requires more system memory (5.0 GiB) than is available (3.9 GiB)")
>>> d.cause, d.events[0].requested_bytes
('host_ram', 5368709120)
>>> diagnose_text("all good").oom_found
False
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from oomkit.diagnose.events import LogContext, OomEvent, ParsedLog
from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.model_cause import ModelFacts
from oomkit.diagnose.model_fixes import estimator_fix_provider
from oomkit.diagnose.normalize import normalize_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.rules import Diagnosis, Finding, FixProvider, diagnose

if TYPE_CHECKING:
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = [
    "Diagnosis",
    "Finding",
    "Fix",
    "FixProvider",
    "LogContext",
    "OomEvent",
    "ParsedLog",
    "diagnose",
    "diagnose_text",
    "parse_log",
]


def diagnose_text(
    text: str,
    *,
    fix_providers: Sequence[FixProvider] = (),
    model: ModelSpec | None = None,
    settings: InferenceSettings | None = None,
    hardware: Hardware | None = None,
    runtime: str | None = None,
    when: str | None = None,
    answers: Mapping[str, str] | None = None,
    os: str | None = None,
) -> Diagnosis:
    """Parse an OOM message or log and diagnose it. Pure; never raises on arbitrary text.

    When the model is known (``model``, or a model name in the log that the catalog resolves),
    the estimators size the fixes (:mod:`oomkit.diagnose.model_fixes`); explicit ``settings``,
    ``hardware`` and ``runtime`` override what the log says.

    Args:
        text: the pasted message or the whole log.
        fix_providers: optional extra fix sources (see :mod:`oomkit.diagnose.rules`).
        model: the model that ran, when the user knows it.
        settings: settings the user states (fields left ``None`` come from the log).
        hardware: the GPUs, when the user states them.
        runtime: the runtime, when the user states it (else the log's).
        when: when it fails, when the user says: ``load``, ``first-step`` or ``later``
            (:mod:`oomkit.diagnose.user_phase`; any other value raises ``ValueError``).
        answers: the user's answers to the deciding question, ``{id: value}``
            (:mod:`oomkit.diagnose.questions`; an unknown id or value raises
            :class:`~oomkit.errors.InvalidSettingError`, ``when`` disagreeing with ``when=``
            a ``ValueError``).
        os: the operating system, when the user states it (``linux``, ``windows``, ``macos``,
            ``wsl``; else the one the log shows): an Ollama environment variable is written
            for its shell (PowerShell on Windows).
    """
    if answers:
        from oomkit.diagnose.questions import check_answers

        answers = check_answers(answers)
    text = normalize_text(text)  # the paste as the runtime printed it (JSON/HTML escapes)
    parsed = _with_surroundings(text, parse_log(text, normalized=True))
    from oomkit.diagnose.pipeline_retry import drop_retried, note_recovered

    parsed = drop_retried(text, parsed)  # llama.cpp's pipelined attempt, retried and failed again
    from oomkit.diagnose.parse_llamacpp_pinned import drop_pinned_warnings

    parsed, pinned = drop_pinned_warnings(text, parsed)  # a warning the run went on after
    if os is not None:
        import dataclasses

        context = dataclasses.replace(parsed.context, host_os=os.strip().lower())
        parsed = dataclasses.replace(parsed, context=context)
    settings = _with_log_version(text, settings, runtime)
    provider = estimator_fix_provider(model, settings, hardware, runtime=runtime)
    from oomkit.diagnose.training_fixes import with_training_fixes

    provider = with_training_fixes(text, provider, model=model, hardware=hardware, runtime=runtime)
    facts, training, shown = _model_facts(text, parsed, model, settings, hardware)
    result = diagnose(
        parsed.events,
        parsed.context,
        fix_providers=(provider, *fix_providers),
        model=facts,
        training=training,
        when=when,
        shown_phase=shown,
        answers=answers,
    )
    result = _note_training(result, text)
    from oomkit.diagnose.training_levers import training_levers

    result = training_levers(result, text)  # what the training stack refuses; its own levers
    from oomkit.diagnose.batch_stated import cap_batch_cuts

    result = cap_batch_cuts(result, text)  # the cut sized from the stated micro-batch
    result = note_recovered(result, text)  # llama.cpp went on without pipeline parallelism
    from oomkit.diagnose.rules_apu import note_apu_aperture

    result = _for_shell(note_apu_aperture(_note_generation(result, settings, runtime)), runtime)
    if pinned is not None:
        import dataclasses

        result = dataclasses.replace(result, notes=(*result.notes, pinned))
    return _refuse_inconsistent(result)


#: ``OLLAMA_X=v [OLLAMA_Y=w ...] ollama serve``: a POSIX shell's per-command assignments
_ENV_SERVE = re.compile(r"(?:OLLAMA_\w{1,40}=\S{1,40} ){1,6}ollama serve")


def _for_shell(result: Diagnosis, runtime: str | None = None) -> Diagnosis:
    """Ollama's environment variables in PowerShell's form when the log (or ``os=``) shows
    Windows (:func:`oomkit.planner.commands.ollama_serve_line`, the planner's emitter): a
    POSIX ``OLLAMA_X=1 ollama serve`` sets nothing in PowerShell."""
    import dataclasses

    from oomkit.diagnose.shell_lines import shell_ready

    if result.fixes:
        from oomkit.diagnose.device_commands import device_of, on_device
        from oomkit.diagnose.runtime_lines import route

        fixes = route(result.fixes, result.primary, result.context, runtime)
        fixes = shell_ready(on_device(fixes, device_of(result.primary)))
        result = dataclasses.replace(result, fixes=fixes)
    if result.context.host_os != "windows" or not result.fixes:
        return result

    from oomkit.planner.commands import ollama_serve_line

    def shell(c: str) -> str:
        if _ENV_SERVE.fullmatch(c) is None:
            return c
        return ollama_serve_line(c.split()[:-2], "windows")

    fixes = tuple(
        dataclasses.replace(f, commands=tuple(shell(c) for c in f.commands)) for f in result.fixes
    )
    return dataclasses.replace(result, fixes=fixes)


def _with_surroundings(text: str, parsed: ParsedLog) -> ParsedLog:
    """``parsed`` with what the lines around its OOM messages state
    (:mod:`oomkit.diagnose.paste_context`); nothing is read when no OOM was found."""
    if not parsed.events:
        return parsed
    import dataclasses

    from oomkit.diagnose.paste_context import read_surroundings

    lines = {line.strip() for e in parsed.events for line in e.text.splitlines()}
    around = read_surroundings(text, lines, [e.line for e in parsed.events])
    context = dataclasses.replace(parsed.context, paste_prose=around.prose)
    return dataclasses.replace(parsed, context=context)


def _model_facts(
    text: str,
    parsed: ParsedLog,
    model: ModelSpec | None,
    settings: InferenceSettings | None,
    hardware: Hardware | None,
) -> tuple[ModelFacts | None, bool, str | None]:
    """What the named model weighs (:mod:`oomkit.diagnose.model_cause`), whether the log shows
    a training run, and the phase it shows; nothing is computed for a log without a
    PyTorch-family OOM."""
    if not any(e.runtime in ("pytorch", "mps") for e in parsed.events):
        return None, False, None
    from oomkit.diagnose.model_cause import model_facts
    from oomkit.diagnose.model_fixes import resolve_log_model
    from oomkit.diagnose.training_context import training_setup_from_log

    setup = training_setup_from_log(text, parsed.context.frame_phase)
    training, shown = setup.is_training, setup.phase if setup.is_training else None
    spec = model or resolve_log_model(parsed.context.model_name)
    if spec is None:
        return None, training, shown
    named_by = "--model" if model is not None else "the log"
    facts = model_facts(spec, settings, hardware, named_by=named_by, text=text)
    return facts, training, shown


def _refuse_inconsistent(result: Diagnosis) -> Diagnosis:
    """No cause for a message whose own numbers contradict each other (``OomEvent.inconsistent``:
    free above the total, a 0-byte allocation that failed, a Triton requirement within its
    limit): no runtime prints such a message, so any diagnosis of it would be invented."""
    e = result.primary
    if e is None or e.inconsistent is None:
        return result
    import dataclasses

    return dataclasses.replace(
        result,
        cause="unknown",
        confidence=0.0,
        explanation=f"The message's numbers are inconsistent: {e.inconsistent}. No runtime "
        "prints that, so the message was edited or corrupted and no cause is diagnosed from it. "
        "Paste the original message as the program printed it.",
        fixes=(),
        open_question=False,
        question=None,
    )


def _note_training(result: Diagnosis, text: str) -> Diagnosis:
    """Name the training setup the log shows (:mod:`oomkit.diagnose.training_context`)."""
    if not result.oom_found:
        return result
    from oomkit.diagnose.training_context import already_done, training_note

    note = training_note(text, result.context.frame_phase)
    if note is None:
        return result
    import dataclasses

    done = already_done(text, result.context.frame_phase)  # what the log shows is in place
    fixes = tuple(f for f in result.fixes if not (done and f.title.startswith(done)))
    return dataclasses.replace(result, notes=(*result.notes, note), fixes=fixes)


def _note_generation(
    result: Diagnosis, settings: InferenceSettings | None, runtime: str | None
) -> Diagnosis:
    """Say which runtime generation sized the fixes when a version is known."""
    if settings is None or settings.runtime_version is None:
        return result
    from oomkit.errors import OomkitError
    from oomkit.estimate.generations import resolve_generation

    try:
        gen = resolve_generation(runtime or settings.runtime, settings.runtime_version)
    except OomkitError:
        return result
    import dataclasses

    note = f"modelled: {gen.label} (runtime version {settings.runtime_version})"
    return dataclasses.replace(result, notes=(*result.notes, note))


def _with_log_version(
    text: str, settings: InferenceSettings | None, runtime: str | None
) -> InferenceSettings | None:
    """``settings`` with the runtime release the log names, unless the user gave one."""
    from oomkit.diagnose.version import runtime_version_from_log

    found = runtime_version_from_log(text)
    if found is None or (settings is not None and settings.runtime_version is not None):
        return settings
    log_runtime, version = found
    if runtime is not None and runtime.strip().lower() != log_runtime:
        return settings
    import dataclasses

    from oomkit.spec.settings import InferenceSettings

    base = settings or InferenceSettings(runtime=log_runtime)
    return dataclasses.replace(base, runtime_version=version)
