"""Prose that places the failure in host RAM without saying "RAM" (doccause15).

Two facts a sentence can state that put the memory that ran out in the machine's RAM, although
it names no host-memory word that :func:`oomkit.diagnose.rules_extra.names_host_memory` reads:

* a model **conversion or export** ran out ("the model conversion process consumes 282GB of
  memory", "the memory is used up by the converting process"): :func:`stated_conversion_on_host`;
* the machine has **unified memory** (Jetson, DGX Spark / GB10, Apple silicon Macs, Strix Halo),
  where the GPU's allocations are system RAM: :func:`stated_unified_memory`;
* (docpost18) a **pinned host** allocation or registration failed (``cudaHostRegister``,
  ``cudaHostAlloc``, Ascend's ``aclrtHostRegister``; "a single registration of 512 GiB fails
  with cudaErrorMemoryAllocation"): CUDA reports it with the device's enum, but the pages are
  the host's (``rules_extra.PINNED_HOST``): :func:`stated_pinned_host`.

Both apply only where the runtime rule left the cause open
(:func:`oomkit.diagnose.rules_stated.fallback`), after the prose rules that name an allocation
or a growth (a text that says the memory leaked, or names the KV cache, says more).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis, without_decider
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic
from oomkit.diagnose.priors import is_open
from oomkit.diagnose.rules_extra import PINNED_HOST, names_device_memory
from oomkit.diagnose.rules_stated import fallback

__all__ = ["stated_conversion_on_host", "stated_pinned_host", "stated_unified_memory"]

# what was converted must be a model ("model conversion", "converting the checkpoint", "export
# to ONNX", a converter script by name; "convertion", a common misspelling, too); converting an
# image or a video is not read
_MODEL_NOUN = (
    r"(?:model|checkpoint|weights?|state[_ ]dict|gguf|ggml|onnx|safetensors|tensorrt|trt|coreml"
    r"|core\s+ml|openvino|tflite|megatron|hf|\d{1,3}(?:\.\d)?\s?[bB])"
)
_CONVERSION = re.compile(
    r"(?i)\b" + _MODEL_NOUN + r"\s+(?:conversion|convertion|converter|export(?:er|ing)?)\b"
    r"|\b(?:conversion|convertion|converting|converter|exporting|export)\s+"
    r"(?:process|script|step|tool|job)\b"
    r"|\b(?:conver(?:t|ts|ted|ting|sion|tion)|export(?:s|ed|ing)?)\s+(?:of\s+)?(?:the\s+|a\s+|my\s+|this\s+)?"
    r"(?:[\w.-]+\s+){0,3}?" + _MODEL_NOUN + r"\b"
    r"|\b(?:conver(?:t|ts|ted|ting|sion|tion)|export(?:s|ed|ing)?)\b[^.\n]{0,30}?\bto\s+(?:gguf|ggml|onnx"
    r"|tensorrt|trt|coreml|core\s+ml|openvino|tflite|ct2|ctranslate2|safetensors|mlx)\b"
    r"|\bconvert[\w-]*\.py\b|\bconvert_(?:hf_to_gguf|checkpoint|llama\w*)\b"
    r"|\bct2-\w+-converter\b|\btorch\.onnx\.export\b|\boptimum-cli\s+export\b"
)


def stated_conversion_on_host(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text says a model conversion or export ran out of memory: ``host_ram``.

    Mechanism. Converters read the whole checkpoint into host memory and build the converted
    copy there before writing it: llama.cpp's ``convert_hf_to_gguf.py`` offers ``--use-temp-file``
    "(helpful when running out of memory, process killed)" and warns that ``--no-lazy`` "use[s]
    more RAM by computing all outputs before writing"; CTranslate2's converters load the model
    with transformers' ``from_pretrained`` (``--low_cpu_mem_usage`` exists because the default
    holds the model twice in CPU memory); ``torch.onnx.export`` traces the model and copies its
    parameters into the ONNX graph as initializers, so the exported copy sits beside the model
    in RAM. None of them allocates on the GPU unless told to, so a conversion that runs out of
    memory ran out of RAM: ``host_ram`` at 0.45, fixed by more RAM or swap, a lazy/streaming
    converter, or converting on a larger machine. A text that names a GPU ("CUDA OOM when
    exporting") is the device's and is not read; an image or video "conversion" is not a model's.
    """
    if not fallback(result) or result.cause in {"host_ram", "leak_or_accumulation"}:
        return None
    m = _CONVERSION.search(e.text)
    if m is None or names_device_memory(e.text):
        return None
    return Analysis(
        cause="host_ram",
        confidence=0.45,
        explanation=without_decider(result.explanation)
        + f" The text places the failure in a model conversion "
        f"or export ({m.group(0)!r}): converters load the whole checkpoint into host memory and "
        "build the converted copy beside it, on the CPU. What would decide: `free -h` during the "
        "conversion and `dmesg | grep -i oom` after it (the kernel's OOM killer).",
        fixes=(
            generic(
                "Give the conversion more RAM, or convert lazily",
                "the converter holds the checkpoint (and often its converted copy) in RAM.",
                (
                    "python convert_hf_to_gguf.py MODEL --use-temp-file   # llama.cpp",
                    "ct2-transformers-converter --low_cpu_mem_usage ...   # CTranslate2",
                    "sudo fallocate -l 64G /swapfile && sudo mkswap /swapfile && sudo swapon "
                    "/swapfile",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


# machines whose GPU has no memory of its own: NVIDIA Jetson and DGX Spark (GB10), Apple silicon
# Macs, AMD Strix Halo (Ryzen AI Max). Not the words "unified memory" alone: CUDA's Unified
# Memory (cudaMallocManaged, TF_FORCE_UNIFIED_MEMORY on AlphaFold's discrete GPUs) is a kind of
# allocation, not a machine without device memory.
_UNIFIED = re.compile(
    r"(?i)\bdgx[ -]?spark\b|\bgb10\b|\bjetson\b|\bstrix[ -]?halo\b"
    r"|\bryzen\s+ai\s+max\b|\bapple\s+silicon\b|\bmac\s?(?:book(?:\s+(?:pro|air))?|\s?mini|\s?studio)\b"
    r"|\bm[1-5]\s+(?:pro|max|ultra)\b"
    # docpost18 (heldout38): the machine's memory named as unified by a quantity or a pressure
    # ("available unified memory drops to ~14%", "unified-memory pressure on the head node",
    # "128 GB of unified memory"), not CUDA's managed allocations (_MANAGED below)
    r"|\b(?:available|free|total|system)\s+unified[ -]memory\b"
    r"|\bunified[ -]memory\s+(?:pressure|usage|use|drops?|is\s+full|ran\s+out|exhaust\w*)\b"
    r"|\b\d{2,3}\s?GB\s+(?:of\s+)?(?:LPDDR\w{0,3}\s+)?unified[ -]memory\b"
)
# CUDA's Unified Memory as a kind of allocation on a discrete GPU
_MANAGED = re.compile(r"(?i)cudaMallocManaged|FORCE_UNIFIED_MEMORY|managed\s+memory")


# the text names what grew with the input (a VAE decode, a long prefill, the KV cache, the batch):
# that working set is the lever even where it lives in RAM
_WORKING_SET = re.compile(
    r"(?i)\b(?:vae|decod\w*|prefill\w*|kv[ _-]?cache|context|batch\w*|resolution"
    r"|\d{1,4}\s?k[- ]tokens?)\b"
)


def stated_unified_memory(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """The text names a unified-memory machine: the GPU's memory is the system's RAM.

    Mechanism. On Jetson modules "the CPU and iGPU share the same physical memory" (NVIDIA's
    Jetson CUDA documentation, *CUDA for Tegra*: there is no separate device memory, cudaMalloc
    takes system DRAM); DGX Spark's GB10 shares its 128 GB of LPDDR5x between Grace CPU and
    Blackwell GPU; Apple silicon's GPU allocates from unified memory up to the wired limit
    (``iogpu.wired_limit_mb``); Strix Halo's GPU takes its carve-out and GTT from system RAM.
    What runs out there is the machine's RAM, shared with the OS, page cache and every other
    process, and the levers are the host's (close other programs, add swap, a smaller or more
    quantized model, raise the GPU's share of RAM on macOS): ``host_ram`` at 0.4, decided by
    ``free -h`` / Activity Monitor at the failure. Applied last among the prose rules, only to
    an open or ``unknown`` reading (a runtime rule's own guess stays), and not when the text names
    a working set that grows with the input (a VAE decode, a prefill, the KV cache or context,
    the batch): that is the lever even in RAM.
    """
    if not (is_open(result) or result.cause == "unknown"):
        return None  # a runtime rule's own reading (even a low one) is not replaced
    m = _UNIFIED.search(e.text)
    if m is None or _WORKING_SET.search(e.text) or _MANAGED.search(e.text):
        return None
    return Analysis(
        cause="host_ram",
        confidence=0.4,
        explanation=result.explanation + f" The text names a unified-memory machine "
        f"({m.group(0)!r}): its GPU has no memory of its own and allocates from the system's RAM, "
        "shared with the OS, the page cache and other programs. What would decide: `free -h` "
        "(Activity Monitor on a Mac) at the failure, and whether closing other programs lets it "
        "run.",
        fixes=(
            generic(
                "Free system RAM for the GPU",
                "on unified memory the GPU's allocations are the machine's RAM.",
                (
                    "close other programs and containers; add swap",
                    "a smaller or more quantized model",
                    "sudo sysctl iogpu.wired_limit_mb=<MiB>   # macOS: the GPU's share of RAM",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )


def stated_pinned_host(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A pinned (page-locked) host allocation or registration failed: ``host_ram``.

    Mechanism. ``cudaHostAlloc`` / ``cudaMallocHost`` allocate and ``cudaHostRegister`` locks
    host pages for DMA; a CPU KV-cache offload (vLLM's OffloadingConnector ``cpu_bytes_to_use``,
    LMCache's ``max_local_cpu_size``, one buffer per TP rank) pins its whole region at start-up.
    CUDA reports a failure there as ``cudaErrorMemoryAllocation``, the device's enum, but what
    ran out is the host's lockable RAM or the driver's per-call limit (vLLM PR #51081: register
    in chunks of at most 64 GiB). ``host_ram`` at 0.45; what would decide: whether a smaller
    offload region (or one registered in chunks) starts.
    """
    del ctx
    if not fallback(result) or result.cause == "host_ram":
        return None
    m = PINNED_HOST.search(e.text)
    if m is None:
        return None
    return Analysis(
        cause="host_ram",
        confidence=0.45,
        explanation=result.explanation + f" The text names a pinned host allocation "
        f"({m.group(0)!r}): those pages are the host's, locked for DMA, whatever CUDA's error "
        "enum says. What would decide: whether a smaller CPU offload region (or one registered "
        "in chunks) starts.",
        fixes=(
            generic(
                "Pin less host memory",
                "each engine (each TP rank) pins its own CPU offload region at start-up.",
                (
                    "vLLM OffloadingConnector: a smaller cpu_bytes_to_use",
                    "LMCache: max_local_cpu_size per engine x TP ranks under host RAM",
                    "vLLM: a smaller --swap-space",
                ),
            ),
            *result.fixes,
        ),
        open_question=False,
    )
