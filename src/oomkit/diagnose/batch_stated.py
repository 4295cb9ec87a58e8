"""A batch cut sized from the batch the paste states (pure; issue #9, docpost22).

The PyTorch rules size a batch cut as a factor (``batch_size = max(1, batch_size // 4)``,
:func:`oomkit.diagnose.rules_torch_fixes._batch_fixes`) or halve it (``batch_size //= 2``); a few
rules print a fixed value (``batch_size=4``, ``batch_size: 8``). When the log or the poster states
the micro-batch that failed (``Instantaneous batch size per device = 8``,
``--per_device_train_batch_size 4``, ``micro_batch_size: 2``, "batch size 8", "bs=16"), the cut
is written as the number it leads to, and never to a value at or above the stated batch:

* a stated batch B >= 2 and a factor F: ``batch_size = max(1, B // F)``; where F > B even batch 1
  is not enough by the batch alone (the activations scale with the batch: 1/B of them stay), and
  the fix says so and names the input size as the other lever;
* a fixed value N >= B is lowered to ``max(1, B // 2)``;
* a stated batch of 1: nothing is left to cut, so the batch-cut line becomes the input-size cut
  (sequence length / image size scale the same activations).

Several stated values ("from 32 to 8", "tried 8, 4, 2"): the last is the one that ran last.
``max_batch_size``, ``eval_batch_size``, ``total``/``global``/``effective`` batch sizes are other
quantities (a server's capacity, the evaluation loop, micro-batch x accumulation x GPUs) and are
not read.
"""

from __future__ import annotations

import dataclasses
import re

from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.rules import Diagnosis

__all__ = ["cap_batch_cuts", "stated_batch", "stated_member"]

#: a micro-batch stated in prose or on a command line; a qualifier before it (``max_``, ``eval``,
#: ``total``, ``global``, ``effective``, ``train_batch_size`` totals) names another quantity
_STATED = re.compile(
    # the lookahead first: every alternative starts with -, p, m or b, so the eight lookbehinds
    # run only there, not at every position of a 100 MB log (bench_doctor: 5.2 -> 1.3 CPU s)
    r"(?=[-pmb])(?<![\w.-])(?<!max_)(?<!eval_)(?<!total_)(?<!global_)(?<!total )(?<!global )"
    r"(?<!effective )(?<!max )"
    r"(?:(?:--)?per_device_train_batch_size|(?:--)?micro_batch_size|(?:--)?batch[_-]size|"
    r"batch size|bs)"
    r"(?:\s*[=:]\s*|\s+(?:of\s+|is\s+|was\s+|to\s+|set to\s+|=\s*)?)"
    r"(?:from\s+\d{1,4}\s+to\s+)?"  # "from 32 to 8": the batch that ran last
    r"(\d{1,4})(?!\d|[.,]\d|\s*(?:x|\*|GB|GiB|MB|MiB|tokens|k\b))",
    re.IGNORECASE,
)
#: the spellings the regex can start a match with, found by ``str.find`` (memchr speed) before
#: the regex scans the text: a 100 MB log with none of them skips it (``text.lower()`` was itself
#: 0.5 s on 25 MB of CJK text)
_GATE = ("batch", "Batch", "BATCH", "bs", "BS", "Bs")
#: how much of a huge paste's head and tail is read for a stated batch (1 MiB each)
_EDGE = 1 << 20
#: the micro-batch stated as a config-file member: a YAML ``key: value`` line or a JSON
#: ``"key": value`` member, under the keys of DeepSpeed's config
#: (``train_micro_batch_size_per_gpu``, deepspeed/runtime/constants.py), axolotl's YAML
#: (``micro_batch_size``) and LLaMA-Factory's / the HF Trainer's YAML
#: (``per_device_train_batch_size``): the cut goes in the same file as the same member
#: (``config: train_micro_batch_size_per_gpu: 4``), not as a Python assignment (revfix20f)
_CONFIG_MEMBER = re.compile(
    r"(?m)(?:^[ \t-]*|[{,]\s*)(\"?)(train_micro_batch_size_per_gpu|micro_batch_size|"
    r"per_device_train_batch_size)\1\s*:\s*(\d{1,4})\b"
)
#: the batch-cut lines: a factor, a halving, a fixed value
_FACTOR = re.compile(r"(\w*batch_size) = max\(1, \1 // (\d+)\)")
_HALVE = re.compile(r"(\w*batch_size) //= 2")
_FIXED = re.compile(r"\b(batch_size)(=|: )(\d+)\b")


