"""What the parsers find in a log: OOM events and the context around them.

An :class:`OomEvent` holds only what the message states (``None`` otherwise). A
:class:`LogContext` holds what the rest of the log says about the run (model, quant, context size,
per-device buffers, vLLM profiling figures, the traceback frame...), which the rules use to compute
fixes. Both are plain frozen values; :meth:`OomEvent.to_dict` and :meth:`LogContext.to_dict` give
the JSON shape of the ``doctor --json`` contract (DESIGN.md), extra keys allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["BufferLine", "DeviceInfo", "LogContext", "OomEvent", "OtherProcess", "ParsedLog"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OtherProcess:
    """Another process on the same GPU, as the PyTorch message lists it (via NVML)."""

    pid: int
    used_bytes: int | None


# Keys of the DESIGN.md doctor contract, in contract order; always present in to_dict().
_CONTRACT_KEYS = (
    "runtime",
    "kind",
    "device",
    "line",
    "requested_bytes",
    "total_bytes",
    "free_bytes",
    "allocated_bytes",
    "reserved_unallocated_bytes",
    "process_in_use_bytes",
    "other_processes",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OomEvent:
    """One out-of-memory (or OOM-proxy) message found in a log.

    Contract fields follow DESIGN.md; the rest are extras that some formats state. ``device`` is
    the device index when the message names one. ``line`` is the 1-based line of the log where the
    message starts. Every ``*_bytes`` field is exactly what the message states, converted through
    the runtime's unit table (:mod:`oomkit.diagnose.sizes`).
    """

    runtime: str
    kind: str
    line: int
    text: str
    device: int | None = None
    requested_bytes: int | None = None
    total_bytes: int | None = None
    free_bytes: int | None = None
    allocated_bytes: int | None = None
    reserved_unallocated_bytes: int | None = None
    process_in_use_bytes: int | None = None
    other_processes: tuple[OtherProcess, ...] = ()
    # extras -----------------------------------------------------------------------------------
    format: str | None = None  # message family/era, e.g. "pytorch_new", "pytorch_2.1", "legacy"
    reserved_bytes: int | None = None  # legacy torch: "reserved in total by PyTorch"
    allowed_bytes: int | None = None  # torch "X allowed;", MPS "max allowed", mallocAsync limit
    private_pool_bytes: int | None = None  # torch "allocated in private pools (e.g., CUDA Graphs)"
    other_allocations_bytes: int | None = None  # MPS "other allocations"
    self_pid: int | None = None  # PID listed as "Process N" but inferred to be this process
    buffer_name: str | None = None  # llama.cpp buffer type: CUDA0, ROCm0, CPU, MTL0...
    stage: str | None = None  # weights | kv_cache | compute | runtime | startup | warmup ...
    detail: str | None = None  # error string carried by the message (cudaMalloc reason, ...)
    max_model_len: int | None = None
    kv_capacity_tokens: int | None = None
    estimated_max_model_len: int | None = None
    needed_kv_bytes: int | None = None
    available_kv_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    mem_fraction_static: float | None = None
    prefill_tokens: int | None = None
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    pid: int | None = None  # OOM killer victim
    process_name: str | None = None
    anon_rss_bytes: int | None = None
    total_vm_bytes: int | None = None
    file_rss_bytes: int | None = None
    shmem_rss_bytes: int | None = None
    cgroup: bool | None = None  # "Memory cgroup out of memory" (container limit)
    num_gpu: int | None = None  # Ollama "memory layout cannot be allocated with num_gpu = N"
    #: sizes the message states that no allocator can print ("-1.00 GiB" requested, "0 bytes"
    #: total capacity): read as unknown, named here so the diagnosis can say so
    ignored_sizes: str | None = None
    #: stated numbers that contradict each other ("40.00 GiB free of a 23.65 GiB total
    #: capacity"): no runtime prints them, so the doctor names them instead of diagnosing
    inconsistent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON dict: contract keys first (``None`` when not stated), then non-empty extras."""
        out: dict[str, Any] = {}
        for key in _CONTRACT_KEYS:
            value = getattr(self, key)
            if key == "other_processes":
                value = [{"pid": p.pid, "used_bytes": p.used_bytes} for p in value]
            out[key] = value
        for f in fields(self):
            if f.name in out:
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class BufferLine:
    """A llama.cpp buffer allocation line: ``<fn>: <name> <kind> buffer size = N MiB``."""

    kind: str  # model | KV | compute | output | RS
    name: str  # CUDA0, CPU_Mapped, CUDA_Host, Vulkan0, MTL0, ...
    size_bytes: int
    line: int

    @property
    def on_host(self) -> bool:
        """True for host-RAM buffers (CPU, CPU_Mapped, CUDA_Host, Vulkan_Host, ...)."""
        n = self.name.upper()
        return (
            n.startswith("CPU") or n.endswith("_HOST") or (n.endswith("_MAPPED") and "MTL" not in n)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceInfo:
    """A device the log names, with the free memory it reported at load when known."""

    name: str  # CUDA0, cuda:0, GPU-..., "Device 0"
    description: str | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogContext:
    """Facts a log states about the run. Every field is ``None``/empty unless the log says it."""

    runtime_hint: str | None = None
    model_name: str | None = None
    quant: str | None = None
    model_file_bytes: int | None = None
    n_ctx: int | None = None
    n_batch: int | None = None
    n_ubatch: int | None = None
    n_seq: int | None = None
    flash_attn: bool | None = None
    type_k: str | None = None
    type_v: str | None = None
    n_gpu_layers: int | None = None
    layers_offloaded: int | None = None
    layers_total: int | None = None
    pipeline_copies: int | None = None
    tensor_split: str | None = None
    kv_self_bytes: int | None = None
    devices: tuple[DeviceInfo, ...] = ()
    gpus_found: int | None = None  # ggml_cuda_init: "found N CUDA devices" (ROCm too)
    buffers: tuple[BufferLine, ...] = ()
    #: lines where llama.cpp began creating a context (``llama_context: n_ctx = N``): logged after
    #: the weights loaded, before the KV cache and compute buffers are allocated (docpost27)
    context_lines: tuple[int, ...] = ()
    # vLLM / SGLang / TRT-LLM ---------------------------------------------------------------
    gpu_memory_utilization: float | None = None
    total_gpu_memory_bytes: int | None = None
    weights_bytes: int | None = None
    non_torch_bytes: int | None = None
    activation_peak_bytes: int | None = None
    kv_cache_bytes: int | None = None  # may be negative (vLLM V0 profiling)
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    max_model_len: int | None = None
    max_concurrency: float | None = None
    tensor_parallel_size: int | None = None
    max_num_batched_tokens: int | None = None  # vLLM, as the log states it
    max_num_seqs: int | None = None
    mem_fraction_static: float | None = None
    avail_after_weights_bytes: int | None = None  # SGLang "Load weight end ... avail mem=X GB"
    vllm_engine: str | None = None  # "V0" / "V1", as the log's engine line or release says
    vllm_version: str | None = None  # "0.6.3.post1"
    # Ollama estimator (its own prediction, not a measurement) --------------------------------
    ollama_available_bytes: tuple[int, ...] = ()
    ollama_required_full_bytes: int | None = None
    ollama_required_partial_bytes: int | None = None
    ollama_required_kv_bytes: int | None = None
    ollama_graph_full_bytes: int | None = None
    ollama_graph_partial_bytes: int | None = None
    ollama_weights_total_bytes: int | None = None
    ollama_weights_repeating_bytes: int | None = None  # memory.weights.repeating (blocks)
    ollama_layers_model: int | None = None
    ollama_layers_offload: int | None = None
    ollama_runner: bool | None = None  # an Ollama runner's error was forwarded (it fit the layers)
    #: the OS the log shows (``windows``: a drive-letter path, an ``.exe``, an MSVC build), or
    #: the one ``doctor --os`` states; picks the shell an environment-variable fix is written in
    host_os: str | None = None
    system_total_bytes: int | None = None
    system_free_bytes: int | None = None
    # PyTorch / training ------------------------------------------------------------------------
    frame_phase: str | None = None  # model_load | forward | backward | optimizer_step | generate
    frame_text: str | None = None
    parameter_bytes: int | None = None  # XLA "parameter allocation"
    deepspeed_allocated_bytes: tuple[int, ...] = ()
    # torch.load restoring a storage onto the device it was saved from (no map_location)
    restore_frame: str | None = None
    # a loop's progress bar at 0/N after running a while: the first iteration was in flight
    first_step_bar: str | None = None
    # the caller's line above nn.Module.__call__ (``outputs = model(**batch)``): a forward call
    # shown by a traceback cut before the model's own frames (its frame sets phase forward)
    module_call: str | None = None
    # the innermost traceback frame a log shows when no frame places the failure (docpost29):
    # named by the deciding question instead of asking for a traceback the user already pasted
    last_frame: str | None = None
    # deciding log facts (parse_families) --------------------------------------------------------
    imbalance_warning: str | None = None  # torch DataParallel "imbalance between your GPUs"
    allocation_limit: str | None = None  # a driver's per-allocation limit was what failed
    tf_bfc_retry: str | None = None  # TF BFC "ran out of memory ... not a failure": ops running
    # the failing TF op is an optimizer update or slot initializer (parse_other): what failed is
    # a parameter-shaped optimizer state, not an activation
    tf_optimizer_node: str | None = None
    completed_steps: int | None = None  # progress shown before the OOM (tqdm k/N, epoch E)
    metal_working_set_bytes: int | None = None  # ggml-metal recommendedMaxWorkingSetSize
    # a stable-diffusion.cpp log's line that places the OOM in the VAE decode (parse_diffusion)
    diffusion_stage: str | None = None
    # a pasted nvidia-smi table (parse_smi): (gpu, used, total) and (gpu, pid, name, used)
    smi_memory: tuple[tuple[int, int, int], ...] = ()
    smi_processes: tuple[tuple[int, int, str, int], ...] = ()
    # the lines around the OOM messages (paste_context.read_surroundings) -----------------------
    paste_prose: tuple[tuple[int, str], ...] = ()  # (line, sentence) outside every OOM message
    notes: tuple[str, ...] = ()

    def device_buffers(self, kind: str) -> dict[str, int]:
        """Sum of the buffers of one kind (``"model"``, ``"KV"``, ``"compute"``...) per name."""
        out: dict[str, int] = {}
        for b in self.buffers:
            if b.kind == kind:
                out[b.name] = out.get(b.name, 0) + b.size_bytes
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the stated facts (unset fields are left out)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value == ():
                continue
            if f.name == "devices":
                value = [
                    {
                        k: v
                        for k, v in (
                            ("name", d.name),
                            ("description", d.description),
                            ("free_bytes", d.free_bytes),
                            ("total_bytes", d.total_bytes),
                        )
                        if v is not None
                    }
                    for d in value
                ]
            elif f.name == "buffers":
                value = [
                    {"kind": b.kind, "name": b.name, "size_bytes": b.size_bytes, "line": b.line}
                    for b in value
                ]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedLog:
    """Everything the parsers found: the OOM events (in log order) and the run's context."""

    events: tuple[OomEvent, ...]
    context: LogContext
