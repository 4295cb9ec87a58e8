"""Prose that names the budget that overflowed: the context a cache was sized for, or the
full-precision weights placed on the device.

Companions of :mod:`oomkit.diagnose.rules_stated_alloc` (doccause7, written after studying the
retired parts heldout16 and heldout17): an issue title, a pull request's title or a pasted
sentence that says *what the memory was sized for* decides what a numberless message leaves
open. Each rule reads the failing event's own line (and, through
:func:`oomkit.diagnose.rules_surroundings.stated_around`, the sentences around it), applies only
where the runtime rule left the cause open (:func:`oomkit.diagnose.rules_stated.fallback`),
states its mechanism in its docstring, and answers at 0.45, below the numbers' own readings,
with the fact that would decide.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.priors import is_open
from oomkit.diagnose.rules_stated import fallback

__all__ = [
    "context_experiment",
    "stated_configured_cap",
    "stated_context_budget",
    "stated_eval_fails_training_fits",
    "stated_full_weights_on_device",
]

# (docpost18) also the transitive "fails GPU memory allocations" (parse_wordings_prose)
_OOM = (
    r"(?:oom(?:s|ed|ing)?|out[\s-]of[\s-]memory|fail(?:s|ed|ing)?\s+(?:(?:gpu|cuda|vram|device)\s+)?"
    r"memory\s+allocations?)"
)
# the context the cache is sized for, named as what caused the OOM:
# * "attempt allocating memory for the maximum context size and resulting in OOM errors" (a
#   client that asks for the model's trained context);
# * "Reduced max tokens of llama 30b to 1792 because of OOMs at 2048", "Lower max-tokens ... to
#   32k since 64k was causing OOM" (a token budget cut as the fix);
# * "OOM if too many cache blocks are using" (the paged KV pool);
# * "OOM ... with large (e.g. 65000) context sizes" (a context of 32k tokens or more, in digits).
# doccause21: the context setting named as raised ("increasing num_ctx", "a larger
# max_model_len", "a high `num_ctx`"): llama.cpp/Ollama size the KV cache for it at load, vLLM
# and SGLang size the work per step by it, so raising it is what grew
_RAISED_CONTEXT = (
    r"\b(?:high(?:er)?|large(?:r)?|big(?:ger)?|long(?:er)?|increas(?:e|es|ed|ing)|rais(?:e|es|ed"
    r"|ing)|bump(?:s|ed|ing)?)\s+(?:the\s+)?[`'\"]?(?:--?)?(?:num_ctx|n_ctx|max[-_]model[-_]len"
    r"|ctx[-_]size|context\s+(?:length|size|window))\b"
)
# (docpost18) an abbreviation's dot ("e.g.", "i.e.") does not end the clause: "a much larger
# context window than intended (e.g., 128k/200k), causing failures or OOM"
# (docpost21, heldout44) nor does an ellipsis, a poster's elision inside the sentence ("launching
# the server with: ... can lead to an out-of-memory (OOM) issue", SGLang PR 6744)
_CLAUSE = (
    r"(?:(?!\b(?:fine|works?|worked|ok|okay|but)\b)(?:[^.;\n]|(?<=\be)\.(?=g\.)|(?<=\bi)\.(?=e\.)"
    r"|(?<=\be\.g)\.|(?<=\bi\.e)\.|\.\.\.)){0,120}?"
)
_CONTEXT_BUDGET = re.compile(
    r"(?i)\bmax(?:imum)?\s+context\s+(?:size|length|window)\b[^.\n]{0,60}?\b" + _OOM + r"\b"
    r"|\b(?:reduc|lower|decreas|cut)\w*\s+(?:the\s+)?max(?:imum)?[ _-]?(?:total[ _-]?|new[ _-]?)?"
    r"(?:tokens|context|seq(?:uence)?[ _-]?len(?:gth)?|input[ _-]?len(?:gth)?)\b[^.\n]{0,60}?"
    r"\b(?:because\s+of|due\s+to|to\s+avoid|to\s+prevent|since|as)\b[^.\n]{0,30}?\b" + _OOM + r"\b"
    # a single sequence longer than the KV cache holds ("when the length of a single sequence
    # is larger than the system's KV cache size")
    r"|\b(?:sequence|prompt|context|input)\b[^.\n]{0,40}?\b(?:larger|longer|more)\s+than\b"
    r"[^.\n]{0,20}?\bkv[ _-]?cache\b"
    r"|\b" + _OOM + r"\b[^.\n]{0,40}?\btoo\s+many\s+(?:kv\s+)?cache\s+blocks\b"
    r"|\b"
    + _OOM
    + r"\b(?:[^.\n]|\.(?=\S)|(?<=e\.g)\.){0,90}?\b(?P<n>[1-9]\d{4,6})\)?\s+(?:tokens?\s+)?"
    r"context\b"
    # doccause9 (heldout19): the context setting named as what caused the OOM: "Model instance
    # OOM due to large context length", "derived_max_model_len ... using default value caused
    # OOM" (an engine left at the model's trained context, 1M tokens for glm-4-9b-chat-1m); a
    # long *sequence* in training is the activations' (batch_or_activations), not read here
    r"|\b" + _OOM + r"\b[^.\n]{0,20}?\b(?:due\s+to|because\s+of|caused\s+by)\s+(?:the\s+|an?\s+)?"
    r"(?:(?:very\s+)?(?:large|long|big|huge|default)\s+)?(?:context|max_model_len|n_ctx|num_ctx)\b"
    # doccause10 (heldout21): the KV cache itself named as what caused it ("miscalculates KV
    # cache memory for hybrid GDN + FullAttention models, causing OOM"); an engine started
    # without its context cap, which then sizes for the model's trained context ("models that
    # have large default context lengths ... without explicitly setting [--max-model-len], the
    # server crashes with a fatal, unrecoverable device OOM")
    r"|\bwithout\s+(?:explicitly\s+)?(?:setting|specifying|passing)\s+(?:the\s+|an?\s+)?[\[`'\"]?"
    r"(?:--?)?(?:max[-_]model[-_]len|ctx[-_]size|num_ctx|n_ctx|context\s+(?:length|size))\b"
    # (a start said to succeed first, "... starts fine; OOM later", places the OOM elsewhere)
    r"(?:(?!\b(?:fine|works?|worked|ok|okay|runs?|but|later)\b)[^.;\n]){0,80}?\b" + _OOM + r"\b"
    r"|(?:\b|_)(?:max_model_len|n_ctx|num_ctx|context\s+(?:length|size|window)|kv[ _-]?cache"
    # docpost21 (heldout44): the requests named by their long context ("multiple concurrent
    # long-context sequences cause Metal OOM", vllm-mlx PR 455): each holds its KV for the
    # whole context; "long-context training" (a long sequence's activations) is not read
    r"|(?:long|large|huge)[- ]context\s+(?:requests?|prompts?|sequences?|queries|conversations?))\b"
    r"[^.\n]{0,80}?"
    # docpost21: the plural subject's "cause" too
    r"\b(?:caus(?:e|es|ed|ing)|leads?\s+to|led\s+to|results?\s+in)\s+(?:the\s+|an?\s+)?"
    # doccause21: the device named before the OOM ("causes cuda out of memory errors")
    r"(?:cuda\s+|gpu\s+|vram\s+|device\s+|metal\s+|mps\s+)?" + _OOM + r"\b"
    # docpost21 (heldout44): the KV cache's own allocation said to fail ("the draft model's KV
    # cache CUDA memory allocation fails (OOM)", ik_llama.cpp issue 731): the allocation named
    r"|\bkv[ _-]?cache\b[^.\n]{0,40}?\ballocations?\s+(?:fails|failed|failing|failure)\b"
    # doccause21: the context setting named as raised, in the sentence of the OOM ("OOM after
    # increasing num_ctx", "a larger max_model_len causes OOM", "Switching from a high
    # `num_ctx` ..."): the cache is sized by that setting at load, so raising it is what grew
    # (within one clause: "a larger context works; OOM at batch 64" ties nothing)
    r"|\b"
    + _OOM
    + r"\b"
    + _CLAUSE
    + _RAISED_CONTEXT
    + r"|"
    + _RAISED_CONTEXT
    + r"(?="
    + _CLAUSE
    + r"\b"
    + _OOM
    + r"\b)"
    # docpost18 (heldout38): the context setting named as the fix ("Fix OOM ... by setting
    # `max_model_len`", "running it with smaller context lengths works .. like `-c 32786`"), and
    # the cache named as what exhausted the memory ("temporary KV-cache estimation and executor
    # resources exhausted H100 memory"): the same budget, named from the other side
    r"|\bfix(?:es|ed|ing)?\s+(?:the\s+|an?\s+)?" + _OOM + r"\b[^.\n]{0,60}?\bby\s+(?:setting|"
    r"lowering|reducing|capping|limiting|passing)\s+(?:the\s+|a\s+)?[`'\"]?(?:--?)?"
    r"(?:max[-_]model[-_]len|num_ctx|n_ctx|ctx[-_]size|context\s+(?:length|size|window))\b"
    r"|\b(?:smaller|shorter|lower|reduced)\s+(?:the\s+)?(?:context|ctx|max_model_len|num_ctx)"
    r"(?:\s+(?:lengths?|sizes?|windows?))?\s+(?:works?|worked|fixe[sd]\s+it|solved\s+it)\b"
    r"|\bkv[ _-]?cache\b[^.\n]{0,60}?\bexhaust(?:s|ed|ing)\s+(?:the\s+)?(?:\w{1,12}\s+)?"
    r"(?:gpu\s+|device\s+)?memory\b"
    # doccause21: llama.cpp's `-c 0` / `--ctx-size 0` is "0 = loaded from model"
    # (common/arg.cpp; llama-context.cpp: ``cparams.n_ctx = params.n_ctx == 0 ?
    # hparams.n_ctx_train : params.n_ctx``): the KV cache is sized for the trained context
    r"|(?:^|(?<=[\s`'\"]))(?:-c|--ctx-size)(?:\s+|\s*=\s*)0\b(?![.,]\d)(?=[^\n]{0,200}?\b"
    + _OOM
    + r"\b)"
)
_LONG_CONTEXT_TOKENS = 32_000  # as rules_stated_alloc's 32k: the KV cache is then a load's largest


def stated_context_budget(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text names the context (or token budget) the cache was sized for as the cause.

    Mechanism. A KV cache is allocated for the context it must hold: llama.cpp and the engines
    on it (Ollama, LM Studio, KoboldCpp) allocate it for the whole ``n_ctx`` when the model
    loads, and fall back to the model's trained context (128k or more for recent models) when
    none is set; vLLM, SGLang and LMDeploy carve a paged pool of cache blocks out of what the
    weights leave and size the work per step by ``max_model_len`` / ``max_num_batched_tokens``;
    Hugging Face ``generate`` grows the cache with prompt + ``max_new_tokens``. Each is linear
    in the tokens. A text that ties the OOM to that budget ("memory for the maximum context
    size", "reduced max tokens ... because of OOMs at 2048", "too many cache blocks", a
    65000-token context) names the allocation a numberless message cannot show:
    ``kv_cache_or_context`` at 0.45. What would decide: whether the same load or request fits
    with the context (or ``max_tokens``) halved.
    """
    if not fallback(result) or result.cause in {"kv_cache_or_context", "host_ram"}:
        return None
    for m in _CONTEXT_BUDGET.finditer(e.text):
        n = m["n"]
        if n is not None and int(n) < _LONG_CONTEXT_TOKENS:
            continue
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.45,
            explanation=result.explanation + f" The text ties the failure to the context the "
            f"cache is sized for ({m.group(0)!r}): the KV cache (or the paged pool's share) is "
            "linear in the tokens it must hold. What would decide: whether it fits with the "
            "context or max_tokens halved.",
            fixes=(
                generic(
                    "Set a shorter context (or a smaller token budget) explicitly",
                    "the cache is sized for the context, whether or not the prompt uses it.",
                    ("-c 8192", "num_ctx 8192", "--max-model-len 8192", "max_new_tokens=512"),
                ),
                *result.fixes,
            ),
            open_question=False,
        )
    return None


