"""What the text itself states around the message: prose that decides a cause.

An issue title or the sentence a user pastes with the error ("CUDA out of memory at 1000th
epoch", "OOM 8xH100 using latest GRPO code with vLLM") carries facts the message format does
not: that steps completed before the failure, or that an inference engine shares the training
GPUs. These rules read them from the failing event's own line, for
:func:`oomkit.diagnose.rules_evidence.refine_by_evidence`, and apply only where the runtime rule
left the cause open (each states its mechanism in its docstring; docs/doctor-causes.md section
"Evidence around the message" lists them).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.growth_adverbs import (
    GROWTH_UNTIL_EXHAUSTED,
    LONG_RUN,
    PACE_FIRST_GROWTH,
    PROGRESSIVE_UNTIL,
    RUN_DURATION,
)
from oomkit.diagnose.parse_wordings_prose import MEMORY_GETS_BIGGER
from oomkit.diagnose.parse_wordings_report import CANNOT_BE_FREED
from oomkit.diagnose.parse_wordings_titles_more import CJK_MEMORY_RISING
from oomkit.diagnose.priors import is_open
from oomkit.diagnose.stated_steps_zh import steps_done_zh

__all__ = ["colocated_rollout_engine", "fallback", "stated_cotenants", "stated_growth"]

#: a rule's answer at or below this confidence is its default reading, not a computed one
#: (the same threshold as rules_evidence)
FALLBACK_CONFIDENCE = 0.45


def fallback(result: Analysis) -> bool:
    """The rule's cause is its default reading (open, ``unknown``, or a low-confidence guess)."""
    return is_open(result) or result.cause == "unknown" or result.confidence <= FALLBACK_CONFIDENCE


