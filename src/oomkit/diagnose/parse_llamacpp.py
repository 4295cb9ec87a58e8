"""llama.cpp / ggml failures and the load log around them (oom-messages.md §2).

Failures: ``ggml_backend_cuda_buffer_type_alloc_buffer: allocating X MiB on device N: cudaMalloc
failed`` (``ggml/src/ggml-cuda/ggml-cuda.cu``), ``alloc_tensor_range`` / ``ggml_gallocr_reserve_n``
``failed to allocate <buft> buffer of size <bytes>`` (``ggml-alloc.c``), ``unable to allocate
<buft> buffer`` (weights), ``failed to allocate buffer for kv cache``, ``failed to allocate compute
(pp|tg) buffers``, the runtime ``CUDA error: out of memory`` + ``current device:`` abort, Metal
``failed to allocate buffer, size = X MiB`` / ``kIOGPUCommandBufferCallbackErrorOutOfMemory`` /
``command buffer N failed with status 5``, Vulkan ``ErrorOutOfDeviceMemory``.

A cudaMalloc line and the caller lines that report the same failure (raw bytes, stage) are merged
into one event. Context: buffer lines per device (``<fn>: <name> model|KV|compute|output|RS buffer
size = N MiB``, the 2024 ``llm_load_tensors: CUDA0 buffer size``), ``KV self size``, ``n_ctx``,
``n_batch``, ``n_ubatch``, ``flash_attn``, ``type_k/type_v``, ``offloaded A/B layers``, ``using
device CUDA0 (...) - N MiB free``, ``Device N: <name>``, model name and file type, and the
command-line flags (``-c``, ``-ngl``, ``-ub``...) when the log quotes the command.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from oomkit.diagnose.events import BufferLine, DeviceInfo, OomEvent
from oomkit.diagnose.scan import admitted
from oomkit.diagnose.sizes import to_bytes, to_int
from oomkit.diagnose.text import Lines, has_any, needles_re

__all__ = ["parse_llamacpp"]

_RT = "llama.cpp"
_F = r"\d{1,12}(?:\.\d{1,4})?"

_CUDAMALLOC = re.compile(
    r"(?P<fn>\w{1,80}): allocating (?P<mib>" + _F + r") MiB on device (?P<dev>\d{1,3}): "
    r"(?P<api>cudaMalloc|hipMalloc|musaMalloc) failed: ?(?P<err>.{0,200})"
)
# ggml-cuda.cu ggml_backend_cuda_buffer_type_alloc_buffer prints "%s: allocating %.2f MiB on device
# %d: cudaMalloc failed: %s" only when the allocation failed (the HIP and MUSA builds share it), so
# the line is the failure even when a paste is cut before the API's name ends ("... device 0:
# cudaMall")
_CUDAMALLOC_CUT = re.compile(
    r"(?P<fn>\w{0,80}_buffer_type_alloc_buffer): allocating (?P<mib>" + _F + r") MiB on device "
    r"(?P<dev>\d{1,3}):? ?(?P<tail>[A-Za-z]{0,16})\s{0,4}$"
)
# llama-context.cpp llama_output_reserve prints the size as "%.2f MiB", ggml-alloc.c as "%zu"
# (the buffer-type name is ggml_backend_buft_name(): "CUDA0", "CPU", but some ggml-vulkan builds
# name it after the device description, e.g. "AMD Radeon RX 6600 (RADV NAVI23)", spaces included)
_BUF_FAIL = re.compile(
    r"(?P<fn>\w{1,80}): failed to allocate (?P<buft>\S[^\n:]{0,79}?) buffer of size "
    r"(?P<n>\d{1,20})"
    r"(?P<frac>\.\d{1,4})?(?: ?(?P<u>KiB|MiB|GiB)\b)?"
)
# ggml-cuda.cu ggml_cuda_host_malloc: a warning; llama.cpp falls back to pageable host memory
_PINNED_FAIL = re.compile(
    r"failed to allocate (?P<mib>\d{1,12}(?:[.,]\d{1,4})?) (?P<u>MiB|MB) of pinned memory: ?"
    r"(?P<err>.{0,80})"
)
# 2023 builds: CUDA_CHECK -> "CUDA error 2 at ggml-cuda.cu:6246: out of memory"
_GGML_RT_OLD = re.compile(
    r"(?P<be>CUDA|ROCm) error (?P<code>\d{1,4}) at (?P<file>\S{1,200}):(?P<ln>\d{1,7}): "
    r"out of memory"
)
_CPU_FAIL = re.compile(r"(?P<fn>\w{1,80}): failed to allocate buffer of size (?P<n>\d{1,20})")
# ggml-backend.c (2023-24) ggml_backend_cpu_buffer_type_alloc_buffer: `void * data =
# malloc(size); GGML_ASSERT(data != NULL && "failed to allocate buffer");` -- the CPU backend's
# malloc of a host buffer returned NULL (forks prefix the macro: LM_GGML_, WSP_GGML_)
_CPU_ASSERT = re.compile(r'GGML_ASSERT: ?\S{0,300}: data != NULL && "failed to allocate buffer"')
_WEIGHTS_FAIL = re.compile(r"unable to allocate (?P<buft>\S{1,64}) buffer")
_METAL_FAIL = re.compile(r"failed to allocate buffer, size = {0,12}(?P<mib>" + _F + r") MiB")
_GGML_RT = re.compile(r"(?P<be>CUDA|ROCm|MUSA|CANN|SYCL) error: (?P<msg>out of memory.{0,80})")
_CUR_DEV = re.compile(r"current device: (?P<dev>-?\d{1,3}), in function (?P<fn>\S{1,120})")
_METAL_STATUS = re.compile(r"command buffer (?P<n>\d{1,4}) failed with status (?P<st>\d{1,3})")

_BUF_LINE = re.compile(
    r"(?P<fn>[A-Za-z_]\w{0,60}):\s{1,30}(?P<name>\S(?:.{0,80}?\S)?)\s{1,20}"
    r"(?:(?P<kind>model|KV|compute|output|RS)\s{1,4})?buffer size\s{0,4}=\s{0,20}"
    r"(?P<mib>" + _F + r")\s{0,4}MiB"
)
_KV_SELF = re.compile(
    r"(?:KV self size|llama_kv_cache\w{0,20}: size)\s{0,4}=\s{0,12}(?P<mib>" + _F + r") MiB"
)
_KV_TYPES = re.compile(r"\bK \((?P<k>\w{1,12})\):\s{0,12}" + _F + r" MiB, V \((?P<v>\w{1,12})\)")
# "%6u cells" (src/llama-kv-cache.cpp, the `size = ... MiB (%6u cells, %3d layers, %2u/%u
# seqs)` line): the count is right-aligned in six columns, so "( 32768 cells," has a space. The
# cells are per stream: "n_seq_max/n_stream seqs", one stream per sequence unless the cache is
# unified (llama-context.cpp: n_ctx_seq = n_ctx / n_seq_max without kv_unified; the K/V
# tensors are kv_size x n_stream), so the context is cells x n_stream
_KV_CELLS = re.compile(
    r"\(\s{0,8}(?P<n>\d{1,9}) cells,(?:\s{0,4}\d{1,4} layers,\s{0,4}\d{1,4}/(?P<st>\d{1,4}) seqs)?"
)
_KV_TYPE_KV = re.compile(r"type_k = '(?P<k>\w{1,12})', type_v = '(?P<v>\w{1,12})'")
# llama_kv_cache_init / llama_kv_cache_unified: "kv_size = N, ..., type_k = ..."
# (src/llama-kv-cache.cpp): N is the number of KV cells, the context (n_ctx, padded; shared by
# all parallel sequences)
_KV_SIZE = re.compile(r"\bkv_size = (?P<n>\d{1,9})\b")
# WasmEdge's WASI-NN ggml plugin (LlamaEdge) relays llama.cpp's log through spdlog with its own
# prefix: plugins/wasi_nn/ggml.cpp, LlamaLogCallback: spdlog::info("[WASI-NN] llama.cpp: {}"),
# after spdlog's "[date time] [level] " pattern; the setting after it is llama.cpp's own line
_SETTING = re.compile(
    r"^(?:[^\n]{0,80}?\[WASI-NN\] llama\.cpp:\s{1,4})?"
    r"\w{1,60}:\s{0,4}(?P<k>n_ctx|n_batch|n_ubatch|flash_attn|n_seq_max|n_parallel)"
    r"\s{0,12}=\s{0,4}(?P<v>\S{1,20})"
)
# (docpost27) the context's own settings line, printed when llama.cpp starts creating a context:
# `llama_new_context_with_model: n_ctx = N` (src/llama.cpp, 2023-2024),
# `llama_init_from_model: n_ctx = N` (the 2025 rename) and `llama_context: n_ctx = N`
# (src/llama-context.cpp, llama_context::llama_context). The weights are loaded before
# (llama_model_load_from_file); after it the constructor allocates the output buffer (host), the
# memory module (the KV cache, model.create_memory) and then the compute buffers (sched_reserve).
_CONTEXT_INIT = re.compile(
    r"\b(?:llama_new_context_with_model|llama_init_from_model|llama_context):\s{1,8}n_ctx\s{0,12}="
)
_OFFLOADED = re.compile(r"offloaded (?P<a>\d{1,5})/(?P<b>\d{1,5}) layers to GPU")
_USING_DEV = re.compile(
    r"using device (?P<name>\S{1,40}) \((?P<desc>[^()]{0,160})\)(?: \([^()]{0,60}\))? - "
    r"(?P<mib>\d{1,9}) MiB free"
)
# --list-devices / "Available devices:" lines:
#   "  ROCm0: AMD Radeon(TM) Graphics (110511 MiB, 110357 MiB free)"
_LIST_DEV = re.compile(
    r"^(?P<name>[A-Za-z]{2,12}\d{1,2}): (?P<desc>[^()]{1,120}(?:\([^()]{0,20}\)[^()]{0,60})?) "
    r"\((?P<t>\d{1,9}) MiB, (?P<f>\d{1,9}) MiB free\)"
)


def _zero_size(n: str | None) -> str | None:
    """The contradiction of a failed 0-byte allocation: ggml never asks a device for 0 bytes
    (``ggml_backend_buft_alloc_buffer`` returns a dummy buffer for zero-sized allocations,
    ``ggml-backend.cpp``), so a log that says one failed was edited or corrupted."""
    if n is None or to_int(n) != 0:
        return None
    return "an allocation of 0 bytes failed (ggml never allocates 0 bytes on a device)"


_VK_FAIL = re.compile(r"Device memory allocation of size (?P<n>\d{1,20}) failed")
_DEVICE = re.compile(r"^Device (?P<n>\d{1,3}): (?P<desc>[^,]{1,120}), compute capability")
_NAME = re.compile(r"general\.name\s{1,40}(?:str\s{1,40})?=\s{0,10}(?P<v>.{1,160})")
_FTYPE = re.compile(r"(?:file type|model ftype)\s{0,30}=\s{0,10}(?P<v>.{1,80})")
_FSIZE = re.compile(r"(?:file size|model size)\s{0,30}=\s{0,10}(?P<v>" + _F + r") GiB")
_PIPE = re.compile(r"pipeline parallelism enabled \(n_copies=(?P<n>\d{1,3})\)")
#: ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_init: "%s: found %d " GGML_CUDA_NAME " devices" (CUDA,
#: ROCm on HIP, MUSA; newer builds add "(Total VRAM: N MiB)"): how many GPUs the process sees
_FOUND = re.compile(r"ggml_cuda_init: found (?P<n>\d{1,3}) (?:CUDA|ROCm|MUSA) devices")
_FLAGS = re.compile(
    r"(?:^|\s)(?P<flag>-c|--ctx-size|-ngl|--n-gpu-layers|--gpu-layers|-ub|--ubatch-size|-b|"
    r"--batch-size|-np|--parallel|-ts|--tensor-split|-ctk|--cache-type-k|-ctv|--cache-type-v)"
    r"[ =](?P<v>[\w.,:]{1,40})"
)
_FLAG_KEYS = {
    "-c": "n_ctx",
    "--ctx-size": "n_ctx",
    "-ngl": "n_gpu_layers",
    "--n-gpu-layers": "n_gpu_layers",
    "--gpu-layers": "n_gpu_layers",
    "-ub": "n_ubatch",
    "--ubatch-size": "n_ubatch",
    "-b": "n_batch",
    "--batch-size": "n_batch",
    "-np": "n_seq",
    "--parallel": "n_seq",
    "-ts": "tensor_split",
    "--tensor-split": "tensor_split",
    "-ctk": "type_k",
    "--cache-type-k": "type_k",
    "-ctv": "type_v",
    "--cache-type-v": "type_v",
}
_INT_FLAGS = {"n_ctx", "n_gpu_layers", "n_ubatch", "n_batch", "n_seq"}

_NEEDLES = (
    "lloc",
    "buffer",
    "out of memory",
    "OutOfMemory",
    "OutOfDeviceMemory",
    "current device:",
    "n_ctx",
    "n_batch",
    "n_ubatch",
    "flash_attn",
    "n_seq_max",
    "n_parallel",
    "type_k",
    "offloaded",
    "MiB free",
    "Device ",
    "general.name",
    "type",
    "size",
    "pipeline parallelism",
    "ggml_cuda_init: found",
    " -",
    "failed",
    "kv cache",
)
_PREFILTER = needles_re(_NEEDLES)
_MERGE_LINES = 8


def _stage_of_fn(fn: str) -> str | None:
    """gallocr reserves the compute graph; alloc_tensor_range (weights or KV) is decided by the
    stage line that follows it."""
    return "compute" if fn.startswith("ggml_gallocr") else None


def _flag_value(key: str, value: str) -> Any:
    if key in _INT_FLAGS:
        return to_int(value)
    return value


def _settings(line: str, facts: dict[str, Any]) -> None:
    m = _SETTING.search(line)
    if m is None:
        return
    k, v = m.group("k"), m.group("v")
    if k == "flash_attn":
        low = v.lower().strip("'\"")
        if low in {"1", "true", "on", "enabled", "yes"}:
            facts["flash_attn"] = True
        elif low in {"0", "false", "off", "disabled", "no"}:
            facts["flash_attn"] = False
        return
    key = {"n_seq_max": "n_seq", "n_parallel": "n_seq"}.get(k, k)
    n = to_int(v)
    if n is not None:
        facts[key] = n


def _context(line: str, raw: str, line_no: int, facts: dict[str, Any]) -> None:
    if "buffer size" in line:
        m = _BUF_LINE.search(line)
        if m is not None:
            size = to_bytes(m.group("mib"), "MiB", _RT)
            kind = m.group("kind")
            fn = m.group("fn")
            if kind is None:
                kind = "KV" if "kv" in fn.lower() else "model" if "tensors" in fn else "compute"
            if size is not None:
                facts.setdefault("buffers", []).append(
                    BufferLine(kind=kind, name=m.group("name"), size_bytes=size, line=line_no)
                )
    if "size" in line and "MiB" in line and ("KV self" in line or "llama_kv_cache" in line):
        m = _KV_SELF.search(line)
        if m is not None:
            facts["kv_self_bytes"] = to_bytes(m.group("mib"), "MiB", _RT)
        t = _KV_TYPES.search(line)
        if t is not None:
            facts["type_k"], facts["type_v"] = t.group("k"), t.group("v")
        c = _KV_CELLS.search(line)
        if c is not None:  # llama_kv_cache: size = X MiB (N cells, ...): N is the padded n_ctx
            facts.setdefault("n_ctx", int(c.group("n")) * max(1, int(c.group("st") or 1)))
    if "type_k = " in line:
        t = _KV_TYPE_KV.search(line)
        if t is not None:
            facts["type_k"], facts["type_v"] = t.group("k"), t.group("v")
        c = _KV_SIZE.search(line)
        if c is not None:
            facts.setdefault("n_ctx", int(c.group("n")))
    if has_any(line, ("n_ctx", "n_batch", "n_ubatch", "flash_attn", "n_seq_max", "n_parallel")):
        _settings(line, facts)
        if "n_ctx" in line and _CONTEXT_INIT.search(line) is not None:
            facts.setdefault("context_lines", []).append(line_no)
    if "offloaded" in line:
        m = _OFFLOADED.search(line)
        if m is not None:
            facts["layers_offloaded"] = int(m.group("a"))
            facts["layers_total"] = int(m.group("b"))
    if "MiB free" in line:
        m = _USING_DEV.search(line)
        if m is not None:
            facts.setdefault("devices", []).append(
                DeviceInfo(
                    name=m.group("name"),
                    description=m.group("desc")[:120],
                    free_bytes=to_bytes(m.group("mib"), "MiB", _RT),
                )
            )
        else:
            m2 = _LIST_DEV.search(line)
            if m2 is not None:
                facts.setdefault("devices", []).append(
                    DeviceInfo(
                        name=m2.group("name"),
                        description=m2.group("desc").strip()[:120],
                        total_bytes=to_bytes(m2.group("t"), "MiB", _RT),
                        free_bytes=to_bytes(m2.group("f"), "MiB", _RT),
                    )
                )
    if line.startswith("Device "):
        m = _DEVICE.search(line)
        if m is not None:
            facts.setdefault("devices", []).append(
                DeviceInfo(name="Device " + m.group("n"), description=m.group("desc").strip())
            )
    if "general.name" in line:
        m = _NAME.search(line)
        if m is not None:
            facts["model_name"] = m.group("v").strip()
    if "type" in line and ("file type" in line or "model ftype" in line):
        m = _FTYPE.search(line)
        if m is not None:
            facts["quant"] = m.group("v").strip()
    if "size" in line and "GiB" in line and ("file size" in line or "model size" in line):
        m = _FSIZE.search(line)
        if m is not None:
            facts["model_file_bytes"] = to_bytes(m.group("v"), "GiB", _RT)
    if "ggml_cuda_init: found" in line:
        m = _FOUND.search(line)
        if m is not None:
            facts["gpus_found"] = int(m.group("n"))
    if "pipeline parallelism" in line:
        m = _PIPE.search(line)
        if m is not None:
            facts["pipeline_copies"] = int(m.group("n"))
    if " -" in raw or raw.startswith("-"):
        for m in _FLAGS.finditer(line):
            key = _FLAG_KEYS[m.group("flag")]
            value = _flag_value(key, m.group("v"))
            if value is not None:
                facts.setdefault("flags", {})[key] = value


def _device_malloc(m: re.Match[str], line_no: int, detail: str) -> OomEvent:
    """ggml's device-buffer allocation failure (``cudaMalloc``/``hipMalloc``... of N MiB)."""
    return OomEvent(
        runtime=_RT,
        kind="gpu_alloc_failed",
        format="llama.cpp_cudaMalloc",
        line=line_no,
        text=m.group(0)[:400],
        device=int(m.group("dev")),
        requested_bytes=to_bytes(m.group("mib"), "MiB", _RT),
        detail=detail,
    )


