"""How people report a process the kernel killed for host RAM, and failures that state another
reason (issue 9, after heldout28: conversion, export and quantization tools killed for RAM).

The mechanism: when a process dies of ``SIGKILL`` the shell reports it by the signal's name,
``strsignal(SIGKILL)`` = ``Killed`` (bash ``jobs.c`` ``pretty_print_job`` / ``j_strsignal``; zsh
prints ``killed`` in its job line), and the kernel's OOM killer (``mm/oom_kill.c``,
``oom_kill_process`` -> ``do_send_sig_info(SIGKILL, ...)``) is the usual sender of an unasked
SIGKILL. ``parse_other`` reads the shell's own lines (a bare ``Killed`` line, zsh's ``[1] PID
killed cmd``, bash's ``script.sh: line N: PID Killed cmd``); the families here read how posters
word the same report in titles and prose, where the line is quoted rather than pasted:

* **a script or tool named with the kill**: "baichuan build.py killed", "webui.sh get's killed on
  TensorRT SDXL conversion", "convert.py was killed" (not "convert.py killed the old cache files",
  a transitive verb with an object);
* **a title that opens with the kill and the activity**: "[BUG]Killed while packing model",
  "Killed during quantization" (not "Killed the old containers", "Killed by signal 15");
* **the shell's word quoted mid-sentence, capitalised as the shell prints it**: 'bombs with a
  "Killed."', "Both stopped (Killed) without any error message", "halts with an error ``4441
  Killed`` message" (bash's ``PID Killed`` form); not a lower-case "killed" (the prose
  grammar's, ``parse_wordings_prose``) nor a "Killed" state or status column;
* **the shell's word run into a Chinese sentence** (docpost18, heldout36: "推理时模型加载Killed了",
  the model load got Killed): CJK text has no spaces, so the word sits between Han characters and
  is followed by the perfective 了 / 啦 / 掉 (it happened); not a user's own kill in the clause
  ("我把进程Killed了", "手动Killed了") nor a state ("状态为Killed");
* **a verb of showing before the word**: "the quantization prompts KILLED at the end", "it
  displays Killed after loading" (not "displays killed processes").

:func:`not_memory_reason` is the other side: a failed allocation or a kill whose own line states a
reason that is not memory. CUDA's ``cudaErrorInvalidValue`` prints "invalid argument"
(``cuda_runtime_api.h``; ``cudaErrorMemoryAllocation`` prints "out of memory"), Linux's
``EINVAL`` "Invalid argument" (``strerror``): "cudaMalloc failed: invalid argument" and "the
allocation fails with an invalid argument" are a bad size or pointer, not a full memory. A kill by
a scheduler's time limit, a preemption, ``SIGTERM``/``SIGINT`` or ctrl-c is not the OOM killer
("the job got killed by the scheduler because it hit the time limit", "the process gets killed
when I press ctrl+c"). A line that also names the memory itself ("out of memory", "OOM",
"insufficient memory", a memory limit) is never vetoed.

Every family is behind literal needles (one C-speed gate) and every quantifier is bounded.
"""

from __future__ import annotations

import re

from oomkit.diagnose.text import needles_gate

__all__ = ["KILLS_NEAR_MISSES", "KILL_NOT_MEMORY", "kill_match", "not_memory_reason"]

_I = re.IGNORECASE

# words that may stand between a script's name and "killed" (an auxiliary or an adverb), so an
# active "convert.py and I killed it" does not read as the script being killed
_AUX = (
    r"(?:is|was|were|gets?|got|get's|gets'|getting|being|been|be|has|have|had|just|always|often|"
    r"then|eventually|keeps?|kept|suddenly|silently|also|will|would|randomly|sometimes|still)"
)
# a transitive "killed" (with an object) or a kill with a non-memory sender
_NOT_PASSIVE = (
    r"(?! (?:the|a|an|my|it|all|off|every|any|this|that|these|those|other|some|its|his|her|"
    r"their|our|me|him|them)\b)"
    r"(?! by (?:signal:? (?:15|2|1)\b|sigterm|sigint|sighup|the user|me\b|ctrl|keyboard|hand|"
    r"the scheduler|slurm))"
)

