"""Browsers' WebGPU (Dawn) and Direct3D 12 status lines: WebLLM, transformers.js, ONNX Runtime
Web, DirectML (issue 9, heldout51).

Read only where no other parser found an event (``parse_log``'s fallback chain, before the
keyword fallback) and analysed here (``rules._analyze``). Most of these say that the **GPU
device was lost or removed**, which is not an allocation failure: the runtime never saw an
allocation fail, the driver (or the browser's GPU process) reset the device. Running out of
video memory is one trigger, a dispatch that outlives Windows' TDR watchdog (~2 s) or a driver
crash are others, so the cause is answered ``unknown`` (settled: a base rate must not turn a
reset into a guess at what filled the card) and the answer says what would tell them apart.
The one exception is a stack whose maintainers document device loss as its usual symptom of
exhausting video memory: WebLLM's own message (:func:`_webllm_lost`, docpost28).

* **WebLLM**: ``Device was lost. This can happen due to insufficient memory or other GPU
  constraints. Detailed error: ... Please try to reload WebLLM with a less resource-intensive
  model.`` (``mlc-ai/web-llm:src/engine.ts``, ``MLCEngine.reloadInternal``:
  ``gpuDetectOutput.device.lost.then(...)`` logs it when the ``GPUDevice.lost`` promise
  resolves) and ``DeviceLostError``'s ``Device was lost during reload. This can happen ...``.
* **Chromium's WebGPU queue**: ``Device lost during onSubmittedWorkDone (do not use this error
  for recovery - it is NOT guaranteed to happen on device loss)``
  (``third_party/blink/renderer/modules/webgpu/gpu_queue.cc``, ``GPUQueue::OnWorkDoneCallback``,
  ``wgpu::QueueWorkDoneStatus::DeviceLost``).
* **Dawn's wire client**: ``A valid external Instance reference no longer exists.``
  (``dawn/src/dawn/wire/client/Queue.cpp`` / ``Adapter.cpp``, ``CompleteImpl`` with
  ``EventCompletionType::Shutdown``): the connection to the GPU process shut down under a
  pending call (its ``InstanceDropped`` status), i.e. the GPU process or device went away.
* **DXGI device removal** (``winerror.h``): ``DXGI_ERROR_DEVICE_REMOVED`` ``0x887A0005``,
  ``DXGI_ERROR_DEVICE_HUNG`` ``0x887A0006``, ``DXGI_ERROR_DEVICE_RESET`` ``0x887A0007``, as
  Dawn's D3D12 backend prints them (``dawn/src/dawn/native/d3d/D3DError.cpp``,
  ``CheckHRESULTImpl``: ``... failed with DXGI_ERROR_DEVICE_REMOVED (0x887A0005)``) and as
  DirectML / ONNX Runtime's DML provider print the bare HRESULT (``887A0005``).
* **pytorch-directml's resource check**: ``CHECK failed: ... d3d_device->CreateCommittedResource(
  ...) >= 0`` (``pytorch-directml:caffe2/dml/dml_backend.cc``): D3D12 refused to create the
  committed resource (a buffer with its own heap) of one tensor. The HRESULT is not printed;
  ``CreateCommittedResource`` fails with ``E_OUTOFMEMORY`` when video memory cannot back it
  (the D3D12 ``ID3D12Device::CreateCommittedResource`` reference) and with
  ``DXGI_ERROR_DEVICE_REMOVED`` after a reset, so this one is an allocation failure whose
  reason stays open.
* **WebGPU's size conversion**: ``Failed to execute 'createBuffer' on 'GPUDevice': Failed to read
  the 'size' property from 'GPUBufferDescriptor': Value is outside the 'unsigned long long'
  value range.`` (WebIDL ``[EnforceRange] GPUSize64``, checked by the browser's bindings before
  any allocation): the size JavaScript passed was negative, NaN or above 2^53 -- a size computed
  wrong, never a lack of memory.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.scan import scan_events
from oomkit.diagnose.text import Lines, needles_re

__all__ = ["analyze_webgpu_status", "parse_webgpu_status"]

_PREFILTER = needles_re(
    (
        "Device was lost",
        "Device lost during onSubmittedWorkDone",
        "valid external Instance reference no longer exists",
        "DXGI_ERROR_DEVICE_",
        "887A000",
        "887a000",
        "CreateCommittedResource",
        "'unsigned long long' value range",
    )
)
# web-llm src/engine.ts: "Device was lost. This can happen due to insufficient memory or other
# GPU constraints."; error.ts DeviceLostError: "Device was lost during reload. This can ..."
_WEBLLM = re.compile(
    r"\bDevice was lost(?: during [a-z]{1,20})?\. This can happen due to insufficient memory"
)
_WORK_DONE = re.compile(r"\bDevice lost during onSubmittedWorkDone\b")
_INSTANCE = re.compile(r"\bA valid external Instance reference no longer exists\b")
# winerror.h: DXGI_ERROR_DEVICE_REMOVED 0x887A0005, _HUNG 0x887A0006, _RESET 0x887A0007; the
# bare code only as a whole hexadecimal word (an HRESULT printed without its 0x)
_DXGI = re.compile(
    r"\bDXGI_ERROR_DEVICE_(?P<name>REMOVED|HUNG|RESET)\b|"
    r"(?<![0-9A-Za-z])(?:0x)?887[Aa]000(?P<code>[567])(?![0-9A-Za-z])"
)
_DXGI_NAMES = {"5": "REMOVED", "6": "HUNG", "7": "RESET"}
# pytorch-directml caffe2/dml/dml_backend.cc: CHECK failed: ((((HRESULT)((d3d_device->
# CreateCommittedResource( ... ))) >= 0)) == (true)
_COMMITTED = re.compile(r"CHECK failed:.{0,80}?CreateCommittedResource\(")
_SIZE_RANGE = re.compile(
    r"Failed to read the 'size' property from '(?P<what>GPU\w{1,30}Descriptor)': Value is outside "
    r"the 'unsigned long long' value range"
)


def _ev(runtime: str, kind: str, fmt: str, text: str, n: int, **kw: Any) -> OomEvent:
    return OomEvent(runtime=runtime, kind=kind, format=fmt, line=n, text=text[:600], **kw)


def _event(lines: Lines, i: int) -> OomEvent | None:
    line = lines.cleaned(i)
    n = lines.number[i]
    if _WEBLLM.search(line):
        return _ev("webgpu", "device_lost", "webllm_device_lost", line, n)
    if _WORK_DONE.search(line):
        return _ev("webgpu", "device_lost", "webgpu_work_done_lost", line, n)
    if _INSTANCE.search(line):
        return _ev("webgpu", "device_lost", "dawn_instance_dropped", line, n)
    m = _SIZE_RANGE.search(line)
    if m is not None:
        return _ev("webgpu", "size_invalid", "webgpu_size_out_of_range", line, n, detail=m["what"])
    if _COMMITTED.search(line):
        return _ev("directml", "gpu_alloc_failed", "directml_create_committed_resource", line, n)
    m = _DXGI.search(line)
    if m is not None:
        name = m["name"] or _DXGI_NAMES[m["code"]]
        return _ev("d3d12", "device_lost", "dxgi_device_removed", line, n, detail=name)
    return None


def parse_webgpu_status(lines: Lines) -> list[OomEvent]:
    """Events of the status lines in the module docstring (log order; one per failure)."""
    return scan_events(lines, _PREFILTER, _event, repeat=lambda a, b: a.format == b.format)


_SMALLER = generic(
    "If memory was the trigger: a smaller model or a shorter context",
    "WebLLM lists each prebuilt model's vram_required_MB; a q4f16_1 build needs less than "
    "q4f32_1, and the -1k builds keep a smaller KV cache.",
    (
        "a q4f16_1 (not q4f32_1) build, or a smaller model",
        "a '-1k' model variant (1k-token KV cache)",
    ),
)
_WHAT_RESET = generic(
    "Find out why the device was reset",
    "the browser's GPU page and the OS log name the reset (out of video memory, a timeout "
    "(TDR), a driver crash); a retry on a smaller input tells memory from a bug.",
    (
        "chrome://gpu  # 'Log Messages' at the bottom",
        "Windows: Event Viewer > System, source 'Display' (TDR: 'Display driver stopped "
        "responding')",
        "update the GPU driver",
    ),
)
_LOST_TAIL = (
    " A reset is not an allocation failure: the runtime never saw an allocation fail. Video "
    "memory running out is one trigger (WebGPU then loses the device rather than failing a "
    "buffer); a dispatch that runs past Windows' ~2 s TDR watchdog, or a driver crash, are "
    "others. What would decide: the reset reason in chrome://gpu or the OS log, and whether "
    "a smaller model or input runs."
)


def analyze_webgpu_status(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis of this module's events, or ``None`` for other events."""
    del ctx  # each line is read on its own
    fmt = e.format or ""
    if fmt == "webgpu_size_out_of_range":
        return Analysis(
            cause="unknown",
            confidence=0.5,
            open_question=False,
            explanation=f"The browser refused a WebGPU buffer whose size is not a valid number: "
            f"{e.detail or 'the descriptor'}'s size is outside the 'unsigned long long' range "
            "(negative, NaN or above 2^53), a WebIDL check made before any memory is touched. "
            "This is not a lack of memory: the code computed a wrong size (an overflow or an "
            "undefined dimension, e.g. a sequence length or shape past what the model supports).",
            fixes=(
                generic(
                    "Find what computed the size",
                    "a negative or overflowed length reaches createBuffer; shorten the input "
                    "to see whether its length drives it.",
                    ("a shorter prompt / input", "the library's issue tracker with the input"),
                ),
            ),
        )
    if fmt == "directml_create_committed_resource":
        return Analysis(
            cause="unknown",
            confidence=0.3,
            open_question=True,
            explanation="DirectML could not create a D3D12 committed resource (one tensor's "
            "buffer): the CHECK on CreateCommittedResource failed. The HRESULT is not printed; "
            "E_OUTOFMEMORY (0x8007000E: video memory plus the shared system memory cannot back "
            "it) is the usual one, DXGI_ERROR_DEVICE_REMOVED (0x887A0005: the device was reset "
            "before) the other. What would decide: the HRESULT, and whether a smaller batch or "
            "input runs.",
            fixes=(
                generic(
                    "Use a smaller batch or input",
                    "each tensor is its own committed resource in video memory.",
                    ("batch size 1", "a smaller input resolution"),
                ),
                _WHAT_RESET,
            ),
        )
    if e.kind != "device_lost" or fmt not in (
        "webllm_device_lost",
        "webgpu_work_done_lost",
        "dawn_instance_dropped",
        "dxgi_device_removed",
    ):
        return None
    if fmt == "webllm_device_lost":
        head = (
            "WebLLM's WebGPU device was lost (GPUDevice.lost resolved); WebLLM's own message "
            "names insufficient memory or other GPU constraints."
        )
    elif fmt == "webgpu_work_done_lost":
        head = (
            "The browser's WebGPU device was lost while work was in flight (onSubmittedWorkDone)."
        )
    elif fmt == "dawn_instance_dropped":
        head = (
            "The browser's connection to its GPU process ended under a pending WebGPU call "
            "(Dawn's 'A valid external Instance reference no longer exists'): the GPU process "
            "or its device went away."
        )
    else:
        head = (
            f"Direct3D reports the GPU device {(e.detail or 'removed').lower()} "
            f"(DXGI_ERROR_DEVICE_{e.detail or 'REMOVED'}): the driver removed or reset the "
            "device; every later call on it fails the same way."
        )
    fixes = (_SMALLER, _WHAT_RESET) if fmt == "webllm_device_lost" else (_WHAT_RESET, _SMALLER)
    if fmt == "webllm_device_lost":
        return _webllm_lost(head, fixes)
    return Analysis(
        cause="unknown",
        confidence=0.4,
        open_question=False,
        explanation=head + _LOST_TAIL,
        fixes=fixes,
    )