def _failure(line: str, lines: Lines, i: int) -> OomEvent | None:
    """An event for a failure line, or None. Caller lines are merged later."""
    line_no = lines.number[i]
    if "alloc_buffer: allocating" in line and "failed" not in line:
        m = _CUDAMALLOC_CUT.search(line)
        if m is not None:
            return _device_malloc(m, line_no, "device malloc failed (the message is cut)")
    if "failed" in line and "lloc" in line:
        m = _CUDAMALLOC.search(line)
        if m is not None:
            why = (m.group("api") + " failed: " + m.group("err").strip())[:200]
            return _device_malloc(m, line_no, why)
        m = _BUF_FAIL.search(line)
        if m is not None:
            buft = m.group("buft")
            dev = re.search(r"(\d{1,3})$", buft)
            return OomEvent(
                runtime=_RT,
                kind="buffer_alloc_failed",
                format="llama.cpp_buffer_alloc",
                line=line_no,
                text=m.group(0)[:400],
                device=int(dev.group(1)) if dev and not buft.upper().startswith("CPU") else None,
                requested_bytes=to_bytes(m.group("n") + (m.group("frac") or ""), m.group("u"), _RT)
                if m.group("u")
                else to_int(m.group("n")),
                inconsistent=None if m.group("frac") else _zero_size(m.group("n")),
                buffer_name=buft,
                stage=_stage_of_fn(m.group("fn")),
            )
        m = _PINNED_FAIL.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="host_alloc_failed",
                format="llama.cpp_pinned_alloc",
                line=line_no,
                text=m.group(0)[:400],
                # a decimal comma ("1900,00 MiB") comes from the user's locale
                requested_bytes=to_bytes(m.group("mib").replace(",", "."), m.group("u"), _RT),
                buffer_name="CUDA_Host",
                detail="pinned host memory: " + m.group("err").strip(),
            )
        m = _CPU_FAIL.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="host_alloc_failed",
                format="llama.cpp_host_alloc",
                line=line_no,
                text=m.group(0)[:400],
                requested_bytes=to_int(m.group("n")),
                inconsistent=_zero_size(m.group("n")),
                buffer_name="CPU",
                # the KV-cache init failure printed right after names the buffer that failed
                stage="kv_cache"
                if _KV_FAIL_NEXT.search(" ".join(lines.text[i + 1 : i + 3]))
                else None,
            )
        m = _CPU_ASSERT.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="host_alloc_failed",
                format="ggml_cpu_buffer_assert",
                line=line_no,
                text=m.group(0)[:400],
                buffer_name="CPU",
            )
        m = _VK_FAIL.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="gpu_alloc_failed",
                format="vulkan_alloc",
                line=line_no,
                text=m.group(0),
                requested_bytes=to_int(m.group("n")),
                inconsistent=_zero_size(m.group("n")),
            )
        m = _METAL_FAIL.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="gpu_alloc_failed",
                format="metal_alloc",
                line=line_no,
                text=m.group(0)[:400],
                requested_bytes=to_bytes(m.group("mib"), "MiB", _RT),
                buffer_name="MTL0",
            )
    if "unable to allocate" in line:
        m = _WEIGHTS_FAIL.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="buffer_alloc_failed",
                format="llama.cpp_weights_alloc",
                line=line_no,
                text=m.group(0),
                buffer_name=m.group("buft"),
                stage="weights",
            )
    if "failed to allocate buffer for kv cache" in line or "failed for self-attention" in line:
        return OomEvent(
            runtime=_RT,
            kind="buffer_alloc_failed",
            format="llama.cpp_kv_alloc",
            line=line_no,
            text=line[:400],
            stage="kv_cache",
        )
    # llama.cpp "failed to allocate compute buffers"/"compute pp buffers"; whisper.cpp and
    # stable-diffusion.cpp (ggml_extend.hpp GGMLRunner::alloc_compute_buffer) "%s: failed to
    # allocate the compute buffer": the graph allocator's buffer, sized by the step's tensors
    if "failed to allocate compute" in line or "failed to allocate the compute buffer" in line:
        return OomEvent(
            runtime=_RT,
            kind="buffer_alloc_failed",
            format="llama.cpp_compute_alloc",
            line=line_no,
            text=line[:400],
            stage="compute",
        )
    if " at " in line and ": out of memory" in line:
        m = _GGML_RT_OLD.search(line)
        if m is not None:
            return OomEvent(
                runtime=_RT,
                kind="gpu_runtime_oom",
                format="ggml_cuda_error",
                line=line_no,
                text=m.group(0)[:400],
                # 2023 CUDA_CHECK names no call: load, KV, compute and pinned buffers all pass it
                stage=None,
                detail=f"{m.group('file')}:{m.group('ln')}",
            )
    if "error: out of memory" in line:
        m = _GGML_RT.search(line)
        if m is not None:
            nxt = " ".join(lines.cleaned(j) for j in range(i, min(i + 3, len(lines.text))))
            d = _CUR_DEV.search(nxt)
            if d is not None:
                return OomEvent(
                    runtime=_RT,
                    kind="gpu_runtime_oom",
                    format="ggml_cuda_error",
                    line=line_no,
                    text=nxt[:400],
                    device=int(d.group("dev")) if int(d.group("dev")) >= 0 else None,
                    stage="runtime",
                    detail="in function " + d.group("fn"),
                )
    if "OutOfMemory" in line or "OutOfDeviceMemory" in line:
        if "kIOGPUCommandBufferCallbackErrorOutOfMemory" in line:
            return OomEvent(
                runtime=_RT,
                kind="gpu_runtime_oom",
                format="metal_command_buffer",
                line=line_no,
                text=line[:400],
                stage="runtime",
                buffer_name="MTL0",
            )
        if "ErrorOutOfDeviceMemory" in line:
            return OomEvent(
                runtime=_RT,
                kind="gpu_alloc_failed",
                format="vulkan_out_of_device_memory",
                line=line_no,
                text=line[:400],
            )
    if "command buffer" in line:
        m = _METAL_STATUS.search(line)
        if m is not None and m.group("st") == "5":
            # MTLCommandBufferStatusError: on Apple GPUs during graph compute this is almost
            # always the working-set limit (ggml-metal logs no other cause).
            return OomEvent(
                runtime=_RT,
                kind="gpu_runtime_oom",
                format="metal_command_buffer",
                line=line_no,
                text=line[:400],
                stage="runtime",
                buffer_name="MTL0",
            )
    return None


