"""Deaths and verdicts that report an out-of-memory without the usual words (issue 9, docrec26).

Each family is read from the runtime's own source or documentation:

* **Ollama's runner ended by a signal**: ``llm/server.go`` ``getServerStatus`` returns
  ``fmt.Errorf("llama runner process no longer running: %d %s", ProcessState.ExitCode(), msg)``;
  Go's ``ExitCode()`` is ``-1`` when a signal ended the process, and Ollama logs beside it "Most
  likely a signal killed it". On Linux and in Docker the usual unasked signal is the OOM killer's
  ``SIGKILL``; a crash (``SIGSEGV``, ``SIGABRT`` from a ``GGML_ASSERT``) reads the same, so the
  finding is low and says what decides. Other exit codes (``2 error: GGML_ASSERT ...``) are not
  read as memory.
* **MLC-LLM's KV-capacity estimate**: ``python/mlc_llm/serve/engine.py``
  ``_estimate_max_total_sequence_length`` asserts ``"Cannot estimate KV cache capacity. The
  model weight size {params_bytes} may be larger than GPU memory size {gpu_size_bytes}"`` when
  ``0.90 * gpu - params - temp_func - workspaces`` is not positive: the weights and the temporary
  buffers do not fit 90% of one GPU. The bytes decide which: weights over 90% of the GPU are the
  model; weights under it leave the temporary buffers (prefill chunk, batch) as the excess.
* **E_OUTOFMEMORY without its ``0x``** (winerror.h ``0x8007000E``): "failed with error
  8007000E", "hr=8007000e" (``parse_wordings`` reads the ``0x`` and WIL forms).
* **host RAM named short in prose**: "It's due to insufficient RAM", the misspelt "insuficient
  memory", "the process was terminated by the system" beside a memory word (iOS jetsam and
  Android's low-memory killer end an app without a message of their own).
* **a notebook kernel that died** (docrec27): Jupyter's "The kernel appears to have died. It will
  restart automatically." and VS Code Jupyter's "The Kernel crashed while executing code in the
  the current cell or a previous cell." A kernel process that ends without a Python traceback was
  ended by a signal, as Ollama's -1: host RAM at low confidence, ``dmesg`` decides.
* **a failure that more RAM ended**: "It was indeed a memory issue ... went smoothly after
  upgrading the DRAM to 64GB"; "the only working one is with memory=22GB in .wslconfig" (WSL 2's
  VM gets a share of the host's RAM, set by ``[wsl2] memory=`` in ``.wslconfig``, Microsoft's
  "Advanced settings configuration in WSL").

:func:`exit_reading` gives the generic finding its cause, confidence and the deciding question
for these families (``rules_extra._generic``). Every family sits behind one C-speed
:func:`~oomkit.diagnose.text.needles_gate`; every quantifier is bounded.
"""

from __future__ import annotations

import re

from oomkit.diagnose.text import needles_gate

__all__ = ["EXITS_NEAR_MISSES", "exit_match", "exit_reading"]

_I = re.IGNORECASE

_OLLAMA = re.compile(r"llama runner process no longer running: -1\b(?!\d)")
_MLC = re.compile(
    r"\bmodel weight size (?:(?P<params>\d{1,20}) )?may be larger than (?:the )?GPU memory size"
    r"(?: (?P<gpu>\d{1,20}))?",
    _I,
)
_HRESULT = re.compile(
    r"\b(?:failed with|error|hr|hresult|code|status)(?: code)?\s{0,2}[:=]?\s{0,2}8007000E\b", _I
)
# the runtimes' own lines: read anywhere in a log
_OWN: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("no longer running: -1",), _OLLAMA),
    (("may be larger than",), _MLC),
    (("8007000e",), _HRESULT),
)