_FAMILIES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        # a script or tool named with the kill: "build.py killed", "webui.sh get's killed on"
        ("killed",),
        re.compile(
            r"(?<![\w/.-])[\w-]{1,60}\.(?:py|sh|bash|exe|bin|ipynb)\b(?: \(\w{1,20}\))?"
            r"(?: " + _AUX + r"){0,3} killed\b" + _NOT_PASSIVE,
            _I,
        ),
    ),
    (
        # a title that opens with the kill and the activity: "[BUG]Killed while packing model"
        ("killed",),
        re.compile(
            # (after a tag, a rank prefix, a logger's or a compose service's prefix)
            r"^\s{0,8}(?:\[[^\]\n]{1,30}\]:?\s{0,4}|[\w .,:-]{1,40}?(?::|\s\||\s-)\s{1,4}){0,2}"
            r"(?:process |job |it )?"
            r"(?:got |gets |was |is )?killed (?:while|when|during|after|at the end of|"
            r"in the middle of|on|at) (?:the |a |an |my )?\w",
            _I,
        ),
    ),
    (
        # the shell's word quoted mid-sentence as it prints it: '"Killed."', "(Killed)",
        # "`4441 Killed`" (bash's "PID Killed"); not a "Killed" state or status column
        ("killed",),
        re.compile(
            r"(?<![A-Za-z])[(\"'\u201c\u2018`](?:\d{1,10} {1,4})?Killed[.!]?[)\"'\u201d\u2019`]"
            r"(?! ?(?:state|status|column|tab|filter|label|jobs?|tasks?)\b)"
        ),
    ),
    (
        # a verb of showing, then the word as the shell prints it (capitalised or in capitals):
        # "prompts KILLED at the end", "displays Killed after loading"; not "displays killed
        # processes" (lower case: the prose grammar's own reading)
        ("killed",),
        re.compile(
            r"\b(?:[Pp]rompt(?:s|ed)?|[Dd]isplay(?:s|ed)?|[Tt]hr(?:ows?|ew)|[Gg](?:ives?|ave)|"
            r"[Rr]eport(?:s|ed)?|[Pp]rint(?:s|ed)?|[Ss]how(?:s|ed)?|[Oo]utput(?:s|ted)?|"
            r"[Rr]eturn(?:s|ed)?|[Ss]ays?|[Ss]aid)"
            r"(?: (?:a|an|the|just|only|simply|me))?(?: error| message)?:? "
            r"[\"'`]?(?:Killed|KILLED)\b(?! (?:processes|jobs|tasks|workers|state|status)\b)"
            # a list of states ("shows Killed and Running pods"), not the shell's report
            r"(?! ?(?:and|or)\b| ?[,/&])"
        ),
    ),
    (
        # the shell's word run into a Chinese clause, then the perfective: "模型加载Killed了"; the
        # clause holds no agent of the kill (我 "I", 把 the object marker, 手动 "manually")
        ("killed",),
        re.compile(
            r"(?:^|[\s，。,.!?！？；;:：])(?:(?!我|把|手动)[^\s，。,.!?！？；;:：]){0,24}?"
            r"[\u4e00-\u9fff] ?(?:Killed|KILLED|killed) ?(?:了|啦|掉)"
        ),
    ),
)
_GATE = needles_gate(_FAMILIES)