def _webllm_lost(head: str, fixes: tuple[Fix, ...]) -> Analysis:
    """WebLLM's own device-lost message: the memory reading its stack documents, held low.

    (docpost28) Policy for a device reset: it stays ``unknown`` unless the stack's own
    maintainers document device loss as the usual symptom of exhausting video memory *on that
    stack*. WebLLM does, twice over: its own message names insufficient memory first and
    prescribes a smaller model (``mlc-ai/web-llm:src/engine.ts``, ``MLCEngine.reloadInternal``:
    "This can happen due to insufficient memory or other GPU constraints ... Please try to
    reload WebLLM with a less resource-intensive model"), and its maintainer says so across
    threads (web-llm issue 387: "Device lost is usually due to not having enough memory";
    issue 517: device lost with Llama-3.1 q4f32_1 "suggests you do not have enough RAM";
    issue 332: "My guess is that it is some OOM issue"), pointing at each prebuilt model's
    ``vram_required_MB``. What ``reload`` places on the device is the model: its weights and
    the KV cache sized by the build's ``context_window_size`` (the "-1k" builds keep a smaller
    one), so the reading is ``model_too_large`` at 0.45 (a default, below any computed
    reading), the reset wording kept, and the deciding fact named: whether a smaller build
    loads. Browser and Dawn lines that do not name the stack (onSubmittedWorkDone, an Instance
    dropped, DXGI removal) and ncnn's ``vkQueueSubmit failed`` (its FAQ answers crashes with a
    driver upgrade, not memory) stay ``unknown``.
    """
    return Analysis(
        cause="model_too_large",
        confidence=0.45,
        open_question=False,
        explanation=head
        + " A device reset is not an allocation failure, but WebLLM documents it as the usual "
        "symptom of a model build that needs more video memory than the browser can give "
        "(its message asks for a less resource-intensive model; its maintainers point at each "
        "build's vram_required_MB). What reload places on the GPU is the model: the weights and "
        "the KV cache of the build's context window. What would decide: whether a smaller build "
        "(q4f16_1 instead of q4f32_1, a '-1k' variant, a smaller model) loads; if it still "
        "resets, the reason in chrome://gpu or the OS log (a TDR timeout, a driver crash).",
        fixes=fixes,
    )
