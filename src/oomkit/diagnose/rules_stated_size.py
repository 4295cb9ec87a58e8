"""Prose that states the model's size and the card's: the weights' own bytes against the card.

A companion of :mod:`oomkit.diagnose.rules_stated_alloc` (doccause9, written after studying the
retired parts heldout19 and heldout20): a title or a sentence such as "Tried the v2 chat.py with
the 14B model but still got OOM for the 24GB graphics memory" or "The I2V 14B model is too large
and caused a memory overflow issue on my GPU (24GB)" states two numbers a numberless message
lacks. Their product decides without any guess: the weights alone need parameters x bytes per
parameter, and when that exceeds the one card named, nothing but a smaller, more quantized or
offloaded model can fit. Read only where the runtime rule left the cause open
(:func:`oomkit.diagnose.rules_stated.fallback`), at 0.5 (arithmetic, not a reading of words).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.card_names import named_card
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback
from oomkit.units import GB, format_bytes, parse_size

__all__ = [
    "TRAINING_BYTES_PER_PARAM",
    "card_cannot_run",
    "stated_card_cannot_run",
    "stated_lora_fits_full_does_not",
    "stated_weights_exceed_card",
    "training_state_over_card",
    "weights_over_card",
]

# "14B model", "llava 34B", "Qwen-7B", "a 70b": billions of parameters. A mixture-of-experts
# name ("235B-A22B", "35B-A3B") or a file name ("wan21_14b_24gb.yaml") is not read: the
# lookarounds refuse a letter, digit, dot, dash or underscore on either side.
# (doccause19) a hyphen after a name's letters (or its version digit) is the model name's own
# ("vicuna-7b", "Qwen-7B", "llama-2-13b"): read; a range ("7-13B") is not, and the lookahead
# still refuses "235B-A22B" ("A22B" has a letter before it).
_PARAMS = re.compile(
    r"(?:(?<=[A-Za-z]-)|(?<=[A-Za-z]-\d-)|(?<![\w.-]))"
    r"(?P<p>\d{1,3}(?:\.\d{1,2})?)\s?[bB](?![\w-])"
)
# the card's memory, with a GPU word beside it: "24GB graphics memory", "my GPU (24GB)",
# "24G显存", "8GB VRAM"; system RAM ("64G ram") is not the card.
# (doccause15) or a data-centre / desktop GPU's model name right after the size: "40G A100",
# "80GB H100", "24GB 4090" (also run together as typed, "40GA100")
_GPU_MODEL = (
    r"(?:a100|h100|h800|a800|h200|v100|a6000|a40|l40s?|rtx\s*\d{4}|[2345]0[6-9]0(?:\s*ti)?)"
)
_CARD = re.compile(
    r"(?i)(?<![\w.])(?P<g>\d{1,3})\s?(?P<u>gb|gib|g)(?:\b(?:\s*\)?\s*(?:of\s+)?"
    r"(?:gpu|vram|graphics|video\s+memory|显存|顯存|card)|(?=\s*显存))"
    r"|\s?(?=" + _GPU_MODEL + r"\b))"
    r"|\b(?:gpu|vram|card|graphics\s+card)\s*\(\s*(?P<g2>\d{1,3})\s?(?P<u2>gb|gib|g)\s*\)"
)
# more than one card: the weights may be split, and the per-card share is not stated
_SEVERAL = re.compile(
    r"(?i)\b(?:\d{1,2}|two|four|eight|dual|multiple|several)\s*(?:x|\*|×)?\s*(?:rtx\s*)?"
    r"(?:a100|h100|a800|h800|4090|3090|v100|gpus|cards|张|卡)|\b\d{1,2}\s*(?:x|\*|×)\s*\w+"
    r"|多卡|\d\s*(?:张|块)"
    # a count before the card's size ("8 80 GB cards", "two 24GB GPUs"): the same several cards
    r"|\b(?:\d{1,2}|two|three|four|eight)\s+\d{1,3}\s?(?:gb|gib|g)\s+(?:\w+\s+)?(?:gpus|cards)\b"
)
# bytes per parameter of the stated precision; 16-bit (fp16/bf16) when none is stated, the
# default of every loader that reads a 16-bit checkpoint
_PRECISION: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"(?i)\b(?:fp32|float32|full\s+precision)\b"), 4.0),
    (re.compile(r"(?i)\b(?:int8|8[ -]?bit|fp8|q8(?:_0)?|w8a8)\b"), 1.0),
    (
        re.compile(
            r"(?i)\b(?:int4|4[ -]?bit|nf4|fp4|nvfp4|q4(?:_k(?:_m|_s)?|_0)?|awq|gptq|gguf|"
            r"exl2|bnb)\b"
        ),
        0.5,
    ),
)
_SPAN = 140  # characters: the size and the card in one sentence
# a sentence that says a model ran ("6GB VRAM running base 5B OK but OOM with 2B-fun") states a
# comparison (its loader offloaded it), not the size that failed: not read
# ("fine-tune" is not "fine": doccause15)
_RAN = re.compile(r"(?i)\b(?:ok|okay|works?|worked|working|fine(?![- ]?tun)|runs?\s+well)\b")


def _bytes_per_param(text: str) -> float:
    for pat, bpp in _PRECISION:
        if pat.search(text):
            return bpp
    return 2.0


# (doccause15) the model's size stated in bytes: "Medium model (~5.8 GB total) OOMs on 4 GB GPU"
_MODEL_BYTES = re.compile(
    r"(?i)\bmodels?\s*\(\s*~?\s*(?P<s>\d{1,3}(?:\.\d{1,2})?)\s?(?P<u>gb|gib|g)\b"
    r"|(?<![\w.])~?(?P<s2>\d{1,3}(?:\.\d{1,2})?)\s?(?P<u2>gb|gib|g)\s+(?:of\s+)?(?:weights|model)\b"
)
# full training said (not LoRA/QLoRA, not offloaded or sharded, not inference)
_TRAINING = re.compile(r"(?i)\b(?:train(?:ing)?|fine[- ]?tun\w*|finetun\w*|pre-?train\w*|sft)\b")
_NOT_FULL_TRAINING = re.compile(
    r"(?i)\b(?:q?lora|peft|adapters?|offload\w*|zero[- _]?3|fsdp|freez\w*|frozen|infer\w*"
    r"|generat\w*|serv\w*|quantiz\w*|int4|4[- ]?bit|8[- ]?bit)\b"
)
#: bytes per parameter of mixed-precision Adam training: fp16 weights and gradients (2 + 2),
#: fp32 master weights, momentum and variance (4 + 4 + 4) -- ZeRO (Rajbhandari et al., 2020),
#: section 3.1: "16Psi bytes" for a model of Psi parameters
TRAINING_BYTES_PER_PARAM = 16


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?。！？])\s+|\n", text)


def _card(sentence: str) -> tuple[int, int, int] | None:
    """``(card bytes, start, end)``: the card's memory as written ("24GB 4090", "my GPU
    (24GB)"), else a card model sold in one memory size ("on 4090": card_names), else
    ``None``."""
    c = _CARD.search(sentence)
    if c is not None:
        # as written, through units.py: "24GB" decimal, "24G" / "24GiB" binary
        return parse_size(f"{c['g'] or c['g2']}{c['u'] or c['u2']}"), c.start(), c.end()
    return named_card(sentence)


def weights_over_card(text: str) -> tuple[int, int, str] | None:
    """``(weight bytes, card bytes, quoted span)`` when one sentence states a model's size (in
    parameters, or in bytes) and one card's memory and the weights alone exceed it; else
    ``None`` (several cards named, no GPU word beside the memory, or the weights fit)."""
    for sentence in _sentences(text):
        if _SEVERAL.search(sentence) or _RAN.search(sentence):
            continue
        card = _card(sentence)
        if card is None:
            continue
        card_bytes, c_start, c_end = card
        p = _PARAMS.search(sentence)
        if p is not None and abs(p.start() - c_start) <= _SPAN:
            weight_bytes = int(float(p["p"]) * _bytes_per_param(sentence) * GB)
            start, end = p.start(), p.end()
        else:
            b = next((m for m in _MODEL_BYTES.finditer(sentence) if m.end() <= c_start), None)
            if b is None or c_start - b.start() > _SPAN:
                continue
            weight_bytes = parse_size(f"{b['s'] or b['s2']}{b['u'] or b['u2']}")
            start, end = b.start(), b.end()
        if weight_bytes > card_bytes:
            lo, hi = min(start, c_start), max(end, c_end)
            return weight_bytes, card_bytes, sentence[lo:hi]
    return None


def training_state_over_card(text: str) -> tuple[int, int, str] | None:
    """``(training-state bytes, card bytes, quoted span)`` when one sentence says a model of a
    stated size is fully trained on one card whose memory is below parameters x
    :data:`TRAINING_BYTES_PER_PARAM`; else ``None`` (LoRA, offload, sharding, inference or a
    precision named, several cards, or it fits)."""
    for sentence in _sentences(text):
        if (
            _SEVERAL.search(sentence)
            or _RAN.search(sentence)
            or not _TRAINING.search(sentence)
            or _NOT_FULL_TRAINING.search(sentence)
        ):
            continue
        p = _PARAMS.search(sentence)
        card = _card(sentence)
        if p is None or card is None or abs(p.start() - card[1]) > _SPAN:
            continue
        card_bytes, c_start, c_end = card
        state_bytes = int(float(p["p"]) * TRAINING_BYTES_PER_PARAM * GB)
        if state_bytes > card_bytes:
            lo, hi = min(p.start(), c_start), max(p.end(), c_end)
            return state_bytes, card_bytes, sentence[lo:hi]
    return None


def stated_weights_exceed_card(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text's model size times its precision exceeds the one card it names.

    Mechanism. Every loader places the weights before the first step and keeps them resident:
    parameters x bytes per parameter (2 for the fp16/bf16 checkpoints loaders read by default,
    1 for 8-bit, 0.5 for 4-bit, 4 for fp32) is the least the card must hold before any batch,
    cache or context. A 14B model in 16 bit is 28 GB; on a 24 GB card it fails whatever the
    batch, so the levers are a smaller, more quantized or offloaded model. Several cards named
    ("8 A100s", "7块4090") are not read: the weights may be split across them.
    """
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    found = weights_over_card(e.text)
    if found is None:
        return _training_state_exceeds_card(result, e)
    weight_bytes, card_bytes, quote = found
    return Analysis(
        cause="model_too_large",
        confidence=0.5,
        explanation=result.explanation + f" The text states the model and the card "
        f"({quote!r}): the weights alone are about {format_bytes(weight_bytes)}, more than the "
        f"card's {format_bytes(card_bytes)}, before any activation or cache. What would decide: "
        "whether a 4-bit quantization of it (a quarter of the 16-bit bytes) loads.",
        fixes=(
            generic(
                "Quantize, offload or shrink the model",
                "the 16-bit weights alone exceed the card.",
                (
                    "a 4-bit quantization of the same model",
                    'device_map="auto", max_memory={0: "20GiB", "cpu": "64GiB"}',
                    "the next smaller model size",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def _training_state_exceeds_card(result: Analysis, e: OomEvent) -> Analysis | None:
    """Full training of a stated model size on one card smaller than its training state.

    Mechanism. Training with Adam in mixed precision keeps, for every parameter, the 16-bit
    weight and gradient and the fp32 master weight, momentum and variance: 16 bytes per
    parameter (ZeRO, Rajbhandari et al. 2020, section 3.1), resident from the first optimizer
    step and independent of the batch. "Train the 7B model on a 40G A100" needs about 112 GB of
    training state before any activation, so only sharding (ZeRO-3/FSDP over several cards),
    offloading the optimizer states, or LoRA/QLoRA make it fit: ``model_too_large`` at 0.45
    (below the 16-bit weights' own arithmetic: 8-bit optimizers and other precisions lower the
    figure). A sentence that names LoRA, offload, sharding, a precision or inference is not read.
    """
    found = training_state_over_card(e.text)
    if found is None:
        return None
    state_bytes, card_bytes, quote = found
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + f" The text states full training of the model on one "
        f"card ({quote!r}): mixed-precision Adam keeps about 16 bytes per parameter (weights, "
        f"gradients, fp32 master copy and two moments), about {format_bytes(state_bytes)}, "
        f"more than the card's {format_bytes(card_bytes)}, whatever the batch. What would "
        "decide: whether it fits with LoRA, or with ZeRO-3 and the optimizer states offloaded.",
        fixes=(
            generic(
                "Shard or offload the training state, or train adapters only",
                "16 bytes per parameter do not shrink with the batch.",
                (
                    "LoRA / QLoRA instead of full fine-tuning",
                    'deepspeed ZeRO-3 with "offload_optimizer": {"device": "cpu"}',
                    "bitsandbytes 8-bit Adam (optim=adamw_bnb_8bit)",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# LoRA said to run and full fine-tuning said to fail, in that order in one sentence: "lora method
# works on 1 gpu, but full parameter fine-tuning encountered OOM on 8*A100"
_LORA_NOT_FULL = re.compile(
    r"(?i)\b(?:q?lora)\b[^.\n]{0,60}?\b(?:works?|worked|runs?|ran|fine|ok|fits?)\b[^.\n]{0,40}?"
    r"\bbut\b[^.\n]{0,20}?\bfull[- ]?(?:parameters?|params?|weights?)?\s*"
    r"(?:fine[- ]?tun\w*|finetun\w*|training|sft)\b[^.\n]{0,60}?\b(?:oom\w*|out[ -]of[ -]memory)\b"
)


def stated_lora_fits_full_does_not(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """The text says LoRA runs and full fine-tuning runs out of memory: ``model_too_large``.

    Mechanism. LoRA and full fine-tuning of one model run the same forward and backward over the
    same batch: the activations kept for backward are the same (the frozen base still passes
    its gradients through), and the adapters add well under 1% of the parameters. What full
    fine-tuning adds is a gradient and the optimizer's states for every parameter: with
    mixed-precision Adam about 12 bytes per parameter beyond the 16-bit weights (fp32 master
    copy and two moments), 6-8x the weights. A run that fits with LoRA and fails in full has
    shown that this resident training state, not the batch, overflows: the levers are ZeRO
    sharding or offload, or LoRA itself. Only that order is read ("full works but LoRA OOMs"
    says something else).
    """
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    m = _LORA_NOT_FULL.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        explanation=result.explanation + f" The text says LoRA runs and full fine-tuning does "
        f"not ({m.group(0)!r}): both keep the same activations, so what full fine-tuning adds -- "
        "a gradient and Adam's states for every parameter, about 12 bytes each beyond the 16-bit "
        "weights -- is what overflows. What would decide: whether it fits with ZeRO-3 and the "
        "optimizer states offloaded.",
        fixes=(
            generic(
                "Shard or offload the training state",
                "gradients and optimizer states of every parameter do not shrink with the batch.",
                (
                    "deepspeed ZeRO-3 (ds_z3_config.json)",
                    'ZeRO-3 with "offload_optimizer": {"device": "cpu"}',
                    "LoRA / QLoRA instead of full fine-tuning",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# (doccause18) "the card of N GB cannot run it": the poster's own statement that the job does
# not start on one card of a stated size. Chinese issue titles and bodies say it as the size,
# a GPU word and a "cannot get it running" verb ("12g的显存跑不起来", "L20卡 43g显存跑不了推理",
# "我的GPU只有8G是运行不了的"); English as the verb, then the card ("can't run it on my 8GB
# GPU"). The size must sit beside a GPU word: "16G内存的电脑" (a 16 GB computer, its RAM) is not
# the card.
def _size(n: int) -> str:
    """The card's size as written ("12g", "8 GB", "24GiB"), groups ``g<n>``/``u<n>``; a CJK
    character may touch it ("我12g的显存"), a letter or digit may not."""
    return rf"(?<![\d.A-Za-z])(?P<g{n}>\d{{1,3}}(?:\.\d)?)\s?(?P<u{n}>gb|gib|g)(?![a-z])"


_GPU_AFTER = r"\s*(?:的)?\s*(?:显存|顯存|显卡|顯卡|vram|gpu|graphics\s+card|video\s+card|card)"
_GPU_BEFORE = r"(?:gpu|显卡|顯卡|显存|顯存|vram|卡)\s*(?:只有|仅有|僅有|才|就)\s*"
_CANNOT_ZH = (
    r"(?:都|也|还是|還是)?(?:跑不起来|跑不起來|跑不起|跑不了|跑不动|跑不動|运行不了|運行不了"
    r"|运行不起来|运行不动|带不动|帶不動)"
)
_CANNOT_EN = (
    r"\b(?:can'?t|cannot|can\s+not|unable\s+to|not\s+able\s+to|won'?t|doesn'?t|does\s+not"
    r"|couldn'?t|could\s+not)\s+(?:even\s+)?(?:run|start|launch)\b"
)
_CARD_CANNOT_RUN = re.compile(
    r"(?i)(?:" + _GPU_BEFORE + _size(1) + r"|" + _size(2) + _GPU_AFTER + r")"
    r"[^，,。.!?！？\n]{0,8}?"
    + _CANNOT_ZH
    + r"|"
    + _CANNOT_EN
    + r"(?:\s+(?:it|this|that|them|the\s+(?:model|demo|app)|this\s+model))?"
    r"\s+(?:on|with)\s+(?:(?:my|a|an|one|single|the)\s+)?(?:[\w-]+\s+){0,2}?"
    + _size(3)
    + _GPU_AFTER
)

# the input's size or count named in the same sentence ("1024x1024", "batch size 8", "100
# frames"): then it is that input that does not run on the card, the batch's reading
_INPUT_NAMED = re.compile(
    r"(?i)\b\d{3,4}\s?[x×*]\s?\d{3,4}\b|\bbatch[ _-]?size\b|\bbs\s*="
    r"|\b\d+\s*(?:frames|images|steps)\b|分辨率|批次|帧"
)


#: traceback phases that run after the weights were placed (parse_torch_frames)
_PAST_PLACEMENT = frozenset({"forward", "backward", "generate", "serving_step"})


def card_cannot_run(text: str) -> tuple[int, str] | None:
    """``(card bytes, quoted words)`` when one sentence says the job cannot run on one card of a
    stated size; else ``None`` (several cards, an input's size named, no GPU word beside it)."""
    for sentence in _sentences(text):
        m = _CARD_CANNOT_RUN.search(sentence)
        if m is None or _SEVERAL.search(sentence) or _INPUT_NAMED.search(sentence):
            continue
        n = next(k for k in (1, 2, 3) if m[f"g{k}"] is not None)
        # as written, through units.py: "12GB" decimal, "12G" / "12GiB" binary
        return parse_size(f"{m[f'g{n}']}{m[f'u{n}']}"), m.group(0).strip()
    return None


def stated_card_cannot_run(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says the job cannot run at all on the one card it names: ``model_too_large``.

    Mechanism. A run places its resident part first -- the weights (and, training, gradients and
    optimizer states), plus the runtime's fixed overhead at its default settings -- and only then
    processes inputs. A poster who says the job "cannot run" on a card of N GB (no setting
    raised, no steps completed) reports that it fails at that first placement: what stays
    resident at the defaults exceeds the card, whatever the input. At 0.4, below the stated
    weights arithmetic (0.5): the model's size is not stated, and the competing reading -- the
    default batch or resolution's activations alone exceed the card -- is decided by whether it
    runs at batch 1 / the smallest input, or with the weights in 16 or fewer bits. Several cards,
    or an input size named in the sentence (a resolution, a batch size, a frame count), are not
    read; RAM ("16G内存的电脑") is not a card. Nor is it read over a traceback that places the
    failure in a forward/backward pass, a generate loop or a serving step: the weights were
    placed by then.
    """
    if not fallback(result) or result.cause in {"model_too_large", "host_ram"}:
        return None
    if ctx.frame_phase in _PAST_PLACEMENT:
        return None
    found = card_cannot_run(e.text)
    if found is None:
        return None
    card_bytes, quote = found
    return Analysis(
        cause="model_too_large",
        confidence=0.4,
        explanation=result.explanation + f" The text says the job cannot run on one card of "
        f"{format_bytes(card_bytes)} ({quote!r}): it fails when the resident part (the weights, "
        "the runtime's fixed buffers at their defaults) is placed, before any input counts. What "
        "would decide: whether it runs at batch 1 / the smallest input, or with the weights in "
        "16 or fewer bits (`oomkit estimate MODEL` for the weights against the card).",
        fixes=(
            generic(
                "Load the weights in fewer bits, or offload part of the model",
                "the resident part at the defaults exceeds the card.",
                (
                    "model.half()   # or torch_dtype=torch.float16 in from_pretrained",
                    "a 4-bit/8-bit quantization of the same model",
                    'device_map="auto", max_memory={0: "7GiB", "cpu": "32GiB"}',
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