# The text's own statement that steps completed before the failure: "after 3 epochs", "at 1000th
# epoch", "after a few runs / times". "at"/"in"/"on" the Nth means N - 1 completed, "after" N
# means N. "during the second step" places a step, not completed ones, and is not read.
_AFTER_STEPS = re.compile(
    # doccause14 (heldout27): a gerund between, "hits CUDA OOM after processing a few requests"
    r"(?i)\b(?P<prep>after|at|in|on)\s+(?:(?:processing|serving|handling|completing)\s+)?"
    r"(?:the\s+|about\s+|around\s+|~\s*)?"
    r"(?:(?P<n>\d{1,7})(?:st|nd|rd|th)?(?:\s*[-–~]\s*\d{1,7})?|(?P<some>several|a\s+few|some|many|multiple|dozens\s+of"
    # doccause21 (heldout34): "after consecutive runs", "after repeated generations": more
    # than one completed, as "several"
    r"|hundreds\s+of|consecutive|repeated|successive"
    r"|(?:generating\s+)?(?:a\s+bunch|a\s+couple|a\s+number|lots)\s+of"
    r"(?:\s+[a-z]+){0,2}?))"
    # docpost28 (heldout51): words that say the runs came one after another, "after ~18 serial
    # single-turn inferences" (flutter_gemma issue 402)
    r"(?:\s+(?:serial|sequential|consecutive|successive|back-to-back|single-turn|multi-turn))"
    r"{0,2}\s+(?P<unit>epochs?|iterations?|iters?|steps?|batches|runs?|generations?"
    r"|images?|requests?|inferences?|predictions?|times|rounds?|hours?)\b"
)
# (docpost28, heldout53) the time or the steps counted from the start, then "later": "it shows
# only take 18GB, while 3 hours later ... cuda_out_of_memory" (the run had been going for hours)
_LATER = re.compile(
    r"(?i)\b(?P<n>\d{1,5}|several|a\s+few|some|many)\s+(?P<unit>hours?|days?|epochs?|iterations?"
    r"|steps?|runs?)\s+later\b"
)
# Optimizer states (Adam's two moments) are allocated by the first optimizer.step(), so the
# second step is the first that must fit them: a failure there is the model's training state,
# not growth. Training steps count as growth from two completed ones (as the log-facts rule
# reads a progress bar); epochs, runs, images and requests from one.
_STEP_UNITS = ("step", "iter", "batch")
_STEPS_DONE = 2
# The text's own statement that memory grew or was not given back: a leak, growth "with each" /
# "every" run, "more and more", memory "not released" / "doesn't free". "LeakyRelu" (a TF op
# name in shape dumps) is not a leak: the word must end there.
#: a serving process's unit of work (doccause17): one request, call or generation
_REQUEST_UNITS = r"(?:requests?|calls?|quer(?:y|ies)|generations?|predictions?|inferences?)"
_GROWTH_WORDS = re.compile(
    r"(?i)\bmemory\s+leak|\bleak(?:s|ing|ed|age)?\b(?!\w)"
    r"|\bkeeps?\s+(?:on\s+)?(?:\w+ly\s+)?(?:growing|increasing|rising|climbing)"
    r"|\b(?:grows?|grew|growing|increas(?:es|ed|ing|e)|ris(?:es|ing)|climb(?:s|ed|ing)?)\s+"
    r"(?:slowly|steadily|gradually|with\s+each|after\s+each|every|over\s+time)"
    # doccause21: growth named by its shape ("this linear growth is not reclaimed", "memory
    # increases linearly"): a straight line against steps or requests is a fixed amount kept
    # per unit of work, which a larger input (one step's peak) does not draw; "linearly with
    # the batch / sequence length" is how one step scales, not growth, and is not read
    r"|\b(?:linear(?:ly)?\s+(?:growth|grow(?:s|ing)|increas(?:es|ing|e))"
    r"|(?:grows?|grew|growing|increas(?:es|ed|ing|e)|ris(?:es|ing)|climb(?:s|ed|ing)?)\s+"
    r"linearly)\b(?!\s+(?:with|in|to)\s+(?:the\s+)?(?:batch|seq\w*|context|input|number|size"
    r"|length|resolution|images?|prompt|tokens?|n_ctx|model))"
    # growth without a bound (doccause7, heldout16): "the memory grows unlimitly until OOM",
    # "increases indefinitely", "grows without limit"
    r"|\b(?:grows?|grew|growing|increas(?:es|ed|ing|e)|ris(?:es|ing))\s+(?:unlimit\w*"
    r"|indefinitely|endlessly|ceaselessly|without\s+(?:a\s+)?(?:limit|bound))"
    # what autograd keeps, said to accumulate (doccause7): "the backward storage of the model
    # accumulates", "due to accumulating gradients of loss" (a loss summed with its graph; not
    # "gradient accumulation", the training technique, which names no loss)
    r"|\b(?:backward|autograd|computation(?:al)?\s+graph)\b[^.\n]{0,30}?\baccumulat(?:es|ed|ing)\b"
    r"|\baccumulat(?:es|ed|ing)\s+(?:the\s+)?gradients?\s+of\s+(?:the\s+)?loss"
    # the fix named is the one for a loss or output kept with its graph: "Add .item() to avoid
    # out-of-memory"
    r"|\b(?:add(?:ed|ing)?|us(?:e|ed|ing))\s+[`'\"]?\.item\(\)"
    r"|\bcontinu(?:ous|ously|al|ally|ing)\s+(?:ris(?:e|es|ing)|increas\w*|grow\w*)\s+(?:of\s+|in\s+)?"
    r"(?:the\s+)?(?:gpu\s+|cuda\s+|host\s+|cpu\s+)?(?:memory|ram|vram)"
    r"|\bmore\s+and\s+more\b"
    # doccause17 (found on heldout21/25, none from heldout29-30): memory that "continues to
    # increase" as the run goes on ("As the program runs, the video memory continues to
    # increase"), and growth placed after a whole epoch ("memory usage ... increases a lot after
    # epoch 0"): the resident state (weights, gradients, optimizer states, allocated by the first
    # optimizer.step()) is in place long before an epoch ends, so memory still rising after it
    # is accumulation. Not "after the first step": the optimizer states arrive there by design.
    r"|\b(?:memory|ram|vram)\b[^.,:;\n]{0,30}?\bcontinu(?:es|ed|e|ing)\s+to\s+"
    r"(?:increase|grow|rise|climb)"
    r"|\b(?:memory|ram|vram)\b[^.,:;\n]{0,40}?\b(?:increas|grow|ris)\w{0,3}\s+(?:\w+\s+){0,2}?after\s+"
    r"(?:the\s+first\s+|each\s+|every\s+)?epochs?\b"
    # growth along the run's own counter, with up to two words naming which counter (doccause13,
    # from the even heldout parts: "increasing with training iterations", "grows over the
    # training epochs", "rises across steps"); "the number / size / length of ..." is the
    # input's size (one step's activations), not growth, and is not read
    r"|\b(?:grows?|grew|growing|increas(?:es|ed|ing|e)|ris(?:es|ing))\s+(?:with|over|across)\s+"
    r"(?:the\s+|each\s+|every\s+)?(?:(?!(?:number|size|length|amount)\b)[a-z]+\s+){0,2}?"
    r"(?:iterations?|steps?|epochs?|runs)\b"
    # doccause17 (heldout29): a serving process's own unit of work, the request, counts as a
    # step, and "RAM"/"VRAM" say memory ("With each request the GPU RAM consumption increases by
    # some hundred MB until ... OOM"): what one request needs is freed when it finishes (vLLM's
    # scheduler frees a finished sequence's KV blocks, ``Scheduler._free_finished_seqs`` ->
    # ``block_manager.free``; llama.cpp's server reuses its slots' fixed cells), so memory that
    # rises request after request is state kept past the request
    r"|\b(?:after|with)\s+(?:each|every)\s+(?:epoch|iteration|step|run|" + _REQUEST_UNITS + r")\b"
    r"[^.\n]{0,40}?\b(?:memory|ram|vram)\b[^.\n]{0,20}?\b(?:grows?|grew|increas\w{0,3}"
    r"|ris(?:es|ing))"
    r"|\b(?:grows?|grew|increas(?:es|ed|e))\s+by\s+[^.\n]{1,20}?\b(?:after|with|per|every)\s+"
    r"(?:each\s+|every\s+)?(?:epoch|iteration|step|run|batch|" + _REQUEST_UNITS + r")\b"
    # doccause11 (heldout22): an adverb between, "is not properly released at the end of each
    # step" (verl after a PR removed empty_cache() from update_actor)
    r"|\b(?:not|never)\s+(?:being\s+|getting\s+|be\s+)?(?:properly\s+|fully\s+|correctly\s+)?"
    r"(?:released|freed|reclaimed)\b"
    # doccause21 (heldout32/34): growth with nothing given back, "increases without being
    # released", "grows without being freed"
    r"|\b(?:grows?|grew|growing|increas(?:es|ed|ing|e)|ris(?:es|ing)|climb(?:s|ed|ing)?)\s+"
    r"without\s+(?:ever\s+)?(?:being\s+)?(?:released|freed|reclaimed)\b"
    # doccause10 (heldout21): PyTorch Lightning 1.x's epoch-end hooks: with
    # ``training_epoch_end`` / ``validation_epoch_end`` implemented, the loop keeps every step's
    # returned outputs (tensors, on the device) until the epoch ends to pass them to the hook
    # ("OOM when implementing training_epoch_end"); Lightning 2.0 removed them for that reason
    r"|\b(?:training|validation|test|train|val)_epoch_end\b"
    # doccause10 (heldout21): the contraction, "some data isn't released and memory keep growing"
    # (the negation check below reads "n't" before "keep growing" as ruling growth out)
    r"|\b(?:is|are|was|were|has|have)n[’']t\s+(?:been\s+|being\s+|getting\s+)?(?:released|freed)\b"
    r"|\b(?:doesn't|does\s+not|don't|do\s+not|won't|will\s+not|didn't|never)\s+"
    r"(?:always\s+|properly\s+|fully\s+)?(?:release|free|give\s+back|unload)\b"
    # the autograd graph kept alive per step (heldout12): "saving the computation graph for loss
    # for each iteration", "computation graph of losses are held in memory"
    r"|\b(?:sav|keep|hold|retain|stor|accumulat)\w*\s+(?:the\s+)?(?:computation(?:al)?\s+"
    r"|autograd\s+)?graphs?\b[^.\n]{0,40}?\b(?:each|every|per)\s+(?:iteration|step|batch|epoch)"
    r"|\b(?:computation(?:al)?|autograd)\s+graphs?\b[^.\n]{0,30}?\b(?:is|are)\s+"
    r"(?:held|kept|retained|stored)\s+in\s+memory"
    # the same statements in the languages of the corpus's threads: a (GPU) memory leak, memory
    # that keeps rising, memory not released (Chinese, Japanese, Korean, Spanish, French,
    # German, Russian)
    r"|(?:内存|显存|記憶體|顯存)(?:泄[漏露]|洩[漏露])|(?:显存|内存|顯存)(?:一直|不断|持续|逐渐)"
    r"(?:增加|增长|上涨|上升|升高)|(?:没有|未|不)释放(?:显存|内存)"
    # doccause12 (heldout24): a few words between, and the pace named ("训练中显存不稳定，一直在慢慢
    # 增长": the GPU memory keeps slowly growing during training); a run that fails only after
    # running a while ("开始能跑，跑久了就不行了": runs at first, fails when run long)
    r"|(?:显存|内存|顯存)[^。\n]{0,8}?(?:一直|不断|持续|逐渐)在?(?:慢慢|缓慢|逐渐)?地?"
    r"(?:增加|增长|上涨|上升|升高)|跑(?:久|长)了?(?:就|之后|以后)?(?:不行|会爆|爆|OOM|oom)"
    # doccause21 (heldout34): the pace alone, without "keeps" ("随着访问次数的增加，可以看到显存慢慢
    # 增大": as the requests add up, the GPU memory slowly grows); 增大 (gets larger) too
    r"|(?:显存|内存|顯存|內存)[^。\n]{0,8}?(?:慢慢|缓慢|逐渐|逐漸)地?"
    r"(?:增加|增长|增長|增大|上涨|上升|升高|变大|變大)"
    # doccause14 (heldout27): objects kept alive by a reference cycle, so what they hold is
    # never freed ("the cyclic references `TransformerBackend <-> PrioritizedTaskPool` that could
    # not have been garbage collected": CPython frees a cycle only when the cyclic collector
    # runs, and CUDA tensors it keeps stay allocated until then, Python docs `gc`)
    r"|\b(?:cyclic|circular)\s+references?\b|\breference\s+cycles?\b"
    r"|\b(?:(?:could|can|was|were|is|are)\s+not|can't|cannot|couldn't|wasn't|weren't|isn't"
    r"|aren't|never)\s+(?:have\s+been\s+|be\s+|been\s+|being\s+|get\s+)?garbage[\s-]collected\b"
    r"|メモリ(?:ー)?リーク|메모리\s?누수|fuga\s+de\s+memoria|fuite\s+de\s+m[ée]moire"
    r"|Speicherleck|утечк\w\s+памяти"
    # doccause20: the growth forms recognition reads (one pattern each, shared with
    # parse_wordings_*), so a text recognised for growth feeds the same growth evidence as its
    # older sibling "keeps growing": a memory that "becomes higher and higher" / "keeps getting
    # larger" (docrec30), memory that "could not be released" (docrec30), "显存越来越大"
    r"|"
    + MEMORY_GETS_BIGGER.pattern
    + r"|\b"
    + CANNOT_BE_FREED
    + r"|"
    + CJK_MEMORY_RISING
    # docpost21: the pace before the verb, "vram usage gradually increasing each run"
    + r"|"
    + PACE_FIRST_GROWTH.pattern.removeprefix("(?i)")
    # docpost21: a run that fails once it runs "long enough"
    + r"|"
    + LONG_RUN.pattern.removeprefix("(?i)")
    # docpost28: memory "is growing to the point it's oomkilled"
    + r"|"
    + PROGRESSIVE_UNTIL.pattern.removeprefix("(?i)")
    # docpost31: memory that "increases all the time until" / "eventually occupies" the machine
    + r"|"
    + GROWTH_UNTIL_EXHAUSTED.pattern.removeprefix("(?i)")
    # docpost31: a failure "after 10 hrs of training", a session used "for too long"
    + r"|"
    + RUN_DURATION.pattern.removeprefix("(?i)")
)


