"""Which runtime a fix line is written for, and the same lever in another runtime's spelling.

The rules write one fix for every serving engine at once (``--enforce-eager   # vLLM`` next to
``--disable-cuda-graph   # SGLang``) or in transformers' terms (``max_cache_len=4096``). A log
shows one runtime; :func:`route_engine` keeps that runtime's lines, rewrites another runtime's
line where the log's runtime has the same lever (:data:`LEVERS`, the one table of spellings),
and drops the rest. Where a fix keeps no line it is dropped
(:func:`oomkit.diagnose.runtime_lines.route`); llama.cpp and Ollama have their own line-by-line
translation there (``-c`` <-> ``num_ctx``), whose spellings this table repeats for reference.

Sources of the spellings:

* vLLM ``vllm/engine/arg_utils.py`` (``EngineArgs``: ``--enforce-eager``, ``--max-num-seqs``,
  ``--max-num-batched-tokens``, ``--gpu-memory-utilization``, ``--max-model-len``,
  ``--tensor-parallel-size``, ``--kv-cache-dtype``).
* SGLang ``python/sglang/srt/server_args.py`` (``--disable-cuda-graph``,
  ``--cuda-graph-max-bs``, ``--chunked-prefill-size``, ``--max-running-requests``,
  ``--mem-fraction-static``, ``--context-length``, ``--tp``).
* text-generation-inference ``launcher/src/main.rs`` (``Args``: ``--max-batch-prefill-tokens``,
  ``--max-batch-total-tokens``, ``--max-total-tokens``, ``--max-input-tokens`` (``--max-input-
  length`` before 2.0), ``--cuda-memory-fraction``, ``--num-shard``); TGI sizes its KV blocks at
  warmup from the free memory x ``cuda_memory_fraction`` (``server/text_generation_server/
  models/flash_causal_lm.py`` ``warmup``), so a later step lives in what that leaves.
* TensorRT-LLM ``trtllm-serve`` (``--max_num_tokens``, ``--max_batch_size``, ``--max_seq_len``,
  ``--kv_cache_free_gpu_memory_fraction``, ``--tp_size``).
* ExLlamaV2 ``exllamav2/cache.py`` (``ExLlamaV2Cache(model, max_seq_len=...)``, by default the
  model config's ``max_seq_len``; ``ExLlamaV2Cache_8bit`` / ``ExLlamaV2Cache_Q4``) and
  ``exllamav2/model_init.py`` ``add_args`` (``-l/--length``, ``-gs/--gpu_split``).
* llama.cpp ``common/arg.cpp``; Ollama ``api/types.go`` / ``envconfig/config.go``
  (:mod:`oomkit.diagnose.runtime_lines`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic

__all__ = [
    "ENGINE_FAMILIES",
    "LEVERS",
    "cache_fixes",
    "engine_family",
    "headroom_fix",
    "line_family",
    "quoted_frame",
    "route_engine",
]

#: lever -> runtime -> the lines that pull it, in that runtime's spelling (one place). A line's
#: number is the table's example; a translated line takes the source line's number where the
#: lever's unit is the same in both runtimes (:data:`_SAME_UNIT`).
LEVERS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "skip_graphs": {
        "vllm": ("--enforce-eager",),
        "sglang": ("--disable-cuda-graph",),
    },
    "fewer_graphs": {
        "vllm": ("--max-num-seqs 64",),
        "sglang": ("--cuda-graph-max-bs 16",),
    },
    "batch_tokens": {
        "vllm": ("--max-num-batched-tokens 2048",),
        "sglang": ("--chunked-prefill-size 2048",),
        "tgi": ("--max-batch-prefill-tokens 2048",),
        "tensorrt-llm": ("--max_num_tokens 2048",),
        "llama.cpp": ("-ub 256",),
        "ollama": ("/set parameter num_batch 256",),
    },
    "concurrency": {
        "vllm": ("--max-num-seqs 64",),
        "sglang": ("--max-running-requests 32",),
        "tgi": ("--max-batch-total-tokens 16384",),
        "tensorrt-llm": ("--max_batch_size 8",),
        "llama.cpp": ("--parallel 1",),
        "ollama": ("OLLAMA_NUM_PARALLEL=1 ollama serve",),
    },
    "headroom": {
        "vllm": ("--gpu-memory-utilization 0.85",),
        "sglang": ("--mem-fraction-static 0.8",),
        "tgi": ("--cuda-memory-fraction 0.9",),
        "tensorrt-llm": ("--kv_cache_free_gpu_memory_fraction 0.8",),
    },
    "context": {
        "vllm": ("--max-model-len 8192",),
        "sglang": ("--context-length 8192",),
        "tgi": ("--max-total-tokens 8192", "--max-input-tokens <M>   # M < --max-total-tokens"),
        "tensorrt-llm": ("--max_seq_len 8192",),
        "exllamav2": (
            "ExLlamaV2Cache(model, max_seq_len=8192)",
            "-l 8192   # ExLlamaV2's scripts (model_init: -l/--length)",
        ),
        "llama.cpp": ("-c 8192",),
        "ollama": ("/set parameter num_ctx 8192",),
    },
    "kv_dtype": {
        "vllm": ("--kv-cache-dtype fp8",),
        "sglang": ("--kv-cache-dtype fp8_e5m2",),
        "exllamav2": ("ExLlamaV2Cache_Q4(model, max_seq_len=8192)",),
        "llama.cpp": ("-ctk q8_0 -ctv q8_0",),
        "ollama": ("OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve",),
    },
    "quantize": {
        "vllm": ("--quantization bitsandbytes",),
        "tgi": ("--quantize bitsandbytes-nf4",),
        "sglang": ("--quantization fp8",),
    },
    "shard": {
        "vllm": ("--tensor-parallel-size 2",),
        "sglang": ("--tp 2",),
        "tgi": ("--num-shard 2",),
        "tensorrt-llm": ("--tp_size 2",),
        "exllamav2": ("-gs 20,24   # ExLlamaV2's scripts: GB per GPU (model.load(gpu_split))",),
    },
}
#: levers whose number means the same in every runtime (tokens, a fraction, a GPU count)
_SAME_UNIT = frozenset({"context", "shard", "batch_tokens"})

#: the serving engines and libraries whose lines :func:`route_engine` rewrites
ENGINE_FAMILIES = frozenset({"vllm", "sglang", "tgi", "tensorrt-llm", "exllamav2"})

#: a line's trailing tag (``# vLLM V1 (0.8+)``) -> the runtime it names
_TAGS = (
    ("vllm", "vllm"),
    ("sglang", "sglang"),
    ("tgi", "tgi"),
    ("text-generation-inference", "tgi"),
    ("tensorrt", "tensorrt-llm"),
    ("trtllm", "tensorrt-llm"),
    ("transformers", "transformers"),
    ("exllamav2", "exllamav2"),
    ("llama.cpp", "llama.cpp"),
    ("ollama", "ollama"),
)
#: flags no table line spells but only one engine takes
_OWN_FLAGS = {
    "--compilation-config": "vllm",
    "--num-gpu-blocks-override": "vllm",
    "--max-num-seqs": "vllm",
    "--max-running-requests": "sglang",
    "--max-total-tokens": "tgi",
}
#: the words of a line only a transformers / plain PyTorch script reads (no server or ExLlamaV2
#: takes them)
_TRANSFORMERS = (
    "max_cache_len",
    "model.generate(",
    "gradient_checkpointing_enable",
    "torch.compile(",
    "from_pretrained(",
    "BitsAndBytesConfig",
    "torch.autocast",
    "load_in_4bit",
    "load_in_8bit",
    "device_map=",
)
#: a transformers line's lever (the rest have no twin in a server or ExLlamaV2)
_TRANSFORMERS_LEVER = (
    ("max_cache_len", "context"),
    ("load_in_4bit", "quantize"),
    ("load_in_8bit", "quantize"),
    ("device_map=", "shard"),
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
#: a line's value: a number or a placeholder (``<N>``)
_VALUE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])|<[^<>\s]{1,20}>")


def _first_flag(line: str) -> str | None:
    for word in line.split("#", 1)[0].split():
        if word.startswith("-"):
            return word.split("=", 1)[0]
    return None


def _flag_index() -> dict[str, tuple[str, str]]:
    """flag -> (runtime, lever), for the flags only one runtime spells that way."""
    seen: dict[str, set[tuple[str, str]]] = {}
    for lever, by_runtime in LEVERS.items():
        for runtime, lines in by_runtime.items():
            if runtime not in ENGINE_FAMILIES:
                continue
            for line in lines:
                flag = _first_flag(line)
                if flag is not None and flag.startswith("--"):
                    seen.setdefault(flag, set()).add((runtime, lever))
    out: dict[str, tuple[str, str]] = {}
    for flag, owners in seen.items():
        if len({r for r, _ in owners}) == 1:
            runtime, lever = sorted(owners)[0]
            out[flag] = (runtime, lever)
    return out


_FLAG_INDEX = _flag_index()


def _tag(line: str) -> str | None:
    if "#" not in line:
        return None
    comment = line.split("#", 1)[1].strip().lower()
    for word, runtime in _TAGS:
        if comment.startswith(word):
            return runtime
    return None


def line_family(line: str) -> str | None:
    """The runtime a fix line is written for (``vllm``, ``sglang``, ``tgi``,
    ``tensorrt-llm``, ``exllamav2``, ``transformers``), or ``None`` for a line any runtime's
    user can act on (a shell command, an environment variable, a generic setting).

    >>> line_family("--enforce-eager   # vLLM"), line_family("--mem-fraction-static 0.8")
    ('vllm', 'sglang')
    >>> line_family("max_cache_len=4096"), line_family("nvidia-smi"), line_family("-c 4096")
    ('transformers', None, None)
    """
    tagged = _tag(line)
    if tagged is not None:
        return tagged
    if line.startswith("/set parameter "):
        return "ollama"
    flag = _first_flag(line)
    if flag is not None and line.lstrip().startswith("-"):
        if flag in _FLAG_INDEX:
            return _FLAG_INDEX[flag][0]
        if flag in _OWN_FLAGS:
            return _OWN_FLAGS[flag]
    if any(w in line for w in _TRANSFORMERS):
        return "transformers"
    return None


def _lever(line: str, runtime: str) -> str | None:
    flag = _first_flag(line)
    if flag is None:
        return None
    for lever, by_runtime in LEVERS.items():
        if any(_first_flag(x) == flag for x in by_runtime.get(runtime, ())):
            return lever
    return None


def _translate(line: str, source: str, target: str) -> list[str]:
    """``line`` (``source``'s) in ``target``'s spelling, or [] where ``target`` has no such
    lever."""
    if source == "transformers":
        lever = next((lv for w, lv in _TRANSFORMERS_LEVER if w in line), None)
        if "torch_dtype" in line and "device_map" not in line:
            lever = None  # a dtype, not a split
    elif line.startswith("/set parameter "):
        name = line.split()[2] if len(line.split()) > 2 else ""
        lever = next(
            (
                lv
                for lv, by in LEVERS.items()
                if any(x.startswith(f"/set parameter {name} ") for x in by.get("ollama", ()))
            ),
            None,
        )
    else:
        lever = _lever(line, source)
    lines = LEVERS.get(lever or "", {}).get(target)
    if lever is None or not lines:
        return []
    number = _VALUE.search(line.split("#", 1)[0])
    if lever not in _SAME_UNIT or number is None:
        return list(lines)
    value = number.group(0)

    def put(x: str) -> str:
        code, sep, comment = x.partition("#")
        return _NUMBER.sub(value, code, count=1) + sep + comment

    return [put(x) for x in lines]


def engine_family(e: OomEvent | None, ctx: LogContext) -> str | None:
    """The serving engine or library whose spelling the log's fixes take (one of
    :data:`ENGINE_FAMILIES`), or ``None`` (a training run, llama.cpp, Ollama, any other).

    A failing frame inside ExLlamaV2 (``exllamav2/cache.py``: ``ExLlamaV2Cache(model)``) or its
    own events make it ExLlamaV2; a serving engine is the one
    :func:`oomkit.diagnose.engine_levers.serving_engine` reads (the frame's package, else the
    log's runtime, never under a training loop's frame).
    """
    from oomkit.diagnose.engine_levers import serving_engine

    frame = (ctx.frame_text or "").lower()
    if (e is not None and e.runtime == "exllamav2") or "exllamav2" in frame:
        return "exllamav2"
    if ctx.runtime_hint == "exllamav2" and ctx.frame_phase not in {"backward", "optimizer_step"}:
        return "exllamav2"
    if e is None:
        return None
    engine = serving_engine(e, ctx)
    return engine if engine in ENGINE_FAMILIES else None


def _translate_title(title: str, family: str) -> str:
    """A title naming another runtime's flag (``Skip CUDA-graph capture: --enforce-eager``) with
    the log's runtime's flag for the same lever."""
    if ": --" not in title:
        return title
    head, _, tail = title.partition(": ")
    source = line_family(tail)
    if source is None or source in (family, "transformers"):
        return title
    moved = _translate(tail, source, family)
    return f"{head}: {moved[0].split('   #', 1)[0]}" if moved else title


def _unique(lines: list[str]) -> list[str]:
    """``lines`` without a repeat of one command (``--enforce-eager   # vLLM`` and the
    ``--enforce-eager`` another runtime's line became)."""
    seen: set[str] = set()
    out: list[str] = []
    for line in lines:
        key = line.split("#", 1)[0].strip()
        if key not in seen:
            seen.add(key)
            out.append(line)
    return out


def route_engine(fix: Fix, family: str) -> Fix | None:
    """``fix`` in the terms of ``family`` (one of :data:`ENGINE_FAMILIES`): another runtime's
    line rewritten to ``family``'s spelling of the same lever or dropped; ``None`` where no line
    is left of a fix that had some."""
    lines: list[str] = []
    own = {c.split("#", 1)[0].strip() for c in fix.commands if line_family(c) == family}
    for c in fix.commands:
        source = line_family(c)
        if source is None or source == family:
            lines.append(c)
        else:
            # a rewritten line the fix already has in the log's runtime's own words goes
            lines += [
                x for x in _translate(c, source, family) if x.split("#", 1)[0].strip() not in own
            ]
    lines = _unique(lines)
    if fix.commands and not lines:
        return None
    title = _translate_title(fix.title, family)
    if lines == list(fix.commands) and title == fix.title:
        return fix
    return dataclasses.replace(fix, title=title, commands=tuple(lines))


def headroom_fix(engine: str | None) -> tuple[Fix, ...]:
    """Leave the engine more memory outside its KV pool, in its spelling, or ``()``.

    SGLang preallocates ``--mem-fraction-static`` of the card for weights + KV, TGI sizes its
    KV blocks at warmup from ``--cuda-memory-fraction`` of the free memory, TensorRT-LLM gives
    the KV cache ``--kv_cache_free_gpu_memory_fraction`` of what the weights leave: a step after
    that runs in the rest.
    """
    lines = LEVERS["headroom"].get(engine or "")
    if not lines or engine == "vllm":
        return ()
    return (
        generic(
            "Leave more memory outside the KV pool",
            "the engine sized its KV pool at start-up from a fraction of the card; a later step's "
            "activations, sampler and graphs run in what that fraction leaves.",
            lines,
        ),
    )


def cache_fixes(family: str) -> tuple[Fix, ...]:
    """A cache allocated for the model's whole context, in ``family``'s terms (ExLlamaV2: the
    cache is sized ``max_seq_len`` x ``batch_size`` at creation, ``exllamav2/cache.py``, by
    default the model config's ``max_seq_len``, e.g. 131072 for Llama 3.1), or ``()``."""
    if family != "exllamav2":
        return ()
    return (
        generic(
            "Allocate the cache for fewer tokens",
            "ExLlamaV2's cache is allocated at creation for max_seq_len tokens (by default the "
            "model's whole context) x batch_size.",
            LEVERS["context"]["exllamav2"],
        ),
        generic(
            "Quantize the cache (Q4: about a quarter of FP16's bytes)",
            "ExLlamaV2Cache_Q4 / ExLlamaV2Cache_8bit store keys and values in 4 / 8 bits.",
            LEVERS["kv_dtype"]["exllamav2"],
        ),
    )


#: where the quoted frame stops: the OOM message itself or a server's wrapper of it
_QUOTE_STOP = re.compile(r"error\b|out of memory|memory", re.IGNORECASE)


def quoted_frame(frame: str | None) -> str:
    """The failing frame or log line as quoted in an explanation: a line that carries the OOM
    message itself (TGI's ``GenerationError: Request failed during generation: Server error:
    CUDA out of memory. ...``) is cut before it, so the explanation does not repeat the raw
    message."""
    text = frame or ""
    parts = text.split(": ")
    kept = parts[:1] + [p for p in _leading(parts[1:])]
    return ": ".join(kept) if len(kept) < len(parts) else text


def _leading(parts: list[str]) -> list[str]:
    out: list[str] = []
    for p in parts:
        if _QUOTE_STOP.search(p):
            break
        out.append(p)
    return out