# revfix18e: the poster's own experiment with the context setting: "The OOM goes away when I
# lower max_model_len to 32768", "lowering --max-model-len to 32k fixes the OOM"
_CTX_SETTING = (
    r"[`'\"]?(?:--?)?(?:max[-_ ]model[-_ ]len(?:gth)?|num_ctx|n_ctx|ctx[-_ ]size"
    r"|max[-_ ]seq(?:uence)?[-_ ]len(?:gth)?|context\s+(?:length|size|window)"
    # docpost32 (heldout59): Tenstorrent's paged-KV budget, the tokens of all users' caches
    # (tenstorrent/vllm's TT model hook; tt_transformers' max_tokens_all_users)
    r"|max[-_ ]tokens[-_ ]all[-_ ]users)\b"
)
_LOWERED = r"(?:lower|reduc|decreas|cut|shrink|halv)\w*\s+(?:the\s+)?"
_EXPERIMENT = re.compile(
    r"(?i)\b" + _OOM + r"\b[^.\n]{0,20}?\b(?:(?:goes|go|went)\s+away|disappear\w*|vanish\w*"
    r"|stops?\b|stopped|is\s+gone|no\s+longer\s+happens?)"
)
_TO_N = re.compile(r"(?i)\bto\s+(?P<n>[1-9]\d{3,6})\b")
_EXPERIMENT_CTX = re.compile(
    r"(?i)\b(?:when|if|after|once|by|with)\s+(?:I\s+|we\s+)?"
    + _LOWERED
    + _CTX_SETTING
    + r"|\b"
    + _LOWERED
    + _CTX_SETTING
    + r"[^.\n]{0,30}?\b(?:fix(?:es|ed)?|solves?|solved"
    r"|avoids?|avoided)\s+(?:the\s+|it|this)"
)
# docpost32 (heldout57/59): the same experiment in the words that state its outcome themselves,
# so no "goes away" is needed:
# * "LG3 works if you set a lower max model length (I tested 65,535)";
# * "parameter setting max seq len to avoid OOM on n150" (a cap set so that it does not fail);
# * "OOM during verify-stress.sh until reduce max_model_len to 188000";
# * "Without this, the default large value (131072) is used, causing DRAM out-of-memory" (a cap
#   whose absence the text says causes the OOM; read only where a context setting is named).
_SELF_STATED = re.compile(
    r"(?i)\bworks?\s+(?:fine\s+|again\s+)?(?:if|when|after|once|with)\s+(?:you\s+|I\s+|we\s+)?"
    r"(?:set\s+|use\s+|pass\s+)?(?:a\s+|the\s+)?(?:lower|smaller|shorter|reduced)\s+"
    + _CTX_SETTING
    + r"|\b(?:set(?:ting)?|cap(?:ping)?|limit(?:ing)?|lower(?:ing)?|reduc(?:e|ing))\s+(?:the\s+)?"
    + _CTX_SETTING
    + r"[^.\n]{0,40}?\bto\s+(?:avoid|prevent)\s+(?:the\s+|an?\s+)?"
    + _OOM
    + r"|\b"
    + _OOM
    + r"\b(?:[^.\n]|\.(?=\S)){0,60}?\buntil\s+(?:I\s+|we\s+)?"
    r"(?:reduc|lower|decreas|cut|shr[iu]nk|halv)\w*\s+(?:the\s+)?" + _CTX_SETTING
)
_WITHOUT_CAP = re.compile(
    r"(?i)\bwithout\s+(?:this|it|that)\b[^.\n]{0,120}?\b(?:caus(?:es|ed|ing)|leads?\s+to"
    r"|results?\s+in)\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+){0,2}?" + _OOM
)
_SETTING_NAMED = re.compile(r"(?i)" + _CTX_SETTING)