_RAM_SHORT = re.compile(
    # (docpost21, heldout43) the qualifier also in parentheses: "due to insufficient (cpu) RAM"
    # (docpost23, heldout47) "unsufficient", the non-native spelling, is WanGP's own message
    # (wgp.py: "it is likely that you have unsufficient RAM and / or Reserved RAM allocation
    # should be reduced using 'perc_reserved_mem_max' or using a different Profile")
    r"\b(?:in|un)suf{1,2}icient (?:\(?(?:system|host|cpu|physical|main)\)? )?(?:d?ram|memory)\b|"
    r"\b(?:memory|ram)\b.{0,80}?\b(?:killed|terminated) by the system\b|"
    r"\b(?:killed|terminated) by the system\b.{0,80}?\b(?:memory|ram)\b",
    _I,
)
_MORE_RAM_FIXED = re.compile(
    r"\b(?:was|is|it's|turned out to be) (?:indeed |definitely |clearly |really |just )?"
    r"an? (?:ram |memory |dram )(?:issue|problem)\b"
    r".{0,160}?\b(?:after|by|once|with) (?:upgrading|increasing|adding|doubling|expanding|"
    r"bumping) (?:up )?(?:the |my |more |our )?(?:system |host )?(?:d?ram|memory|swap)\b",
    _I,
)
_WSLCONFIG = re.compile(
    r"\bwork\w{0,3}\b[^.\n]{0,60}?(?<!without )(?<!without setting )(?<!no )"
    r"memory\s?=\s?\d{1,4}\s?GB\b[^.\n]{0,20}?\.?wslconfig\b",
    _I,
)
# (docpost20, heldout42) Windows' page file said to be used up or too small: the system commit
# limit is RAM plus the page files, and an allocation whose commit cannot be met fails (WinError
# 1455, "The paging file is too small for this operation to complete"; Microsoft Learn,
# "Introduction to the page file": "system commit limit = physical memory + all page files");
# a swap file or swap space the same on Linux. "Had manual page file of 16GB, used all of it, set
# to 32GB, still wasn't enough" is the host's memory running out, told without an OOM word.
# A negation before the verb ("never ran out", "didn't fill up") or a purpose ("so it never
# gets used up") stays silent.
_PAGEFILE_SHORT = re.compile(
    r"\b(?:page ?file|paging file|swap ?file|swap space|virtual memory)\b"
    r"(?:(?!never\b|so (?:that )?(?:it|they)\b|avoid|prevent)[^.\n?]){0,60}?"
    r"(?<!never )(?<!not )(?<!n't )"
    # the verbs intransitive ("used all of it", "ran out."; not "filled up the disk")
    r"\b(?:(?:used (?:all|up)(?: of it)?|ran out|filled up|maxed out)"
    r"(?=\s*(?:[,.;:!)]|$|and\b|again\b|completely\b|too\b))|(?:got |was )?"
    r"exhausted\b|(?:still )?(?:was ?n[o']?t|is ?n[o']?t|not) (?:big |large )?enough\b"
    r"(?! to\b)|(?:was|is) (?:still )?too small\b)",
    _I,
)
# a notebook kernel that died without a Python traceback (docrec27): Jupyter Notebook's
# "Kernel Restarting" dialog, "The kernel appears to have died. It will restart automatically."
# (IPython / Jupyter Notebook's notification area; JupyterLab's session context: "The kernel
# for {path} appears to have died"), and VS Code's "The Kernel crashed while executing code in
# the the current cell or a previous cell." (microsoft/vscode-jupyter
# src/platform/common/utils/localize.ts, kernelCrashedDueToCodeInCurrentOrPreviousCell; "the
# the" as it ships)
_KERNEL_DIED = re.compile(
    r"(?<!if the )(?<!when the )(?<!whenever the )\bkernel (?:"
    r"(?:for \S{1,200} )?appears to have died\b|"
    r"crashed while executing code in (?:the )?(?:the )?current cell\b)",
    _I,
)
# (docpost23, heldout47) an allocation said to have failed in a clause ("the program will
# terminate abnormally without being able to allocate memory", "it was not able to allocate
# enough VRAM"): the keyword fallback reads "unable to allocate", not the negated "able to"; a
# sentence that opens with "Without being able ..." (a condition) stays silent
_NOT_ABLE = re.compile(
    r"(?<=\w )(?:(?:was|were|is|are|am) not|(?:was|were|is|are)n't|never|without) (?:being )?"
    r"able to al{1,2}ocate (?:enough |any |the |more )?(?:gpu |device |host |system |video )?"
    r"(?:memory|vram|ram)\b",
    _I,
)
# (docpost23, heldout47) "a low memory error": the operating system's own low-memory report
# (Windows' "Your computer is low on memory", macOS' "Your system has run out of application
# memory", Android's low-memory killer) named as the failure; advice to avoid one stays silent
_LOW_MEMORY_ERROR = re.compile(
    r"(?<!avoid )(?<!avoid a )(?<!avoid the )(?<!prevent )(?<!prevent a )(?<!prevent the )"
    r"(?<!no )(?<!any )\blow[- ]memory (?:error|crash)\b",
    _I,
)
_HOST_NAMED = re.compile(r"\b(?:d?ram|system|host|cpu|physical|main)\b", _I)
# how a person words it: read at the head and tail of a paste only (parse_wordings.PROSE_HEAD)
_PROSE: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("insuficient", "insufficient", "unsuficient", "unsufficient", "by the system"), _RAM_SHORT),
    (("able to alocate", "able to allocate"), _NOT_ABLE),
    (
        ("low memory error", "low-memory error", "low memory crash", "low-memory crash"),
        _LOW_MEMORY_ERROR,
    ),
    (("memory issue", "memory problem", "ram issue", "ram problem"), _MORE_RAM_FIXED),
    (("wslconfig",), _WSLCONFIG),
    (("page file", "pagefile", "paging file", "swap", "virtual memory"), _PAGEFILE_SHORT),
    # read with the prose: "If the kernel appears to have died, restart it" is advice
    (("appears to have died", "kernel crashed while"), _KERNEL_DIED),
)
_OWN_GATE = needles_gate(_OWN)
_PROSE_GATE = needles_gate(_PROSE)