# a failed allocation whose stated reason is not memory (cudaErrorInvalidValue "invalid
# argument", EINVAL), and a kill with a stated sender or reason that is not memory
_ALLOC_OTHER = re.compile(
    r"\binvalid (?:argument|value|device(?: ordinal| function| pointer)?|(?:resource )?handle|"
    r"configuration argument)\b|\bEINVAL\b|\b(?:cuda|hip)ErrorInvalid\w{1,30}",
    _I,
)
# (doccause20) the poster as the sender: "I killed the process myself", "we had to kill it",
# "killed it manually"; not "I keep getting killed" (the poster's run is what was killed)
_BY_USER = (
    r"\b(?:I|we)(?:'ve|'d| have| had)?\s+(?:(?!(?:get|gets|got|getting|keeps?|kept|be|been|"
    r"being|was|were|am|is|are)\b)\w{1,12}\s+){0,2}?kill(?:ed|ing)?\b"
    r"|\bkill(?:ed|ing)?\s+(?:it|them|(?:the|my|our|that|this)\s+\w{1,20}(?:\s+\w{1,20})?)\s+"
    r"(?:myself|ourselves|manually|by\s+hand)\b|\bmanually\s+kill(?:ed|ing)?\b"
)
#: a kill whose stated sender or reason is not the OOM killer (the user, a scheduler, a time
#: limit, SIGTERM/SIGINT); also read by the host-RAM reading, ``rules_extra.names_host_memory``
KILL_NOT_MEMORY = re.compile(
    _BY_USER + r"|"
    r"\bkill(?:ed|s)?\b.{0,100}?"
    r"(?:\bby (?:the )?(?:scheduler|slurm|user|supervisor|admin\w{0,8})\b|"
    r"\btime ?limit|\bwall ?time|\btime ?out|\btimed out\b|\bpreempt\w{0,6}|\bctrl[-+ ]?c\b|"
    r"\bsigterm\b|\bsigint\b|\bsignal:? (?:15|2)\b|\bkeyboard\b|\bdeadline\b)|"
    r"(?:\bpreempt\w{0,6}|\bctrl[-+ ]?c\b|\btime ?limit|\btime ?out|\bsigterm\b|\bsigint\b)"
    r".{0,80}?\bkill(?:ed|s)?\b",
    _I,
)
_KILL_OTHER = KILL_NOT_MEMORY
_MEMORY_NAMED = re.compile(
    r"out[ _-]?of[ _-]?(?:\w{1,8}[ _-])?memory|(?<![A-Za-z])OOM|insufficient|not enough|exhaust|"
    r"\b(?:memory|ram|vram)\b|显存|内存",
    _I,
)


def kill_match(line: str, low: str) -> re.Match[str] | None:
    """The first report of a killed process in ``line`` (``low``: ``line.lower()``), else
    ``None``."""
    if _GATE.search(low) is None:
        return None
    for _needles, pattern in _FAMILIES:
        m = pattern.search(line)
        if m is not None:
            return m
    return None


def not_memory_reason(line: str, matched: str) -> bool:
    """True where ``line``, read as an OOM for ``matched`` (the wording that fired), states a
    reason that is not memory: an allocation that failed with an invalid argument, a kill by a
    scheduler, a timeout, a preemption or the user, and no memory named on the line."""
    low = matched.lower()
    if "kill" in low or "sigkill" in low:
        other = _KILL_OTHER.search(line)
    elif "alloc" in low:
        other = _ALLOC_OTHER.search(line)
    else:
        return False
    return other is not None and _MEMORY_NAMED.search(line) is None


#: neighbours of these families that must stay silent (tests/test_doctor_kill_wordings.py)
KILLS_NEAR_MISSES = (
    "I killed the process and restarted it.",
    "If it hangs, run kill -9 <pid> and start again.",
    "Killed by signal 15",
    "Killed by signal 15 (SIGTERM)",
    "I killed the server with ctrl-c",
    "I killed it after 10 minutes because it was too slow.",
    "The old worker was killed and a new one started.",
    "The job got killed by the scheduler because it hit the time limit.",
    "the process gets killed when I press ctrl+c",
    "The pod was evicted and killed due to preemption",
    "python train.py was killed by SIGTERM from the scheduler",
    "convert.py killed the old cache files before the run",
    "Killed the old containers before upgrading.",
    'The dashboard lists each job as "Running" or "Killed" state.',
    "The status column shows Killed and Running pods.",
    "Process finished with exit code 130 (interrupted by signal 2: SIGINT)",
    "The allocation fails with an invalid argument.",
    "cudaMalloc failed: invalid argument",
    "Allocation failed: invalid argument (EINVAL)",
    "hipMalloc failed with hipErrorInvalidValue",
    "我把旧进程Killed了，然后重启",
    "手动Killed了进程",
    "任务状态为Killed。",
)
