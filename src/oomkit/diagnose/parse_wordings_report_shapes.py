"""More sentence shapes of an out-of-memory *report in prose* (issue 9, after heldout21).

Part of the grammar of :mod:`oomkit.diagnose.parse_wordings_report`, which runs
:func:`shape_match` on a sentence last, after its own families, and then applies its
sentence vetoes (advice, release notes, yes-no questions) to what matched here. Each shape is a
general way users word the failure, seen in a retired corpus part but written for the family,
not the sentence:

* **a job over a memory limit**: "pytest was running over the 4GB RAM limit", "the pod went
  over its memory limit" (the cgroup's or the scheduler's kill, told in prose; "stays under the
  limit" and "set the limit over 4 GB" are not it);
* **the machine translation of 显存爆了** (the VRAM burst): "Display memory burst when vae is
  decoded", "video memory bursts"; 显存 comes out as display, video or graphics memory, 爆 as
  burst; not the DRAM "burst length" / "burst mode" of memory hardware;
* **a quoted "killed" message**: 'it always popup "killed" message', 'prints "killed" and exits'
  (the shell's report of the OOM killer's SIGKILL, in any case, quoted; the capitalised bare
  word after a verb of printing is the grammar's own family); not a kill the user made;
* **a machine's stated memory, then a model it cannot load**: "laptop with 16GB of RAM now could
  not load 7GB model", "with only 8 GB VRAM it fails to load the checkpoint" (the size before the
  failure; the grammar's own family reads it after: "can't load it on 24 GB"); not one whose
  reason is named ("... because the file is corrupt", "unsupported architecture");
* **a memory spike, then the run stops**: "it will occasionally spike the VRAM and then
  everything stops", "spikes the RAM and the machine freezes" (the verb first; the grammar's
  own family reads "VRAM spikes to 100%"); not a spike that passes ("spikes the VRAM but then
  recovers" names no stop);
* **a task that "gets kill(ed)" as the whole title**: "convertion to hf format of llama2 70b get
  kill" (a title that ends in the kill names the OOM killer's way of ending a job; "how to get
  killed processes restarted" and "I want it to get killed" do not end in it or are a wish).

One shape reads the whole line rather than one sentence (:func:`lever_match`, run by
``report_match`` when no sentence matched):

* **a crash fixed by lowering a memory lever**: "I ran into a crash today with the gemma-4
  model... After I reduced the context size from 128K to 64K, the model loaded", "it will crash
  even if context is 1536. I set it to 1024 and it works" (a crash or a failure on the line, a
  lever that sizes memory named on it, and a sentence where lowering it made the run work:
  context, batch, resolution, max_model_len); not a release note, advice or a question, and not
  a lever raised ("increased the batch size and it works").

Every pattern is bounded (no nested unbounded quantifier) and runs on one sentence of at most
``parse_wordings_report.MAX_SENTENCE`` characters (linear time).
"""

from __future__ import annotations

import re

from oomkit.diagnose.parse_wordings_report_vetoes import ADVICE, RELEASE, SPLIT, YES_NO

__all__ = ["SHAPE_NEEDLES", "lever_match", "shape_match"]

_I = re.IGNORECASE

#: literal words of the shapes that the grammar's own needles do not hold
SHAPE_NEEDLES: tuple[str, ...] = ("kill", "spik")