_MERGE_FIRST = frozenset(
    {
        "llama.cpp_cudaMalloc",
        "llama.cpp_buffer_alloc",
        "metal_alloc",
        "vulkan_alloc",
        "llama.cpp_weights_alloc",
        "llama.cpp_kv_alloc",
        "llama.cpp_compute_alloc",
    }
)
_MERGE_NEXT = frozenset(
    {
        "llama.cpp_buffer_alloc",
        "llama.cpp_weights_alloc",
        "llama.cpp_kv_alloc",
        "llama.cpp_compute_alloc",
        "vulkan_out_of_device_memory",
    }
)


def _merge(events: list[OomEvent]) -> list[OomEvent]:
    """Fold caller lines (raw byte size, stage) into the cudaMalloc event they report."""
    out: list[OomEvent] = []
    for ev in events:
        prev = out[-1] if out else None
        if (
            prev is not None
            and ev.line - prev.line <= _MERGE_LINES
            and prev.format in _MERGE_FIRST
            and ev.format in _MERGE_NEXT
        ):
            out[-1] = replace(
                prev,
                buffer_name=prev.buffer_name or ev.buffer_name,
                stage=prev.stage or ev.stage,
                device=prev.device if prev.device is not None else ev.device,
                requested_bytes=prev.requested_bytes
                if prev.requested_bytes is not None
                else ev.requested_bytes,
                text=(prev.text + "\n" + ev.text)[:1200],
            )
            continue
        out.append(ev)
    return out


_KV_FAIL_NEXT = re.compile(r"failed to allocate buffer for kv cache|kv_cache_init\(\) failed")


def parse_llamacpp(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """Find llama.cpp/ggml allocation failures and load-log context in ``lines``.

    Returns:
        Events (merged per failure) and context facts: ``buffers`` (list of BufferLine),
        ``devices`` (list of DeviceInfo), ``n_ctx``... and ``flags`` (values quoted from a
        command line, which the printed values override). Never raises on arbitrary text.
    """
    events: list[OomEvent] = []
    facts: dict[str, Any] = {}
    for i in admitted(lines, _PREFILTER):
        line = lines.cleaned(i)
        ev = _failure(line, lines, i)
        if ev is not None:
            events.append(ev)
        _context(line, lines.text[i], lines.number[i], facts)
    return _merge(events), facts