def exit_match(line: str, low: str, *, prose: bool = True) -> re.Match[str] | None:
    """The first wording of these families in ``line`` (``low``: ``line.lower()``), else
    ``None``; ``prose=False`` reads only the runtimes' own lines."""
    if _OWN_GATE.search(low) is not None:
        for needles, pattern in _OWN:
            if any(n in low for n in needles):
                m = pattern.search(line)
                if m is not None:
                    return m
    if prose and _PROSE_GATE.search(low) is not None:
        for needles, pattern in _PROSE:
            if any(n in low for n in needles):
                m = pattern.search(line)
                if m is not None:
                    return m
    return None


def exit_reading(detail: str) -> tuple[str, float, str] | None:
    """(cause, confidence, why) for a generic finding whose matched text ``detail`` is one of
    these families, else ``None``."""
    if _OLLAMA.search(detail):
        return (
            "host_ram",
            0.3,
            " Ollama reports exit code -1 when a signal ended its llama runner (llm/server.go:"
            " 'Most likely a signal killed it'); the kernel's OOM killer (SIGKILL) is the usual"
            " sender when the model and its context outgrow RAM or a container's limit, but a"
            " crash (SIGSEGV, a GGML_ASSERT's SIGABRT) reads the same. The server log's warning"
            ' beside it (string="signal: killed" vs "segmentation fault") or'
            " `dmesg -T | grep -i 'killed process'` decides.",
        )
    m = _MLC.search(detail)
    if m is not None:
        params, gpu = m["params"], m["gpu"]
        if params and gpu and int(gpu) > 0:
            if int(params) >= 0.9 * int(gpu):
                return (
                    "model_too_large",
                    0.6,
                    " MLC-LLM budgets 90% of one GPU; the weights alone take"
                    f" {100 * int(params) // int(gpu)}% of it (serve/engine.py).",
                )
            return (
                "batch_or_activations",
                0.45,
                " MLC-LLM budgets 90% of one GPU for the weights, the temporary buffers and the"
                f" KV cache; the weights take {100 * int(params) // int(gpu)}% of it, so the"
                " temporary buffers sized by prefill_chunk_size and max_num_sequence leave no"
                " room for the KV cache (serve/engine.py).",
            )
        return (
            "model_too_large",
            0.35,
            " MLC-LLM found no room for a KV cache after the weights and temporary buffers in"
            " 90% of one GPU: the weight size against the GPU's size decides (weights near it:"
            " a smaller quantization; well under it: a smaller prefill_chunk_size).",
        )
    if _KERNEL_DIED.search(detail):
        return (
            "host_ram",
            0.3,
            " The notebook's kernel process died without a Python traceback: a signal ended it."
            " The kernel's OOM killer (SIGKILL) is the usual sender when the data or the model"
            " outgrow RAM or a container's limit, but a native crash (SIGSEGV, an access"
            " violation) reads the same. `dmesg -T | grep -i 'killed process'` (or the Jupyter"
            " log's last lines) decides.",
        )
    if _MORE_RAM_FIXED.search(detail) or _WSLCONFIG.search(detail):
        return (
            "host_ram",
            0.45,
            " More RAM (a larger machine or WSL 2's [wsl2] memory= in .wslconfig) is what ended"
            " the failure: the job needs more host RAM than it had.",
        )
    if _PAGEFILE_SHORT.search(detail):
        return (
            "host_ram",
            0.45,
            " The page file (or swap) was used up: the host's commit limit (RAM plus page file)"
            " ran out, not the GPU's memory. More RAM, a larger page file, or a smaller model /"
            " fewer workers loaded at once fixes it; Task Manager's Committed figure (or"
            " `free -h` on Linux) at the failure confirms it.",
        )
    if _LOW_MEMORY_ERROR.search(detail):
        return (
            "host_ram",
            0.3,
            " A 'low memory' error is the operating system's report that RAM (and the page"
            " file) ran short, not the GPU's; the system monitor's memory figure at the failure"
            " confirms it.",
        )
    m2 = _RAM_SHORT.search(detail)
    if m2 is not None and _HOST_NAMED.search(m2.group(0)):
        return ("host_ram", 0.4, " Its wording names host RAM as what ran short.")
    return None