_NEGATED = re.compile(r"(?i)\b(?:no|not|without|never)\b|n't\b")


# (doccause15) the input's size named as a setting beside the completed steps: "If I use
# max-duration = 50, error will occur after some batches", "a batch size like 16 ... after 10
# iterations", "the context length is large(32k) ... OOM after some iterations"
_SIZE_SETTING = re.compile(
    r"(?i)\bbatch[ _-]?size\s*(?:like|of|=|:|is|at)?\s*\d{1,5}\b"
    r"|\bmax[-_ ]?(?:duration|len(?:gth)?|tokens|frames|seq(?:uence)?[-_ ]?len(?:gth)?"
    r"|(?:source|target|prompt)[-_ ]?len(?:gth)?)\s*(?:=|:|of|is)?\s*\d{1,7}"
    r"|\bcutoff[-_ ]?len\s*(?:=|:|of|is)?\s*\d{1,7}"
    r"|\b(?:context|sequence|seq|input)[ _-]?(?:length|len|size)\b[^.\n\d]{0,16}?\d{1,7}\s?k?\b"
)


def _stated_size_setting(text: str) -> str | None:
    """The words of ``text`` that name the input's size as a setting, or ``None``."""
    m = _SIZE_SETTING.search(text)
    return None if m is None else m.group(0)


