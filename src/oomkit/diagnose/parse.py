"""Dispatcher: run every runtime's parser over a log and merge what they found.

>>> log = parse_log("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
...                 "14.73 GiB total capacity; 13.67 GiB already allocated; 15.88 MiB free; "
...                 "13.72 GiB reserved in total by PyTorch)")
>>> [(e.runtime, e.format) for e in log.events]
[('pytorch', 'pytorch_old')]
>>> parse_log("nothing to see here").events
()
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from oomkit.diagnose.events import LogContext, OomEvent, ParsedLog
from oomkit.diagnose.normalize import (
    complete_cut_head,
    complete_cut_tail,
    loosen_layout,
    normalize_lines,
    normalize_text,
    unwrap_word_wrapped,
)
from oomkit.diagnose.parse_accel import parse_accel
from oomkit.diagnose.parse_apps import parse_apps
from oomkit.diagnose.parse_backends import parse_backends
from oomkit.diagnose.parse_diffusion import diffusion_stage_of
from oomkit.diagnose.parse_engines import parse_engines
from oomkit.diagnose.parse_extra import parse_extra, parse_generic
from oomkit.diagnose.parse_families import parse_families
from oomkit.diagnose.parse_frameworks import frameworks_ends
from oomkit.diagnose.parse_hosts import parse_hosts
from oomkit.diagnose.parse_legacy import parse_legacy
from oomkit.diagnose.parse_libs import parse_libs
from oomkit.diagnose.parse_limits import parse_limits
from oomkit.diagnose.parse_llamacpp import parse_llamacpp
from oomkit.diagnose.parse_llamacpp_fit import parse_llamacpp_fit
from oomkit.diagnose.parse_native_cuda import parse_native_cuda
from oomkit.diagnose.parse_ollama import parse_ollama
from oomkit.diagnose.parse_other import parse_other
from oomkit.diagnose.parse_preload import parse_preload
from oomkit.diagnose.parse_recognise import parse_recognise
from oomkit.diagnose.parse_shm import parse_shm
from oomkit.diagnose.parse_smi import parse_smi
from oomkit.diagnose.parse_torch import parse_torch
from oomkit.diagnose.parse_torch_frames import frames_of
from oomkit.diagnose.parse_vllm import parse_vllm
from oomkit.diagnose.parse_wordings_usage import parse_usage
from oomkit.diagnose.parse_wordings_warnings import parse_warnings
from oomkit.diagnose.text import Lines, split_lines

__all__ = ["PARSERS", "parse_log"]

Parser = Callable[[Lines], tuple[list[OomEvent], dict[str, Any]]]

#: Every runtime parser, in the order their facts are merged (later ones do not override).
PARSERS: tuple[Parser, ...] = (
    parse_torch,
    parse_llamacpp,
    parse_llamacpp_fit,
    parse_ollama,
    parse_vllm,
    parse_other,
    parse_extra,
    parse_families,
    parse_smi,
)

_MAX_EVENTS = 200
_HEAD_EVENTS = 50  # of them the first; the rest the last
_CONTEXT_FIELDS = frozenset(f.name for f in fields(LogContext))
_LIST_FIELDS = frozenset(
    {
        "buffers",
        "context_lines",
        "devices",
        "deepspeed_allocated_bytes",
        "smi_memory",
        "smi_processes",
    }
)
_RUNTIME_HINTS = (
    # systemd's journal prefixes every line of the Ollama service with ``ollama[PID]:``; the
    # runner's ggml lines under it are Ollama's, not a llama.cpp binary's (docrt23)
    ("ollama[", "ollama"),
    ("llama_model_loader", "llama.cpp"),
    ("load_tensors:", "llama.cpp"),
    ("llm_load_tensors", "llama.cpp"),
    ("ggml_", "llama.cpp"),
    ("level=INFO source=", "ollama"),
    ('msg="offload', "ollama"),
    ("vllm", "vllm"),
    ("vLLM", "vllm"),
    ("sglang", "sglang"),
    ("text_generation", "tgi"),
    ("Traceback (most recent call last)", "pytorch"),
)


def _merge_facts(all_facts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    flags: dict[str, Any] = {}
    for facts in all_facts:
        for key, value in facts.items():
            if key == "flags":
                flags.update(value)
                continue
            if key not in _CONTEXT_FIELDS or value is None:
                continue
            if key in _LIST_FIELDS:
                merged[key] = tuple(merged.get(key, ())) + tuple(value)
            elif key not in merged:
                merged[key] = value
    # values quoted from a command line count only when the runtime did not print its own
    for key, value in flags.items():
        if key in _CONTEXT_FIELDS and key not in merged:
            merged[key] = value
    return merged


#: what only a Windows log prints: a drive-letter path under a Windows folder (Ollama's
#: ``cmd="C:\\Users\\...\\ollama_llama_server.exe"``), an ``.exe``, llama.cpp's build line
#: ``build: 4520 (a1649cc1) with MSVC 19.42`` (common/build-info)
_WINDOWS = re.compile(
    r"(?<![\w])[A-Za-z]:\\{1,2}(?:Users|Program Files|ProgramData|Windows)\\|\.exe\b|with MSVC \d"
)


def _host_os(lines: Lines) -> str | None:
    """``windows`` when the head of the log shows it, else None (not stated)."""
    head = "\n".join(lines.text[:400])
    return "windows" if _WINDOWS.search(head) else None


def _hint(lines: Lines) -> str | None:
    head = "\n".join(lines.text[:400])
    for needle, runtime in _RUNTIME_HINTS:
        if needle in head:
            return runtime
    return None


def parse_log(text: str, *, normalized: bool = False) -> ParsedLog:
    """Parse any OOM message or log into events and context. Pure; never raises on text.

    Args:
        text: a pasted message or a whole log (any size; see ``oomkit.diagnose.text``).
        normalized: ``text`` already went through
            :func:`oomkit.diagnose.normalize.normalize_text` (not undone twice).

    Returns:
        The events in log order (at most 200: the first 50 and the last 150) and the merged
        context. An empty ``events`` tuple means no OOM was found. A word-wrapped paste in which
        nothing was found is read once more with the wrap undone
        (:func:`oomkit.diagnose.normalize.unwrap_word_wrapped`), and one cut inside its last OOM
        word once more with the word completed
        (:func:`oomkit.diagnose.normalize.complete_cut_tail`).
    """
    text = text if normalized else normalize_text(text)
    parsed = _parse(text)
    if not parsed.events:
        unwrapped = unwrap_word_wrapped(text)
        if unwrapped is not None:
            again = _parse(unwrapped)
            if again.events:
                return again
        completed = complete_cut_tail(text)
        if completed is not None:
            # a paste or title cut inside the OOM word ("ran out of memo")
            again = _parse(completed)
            if again.events:
                return again
        head = complete_cut_head(text)
        if head is not None:
            # a paste cut at its start inside the OOM word ("ut of memory")
            again = _parse(head)
            if again.events:
                return again
        for loose in loosen_layout(text):
            # aligned spacing, full-width letters, a hyphenated line break (normalize.py)
            again = _parse(loose)
            if again.events:
                return again
    return parsed


def _parse(text: str) -> ParsedLog:
    """One pass of :func:`parse_log` over normalized text."""
    lines = normalize_lines(split_lines(text))
    events: list[OomEvent] = []
    unbuilt = 0  # events counted but not built (the middle of a log: parse_frameworks)
    all_facts: list[dict[str, Any]] = []
    for parser in PARSERS:
        found, facts = parser(lines)
        events.extend(found)
        all_facts.append(facts)
    if not events:
        # native C++/CUDA libraries' check macros (Open3D, tiny-cuda-nn, cudaSafeCall, cutorch)
        events.extend(parse_native_cuda(lines))
    if not events:
        # runtimes' own few-number OOM wordings, only where no richer event was found
        events.extend(parse_recognise(lines))
    if not events:
        # OS / scheduler memory kills (jetsam, Android LMK, cgroup events, Ray), cache budgets
        events.extend(parse_hosts(lines))
    if not events:
        # other frameworks' own wordings (TensorRT, MXNet, MindSpore, ONNX Runtime CUDA, ...)
        found, unbuilt = frameworks_ends(lines, head=_HEAD_EVENTS, tail=_MAX_EVENTS - _HEAD_EVENTS)
        events.extend(found)
    if not events:
        # TensorRT's status-code errors, PowerInfer's VRAM-capacity assert (parse_engines)
        events.extend(parse_engines(lines))
    if not events:
        # loaders' and deployers' refusals before any allocation (parse_preload)
        events.extend(parse_preload(lines))
    if not events:
        # accelerators' status codes: Neuron NRT_RESOURCE, RKNN_ERR_MALLOC_FAIL (parse_accel)
        events.extend(parse_accel(lines))
    if not events:
        # GPU backends' one-line allocation failures (DirectML, ggml Vulkan)
        events.extend(parse_backends(lines))
    if not events:
        # libraries' and apps' own wordings (VideoHelperSuite, detectron2, Triton, ...)
        events.extend(parse_apps(lines))
    if not events:
        # GPU data libraries (faiss, XGBoost, CatBoost, RAPIDS), WebGL/Metal/GPT4All (parse_libs)
        events.extend(parse_libs(lines))
    if not events:
        # per-buffer limits (Metal, Vulkan, OpenCL, Intel XPU), TVM's paged KV cache, Paddle
        events.extend(parse_limits(lines))
    if not events:
        # NCCL's CUDACHECK "Cuda failure 2 'out of memory'", its calloc line (parse_nccl)
        from oomkit.diagnose.parse_nccl import parse_nccl

        events.extend(parse_nccl(lines))
    if not events:
        # a full /dev/shm: PyTorch's shared tensors, NCCL's segments (ENOSPC; parse_shm)
        events.extend(parse_shm(lines))
    if not events:
        # pre-2020 frameworks (Theano, darknet, Caffe2 checks), ENOMEM, tcmalloc (parse_legacy)
        events.extend(parse_legacy(lines))
    if not events:
        # GPU APIs' status lines: ncnn's vkAllocateMemory / vkQueueSubmit, Metal's debug layer
        from oomkit.diagnose.gpu_api_status import parse_gpu_api_status

        events.extend(parse_gpu_api_status(lines))
    if not events:
        # WebGPU / D3D12 device loss, OpenCL's CL_OUT_OF_RESOURCES, a wasm heap's Aborted(OOM)
        from oomkit.diagnose.stack_status import parse_stack_status

        events.extend(parse_stack_status(lines))
    if not events:
        # an obvious OOM that no runtime parser knows still gets a finding (issue 9)
        events.extend(parse_generic(lines))
    if not events:
        # runtimes' memory-pressure warnings pasted alone, ExLlamaV2's page shortfall
        events.extend(parse_warnings(lines))
    if not events:
        # MLC-LLM's memory plan (weights / KV cache / buffers) without a failure line
        from oomkit.diagnose.mlc_memory_plan import parse_mlc_memory_plan

        events.extend(parse_mlc_memory_plan(lines))
    if not events:
        # a memory-use or growth report without a failure line (parse_wordings_usage)
        events.extend(parse_usage(lines))
    events.sort(key=lambda e: e.line)
    notes: list[str] = []
    if len(events) + unbuilt > _MAX_EVENTS:
        left_out = len(events) + unbuilt - _MAX_EVENTS
        notes.append(f"{left_out} events in the middle of the log were left out")
        events = events[:_HEAD_EVENTS] + events[-(_MAX_EVENTS - _HEAD_EVENTS) :]
    if lines.skipped_chars:
        notes.append(
            f"log is large: {lines.skipped_chars} characters away from OOM keywords were skipped"
        )
    merged = _merge_facts(all_facts)
    if events and "frame_phase" not in merged:
        # the traceback places an OOM that the torch parser did not claim (issue 9: bare
        # fragments and other frameworks' messages under a Python traceback)
        merged.update(frames_of(lines))
    merged.update(diffusion_stage_of(lines, events))  # stable-diffusion.cpp's VAE decode
    if notes:
        merged["notes"] = tuple(notes)
    merged.setdefault("runtime_hint", _hint(lines))
    if events:
        merged.setdefault("host_os", _host_os(lines))
    return ParsedLog(events=tuple(events), context=LogContext(**merged))
