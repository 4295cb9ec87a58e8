"""What the text says is still held when the allocation fails (doccause11, heldout21-23).

Three statements a pasted sentence or an issue title makes that the message format cannot:
outputs gathered on the device as a loop goes (``leak_or_accumulation``), an earlier model or
instance still resident when the next one loads (``other_process_holding_memory``, the taxonomy
settled in docs/doctor-causes.md section "Evidence around the message"), and a runtime that
sized its buffers for the model's whole context because no length was given
(``kv_cache_or_context``). Each rule states its mechanism; all three are prose rules, read on
the message's line (rules_evidence.EVIDENCE_RULES) and in the sentences around it
(rules_surroundings.PROSE_RULES), only where the runtime rule left the cause open.
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.rules_stated import fallback

__all__ = [
    "stated_context_too_large",
    "stated_context_unset",
    "stated_outputs_kept_on_device",
    "stated_resident_models",
]

_DEVICE = r"(?:the\s+)?(?:device|gpu|gpus|cuda|vram|accelerator|tpu)\b"
# Results gathered on the device: "aggregates predictions on GPU", "accumulates the full rollout
# trajectory on device (GPU) memory", "the embeddings aren't offloaded onto cpu", and the lever
# that bounds it, Trainer's ``eval_accumulation_steps`` ("Add `eval_accumulation_steps` fix the
# eval OOM problem"). Gradient accumulation (``gradient_accumulation_steps``,
# ``accumulate_grad_batches``) is a training technique that keeps nothing across steps and is not
# read: the thing gathered must be an output, prediction, embedding, logit or trajectory.
_OUTPUTS = (
    r"(?:predictions?|preds|outputs?|embeddings?|logits|results|hidden\s+states|trajector(?:y|ies)"
    r"|rollouts?|generations|features)"
)
_KEPT_ON_DEVICE = re.compile(
    r"(?i)\b(?:accumulat|aggregat|gather|concatenat|collect|stor|keep|kept|stack)\w*\s+"
    r"(?:(?:all|every|each|the|full|whole|entire)\s+){0,3}(?:[\w-]+\s+){0,2}?" + _OUTPUTS + r"\b"
    r"[^.\n]{0,30}?\b(?:on|in)\s+(?:the\s+)?(?:device|gpu|cuda|vram)\b"
    r"|\b" + _OUTPUTS + r"\s+(?:are\s+|is\s+)?(?:still\s+)?(?:accumulated|aggregated|gathered"
    # doccause21: "saved" / "retained" / "held" say the same keeping ("all the predictions are
    # saved in GPU", heldout35)
    r"|kept|stored|concatenated|saved|retained|held)\s+(?:on|in)\s+" + _DEVICE + r""
    r"|\b" + _OUTPUTS + r"\s+(?:aren[’']t|are\s+not|is\s+not|isn[’']t|not)\s+(?:being\s+)?"
    r"(?:offloaded|moved|transferred|copied)\s+(?:on)?to\s+(?:the\s+)?(?:cpu|host)\b"
    r"|\beval_accumulation_steps\b"
)


def stated_outputs_kept_on_device(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """The text says a loop's outputs are gathered on the device: ``leak_or_accumulation``.

    Mechanism. An evaluation or inference loop needs the same memory for its last batch as for
    its first (weights plus one batch's activations), unless it keeps each batch's result on
    the device: transformers' ``Trainer.evaluation_loop`` concatenates every batch's logits and
    labels on the GPU (``nested_concat`` into ``preds_host``) and moves them to the CPU only
    every ``eval_accumulation_steps`` steps (never, when it is unset: the PR that added the
    option, huggingface/transformers#7767, names the OOM), sentence-transformers' ``encode``
    keeps the embeddings on the GPU unless ``convert_to_numpy``, an autoregressive rollout
    stacks every step's prediction. Memory then grows with the items processed, so the failure
    comes at a dataset or rollout size, whatever the batch. A text that states the gathering
    ("aggregates predictions on GPU", "the embeddings aren't offloaded onto cpu") or names the
    lever that bounds it (``eval_accumulation_steps``) decides at 0.45; gradient accumulation
    keeps nothing across steps and is not read.
    """
    if not fallback(result) or result.cause in {"leak_or_accumulation", "host_ram"}:
        return None
    m = _KEPT_ON_DEVICE.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="leak_or_accumulation",
        confidence=0.45,
        explanation=result.explanation + f" The text says the loop's results are gathered on "
        f"the device ({m.group(0).strip()!r}): every batch's outputs stay on the GPU until the "
        "loop ends, so memory grows with the items processed, not with the batch. What would "
        "decide: torch.cuda.memory_allocated() every N batches (rising while the batch is "
        "constant).",
        fixes=(
            generic(
                "Move each batch's outputs off the device as the loop goes",
                "gathered on the GPU, the results grow with the dataset; on the CPU they cost "
                "host RAM only.",
                (
                    "TrainingArguments(eval_accumulation_steps=32)",
                    "model.encode(texts, convert_to_numpy=True)",
                    "outputs.append(out.detach().cpu())",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# An earlier model (or another instance of the same server) still resident when the next loads:
# "both models could coexist in VRAM during the swap", "loading multiple resident models",
# "the previous model is still loaded", "without unloading the previous model", "第四个实例因显存
# 不够启动失败" (the fourth instance fails for lack of memory), "启动第二个副本" (starting the
# second replica). "Multiple models" alone (downloaded, tried, compared) is not a residency and
# is not read, nor a GPU "already loaded with models" beside a batch the text itself cuts.
_RESIDENT = re.compile(
    r"(?i)\b(?:both|the\s+two|two)\s+(?:\w+\s+)?(?:models|pipelines|checkpoints)\s+"
    r"(?:\w+\s+){0,2}?(?:co-?exist\w*|(?:stay|remain)\w*\s+(?:loaded|resident|in\s+(?:v?ram|memory))"
    r"|(?:are|were)\s+(?:both\s+)?(?:loaded|resident|kept)\s+(?:at\s+once|together|simultaneously"
    r"|in\s+(?:v?ram|memory)))"
    r"|\b(?:multiple|several|many|\d{1,2})\s+resident\s+models\b"
    r"|\b(?:the\s+)?(?:old|previous|prior|earlier|first|last)\s+(?:\w+\s+)?(?:model|pipeline)\s+"
    r"(?:is\s+|was\s+|stays\s+|remains\s+)?still\s+(?:loaded|resident|in\s+(?:v?ram|memory)"
    r"|on\s+the\s+gpu|held)\b"
    r"|\bwithout\s+(?:first\s+)?(?:unloading|freeing|releasing|deleting|dropping|offloading)\s+"
    r"(?:the\s+)?(?:old|previous|prior|earlier|first|last|current)\s+(?:\w+\s+)?(?:model|pipeline)s?\b"
    r"|(?:顺序|依次|先后)?(?:启动|加载|部署)(?:了)?多个[^。\n]{0,20}?第[二三四五六七八九十\d]+个"
    r"(?:实例|副本|模型)"
    r"|第[二三四五六七八九十\d]+个(?:实例|副本|模型)[^。\n]{0,12}?(?:显存|内存)(?:不够|不足)"
)

# an unload or switch that did not free the model: memory the program is done with that is not
# given back, growing with each switch ("changing models does not unload the previous one"):
# the taxonomy's leak_or_accumulation (docs/doctor-causes.md), left to the growth rules
_UNLOAD_FAILED = re.compile(
    r"(?i)\b(?:unload|switch|chang|swap|releas|free)\w*\b[^.\n]{0,40}?(?:\b(?:not|never|fails?"
    r"|failed)\b|n[’']t\b)"
    r"|(?:\b(?:not|never)|n[’']t)\s+(?:\w+\s+){0,2}?(?:unload|releas|free|give\s+back)\w*"
)


def stated_resident_models(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says an earlier model or instance is still resident: the holder is not this load.

    Mechanism. A server or app that swaps models loads the new one while the old one's
    weights, KV pool and CUDA/NPU context are still referenced (eullm before its fix: "both
    models could coexist in VRAM during the swap"; Lemonade keeping several llama.cpp models
    resident), and an engine started again beside the ones already running sizes its pool
    from what they left (vLLM-Ascend's fourth 0.6B instance on one 910B card, each instance
    reserving its ``gpu_memory_utilization`` share). The memory that is short is held by a
    *live* model the failing load does not need, in the same process or another: the
    taxonomy's ``other_process_holding_memory`` (docs/doctor-causes.md: resident, not
    leaked: nothing grows across repetitions, and unloading it is the fix), at 0.45, the
    deciding fact being what is resident before the load (``oomkit gpus``, the app's list of
    loaded models). An unload or switch said to have failed to free the model ("changing
    models does not unload the previous one") is memory the program is done with that is not
    given back: the growth rules read it, not this one.
    """
    if not fallback(result) or result.cause in {"other_process_holding_memory", "host_ram"}:
        return None
    m = _RESIDENT.search(e.text)
    if m is None or _UNLOAD_FAILED.search(e.text):
        return None
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.45,
        explanation=result.explanation + f" The text says an earlier model or instance is still "
        f"resident ({m.group(0).strip()!r}): its weights, cache and context hold the memory "
        "the new load needs; the new model alone may fit. What would decide: `oomkit gpus` (or "
        "the app's list of loaded models) just before the load, and whether the load succeeds "
        "with the others unloaded.",
        fixes=(
            generic(
                "Unload the previous model (or instance) before loading the next",
                "a model the new load does not need still holds its weights and cache.",
                (
                    "del pipe; gc.collect(); torch.cuda.empty_cache()   # before loading the next",
                    "ollama stop <model>   # or the app's 'unload' / keep-alive setting",
                    "--gpu-memory-utilization 0.3   # vLLM: each instance's share, summing to < 1",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# The context (KV) length left unset, so the runtime takes the model's trained maximum:
# "without explicitly specifying 'max_length' in search options", "when option `max_length` is
# not set" (onnxruntime-genai), "without setting num_ctx / n_ctx / max_model_len".
# ``max_new_tokens`` bounds only the generated tokens and is not read; a tokenizer's truncation
# length is ``max_length`` too, so the sentence must name the runtime's option (not a tokenizer).
_CTX_OPTION = (
    r"[`'\"]?(?:max_length|max_model_len|max_seq_len|num_ctx|n_ctx|ctx_size|context_length)[`'\"]?"
)
_CONTEXT_UNSET = re.compile(
    r"(?i)\b(?:without|not|never|no|forgot\w*\s+to|missed)\s+(?:explicitly\s+)?"
    r"(?:set|setting|specify|specifying|specified|passing|pass|giving)\s+(?:a\s+value\s+for\s+)?"
    r"(?:the\s+)?" + _CTX_OPTION + r"(?!\s+(?:for|of|in)\s+(?:the\s+)?tokeniz)"
    r"|\b(?:option\s+)?" + _CTX_OPTION + r"\s+(?:option\s+)?(?:is|was)\s+(?:not|never)\s+"
    r"(?:set|specified|given)\b"
)


def stated_context_unset(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says the context length was left unset: the runtime took the model's maximum.

    Mechanism. Runtimes that allocate the KV cache up front size it for the context they are
    given, and without one they use the model's trained maximum: onnxruntime-genai's
    ``max_length`` defaults to ``context_length`` from genai_config.json (131072 for the 128k
    Phi-3 models) and, with ``past_present_share_buffer`` (the default for its CUDA and DirectML
    models), allocates the past/present KV buffers for that length before the first token;
    llama.cpp's ``n_ctx`` 0 and vLLM's ``max_model_len`` default to the trained context too. A
    text that ties the failure to the option being unset states that the KV cache was sized
    for the whole trained context: ``kv_cache_or_context`` at 0.45, lever: set the length.
    """
    if not fallback(result) or result.cause == "kv_cache_or_context":
        return None
    m = _CONTEXT_UNSET.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.45,
        explanation=result.explanation + f" The text ties the failure to the context length "
        f"being unset ({m.group(0).strip()!r}): without it the runtime sizes the KV cache for "
        "the model's trained context (131072 tokens for a 128k model) before the first token. "
        "What would decide: whether it runs with the length set (e.g. 4096).",
        fixes=(
            generic(
                "Set the context length explicitly",
                "unset, the KV cache is allocated for the model's whole trained context.",
                (
                    "params.set_search_options(max_length=4096)   # onnxruntime-genai",
                    "--max-model-len 8192   # vLLM",
                    "-c 8192   # llama.cpp (num_ctx in Ollama)",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# The context itself said not to fit: oMLX's preflight guard ("Prefill context too large for
# available memory (preflight safety guard, kv_len=66461, ...)"), or a context-length threshold
# above which it fails ("The failure occurs at warmup stage when ISL > 32K"; ISL = input
# sequence length). A threshold below 8k tokens is an ordinary prompt and is not read.
_CONTEXT_TOO_LARGE = re.compile(
    r"(?i)\b(?:prefill|prompt|context|input)\s+(?:context\s+)?(?:is\s+)?too\s+(?:large|long|big)\s+"
    r"for\s+(?:the\s+)?(?:available|remaining|free)\s+memory\b"
    r"|\b(?:isl|input\s+(?:sequence\s+)?length|context(?:\s+length)?|sequence\s+length|seq_len"
    r"|prompt\s+length)\s*(?:>=?|exceeds?|exceeding|above|over|beyond|larger\s+than)\s*"
    r"(?P<k>\d{1,4})\s?k\b"
    # (doccause15) the context itself said to be too large ("Maybe the context was too large",
    # "the ctx size is way too big"), or the memory said to lack room for the KV cache ("loading
    # a model without enough headroom for the KV cache")
    r"|\b(?:context|ctx)(?:\s+(?:length|size|window))?\s+(?:was|is|were|being|gets?|got)\s+"
    r"(?:\w+\s+)?(?:too|very)\s+(?:large|long|big|high)\b"
    r"|\b(?:enough|no|insufficient)\s+(?:headroom|room|space|memory|vram|ram)\s+(?:left\s+)?for\s+"
    r"(?:the\s+)?kv[ _-]?cache\b"
)
#: thousand tokens: a threshold at or above this is a long context, not an ordinary prompt
_LONG_K = 8


def stated_context_too_large(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says the context is what does not fit: ``kv_cache_or_context``.

    Mechanism. The KV cache grows linearly with the tokens in context, and a prefill's working
    set with the tokens processed: oMLX's preflight guard predicts the peak of a request from
    its ``kv_len`` (the current footprint + the KV bytes for kv_len tokens + one prefill chunk)
    and refuses it when that passes its cap, telling the user to "Reduce context length";
    serving stacks that capture or warm up per sequence length fail only above some input
    length (Tenstorrent's warmup at ISL > 32K). A text that states the context as too large for
    the memory, or a context threshold of 8k tokens or more above which it fails, names the
    context as the cause: ``kv_cache_or_context`` at 0.45.
    """
    if not fallback(result) or result.cause in {"kv_cache_or_context", "host_ram"}:
        return None
    for m in _CONTEXT_TOO_LARGE.finditer(e.text):
        if m["k"] is not None and int(m["k"]) < _LONG_K:
            continue
        break
    else:
        return None
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.45,
        explanation=result.explanation + f" The text says the context is what does not fit "
        f"({m.group(0).strip()!r}): the KV cache (and a prefill's working set) grows with the "
        "tokens in context. What would decide: whether the same request passes with a shorter "
        "context.",
        fixes=(
            generic(
                "Use a shorter context",
                "the KV cache grows linearly with the tokens kept in context.",
                ("--max-model-len 16384", "-c 16384   # llama.cpp", "a shorter prompt"),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