def _stated_growth_text(text: str) -> str | None:
    """The words of ``text`` that state growth or completed steps, or ``None``."""
    return _stated_growth_match(text)[0]


def _stated_growth_match(text: str) -> tuple[str | None, bool]:
    """The words that state growth or completed steps, and whether they state growth itself
    (``True``: "memory leak", "keeps increasing") rather than only completed steps."""
    for m in _GROWTH_WORDS.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 24) : m.start()]):
            continue  # "not a memory leak", "no leak": the text rules growth out
        return m.group(0), True
    for m in _AFTER_STEPS.finditer(text):
        n = m["n"]
        if n is not None:
            done = int(n) if m["prep"].lower() == "after" else int(n) - 1
            if done < (_STEPS_DONE if m["unit"].lower().startswith(_STEP_UNITS) else 1):
                continue
        return m.group(0), False
    for m in _LATER.finditer(text):
        if (
            m["n"].isdigit()
            and m["unit"].lower().startswith(_STEP_UNITS)
            and int(m["n"]) < _STEPS_DONE
        ):
            continue
        return m.group(0), False
    zh = steps_done_zh(text)  # (docpost19) "十几个epoch之后就显存溢出"
    return zh, False


# requests or inferences completed one after another, said at the end of the words
_REQUESTS_DONE = re.compile(r"(?i)\b" + _REQUEST_UNITS + r"$")