def stated_batch(text: str) -> int | None:
    """The micro-batch the log's training setup or the poster states (module doc), or None."""
    from oomkit.diagnose.training_context import training_setup_from_log

    setup = training_setup_from_log(text).micro_batch
    if setup is not None and setup > 0:
        return setup
    # the poster's sentence and the launch line sit at the paste's head or beside the OOM at its
    # end: the middle of a huge log is the run's own output, read elsewhere (training_setup)
    if len(text) > 2 * _EDGE:
        text = text[:_EDGE] + "\n" + text[-_EDGE:]
    if not any(w in text for w in _GATE):  # a C-speed gate before the regex's scan
        return None
    found = [int(m.group(1)) for m in _STATED.finditer(text)]
    found = [n for n in found if n > 0]
    return found[-1] if found else None


def stated_member(text: str, b: int) -> str | None:
    """How the stated batch ``b`` is written when the text states it as a config member
    (:data:`_CONFIG_MEMBER`): ``"key": {}`` for JSON, ``key: {}`` for YAML; else None."""
    found = [m for m in _CONFIG_MEMBER.finditer(text) if int(m.group(3)) == b]
    if not found:
        return None
    quote, key = found[-1].group(1), found[-1].group(2)
    return f'"{key}": {{}}' if quote else f"{key}: {{}}"


def _cut_line(name: str, n: int, b: int, member: str | None) -> str:
    return (member.format(n) if member else f"{name} = {n}") + f"   # stated {b}"


def _capped(fix: Fix, b: int, member: str | None = None) -> Fix:
    cmds: list[str] = []
    notes: list[str] = []
    for c in fix.commands:
        m = _FACTOR.fullmatch(c) or _HALVE.fullmatch(c)
        f = m is not None and (int(m.group(2)) if m.re is _FACTOR else 2)
        if m is not None and b == 1:
            cmds.append("max_length //= 2   # the batch is already 1: shorten the input")
            notes.append("the stated batch is already 1, so the input size (sequence length, "
                         "image size) is what is left to cut")  # fmt: skip
        elif m is not None and int(f) > b:
            cmds.append(_cut_line(m.group(1), 1, b, member))
            notes.append(f"the stated batch is {b}, under the {int(f)}x cut: batch 1 keeps 1/{b} "
                         "of the activations, so shorten the input (sequence length, image "
                         "size) too")  # fmt: skip
        elif m is not None:
            cmds.append(_cut_line(m.group(1), max(1, b // int(f)), b, member))
        else:
            fixed = _FIXED.search(c)
            if fixed is not None and int(fixed.group(3)) >= b > 1:
                new = f"{fixed.group(1)}{fixed.group(2)}{max(1, b // 2)}"
                c = c[: fixed.start()] + new + c[fixed.end() :]
                notes.append(f"half the stated batch of {b}")
            cmds.append(c)
    if cmds == list(fix.commands):
        return fix
    why = fix.why if not notes else f"{fix.why.rstrip()} ({'; '.join(dict.fromkeys(notes))}.)"
    return dataclasses.replace(fix, commands=tuple(dict.fromkeys(cmds)), why=why)


def cap_batch_cuts(result: Diagnosis, text: str) -> Diagnosis:
    """``result`` with each batch-cut line sized from the stated batch (module doc)."""
    if not result.fixes:
        return result
    b = stated_batch(text)
    if b is None:
        return result
    member = stated_member(text, b)
    fixes = tuple(_capped(f, b, member) for f in result.fixes)
    return result if fixes == result.fixes else dataclasses.replace(result, fixes=fixes)