def context_experiment(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The poster lowered the context setting and the OOM went away: ``kv_cache_or_context``.

    Mechanism. The context setting sizes what a serving engine reserves per sequence: vLLM
    checks at start-up that the KV pool holds one ``max_model_len`` sequence
    (``vllm/v1/core/kv_cache_utils.py`` ``check_enough_kv_cache_memory``) and, without chunked
    prefill, profiles a ``max(max_model_len, 2048)``-token batch; llama.cpp and Ollama allocate
    the KV cache for the whole ``n_ctx`` / ``num_ctx`` at load. An experiment in which only
    that setting changed and the OOM followed it decides more than the size of the request
    that failed (which reads ``batch_or_activations`` at 0.55 from the tensor's size alone):
    ``kv_cache_or_context`` at 0.55, over that reading and over open ones only. The statement is
    read on the message's line and on the sentences of the paste around it
    (``LogContext.paste_prose``), since a poster states it apart from the log.
    """
    if result.cause in {"kv_cache_or_context", "host_ram"}:
        return None
    if not (fallback(result) or (result.cause == "batch_or_activations" and result.confidence
                                 <= _SIZE_READING)):  # fmt: skip
        return None
    for words in (e.text, *(sentence for _, sentence in ctx.paste_prose)):
        named = _SETTING_NAMED.search(words) is not None
        for clause in re.split(r"(?<=[.;!?])\s+", words):
            m = _EXPERIMENT.search(clause)
            c = _EXPERIMENT_CTX.search(clause)
            if c is None or (m is None and "fix" not in c.group(0).lower()
                             and "solv" not in c.group(0).lower()
                             and "avoid" not in c.group(0).lower()):  # fmt: skip
                c = _SELF_STATED.search(clause)
            if c is None and named:
                c = _WITHOUT_CAP.search(clause)
            if c is None:
                continue
            to = _TO_N.search(clause, c.start())
            n = to["n"] if to is not None else "8192"  # the one the poster says works
            return Analysis(
                cause="kv_cache_or_context",
                confidence=0.55,
                explanation=result.explanation + f" The text says the OOM follows the context "
                f"setting ({clause.strip()[:160]!r}): what it sizes (the KV cache a sequence "
                "needs, the profile batch without chunked prefill) is what did not fit. What "
                "would decide: the largest context that starts, and whether it fits the "
                "requests the server must take.",
                fixes=(
                    generic(
                        "Serve the context that fits, set explicitly",
                        "the engine reserves for the configured context, used or not.",
                        (f"--max-model-len {n}", f"-c {n}", f"num_ctx {n}"),
                    ),
                    *result.fixes,
                ),
                open_question=False,
            )
    return None


_SIZE_READING = 0.55  # rules_torch_allocator's reading of one large request by its size alone


# the full-size weights placed on the device, said to be what ran out:
# * "It need to be dequantized so immediately gives OOM" (a 4-bit model merged to 16 bit);
# * "pulls the whole DiT onto the card and OOMs" (offloading turned off).
_FULL_WEIGHTS = re.compile(
    r"(?i)\bdequanti[sz]\w*\b[^.\n]{0,40}?\b(?:gives?|giving|causes?|causing|leads?\s+to|"
    r"results?\s+in|and)\s+(?:an?\s+)?(?:immediate\s+)?" + _OOM + r"\b"
    r"|\b(?:whole|entire|full)\s+(?:bf16\s+|fp16\s+|fp32\s+)?(?:model|dit|unet|transformer|"
    r"checkpoint|weights)\s+(?:on|onto|into|to)\s+(?:the\s+)?(?:card|gpu|device|vram)\b[^.\n]{0,20}?"
    r"\b(?:and\s+)?(?:\*\*)?" + _OOM + r"\b"
)


def stated_full_weights_on_device(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """The text says the full-size weights were put on the device: ``model_too_large``.

    Mechanism. Quantization and offloading are what let a model larger than the card run: a
    4-bit model holds a quarter of its 16-bit bytes, and layer-wise (or sequential CPU)
    offload keeps only the running layer on the GPU. A step that undoes either on the device
    (merging LoRA into a 16-bit copy, which dequantizes every layer on the GPU; a code path that
    turns offload off and loads every layer) asks the card for the model's full 16-bit size,
    ``parameters x 2`` bytes, which is what did not fit when the scheme was chosen. A text that
    says so ("needs to be dequantized so immediately gives OOM", "pulls the whole DiT onto the
    card and OOMs") names that allocation: ``model_too_large`` at 0.45. What would decide:
    parameters x 2 bytes against the card's total (``oomkit estimate``).
    """
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    m = _FULL_WEIGHTS.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + f" The text says the full-size weights went onto the "
        f"device ({m.group(0)!r}): dequantizing or turning offload off asks the card for the "
        "model's whole 16-bit size. What would decide: parameters x 2 bytes against the card's "
        "total memory.",
        fixes=(
            generic(
                "Keep the weights quantized or offloaded during that step",
                "merge or dequantize layer by layer on the CPU, or keep the offload on.",
                (
                    "model.save_pretrained_merged(..., maximum_memory_usage=0.5)",
                    "merge on the CPU: device_map='cpu'",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# training said to fit and evaluation said to fail: "For training, it is consuming not more than
# 20GB ... But for evaluation with batch_size of 4, it is giving CUDA Out Of Memory error"
_EVAL_NOT_TRAIN = re.compile(
    r"(?i)\btrain(?:ing)?\b[^\n]{0,120}?\bbut\s+(?:for\s+|during\s+|when\s+|in\s+|on\s+)?"
    r"(?:the\s+)?(?:evaluat\w*|validat\w*|eval)\b[^\n]{0,80}?\b" + _OOM + r"\b"
)


def stated_eval_fails_training_fits(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """Training is said to fit and the evaluation to fail: what the evaluation loop keeps.

    Mechanism. A training step holds more than an evaluation step of the same batch: the
    forward's activations kept for backward, the gradients and the optimizer's states. An
    evaluation that fails where training fits has therefore added memory that no single step
    explains: the evaluation loop keeps every batch's outputs on the device until it ends
    (``transformers.Trainer.evaluation_loop`` concatenates logits and labels on the GPU unless
    ``eval_accumulation_steps`` moves them to the CPU; ``predict_with_generate`` stores
    generated ids; Lightning collects validation outputs), which grows with the evaluation set:
    ``leak_or_accumulation`` at 0.4. The competing reading is a per-step working set that only
    evaluation has (beam search in ``generate``, an eval run without ``torch.no_grad()``),
    decided by *when* it fails: on the first evaluation batch (working set) or after many
    (accumulated outputs).
    """
    if not fallback(result) or result.cause in {"leak_or_accumulation", "host_ram"}:
        return None
    m = _EVAL_NOT_TRAIN.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="leak_or_accumulation",
        confidence=0.4,
        explanation=result.explanation + f" The text says training fits and the evaluation "
        f"fails ({m.group(0)[:120]!r}): a training step holds more than an evaluation step, so "
        "what the evaluation adds is what its loop keeps across batches (logits, predictions, "
        "generated ids gathered on the GPU). What would decide: whether it fails on the first "
        "evaluation batch (a per-step working set: beam search, no torch.no_grad()) or after "
        "many (accumulated outputs).",
        fixes=(
            generic(
                "Move evaluation outputs off the GPU as they are produced",
                "the evaluation loop keeps every batch's outputs on the device until it ends.",
                (
                    "TrainingArguments(eval_accumulation_steps=8)",
                    "preds.append(logits.detach().cpu())",
                    "with torch.no_grad(): ...",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# a configured cap named as what failed: a workspace the text says to enlarge ("can be fixed by
# increase trt_max_workspace_size", "try increasing the workspace size", "Increase the workspace
# buffer size"), or a preallocation fraction set to the whole device ("Setting the fraction to
# 100% can produce a RESOURCE_EXHAUSTED message during CUDA initialization")
_CONFIGURED_CAP = re.compile(
    r"(?i)\b(?:increas|rais|enlarg|bump)\w*\s+(?:the\s+)?[`'\"]?[\w.:-]*?workspace\w*"
    r"|\b(?:sett?(?:ing)?)\s+(?:the\s+)?(?:\w+\s+)?(?:memory\s+)?fraction\s+to\s+"
    r"(?:100\s?%|1(?:\.0+)?\b)"
)


def stated_configured_cap(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text names a configured cap as what failed: no memory cause, the setting.

    Mechanism. Some allocations are bounded by a setting, not by the device: TensorRT's builder
    tries each tactic within ``setMaxWorkspaceSize`` / ``trt_max_workspace_size`` and reports
    the ones that need more as "insufficient memory" (or "could not find any implementation"),
    FlashInfer plans into a fixed workspace buffer, and JAX preallocates
    ``XLA_PYTHON_CLIENT_MEM_FRACTION`` of the device at start-up, which at 100% asks for memory
    the CUDA context already holds. The failure then says nothing about weights, batch or
    cache filling the GPU: the cap is the lever (raise the workspace, lower the fraction), so
    the cause is ``unknown`` at 0.45 in this taxonomy, with the fact that decides: whether the
    device had free memory at the time (``oomkit gpus``).
    """
    settled_unknown = result.cause == "unknown" and not is_open(result)
    if not fallback(result) or result.cause == "host_ram" or settled_unknown:
        return None
    m = _CONFIGURED_CAP.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="unknown",
        confidence=0.45,
        explanation=result.explanation + f" The text names a configured cap ({m.group(0)!r}): "
        "a workspace or preallocation sized by a setting, not the device filling up, so no "
        "weight, batch or cache cause is read. What would decide: whether the device had free "
        "memory at the time (`oomkit gpus`); if so, the setting is the lever.",
        fixes=(
            generic(
                "Raise the workspace (or lower the preallocated fraction)",
                "the cap, not the device, refused the allocation.",
                (
                    "trt_max_workspace_size=<bytes>   # ONNX Runtime TensorRT EP",
                    "config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 4 << 30)",
                    "XLA_PYTHON_CLIENT_MEM_FRACTION=0.9",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,  # settled: the cap is the lever, no base-rate guess replaces it
    )
