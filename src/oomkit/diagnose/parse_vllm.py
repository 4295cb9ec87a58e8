"""Serving engines: vLLM (V0 and V1), SGLang, TGI, TensorRT-LLM (oom-messages.md §4-§6).

vLLM errors: V1 ``check_enough_kv_cache_memory`` (``vllm/v1/core/kv_cache_utils.py``, both the
``model's`` and older ``models's`` spelling), V0 ``raise_if_cache_size_invalid`` (``The model's max
seq len (X) is larger than the maximum number of tokens that can be stored in KV cache (Y)``), ``No
available memory for the cache blocks``, the startup guard ``Free memory on device (F/T GiB) on
startup is less than desired GPU memory utilization (U, X GiB)``, the sampler warm-up OOM, V0's
scheduler aborting when a preempted sequence group cannot be swapped out (``vllm/core/scheduler.py``
``_swap_out``: ``Aborted due to the lack of CPU swap space. Please increase the swap space to avoid
this error.``: the GPU KV blocks ran out, and so did the ``--swap-space`` GiB of CPU blocks that
preemption by swapping, used for beam search and n > 1, moves them to). Profiling
lines (V0 one-line and tabular forms, ``Memory profiling results: k=v``, V1 ``Available KV cache
memory``, ``GPU KV cache size: N tokens``, ``# GPU blocks``, ``Model loading took X GiB``); vLLM's
"GB" in "Loading model weights took X GB" is GiB (it divides by 2**30).
SGLang: ``Not enough memory. Please try to increase --mem-fraction-static.``, ``KV cache pool is
full``, ``avail mem=X GB`` (GiB). TGI: ``Not enough memory to handle N prefill tokens``.
TensorRT-LLM: ``[TensorRT-LLM][ERROR] ... out of memory``, ``Executor creation failed due to
insufficient GPU memory`` with its component breakdown.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_bytes, to_float, to_int
from oomkit.diagnose.text import Lines, needles_re, window

__all__ = ["parse_vllm"]

_F = r"-?\d{1,9}(?:\.\d{1,6})?"
# the "(" before the needed size is missing in some pastes, and terminal wraps split words
# ("KV cach" / "e is needed"): both are tolerated
# vLLM 0.8.x printed the unit as "GB" while dividing by 2**30 (kv_cache_utils
# `check_enough_kv_cache_memory`: "(2.00 GB KV cache is needed" for 32768 tokens of a 64-layer,
# 8-KV-head, 128-dim bf16 model at TP 4 = 2**31 bytes per GPU): both spellings are GiB. Newer
# releases shorten the tail to "Estimated maximum model length is N".
_V1_KV = re.compile(
    r"max seq len\s{0,2}\((?P<mml>\d{1,9})\),?\s{0,2}\(?(?P<need>"
    + _F
    + r") Gi?B KV[\w ]{0,14}? is needed, which is larger than the available"
    + r"\s{0,2}KV[\w ]{0,14}? memory \((?P<avail>"
    + _F
    + r") Gi?B\)\.?"
    r"(?:\s{0,2}(?:Based on the available memory,? the e|E)stimated maximum model length is "
    r"(?P<est>\d{1,9})\.?)?"
)
# quoted by hand, the message loses its capacity or gains a typo ("the maxinum number"): the
# wording around the numbers is what identifies it
_V0_KV = re.compile(
    r"max seq len \((?P<mml>\d{1,9})\) is larger than the max\w{0,4} number of tokens that can "
    r"be stored in KV cache(?: \((?P<cap>\d{1,12})\))?"
)
_V0_SWAP = re.compile(r"Aborted due to the lack of CPU swap space\b")
# vllm/v1/worker/utils.py request_memory prints "(%.2f/%.2f GiB)" and "(%.2f, %.2f GiB)"; a
# paste retyped or passed through a CJK input method loses the ASCII spaces around the brackets
# and numbers ("(0.75/14.57GiB) ... utilization(0.4,5.83GiB)"): the words decide, not the spaces
_STARTUP = re.compile(
    r"(?i:free) memory on device(?: (?P<dev>[^\s(]{1,20}))? ?\((?P<free>"
    + _F
    + r")/(?P<total>"
    + _F
    + r") ?GiB\) on startup is less than desired GPU memory utilization ?\((?P<util>"
    + _F
    + r"), ?(?P<want>"
    + _F
    + r") ?GiB\)"
)
# (docpost23, heldout46) the guard quoted with its numbers elided: "ValueError: Free memory on
# device ... less than desired" (the head and the tail of request_memory's message around an
# ellipsis; no numbers to read)
_STARTUP_ELIDED = re.compile(
    r"\b(?i:free) memory on device\b.{0,40}?(?:\.{3}|\u2026)\s{0,8}(?:on startup )?(?:is )?"
    r"less than desired\b"
)
_SAMPLER = re.compile(r"warming up sampler with (?P<n>\d{1,7}) dummy requests")
_PROF_V0 = re.compile(
    r"model weights take (?P<w>"
    + _F
    + r") ?GiB; non_torch_memory takes (?P<nt>"
    + _F
    + r") ?GiB; PyTorch activation peak memory takes (?P<act>"
    + _F
    + r") ?GiB; the rest of the "
    r"memory reserved for KV Cache is (?P<kv>" + _F + r") ?GiB"
)
_PROF_KV = re.compile(
    r"(?P<k>total_gpu_memory|gpu_memory_utilization|non_torch_memory|kv_cache_size|"
    r"model weights take|PyTorch activation peak memory|peak_torch_memory)(?: takes)?"
    r"(?:\s{0,12}=\s{0,4}|\s{1,12}\(?|\s{0,4}\()(?P<v>" + _F + r")"
)
_WEIGHTS = re.compile(
    r"(?:Loading model weights took|Model loading took) (?P<v>" + _F + r") ?(?P<u>GiB|GB)"
)
_AVAIL_KV = re.compile(r"Available KV cache memory: (?P<v>" + _F + r") GiB")
_KV_TOKENS = re.compile(r"GPU KV cache size: (?P<v>[\d,]{1,15}) tokens")
_BLOCKS = re.compile(r"# (?:GPU|cuda|CUDA) blocks: (?P<v>\d{1,10})")
_CONC = re.compile(
    r"Maximum concurrency for (?P<len>[\d,]{1,12}) tokens per request: (?P<x>" + _F + ")x"
)
_ARGS = re.compile(
    r"(?P<k>max_model_len|max_seq_len|tensor_parallel_size|gpu_memory_utilization|"
    r"--max-model-len|--tensor-parallel-size|-tp|--gpu-memory-utilization|mem_fraction_static|"
    r"max_num_batched_tokens|max_num_seqs|--max-num-batched-tokens|--max-num-seqs)"
    r"[= ](?P<v>" + _F + r")\b"
)
# the model a vLLM start-up log names: the api_server's ``args: Namespace(model='...', ...)``
# (argparse repr, 0.2-0.8), the engine's ``Initializing an LLM engine (v0.6.3.post1) with config:
# model='...'`` (V0 vllm/engine/llm_engine.py) / ``Initializing a V1 LLM engine (v0.8.5) with
# config: model='...'`` (vllm/v1/engine/core.py), and 0.9+'s ``non-default args: {'model_tag':
# '...', 'model': '...'}`` (vllm/entrypoints/utils.py log_non_default_args); not
# ``served_model_name=`` / ``tokenizer=``
_MODEL = re.compile(r"(?:(?<![\w'])model=|'model(?:_tag)?': )'(?P<v>[^'\s]{1,200})'")
_MODEL_LINES = ("Namespace(", "with config:", "non-default args:")
# which engine the log's release ran: the engine line says it; a bare API-server version only
# below 0.7 (V1 first shipped, opt-in, in 0.7.0) or from 0.11 (V0 removed)
_ENGINE = re.compile(r"Initializing an? (?P<v1>V1 )?LLM engine \(v(?P<ver>\d+\.\d+[\w.+-]{0,30})\)")
_SERVER_VER = re.compile(
    r"vLLM API server version v?(?P<ver>(?P<maj>\d+)\.(?P<min>\d+)[\w.+-]{0,30})"
)
# a traceback echoes the raising source line: `raise ValueError("No available memory for the
# cache blocks. "` (vllm/worker/worker.py raise_if_cache_size_invalid) is the message's code
# (the whole line is the statement: a paste flattened onto one line that goes on to the
# message itself is still the message)
_SOURCE_RAISE = re.compile(
    r"\s{0,40}raise \w{1,40}\(\s{0,4}[\"'][^\"']{0,200}[\"']\s{0,4}\)?\s{0,4}$"
)
_SGL_NOMEM = re.compile(
    r"Not enought? memory\. Please try to increase --mem-fraction-static\.?"
    r"(?: Current value: mem_fraction_static=(?P<mfs>" + _F + "))?"
)
_SGL_KV = re.compile(
    r"KV Cache is allocated\. #tokens: (?P<tok>\d{1,12}), K size: (?P<k>"
    + _F
    + r") GB, V size: (?P<v>"
    + _F
    + ") GB"
)
_TGI = re.compile(
    r"Not enough memory to handle (?P<n>\d{1,9}) (?P<what>prefill tokens|total tokens|tokens)"
)
_TRT_TOTAL = re.compile(r"Total GPU memory \(GiB\): (?P<v>" + _F + ")")
_TRT_FREE = re.compile(
    r"Free GPU memory before component creation attempt \(GiB\): (?P<v>" + _F + ")"
)
_TRT_COMP = re.compile(r"could not be created: (?P<c>[\w ]{1,40})")

_NEEDLES = (
    "max seq len",
    "cache blocks",
    "on startup is less than",
    "emory on device",
    "warming up sampler",
    "GiB",
    "GB",
    "blocks:",
    "concurrency",
    "max_model_len",
    "max_seq_len",
    "tensor_parallel_size",
    "gpu_memory_utilization",
    "--max-model-len",
    "-tp",
    "--tensor-parallel-size",
    "--gpu-memory-utilization",
    "mem_fraction_static",
    "max_num_batched_tokens",
    "max_num_seqs",
    "--max-num-batched-tokens",
    "--max-num-seqs",
    "Not enough memory",
    "Not enought memory",
    "KV cache pool is full",
    "lack of CPU swap space",
    "TensorRT-LLM",
    "insufficient GPU memory",
    "KV cache size",
    "model='",
    "'model",
    "LLM engine (v",
    "API server version",
)
_PREFILTER = needles_re(_NEEDLES)


def _vllm_event(kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime="vllm", kind=kind, format=fmt, line=n, text=text[:800], **kw)


def _profiling(line: str, facts: dict[str, Any]) -> None:
    m = _PROF_V0.search(line)
    if m is not None:
        facts["weights_bytes"] = to_bytes(m.group("w"), "GiB", "vllm")
        facts["non_torch_bytes"] = to_bytes(m.group("nt"), "GiB", "vllm")
        facts["activation_peak_bytes"] = to_bytes(m.group("act"), "GiB", "vllm")
        facts["kv_cache_bytes"] = to_bytes(m.group("kv"), "GiB", "vllm")
        return
    for m in _PROF_KV.finditer(line):
        k, v = m.group("k"), m.group("v")
        if k == "gpu_memory_utilization":
            facts["gpu_memory_utilization"] = to_float(v)
            continue
        key = {
            "total_gpu_memory": "total_gpu_memory_bytes",
            "non_torch_memory": "non_torch_bytes",
            "kv_cache_size": "kv_cache_bytes",
            "model weights take": "weights_bytes",
            "PyTorch activation peak memory": "activation_peak_bytes",
        }.get(k)
        if key is not None:
            facts[key] = to_bytes(v, "GiB", "vllm")


def _engine(line: str, facts: dict[str, Any]) -> None:
    """The model and the engine generation (``V0``/``V1``) a vLLM start-up log names."""
    if any(k in line for k in _MODEL_LINES):
        m = _MODEL.search(line)
        if m is not None:
            facts.setdefault("model_name", m.group("v"))
    m = _ENGINE.search(line)
    if m is not None:
        facts["vllm_engine"] = "V1" if m.group("v1") else "V0"
        facts["vllm_version"] = m.group("ver")
        return
    s = _SERVER_VER.search(line)
    if s is not None:
        facts.setdefault("vllm_version", s.group("ver"))
        minor = (int(s.group("maj")), int(s.group("min")))
        if minor < (0, 7) or minor >= (0, 11):
            facts.setdefault("vllm_engine", "V0" if minor < (0, 7) else "V1")


def _context(line: str, facts: dict[str, Any]) -> None:
    if "model" in line or "version" in line:
        _engine(line, facts)
    if "GiB" in line or "GB" in line:
        _profiling(line, facts)
        m = _WEIGHTS.search(line)
        if m is not None:
            facts["weights_bytes"] = to_bytes(m.group("v"), m.group("u"), "vllm")
        m = _AVAIL_KV.search(line)
        if m is not None:
            facts["kv_cache_bytes"] = to_bytes(m.group("v"), "GiB", "vllm")
        m = _SGL_KV.search(line)
        if m is not None:
            facts["kv_cache_tokens"] = to_int(m.group("tok"))
            kb = to_bytes(m.group("k"), "GB", "sglang")
            vb = to_bytes(m.group("v"), "GB", "sglang")
            if kb is not None and vb is not None:
                facts["kv_cache_bytes"] = kb + vb
    if "KV cache size" in line:
        m = _KV_TOKENS.search(line)
        if m is not None:
            facts["kv_cache_tokens"] = to_int(m.group("v"))
    if "blocks:" in line:
        m = _BLOCKS.search(line)
        if m is not None:
            facts["num_gpu_blocks"] = int(m.group("v"))
    if "concurrency" in line:
        m = _CONC.search(line)
        if m is not None:
            facts["max_concurrency"] = to_float(m.group("x"))
            facts.setdefault("max_model_len", to_int(m.group("len")))
    for m in _ARGS.finditer(line):
        k, v = m.group("k"), m.group("v")
        if k in {"max_model_len", "max_seq_len", "--max-model-len"}:
            facts["max_model_len"] = to_int(v)
        elif k in {"tensor_parallel_size", "--tensor-parallel-size", "-tp"}:
            facts["tensor_parallel_size"] = to_int(v)
        elif k == "mem_fraction_static":
            facts["mem_fraction_static"] = to_float(v)
        elif k in {"max_num_batched_tokens", "--max-num-batched-tokens"}:
            # the engine's stated batch ("Chunked prefill is enabled with
            # max_num_batched_tokens=2048.", vllm/config.py SchedulerConfig) sizes its fixes
            facts["max_num_batched_tokens"] = to_int(v)
        elif k in {"max_num_seqs", "--max-num-seqs"}:
            facts["max_num_seqs"] = to_int(v)
        else:
            facts["gpu_memory_utilization"] = to_float(v)


def _event_at(lines: Lines, i: int, line: str) -> OomEvent | None:
    n = lines.number[i]
    if "max seq len" in line:
        w = window(lines, i, max_lines=4, stop=("engine", "details"))
        m = _V1_KV.search(w)
        if m is not None:
            est = m.group("est")
            need = to_bytes(m.group("need"), "GiB", "vllm")
            avail = to_bytes(m.group("avail"), "GiB", "vllm")
            return _vllm_event(
                "kv_capacity",
                "vllm_v1_kv_capacity",
                w,
                n,
                max_model_len=int(m.group("mml")),
                needed_kv_bytes=need,
                available_kv_bytes=avail,
                estimated_max_model_len=int(est) if est else None,
                stage="startup",
                inconsistent=f"{m.group('need')} GiB of KV cache needed is less than the "
                f"{m.group('avail')} GiB available (vLLM raises this only when it is larger)"
                if need is not None and avail is not None and need < avail
                else None,
            )
        m2 = _V0_KV.search(w)
        if m2 is not None:
            return _vllm_event(
                "kv_capacity",
                "vllm_kv_capacity",
                w,
                n,
                max_model_len=int(m2.group("mml")),
                kv_capacity_tokens=int(m2.group("cap")) if m2.group("cap") else None,
                stage="startup",
                # _verify_args / check_enough_kv_cache_memory raise only when max_model_len is
                # larger than the KV cache's tokens
                inconsistent=f"max seq len {m2.group('mml')} is not larger than the "
                f"{m2.group('cap')} tokens the KV cache holds (vLLM raises this only when it is)"
                if m2.group("cap") and int(m2.group("mml")) <= int(m2.group("cap"))
                else None,
            )
    # vllm/worker/worker.py raise_if_cache_size_invalid (and V1 kv_cache_utils): "No available
    # memory for the cache blocks. Try increasing `gpu_memory_utilization` ..."; pastes and
    # wrappers re-case it, so the test ignores case
    if (
        "cache blocks" in line
        and "no available memory for the cache blocks" in line.lower()
        and _SOURCE_RAISE.match(line) is None  # the traceback's source line, not a message
    ):
        return _vllm_event("no_kv_blocks", "vllm_no_cache_blocks", line, n, stage="startup")
    if "on startup is less than" in line:
        m3 = _STARTUP.search(window(lines, i, max_lines=2))
        if m3 is not None:
            return _vllm_event(
                "startup_free_memory",
                "vllm_startup_free_memory",
                m3.group(0),
                n,
                free_bytes=to_bytes(m3.group("free"), "GiB", "vllm"),
                total_bytes=to_bytes(m3.group("total"), "GiB", "vllm"),
                requested_bytes=to_bytes(m3.group("want"), "GiB", "vllm"),
                gpu_memory_utilization=to_float(m3.group("util")),
                stage="startup",
            )
    if "emory on device" in line:
        m3e = _STARTUP_ELIDED.search(window(lines, i, max_lines=2))
        if m3e is not None:
            return _vllm_event(
                "startup_free_memory", "vllm_startup_free_memory", m3e.group(0), n, stage="startup"
            )
    if "warming up sampler" in line:
        m4 = _SAMPLER.search(line)
        if m4 is not None:
            return _vllm_event("sampler_warmup_oom", "vllm_sampler_warmup", line, n, stage="warmup")
    if "Not enough memory" in line or "Not enought memory" in line:
        m5 = _SGL_NOMEM.search(line)
        if m5 is not None:
            mfs = m5.group("mfs")
            return OomEvent(
                runtime="sglang",
                kind="no_kv_pool",
                format="sglang_not_enough_memory",
                line=n,
                text=line[:600],
                mem_fraction_static=to_float(mfs) if mfs else None,
                stage="startup",
            )
        m6 = _TGI.search(line)
        if m6 is not None:
            return OomEvent(
                runtime="tgi",
                kind="warmup_oom",
                format="tgi_warmup_prefill",
                line=n,
                text=line[:600],
                prefill_tokens=int(m6.group("n")) if m6.group("what") != "total tokens" else None,
                detail=f"{m6.group('n')} {m6.group('what')}",
                stage="warmup",
            )
    if "KV cache pool is full" in line:
        return OomEvent(
            runtime="sglang",
            kind="kv_pool_full",
            format="sglang_kv_pool_full",
            line=n,
            text=line[:600],
            stage="runtime",
        )
    if "lack of CPU swap space" in line and _V0_SWAP.search(line) is not None:
        return _vllm_event("kv_swap_exhausted", "vllm_v0_swap_space", line, n, stage="runtime")
    if "TensorRT-LLM" in line and "out of memory" in line and "[ERROR]" in line:
        return OomEvent(
            runtime="tensorrt-llm",
            kind="cuda_oom",
            format="trtllm_runtime_oom",
            line=n,
            text=line[:600],
        )
    if "insufficient GPU memory" in line and "Executor creation failed" in line:
        w = window(lines, i, max_lines=8)
        t, f, c = _TRT_TOTAL.search(w), _TRT_FREE.search(w), _TRT_COMP.search(w)
        return OomEvent(
            runtime="tensorrt-llm",
            kind="executor_oom",
            format="trtllm_executor_creation",
            line=n,
            text=w[:800],
            total_bytes=to_bytes(t.group("v"), "GiB", "tensorrt-llm") if t else None,
            free_bytes=to_bytes(f.group("v"), "GiB", "tensorrt-llm") if f else None,
            stage=("kv_cache" if c and "KV" in c.group("c") else c.group("c").strip())
            if c
            else "startup",
        )
    return None


def parse_vllm(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find vLLM / SGLang / TGI / TensorRT-LLM OOM errors and memory-profiling context.

    Returns:
        Events and context facts (``weights_bytes``, ``kv_cache_bytes`` — possibly negative —
        ``gpu_memory_utilization``, ``max_model_len``...). Never raises on arbitrary text.
    """
    events: list[OomEvent] = []
    facts: dict[str, Any] = {}
    for i in admitted(lines, _PREFILTER):
        line = lines.cleaned(i)
        ev = _event_at(lines, i, line)
        if ev is not None:
            events.append(ev)
            continue
        _context(line, facts)
        kv, blocks = facts.get("kv_cache_bytes"), facts.get("num_gpu_blocks")
        # v1/core/kv_cache_utils.py check_enough_kv_cache_memory raises "No available memory for
        # the cache blocks" when available_memory <= 0: a profile that printed 0.0 GiB is it too
        if ((kv is not None and kv <= 0) or blocks == 0) and not any(
            e.kind == "no_kv_blocks" for e in events
        ):
            events.append(
                _vllm_event(
                    "no_kv_blocks",
                    "vllm_profile_negative_kv",
                    line,
                    lines.number[i],
                    available_kv_bytes=kv,
                    stage="startup",
                )
            )
    return events, facts