_OVER_LIMIT = re.compile(
    r"\b(?:run(?:s|ning)?|ran|go(?:es|ing)?|went|gone|is|was|are|were|gets?|got|getting|been)"
    r" (?:way |well |slightly |just |far )?over (?:the |its |my |our |their |a |his |her )?"
    r"(?:\d{1,4}(?:\.\d{1,2})? ?(?:[GMT]i?B|[GMT])\b ?)?(?:of )?"
    r"(?:(?:gpu|system|host|cpu|container|pod|job|cgroup|v) ?)?(?:ram|memory|mem|vram)"
    r" (?:limit|budget|cap|quota|allowance)s?\b",
    _I,
)
_BURST = re.compile(
    r"\b(?:display|video|graphics|gpu) memory (?:is |was |got |gets )?"
    r"(?:bursts?|bursted|bursting)\b"
    r"(?! (?:length|mode|size|transfers?|reads?|writes?|rate|buffer|access|chop|order)\b)",
    _I,
)
_QUOTED_KILLED = re.compile(
    r"[\"'`“‘]killed[\"'`”’] (?:message|error|output|notice|and (?:then )?(?:exits?|quits?|"
    r"stops?|dies|ends?))\b|"
    r"\b(?:pop(?:s|ped)? ?up|popups?|says?|said|shows?|showed|shown|prints?|printed|outputs?|"
    r"displays?|displayed|returns?|returned|gives?|gave|ends? with|ended with)"
    r"(?: (?:a|the|an|just|only|always|me))?(?: (?:a|the|an))? [\"'`“‘]killed[\"'`”’]",
    _I,
)
_SPIKE_STOP = re.compile(
    r"\bspik(?:e|es|ed|ing) (?:up )?(?:the |my |all |all the )?(?:gpu |system |video )?"
    r"(?:v?ram|vram|memory)\b[^.;!?]{0,40}?\b(?:stops|stopped|crash(?:es|ed)?|freez(?:es|ing)|"
    r"froze|dies|died|hangs|hung|gets? killed|ooms?)\b",
    _I,
)
# a kill the user made, or another signal
_OTHER_KILL = re.compile(
    r"\b(?:I|we|you) (?:\w{1,12} )?(?:pressed|hit|killed|kill|stopped|interrupted|sent)\b|"
    r"ctrl|signal|segment|manually|by (?:the )?user",
    _I,
)
_WITH_SIZE_CANT_LOAD = re.compile(
    r"\bwith (?:only |just |a |an )?\d{1,4}(?:\.\d{1,2})? ?(?:gb?|gib)\b (?:of )?"
    r"(?:(?:system|gpu|video|host|cpu) )?(?:v?ram|vram|memory)\b[^.;!?]{0,40}?"
    r"\b(?:can ?not|can'?t|could ?n[o']t|unable to|not able to|fails? to|failed to) (?:even )?"
    r"(?:load|run) (?:a |an |the |this |my |any |that )?(?:[\w.-]{1,20} ){0,2}?"
    r"(?:models?|checkpoints?|weights|ggufs?)\b",
    _I,
)
# another reason named for the failed load
_OTHER_REASON = re.compile(
    r"\b(?:because|due to|unsupported|not supported|corrupt\w{0,3}|missing|error|timeout)\b", _I
)
# a statement about anyone's machine ("with 16 GB of RAM you cannot load 13B models")
_GENERIC_SUBJECT = re.compile(r"\b(?:you|one|users?|people|anyone)\b", _I)
_GETS_KILL = re.compile(
    r"(?<!\bto )(?<!\bnot )(?<!n't )(?<!\bnever )"
    r"\b(?:gets?|got|getting) kill(?:ed)?\s{0,3}[.!]{0,3}\s{0,3}$",
    _I,
)


def shape_match(s: str, low: str) -> re.Match[str] | None:
    """The first shape of this module in the sentence ``s`` (``low``: ``s.lower()``), else
    ``None``."""
    if " over " in low:
        m = _OVER_LIMIT.search(s)
        if m is not None:
            return m
    if "spik" in low:
        m = _SPIKE_STOP.search(s)
        if m is not None:
            return m
    if "burst" in low:
        m = _BURST.search(s)
        if m is not None:
            return m
    if "killed" in low:
        m = _QUOTED_KILLED.search(s)
        if m is not None and _OTHER_KILL.search(s) is None:
            return m
    if "load" in low or "run" in low:
        m = _WITH_SIZE_CANT_LOAD.search(s)
        if (
            m is not None
            and _OTHER_REASON.search(s, m.end()) is None
            and _GENERIC_SUBJECT.search(s, m.start(), m.end()) is None
        ):
            return m
    if "kill" in low:
        m = _GETS_KILL.search(s)
        if m is not None and _OTHER_KILL.search(s) is None:
            return m
    return None


_LEVER_CRASH = re.compile(
    r"\b(?:crash(?:es|ed|ing)?|fails?|failed|oom|died|dies|out of memory|killed)\b", _I
)
_LEVER = re.compile(
    r"\b(?:context(?: size| length| window)?|ctx(?:[ _-]?size)?|n_ctx|num_ctx|contextsize|"
    r"max_model_len|max[ _-]seq[ _-]len|batch(?:[ _-]?size)?|resolution|image size|"
    r"ubatch|n_batch)\b",
    _I,
)
# the crash named with another cause: a shape or dtype error, a segfault, an assert
_LEVER_OTHER_CAUSE = re.compile(
    r"\b(?:shape|dtype|mismatch|segfault|segmentation|illegal|assert\w{0,6}|nan|"
    r"index(?:error)? out of|type ?error|value ?error|key ?error|divisible|must be)\b",
    _I,
)
_LOWERED_WORKS = re.compile(
    r"\b(?:reduc(?:ed|ing)|lower(?:ed|ing)|decreas(?:ed|ing)|cut|dropped|shrunk|halved|"
    r"set (?:it |that |this )?(?:back )?(?:down )?to|changed? (?:it |that )?to)\b"
    r"[^.;!?]{0,80}?\b(?:it |the model |everything |that )?(?:works|worked|loads|loaded|"
    r"runs fine|ran fine|runs ok|starts|started|no more crash(?:es)?)\b",
    _I,
)


def lever_match(line: str, low: str) -> re.Match[str] | None:
    """A crash on ``line`` that lowering a memory lever made go away (``low``:
    ``line.lower()``), as the match of the sentence that lowered it, else ``None``."""
    if not ("crash" in low or "fail" in low or "oom" in low or "died" in low or "dies" in low):
        return None
    if _LEVER_CRASH.search(line) is None or _LEVER.search(line) is None:
        return None
    if _LEVER_OTHER_CAUSE.search(line) is not None:
        return None
    for sentence in SPLIT.split(line[:2000]):
        s = sentence.strip()[:400]
        m = _LOWERED_WORKS.search(s)
        if m is None or ADVICE.search(s) or RELEASE.search(s) or YES_NO.search(s):
            continue
        return m
    return None
