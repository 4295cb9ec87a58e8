"""``oomkit doctor [LOG|-]``: read an OOM message or log, say what happened and what to change.

Exit codes: 0 an OOM was diagnosed, 3 no OOM found in the text, 1 the input could not be used
(a LOG file missing, unreadable, empty or binary; a binary stdin) or a named model/GPU is
unknown, 2 a bad option value or no input at all (nothing piped, an empty message), as
DESIGN.md's "1 error (unreadable file, bad input, offline); 2 usage error". With
``--model`` (or a model name in the log) the fixes are computed by the estimators
(:mod:`oomkit.diagnose.model_fixes`).
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO, TextIO

import click

from oomkit.cli.log_cap import read_head_tail, utf16_without_bom
from oomkit.cli.output import (
    EXIT_ERROR,
    EXIT_NEGATIVE,
    EXIT_USAGE,
    error_exit_code,
    print_error,
    print_hint,
    print_json,
    print_note,
    print_warning,
)
from oomkit.cli.params import COUNT, SIZE
from oomkit.cli.values import OS_CHOICES
from oomkit.diagnose.doctor import Diagnosis, diagnose_text
from oomkit.diagnose.fixes import Fix, size_text
from oomkit.diagnose.questions import Question
from oomkit.errors import InvalidSettingError, OomkitError
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "check_quant_for_log",
    "check_user_quant",
    "decode_log",
    "doctor_command",
    "read_log",
]


class _ReadError(Exception):
    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _not_text(name: str, e: NotTextError) -> _ReadError:
    """The one-line refusal of a binary input (a bad input file: exit 1, as DESIGN.md's
    "1 error (unreadable file, bad input, offline)")."""
    return _ReadError(
        f"'{name}' is not a text log: {e}. Pass the log itself (the file the program's output "
        "was redirected to), or paste the error message in quotes."
    )


#: the doctor keeps at most this much of its input: the first _HEAD_BYTES (start-up lines: model,
#: settings, versions) and the last rest (the OOM and what led to it); the middle is skipped
MAX_LOG_BYTES = 32 << 20
_HEAD_BYTES = 4 << 20
_CHUNK = 1 << 20

#: what the order of the fixes is (:func:`oomkit.diagnose.fixes.rank`)
FIXES_HEADER = (
    "Fixes (those that make it fit first, least intrusive first; then by expected saving; "
    "unsized advice and hardware changes last)"
)


def _read_capped(fh: BinaryIO) -> str:
    """Stream ``fh``: keep its head and tail within :data:`MAX_LOG_BYTES`, note what was skipped
    (its lines counted: a line number is the file's, :func:`oomkit.cli.log_cap.read_head_tail`)."""
    data, kept, skipped = read_head_tail(fh, MAX_LOG_BYTES, _HEAD_BYTES, _CHUNK)
    if skipped:
        print_warning(
            f"the log is over {MAX_LOG_BYTES >> 20} MiB: read its first {_HEAD_BYTES >> 20} MiB "
            f"and last {kept >> 20} MiB, skipped {skipped:,} bytes in between"
        )
    return decode_log(data)


#: how much of the input decides "text or binary": git's FIRST_FEW_BYTES (xdiff-interface.c,
#: ``buffer_is_binary``), the block git and `file` look at
SNIFF_BYTES = 8000
#: the control bytes a text log never holds: C0 controls and DEL, less the ones `file` counts as
#: text (src/encodings.c ``text_chars``: BEL BS HT LF VT FF CR ESC; ESC starts ANSI colours)
_NON_TEXT = bytes(
    b for b in range(256) if (b < 0x20 and b not in b"\a\b\t\n\v\f\r\x1b") or b == 0x7F
)
#: a run of NULs is a zero-filled block (a log whose last writes were lost in a crash or hard
#: reboot), not binary content: it is left out of the count
_NUL_RUN = re.compile(rb"\x00{32,}")
#: binary when over this share of the rest is non-text bytes: text has none, while machine code,
#: compressed and random data have ~11% (28 of 256 byte values) or more
_BINARY_SHARE = 0.05


class NotTextError(ValueError):
    """The input is binary (an executable, an archive, a checkpoint), not a text log."""


def binary_share(block: bytes) -> float | None:
    r"""The share of ``block`` that is bytes no text log holds (NUL runs left out); None when it
    is text. ``block`` is the input's first :data:`SNIFF_BYTES`.

    >>> binary_share(b"CUDA out of memory\r\n\x1b[0m") is None
    True
    >>> round(binary_share(b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00>\x00\x01\x00") or 0, 2)
    0.82
    """
    body = _NUL_RUN.sub(b"", block)
    if not body:
        return 1.0 if block else None
    bad = len(body) - len(body.translate(None, _NON_TEXT))
    share = bad / len(body)
    return share if share > _BINARY_SHARE else None


def decode_log(data: bytes) -> str:
    """The log's text: UTF-8, or UTF-16 when it starts with a byte-order mark (Windows
    PowerShell 5.1's ``>`` and ``Out-File`` write UTF-16LE with a BOM; read as UTF-8 its
    every other byte is a NUL and no OOM message is found) or, without one, when every other
    byte of its start is a NUL. Undecodable bytes are replaced.

    Raises:
        NotTextError: the first :data:`SNIFF_BYTES` are binary (:func:`binary_share`).

    >>> decode_log("CUDA out of memory".encode("utf-16"))
    'CUDA out of memory'
    >>> decode_log("CUDA out of memory".encode("utf-16-le"))
    'CUDA out of memory'
    >>> decode_log(codecs.BOM_UTF8 + b"ok")
    'ok'
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    block = data[:SNIFF_BYTES]
    utf16 = utf16_without_bom(block)
    if utf16 is not None:
        return data.decode(utf16, errors="replace")
    share = binary_share(block)
    if share is not None:
        raise NotTextError(
            f"{share:.0%} of its first {len(block):,} bytes are control bytes (NUL and others) "
            "that no text log holds"
        )
    return data.decode("utf-8-sig", errors="replace")


def _read_capped_text(stream: TextIO) -> str:
    text = stream.read(MAX_LOG_BYTES)
    return text if isinstance(text, str) else str(text)


def read_log(arg: str | None) -> str:
    """The text to diagnose: a file path, ``-``/nothing for stdin, or a pasted message.

    An argument that is not an existing file but contains spaces is taken as the message itself.
    """
    if arg is None and sys.stdin is not None and sys.stdin.isatty():
        raise _ReadError(
            "oomkit doctor needs the error to diagnose: pass a log file (oomkit doctor "
            "train.log), pipe it in (cat train.log | oomkit doctor -), or paste the message in "
            "quotes (oomkit doctor 'CUDA out of memory. Tried to allocate ...')."
        )
    if arg is None or arg == "-":
        stream = sys.stdin
        if stream is None or stream.closed:
            raise _ReadError(
                "Reading the log failed for stdin (doctor -): stdin is closed. Pass a log "
                "file, or pipe the log in: `cat LOG | oomkit doctor -`."
            )
        try:
            if hasattr(stream, "buffer"):
                return _read_capped(stream.buffer)
            return _read_capped_text(stream)
        except NotTextError as e:
            raise _not_text("stdin", e) from None
        except (OSError, ValueError) as e:
            raise _ReadError(
                f"Reading the log failed for stdin (doctor -): {e}. Pass a log file instead."
            ) from e
    if os.path.exists(arg) and not os.path.isdir(arg):
        # a file, or a pipe: `oomkit doctor <(kubectl logs POD)` passes /dev/fd/63, which was
        # "no such file"; a device (/dev/null) is read up to the cap, never streamed forever
        try:
            with open(arg, "rb") as fh:
                if stat.S_ISCHR(os.fstat(fh.fileno()).st_mode):
                    return decode_log(fh.read(MAX_LOG_BYTES))
                return _read_capped(fh)
        except NotTextError as e:
            raise _not_text(arg, e) from None
        except OSError as e:
            raise _ReadError(
                f"Reading the log failed for '{arg}' ({e.strerror or e}): the file is not "
                "readable. Check its permissions, or pipe it in with `cat LOG | oomkit doctor -`."
            ) from e
    if " " in arg or "\n" in arg:
        return arg
    reason = "it is a directory" if os.path.isdir(arg) else "no such file"
    raise _ReadError(
        f"Reading the log failed for '{arg}' (doctor LOG): {reason}. Pass a log file, `-` for "
        "stdin, or the message itself in quotes."
    )


def _is_file(arg: str | None) -> bool:
    """``arg`` names a file (not stdin, not a pasted message)."""
    return arg not in (None, "-") and os.path.isfile(str(arg))


def _empty_input(arg: str | None) -> str:
    """The one line for an empty (or whitespace-only) input, naming it."""
    if arg is None or arg == "-":
        return "stdin: no input (pipe the log in: `cat LOG | oomkit doctor -`)"
    if os.path.exists(arg) and not os.path.isdir(arg):
        return f"{arg}: the file is empty (pass the log the program's output went to)"
    return "the message is empty: paste the error in quotes, or pass a log file"


def _size(n: int | None) -> str:
    return size_text(n)


def _print_human(d: Diagnosis) -> None:
    out = click.echo
    out(f"Cause: {d.cause}  (confidence {d.confidence:.2f})")
    out("")
    out(d.explanation)
    out("")
    out(f"Found {len(d.events)} OOM message(s):")
    for e in d.events[:10]:
        nums = []
        if e.requested_bytes is not None:
            nums.append(f"requested {_size(e.requested_bytes)}")
        if e.total_bytes is not None:
            nums.append(f"total {_size(e.total_bytes)}")
        if e.free_bytes is not None:
            nums.append(f"free {_size(e.free_bytes)}")
        dev = f" device {e.device}" if e.device is not None else ""
        extra = f" ({', '.join(nums)})" if nums else ""
        out(f"  line {e.line}: {e.runtime} {e.format or e.kind}{dev}{extra}")
    if len(d.events) > 10:
        out(f"  ... and {len(d.events) - 10} more")
    if d.fixes:
        out("")
        # the order of oomkit.diagnose.fixes.rank
        out(FIXES_HEADER + ":")
        basis = _shared_basis(d.fixes)
        if basis:  # once, not after every sized fix (--json keeps it in each "why")
            said = basis[1:-1] if basis.endswith(")") else basis[1:]
            out(f"  Every fix sized below rests on {said.rstrip('.')}.")
        for i, f in enumerate(d.fixes, 1):
            saving = (
                f"  [saves ~{_size(f.expected_saving_bytes)}]"
                if f.expected_saving_bytes is not None
                else ""
            )
            kind = "  (generic)" if f.generic else ""
            out(f"  {i}. {f.title}{saving}{kind}")
            why = f.why[: -len(basis)].rstrip() if basis and f.why.endswith(basis) else f.why
            out(f"     {why}")
            for c in f.commands:
                out(f"       {_prompt(c)}{c}")


def _shared_basis(fixes: Sequence[Fix]) -> str:
    """The ``(oomkit's ... estimate for ...; not in the log, assumed: ...)`` paragraph that ends
    every sized fix's ``why`` when two or more share it (else ""): printed once above them. A
    QLoRA log's five training fixes printed the same assumptions five times."""
    mark = "(oomkit's "
    tails = [f.why[f.why.rfind(mark) :] for f in fixes if mark in f.why]
    if len(tails) < 2:
        return ""
    common = max(set(tails), key=tails.count)
    return common if tails.count(common) >= 2 else ""


def _prompt(command: str) -> str:
    """What to print before a fix's command (:func:`oomkit.diagnose.shell_lines.prompt`)."""
    from oomkit.diagnose.shell_lines import prompt

    return prompt(command)


def _user_facts(
    model: str | None,
    runtime: str | None,
    quant: str | None,
    ctx: int | None,
    gpu: str | None,
    vram: int | None,
) -> dict[str, Any]:
    """The ``diagnose_text`` keywords for what the user stated (lazy: only when given).

    Raises:
        OomkitError: an unknown model, runtime or GPU name (with suggestions).
        ValueError: an impossible value (``--ctx 0``).
    """
    facts: dict[str, Any] = {}
    if runtime is not None:
        from oomkit.estimate.registry import normalize_runtime

        facts["runtime"] = normalize_runtime(runtime)
    if model is not None:
        from oomkit.api import load_model

        facts["model"] = load_model(model)
    if ctx is not None and ctx < 1:
        raise InvalidSettingError(
            f"--ctx must be at least 1, got {ctx}", setting="--ctx", value=ctx
        )
    if quant is not None:
        check_user_quant(quant, facts.get("runtime"))
    if quant is not None or ctx is not None:
        facts["settings"] = InferenceSettings(
            runtime=facts.get("runtime", "llama.cpp"), quant=quant, ctx=ctx
        )
    if gpu is not None or vram is not None:
        from oomkit.cli.params import parse_gpu_list
        from oomkit.hardware.targets import hardware_for

        facts["hardware"] = hardware_for(
            parse_gpu_list(gpu) if gpu is not None else (), vram_bytes=vram
        )
    return facts


def check_user_quant(quant: str, runtime: str | None) -> None:
    """``--quant`` must name a GGUF type (llama.cpp/Ollama) or a checkpoint format (the others);
    with no ``--runtime``, either. An unknown name is refused here, not dropped later by a fix
    provider as a warning.

    Raises:
        UnknownNameError: the quant is none of those (the message lists the valid names).
    """
    from oomkit.quant.hf_formats import hf_format
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    if runtime in ("llama.cpp", "ollama"):
        llamacpp_ftype(quant)
    elif runtime is not None:
        hf_format(quant)
    else:  # no runtime named: either kind; an unknown name is refused as the kind it looks like
        try:
            llamacpp_ftype(quant)
        except OomkitError as gguf_error:
            try:
                hf_format(quant)
            except OomkitError:
                if re.match(r"(?i)(?:I?Q\d|TQ\d|UD-)", quant.strip()):
                    raise gguf_error from None
                raise


def _check_answers(
    _ctx: click.Context, _param: click.Parameter, pairs: tuple[str, ...]
) -> dict[str, str]:
    """``--answer ID=VALUE`` pairs, checked (a bad id or value is a usage error, exit 2)."""
    if not pairs:
        return {}
    from oomkit.diagnose.questions import parse_answer_pairs

    try:
        return parse_answer_pairs(pairs, flag="--answer")
    except InvalidSettingError as e:
        raise click.BadParameter(str(e).removeprefix("--answer").lstrip(": ")) from None


@click.command("doctor")
@click.argument("log", required=False, metavar="[LOG|-]")
@click.option("--model", "-m", help="The model that ran (catalog name, path, .gguf or repo id)")
@click.option(
    "--runtime", "-r", help="llama.cpp | ollama | vllm | sglang | transformers (default: the log's)"
)
@click.option("--quant", "-q", help="GGUF type (Q4_K_M, Q8_0...) or bf16/fp8/int8/nf4/awq/gptq")
@click.option("--ctx", "-c", type=COUNT, help="Context length that failed (n_ctx / max_model_len)")
@click.option("--gpu", "-g", help="GPU(s) from the catalog: rtx-4090, 2xA100-80GB, a,b")
@click.option("--vram", type=SIZE, help="Memory per GPU with a unit (24GiB or 24GB)")
@click.option(
    "--when",
    type=click.Choice(["load", "first-step", "later"]),
    help="When it fails, if the log does not show it: while loading, on the first "
    "batch/request, or only after steps completed (decides what the message leaves open)",
)
@click.option(
    "--answer",
    "answer_pairs",
    multiple=True,
    metavar="ID=VALUE",
    callback=_check_answers,
    help="Answer the deciding question the finding asks (repeatable): batch1=yes, "
    "other_process=no, growth=yes, model_fits=no, short_context=yes, expandable=yes, when=load",
)
@click.option(
    "--os",
    "os_name",
    type=click.Choice(OS_CHOICES, case_sensitive=False),
    help="Operating system, if the log does not show it (windows: environment variables in "
    "PowerShell), as plan's --os",
)
@click.option(
    "--no-input", is_flag=True, help="Never ask the deciding question (even on a terminal)."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (schema_version 1).")
def doctor(
    log: str | None,
    model: str | None,
    runtime: str | None,
    quant: str | None,
    ctx: int | None,
    gpu: str | None,
    vram: int | None,
    when: str | None,
    answer_pairs: dict[str, str],
    os_name: str | None,
    no_input: bool,
    as_json: bool,
) -> None:
    """Diagnose an out-of-memory error: LOG is a file, `-` (stdin), or the pasted message.

    When the model is known (--model, or a model name in the log) the fixes are computed by the
    estimators; --runtime/--quant/--ctx/--gpu/--vram override what the log says. --when answers
    the question a bare message leaves open (load, first step, or later); --answer ID=VALUE
    answers the deciding question the finding asks, which a terminal session asks itself
    (unless --no-input or --json, or the log comes from stdin).

    \b
    Exit codes: 0 an OOM was diagnosed, 1 the input could not be used (a LOG file
                missing, unreadable, empty or binary), a name is unknown or the message's
                numbers contradict each other, 2 a bad option value (an unknown --runtime
                or --gpu) or no input at all (nothing piped), 3 no OOM message was found.
    """
    try:
        text = read_log(log)
        if not text.strip():  # not "no OOM found": an empty FILE is a bad input (exit 1),
            # no input at all (nothing piped, an empty message) a usage error (exit 2)
            raise _ReadError(_empty_input(log), EXIT_ERROR if _is_file(log) else EXIT_USAGE)
        facts = _user_facts(model, runtime, quant, ctx, gpu, vram)
        if os_name is not None:
            facts["os"] = os_name.lower()
    except _ReadError as e:
        print_error(str(e))
        sys.exit(e.code)
    except (OomkitError, ValueError) as e:
        code, hint = error_exit_code(e)
        print_error(str(e))
        if hint:
            print_hint(hint)
        sys.exit(code)
    said = answer_pairs.get("when")
    if said is not None and when is not None and said != when:
        raise click.UsageError(f"--when {when} and --answer when={said} disagree: give one")
    d = diagnose_text(text, **facts, when=when, answers=answer_pairs)
    if quant is not None and runtime is None:
        try:
            check_quant_for_log(quant, d)
        except OomkitError as e:
            code, hint = error_exit_code(e)
            print_error(str(e))
            if hint:
                print_hint(hint)
            sys.exit(code)
    for note in d.notes:
        # what the doctor read from the log is information, not a warning
        (print_note if note.startswith(("log shows:", "modelled:")) else print_warning)(note)
    if as_json:
        print_json(d.to_dict())
    elif d.oom_found:
        _print_human(d)
        if d.question is not None and not no_input and _interactive(log):
            value = _ask(d.question)
            if value is not None:
                asked = {**answer_pairs, d.question.id: value}
                d = diagnose_text(text, **facts, when=when, answers=asked)
                click.echo("")
                click.echo(f"With your answer (--answer {d.answers[-1].id}={value}):")
                _print_human(d)
        elif d.question is not None:
            # no terminal to ask on (piped, --no-input): say how to give the deciding fact
            q = d.question
            values = "|".join(v for v, _, _ in q.answers)
            click.echo("")
            click.echo(f"What would decide it: {q.text}")
            click.echo(f"  Re-run with --answer {q.id}={values}.")
    else:
        click.echo("No out-of-memory message was found.")
        print_hint("Paste the full error (the line with 'out of memory' and the lines around it).")
    if not d.oom_found:
        sys.exit(EXIT_NEGATIVE)
    if d.primary is not None and d.primary.inconsistent is not None:
        # refused: the message contradicts itself (bad input, not an answer)
        print_error(f"the message's numbers are inconsistent: {d.primary.inconsistent}")
        sys.exit(EXIT_ERROR)


def _interactive(log: str | None) -> bool:
    """Whether to ask: stdin and stdout are terminals and the log came from a file or an
    argument (a log piped on stdin leaves no terminal to answer on)."""
    if log is None or log == "-":
        return False
    try:
        return bool(sys.stdin and sys.stdin.isatty() and sys.stdout and sys.stdout.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def _ask(q: Question) -> str | None:
    """Ask ``q`` once on the terminal: numbered choices, Enter (or end of input) skips."""
    click.echo("")
    click.echo(f"One fact would decide it: {q.text}")
    for i, (_, text, cause) in enumerate(q.answers, 1):
        click.echo(f"  {i}. {text}  (-> {cause})")
    choices = f"1-{len(q.answers)}"
    for _ in range(3):
        click.echo(f"Answer [{choices}, Enter skips]: ", nl=False)
        sys.stdout.flush()
        line = sys.stdin.readline()
        picked = line.strip()
        if not picked:
            return None
        if picked.isdigit() and 1 <= int(picked) <= len(q.answers):
            return q.answers[int(picked) - 1][0]
        values = [v for v, _, _ in q.answers]
        if picked in values:
            return picked
        click.echo(f"Not a choice: {picked!r}; type {choices} or press Enter to skip.")
    return None


def check_quant_for_log(quant: str, d: Diagnosis) -> None:
    """``--quant`` against the runtime the log shows, when ``--runtime`` did not name one: a
    GGUF type on a PyTorch message made every estimator fix fail ("fix provider
    'training_or_inference' failed") and dropped --model from the cause, silently.

    Raises:
        UnknownNameError: the quant is not a name of the log's runtime (its message prefixed).
    """
    e = d.primary
    if e is None:
        return
    from oomkit.diagnose.model_fixes import log_runtime

    rt = log_runtime(e, d.context)
    if rt is None:
        return
    try:
        check_user_quant(quant, rt)
    except OomkitError as err:
        kind = "a PyTorch (transformers)" if rt == "transformers" else f"a {rt}"
        # the same error class (its exit code), with what it was checked against
        err.args = (f"--quant {quant}: the log is {kind} run. {err}", *err.args[1:])
        raise


doctor_command = doctor