#: neighbours of these families that must stay silent (tests/test_doctor_exit_wordings.py)
EXITS_NEAR_MISSES = (
    "Error: llama runner process no longer running: 2 error:GGML_ASSERT(ctx) failed",
    "llama runner process no longer running: 1",
    "llama runner process no longer running: -10",
    "The model weight size is larger than the file size on disk.",
    "hr=80070057 (E_INVALIDARG)",
    "error 8007000B loading the library",
    "The node has sufficient memory for the job.",
    "Insufficient permissions to read the memory map.",
    "The session was terminated by the system administrator at midnight.",
    "The service was terminated by the system because the license expired.",
    "It was indeed a driver issue; it works after upgrading the driver.",
    "It is a memory issue in the parser, fixed by upgrading the library.",
    "Set memory=8GB in .wslconfig to limit how much RAM WSL 2 takes.",
    "It works without memory=8GB in .wslconfig too.",
    "How do I set memory=16GB in the .wslconfig file?",
    # the parsers' neighbours touched with these families (parse_other, parse_families)
    "RuntimeError: DataLoader worker (pid 25902) is killed by signal: Segmentation fault.",
    "RuntimeError: DataLoader worker (pid 25902) is killed by signal: Interrupt.",
    "Pass an `offload_folder` if some submodules should be offloaded to disk.",
    # docrec27's neighbours (a notebook kernel, exit 137 by other verbs, PyTorch's shm sentences)
    "If the kernel appears to have died, restart it from the Kernel menu.",
    "Restart the kernel to clear the variables before running the cell again.",
    "The container exited with code 0 after the job finished.",
    "Process finished with code 1370 entries written.",
    "Set --shm-size=8g so that the DataLoader workers have room in shared memory.",
    # docpost20's neighbours (the page file or swap named, nothing used up)
    "The page file was enough after I set it to 32GB.",
    "The page file never ran out, it was the GPU.",
    "Is the page file big enough for a 13B model?",
    "The swap file isn't large enough to matter here.",
    "The virtual memory settings were changed, nothing else.",
    "The swap space filled up the disk partition I gave it, so I moved it.",
    "The swap file used up all the free disk space on C:.",
    "Set the pagefile to 32GB so it never gets used up.",
)