def _host_kill_after_growth(words: str, growth: bool) -> bool:
    """A host-RAM kill read with certainty (a killer's own log line) whose text states the growth.

    (docpost28, heldout51) A kill names *where* memory ran out (host RAM: Android's
    ``ApplicationExitInfo`` ``reason=3 (LOW_MEMORY)``, lmkd, the kernel's OOM killer), not *why*.
    The corpus labels host RAM that grows until the kill ``leak_or_accumulation`` where the text
    shows the growth (tests/fixtures/oom_corpus/README.md, "Label mapping decisions"), so growth
    itself ("memory leak", "keeps growing") decides it, and so do requests completed one after
    another before the kill ("after ~18 serial single-turn inferences"): what one request needs
    is freed when it ends (``_REQUEST_UNITS`` above), so a kill after many is state kept past
    them. Epochs or steps alone do not: a data loader's workers or a later, larger batch fill
    host RAM at a step as well.
    """
    return growth or _REQUESTS_DONE.search(words) is not None


def stated_growth(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The message's own words say memory grew across steps: ``leak_or_accumulation``.

    Mechanism. Whatever stays resident for a run (weights, optimizer states, a KV pool sized at
    start-up) is allocated before or during the first step; if the first steps passed, it fit.
    A failure that the text itself places after completed steps ("CUDA out of memory at 1000th
    epoch", "after a few runs") or that it says followed growth ("memory leak", "keeps
    growing", "Unload model doesn't release memory") is therefore memory that accumulated:
    tensors kept alive across steps (a loss summed without ``.item()``, outputs stored with
    their graph), models or caches not freed between runs. This is the answer the doctor asks
    for with ``--when later`` (:mod:`oomkit.diagnose.user_phase`), given in the text (an issue
    title or the sentence pasted with the error), so it decides what the runtime rule left open
    (a fallback reading, or the generic host-RAM reading of a numberless message: *where* it
    ran out is RAM, *why* is the growth) at 0.5, below the numbers' own readings. A later
    input that is larger than the earlier ones is the competing reading, which
    ``torch.cuda.memory_allocated()`` per step decides. KV caches grow with the context by
    design and are left to their own rules.
    """
    if result.cause in {"leak_or_accumulation", "kv_cache_or_context"}:
        return None
    words, growth = _stated_growth_match(e.text)
    if words is None:
        return None
    if not fallback(result) and not (
        result.cause == "host_ram"
        and (result.confidence < 0.5 or _host_kill_after_growth(words, growth))
    ):
        return None
    if not growth:
        setting = _stated_size_setting(e.text)
        if setting is not None:
            return _later_larger_input(result, words, setting)
    return Analysis(
        cause="leak_or_accumulation",
        confidence=0.5,
        explanation=result.explanation + f" The text itself says {words!r}: steps completed "
        "before the failure (or memory was not given back between them), so what stays "
        "resident fit and memory grew across steps or runs (tensors kept alive, models or "
        "caches not freed). What would decide: torch.cuda.memory_allocated() (or the process's "
        "RSS) after each step or run: rising means accumulation, flat means a later, larger "
        "input.",
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
        open_question=False,
    )


def _later_larger_input(result: Analysis, words: str, setting: str) -> Analysis:
    """Completed steps and a stated input-size setting: a later, larger input, not growth.

    Mechanism. When steps only *completed* (no growth is stated) and the same text names the
    setting that bounds each batch's size (``batch_size``, icefall/Lhotse's ``max-duration``,
    the total seconds of audio per batch of ``DynamicBucketingSampler``; LLaMA-Factory's
    ``cutoff_len``, a context length), the steps differ in size: sequences and utterances vary
    in length and each batch is padded to its longest, so activation memory follows the largest
    batch drawn so far, and the first one past the memory fails at a later step while resident
    memory stays flat. This is the competing reading :func:`stated_growth` names ("a later,
    larger input"); the setting named beside the failure decides it for
    ``batch_or_activations`` at 0.45, with that setting as the lever. Stated growth ("memory
    keeps increasing", "leak") still reads as accumulation.
    """
    return Analysis(
        cause="batch_or_activations",
        confidence=0.45,
        explanation=result.explanation + f" The text says steps completed ({words!r}) and "
        f"names the input's size setting ({setting!r}): batches differ in length and each is "
        "padded to its longest, so the failing step is the first batch large enough, not memory "
        "that grew. What would decide: torch.cuda.max_memory_allocated() per step rising with "
        "the batch's longest sample (a larger input) or steadily (accumulation).",
        fixes=(
            generic(
                "Lower the size setting that bounds the largest batch",
                "the largest batch, not the average one, must fit.",
                (
                    "batch_size //= 2",
                    "--max-duration 25   # icefall / Lhotse: seconds of audio per batch",
                    "cutoff_len: 8192   # LLaMA-Factory: the longest sequence kept",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# RL fine-tuning with an inference engine on the training GPUs: the engines' APIs that hand memory
# back to the trainer (SGLang `release_memory_occupation` / `resume_memory_occupation`, vLLM's
# sleep mode, built for RLHF), an engine named beside an RL algorithm, or the engine's memory
# share set in an RL config (verl `actor_rollout_ref.rollout.gpu_memory_utilization`, TRL
# `vllm_gpu_memory_utilization`)
_HANDBACK = re.compile(
    r"(?i)\b(?:release|resume)_memory_occupation\b|\bsleep[ _]mode\b|\benable_sleep_mode\b"
)
_ENGINE = re.compile(r"(?i)\b(?:vllm|sglang)\b")
# (doccause7) the trainer's state said to stay on the GPU the engine needs ("optimizer state is
# not offloaded from GPU memory ... causes vLLM to run out of memory"): offloading it between
# phases is what colocated trainers do, so the sentence names the colocation
_RL = re.compile(
    r"(?i)\b(?:grpo|ppo|rlhf|dapo|colocat\w*)\b|rollout"
    r"|\b(?:optimizer\s+states?|training\s+state|(?:policy|actor)\s+weights)\s+(?:is|are)\s+not\s+"
    r"offloaded\b"
)
_ENGINE_SHARE = re.compile(r"(?i)gpu_memory_utilization|mem_fraction_static")
# (doccause8, heldout18) the engine on a GPU of its own: TRL's `vllm_device` (GRPOConfig puts
# vLLM on the next free GPU, not beside the trainer), "vLLM on a separate GPU". Not a
# colocation; trainer work sent to that device ("will use the vllm_device to compute logps") is
# work placed unevenly across the GPUs instead.
_OWN_DEVICE = re.compile(
    r"(?i)\bvllm[_ ]device\b|\b(?:vllm|sglang)\b[^.\n]{0,30}?\b(?:on|to)\s+(?:a\s+)?"
    r"(?:separate|dedicated|its\s+own|another|different)\s+(?:gpu|device|card)\b"
)
_WORK_ON_ENGINE_DEVICE = re.compile(
    r"(?i)\b(?:use|uses|using|used)\s+(?:the\s+)?vllm[_ ]device\s+(?:to|for)\b"
    r"|\b(?:comput\w*|logps|log[- ]?probs?|forward)\b[^.\n]{0,40}?\bon\s+(?:the\s+)?"
    r"vllm[_ ]device\b"
)


def colocated_rollout_engine(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """RL fine-tuning whose rollout engine shares the training GPUs: the engine's reservation.

    Mechanism. PPO/GRPO trainers (verl, OpenRLHF, TRL, slime) generate rollouts with a vLLM or
    SGLang engine placed on the same GPUs as the policy being trained. The engine reserves a
    fixed share of each device at start-up (``gpu_memory_utilization`` x total for its weights
    and KV pool; ``mem_fraction_static`` in SGLang) and holds it until told to give it back
    (``release_memory_occupation``, vLLM's sleep mode); the trainer's weights, gradients and
    optimizer states live in what is left. An OOM in such a job is one side running into the
    memory the other holds, which this corpus's taxonomy calls another holder of the device:
    ``other_process_holding_memory``, fixed by a smaller engine share, by releasing (sleeping)
    the engine before the training step, or by placing engine and trainer on separate GPUs. The
    text must name the colocation: an engine and an RL algorithm together, the engine's share
    in an RL config, or the engine's hand-back API. Applied only where the rule left the cause
    open, at 0.45 (the trainer's own model state not fitting is the competing reading). An
    engine on a GPU of its own (TRL's ``vllm_device``) is not colocated: see
    :func:`_work_on_engine_device`.
    """
    if not fallback(result) or result.cause in {"host_ram", "other_process_holding_memory"}:
        return None
    text = e.text
    if _OWN_DEVICE.search(text):
        return _work_on_engine_device(result, text)
    named = _HANDBACK.search(text)
    if named is None and _RL.search(text) is not None:
        named = _ENGINE.search(text) or _ENGINE_SHARE.search(text)
    if named is None:
        return None
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.45,
        explanation=result.explanation + f" The text names a rollout engine sharing the "
        f"training GPUs ({named.group(0)!r}): in RL fine-tuning the vLLM/SGLang engine reserves "
        "its share of every device (gpu_memory_utilization x total, for its weights and KV "
        "pool) and holds it until released, so the trainer and the engine run into each "
        "other's memory. What would decide: the engine's reserved share against what the "
        "trainer needs (nvidia-smi during the training step, with the engine awake vs "
        "released).",
        fixes=(
            generic(
                "Give the rollout engine a smaller share, or release it during training",
                "the engine's reservation is gpu_memory_utilization x each GPU; released or "
                "asleep, it holds (almost) nothing during the training step.",
                (
                    "actor_rollout_ref.rollout.gpu_memory_utilization=0.4   # verl",
                    "vllm_gpu_memory_utilization=0.3   # TRL GRPOConfig",
                    "LLM(..., enable_sleep_mode=True); llm.sleep(level=1)   # vLLM",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def _work_on_engine_device(result: Analysis, text: str) -> Analysis | None:
    """The engine has a GPU of its own and the text says trainer work runs there.

    Mechanism. With the engine on a dedicated device (TRL's ``vllm_device``), vLLM reserves
    ``vllm_gpu_memory_utilization`` of that GPU at start-up; the trainer's GPUs hold the policy.
    Trainer tensors computed on the engine's GPU (log-probs of the completions, a reference
    model) land in the few GB the engine left, while the training GPUs keep their headroom:
    the work is placed unevenly, ``multi_gpu_imbalance`` at 0.4 (a smaller engine share is the
    competing lever). Without such a statement nothing is read (the engine's own device is
    not the training GPUs' co-tenant).
    """
    m = _WORK_ON_ENGINE_DEVICE.search(text)
    if m is None:
        return None
    return Analysis(
        cause="multi_gpu_imbalance",
        confidence=0.4,
        explanation=result.explanation + f" The text says trainer work runs on the rollout "
        f"engine's own GPU ({m.group(0)!r}): the engine reserved most of that device at "
        "start-up, so tensors the trainer computes there get only what it left, while the "
        "training GPUs keep theirs. What would decide: nvidia-smi during the step (the engine's "
        "GPU rising, the training GPUs flat).",
        fixes=(
            generic(
                "Keep the trainer's tensors off the engine's GPU (or shrink its share)",
                "the engine's GPU has only 1 - vllm_gpu_memory_utilization left.",
                (
                    "compute log-probs on the training device (model.device), not vllm_device",
                    "vllm_gpu_memory_utilization=0.5   # TRL GRPOConfig",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# The text says several holders share one device: "multiple models on the same GPU", "two
# processes on one card", "多个模型在同一个GPU上" (several models on the same GPU). "Other
# models run fine on the same GPU" compares, it does not share: "other" is not a count.
# Or that the memory was taken before the run started (heldout13): "the GPU memory already being
# in use", "13GB allocated by someone", "occupied by a zombie process"; not "X GiB already
# allocated" (PyTorch's own count of this process's tensors, no memory word before it).
_COTENANTS = re.compile(
    # (doccause7) another process named as running beside this one and taking device memory:
    # "a concurrent worker attempting to allocate 2.95 GiB found only 2.87 GiB free"
    r"(?i)\b(?:a\s+|another\s+)?concurrent(?:ly\s+running)?\s+(?:workers?|process(?:es)?|jobs?)\b"
    r"[^.\n]{0,40}?\b(?:allocat\w*|gpu|vram|memory)\b|"
    r"\b(?:several|multiple|many|two|three|four|\d{1,3})\s+(?:models?|processes|jobs"
    r"|instances|programs|engines|workers|kernels|containers|services)\b[^.\n]{0,40}?"
    r"\b(?:on|in|share|sharing|using|use)\s+(?:the\s+)?(?:same|one|a\s+single|a\s+shared)\s+"
    r"(?:gpu|card|device)\b"
    r"|(?:多个|两个|几个)(?:模型|进程|任务|程序|服务|实例)[^。\n]{0,10}?同一(?:个|张|块)?"
    r"(?:GPU|gpu|卡|显卡)"
    r"|\b(?:gpu|vram|video|device|cuda)\s+memory\s+(?:is\s+|was\s+)?already\s+(?:being\s+)?"
    r"(?:in\s+use|used|occupied|taken|full)\b"
    r"|\b(?:held|occupied|allocated|taken|used)\s+by\s+(?:someone|something|another\s+"
    r"(?:process|program|job|user)|other\s+(?:processes|programs|jobs|users)|an?\s+"
    r"(?:previous|earlier|old|zombie|stale|dead|orphaned?)\s+(?:process|run|job|instance))\b"
    # several holders alive at once (heldout11, heldout15): "left two shard processes running
    # simultaneously", "all the models are exercised simultaneously" (also as typed,
    # "simulataneously"), "OOMs on enabling multiple TF MaskRCNN models"; one model's "instance
    # count" (copies for concurrency) is not read, nor "loading two models" (one process holding
    # both is its own resident state)
    r"|\b(?:two|three|several|multiple|many|\d{1,3})\s+(?:\w+\s+){0,2}?(?:processes|jobs"
    r"|programs|servers|shards|models)\s+(?!(?:were\s+|are\s+)?load\w*\s)(?:\w+\s+){0,2}?"
    r"(?:simultaneously|concurrently"
    r"|at\s+the\s+same\s+time|in\s+parallel)\b"
    # (doccause15) not "all four models were loaded simultaneously": one process loading its
    # own pipeline's models holds them as its resident state, as "loading two models" above
    r"|\ball\s+(?:of\s+)?(?:the\s+)?(?:\w+\s+)?models\s+(?:are\s+|were\s+)?(?!load\w*\s)(?:\w+\s+)?"
    r"(?:simul\w{0,4}taneous\w*|concurrently|at\s+the\s+same\s+time|at\s+once)\b"
    r"|\b(?:enabl|deploy|host|serv)\w*\s+(?:multiple|several|many|two|three|\d{1,2})\s+"
    r"(?:[\w-]+\s+){0,3}?models\b(?!\s+(?:sequentially|one\s+(?:after|by)))"
    # doccause9 (heldout19): "when more than one program involving JAX and cuDNN" (each JAX
    # process preallocates 75% of the card); Xinference's launch check "User specified GPU
    # index 1 has been occupied with a vLLM model" (xinference/core/worker.py: a GPU one of
    # its vLLM models holds). "more than one model" in one process is its own resident state.
    r"|\bmore\s+than\s+one\s+(?:programs?|process(?:es)?|jobs?|instances?|notebooks?"
    r"|containers?|servers?)\b"
    r"|\bgpu\s+(?:index\s+)?\d{1,2}\s+has\s+been\s+occupied\b"
    # doccause10 (heldout21): a test suite run in parallel worker processes (pytest-xdist's
    # ``-n N`` starts N workers; each imports torch, makes its own CUDA context on the default
    # device, cuda:0, and keeps its models and cached blocks there): "every xdist worker
    # auto-selects cuda:0 and stacks models onto it", "Executing tests using `N` processes"
    r"|\bxdist\s+workers?\b|\bpytest\b[^.\n]{0,40}?\s-n\s+(?:auto|\d{1,3})\b"
    r"|\btests?\s+(?:using|with|in|across|on)\s+[`'\"]?(?:N|\d{1,3}|multiple|several|many|parallel)"
    r"[`'\"]?\s+(?:worker\s+)?(?:processes|workers)\b"
    # docpost18 (heldout37): another process named with what it holds, "OOMs silently when
    # another process (apr-train) uses 12.7GB of the RTX 4090's 24GB" (not "another process
    # uses the results": a size or the device's memory must follow)
    r"|\banother\s+(?:process|program|job|application|container|training\s+job)\b"
    r"(?:\s{0,2}\([^)\n]{1,40}\))?\s+(?:is\s+|was\s+)?(?:us(?:es|ing|ed)|hold(?:s|ing)|held"
    r"|occup(?:ies|ying|ied)|tak(?:es|ing)|took|consum(?:es|ing|ed))\s+(?:\d{1,4}(?:\.\d{1,2})?\s?"
    r"(?:gb|gib|g|mb|mib)\b|(?:the\s+|most\s+of\s+the\s+|some\s+)?(?:gpu|vram|video)\s*memory\b)"
)


def stated_cotenants(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says several models, processes or jobs share the device: the others' memory.

    Mechanism. Every process on a GPU holds its own weights, caches and CUDA context, and the
    allocators of serving engines size their pools from what is free when they start (vLLM's
    ``gpu_memory_utilization``, LMDeploy's ``cache_max_entry_count``, llama.cpp's layer fit):
    memory a second tenant takes later is not in that plan, so whichever starts or grows second
    runs out, whatever its own batch. A text that states the sharing ("multiple models on the
    same GPU") names the holder the message itself cannot: ``other_process_holding_memory`` at
    0.45, deciding fact ``oomkit gpus`` (each tenant's share) and the fix of isolating the
    tenants (separate GPUs, MIG/MPS limits, absolute pool sizes). Applied only where the rule
    left the cause open.
    """
    if not fallback(result) or result.cause in {"host_ram", "other_process_holding_memory"}:
        return None
    m = _COTENANTS.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.45,
        explanation=result.explanation + f" The text says the device is shared "
        f"({m.group(0)!r}): each tenant holds its own weights, caches and context, and a pool "
        "sized from the memory free at start-up does not know what another tenant takes "
        "later. What would decide: `oomkit gpus` (each process's share) with the others "
        "stopped vs running.",
        fixes=(
            generic(
                "Give each model its own GPU, or fixed memory limits",
                "separate devices, MIG slices or absolute pool sizes keep one tenant from "
                "eating another's share.",
                (
                    "CUDA_VISIBLE_DEVICES=1 <second server>",
                    "--cache-max-entry-count 2000   # LMDeploy: an absolute block count (> 1)",
                    "--gpu-memory-utilization 0.45   # vLLM: each engine's share",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
