"""Which allocation failed and in which phase of the run (docs/doctor-causes.md sections 1 and 3).

Both are read from the primary event and the log's context; ``unknown`` when nothing says. They
are reported next to the cause in ``doctor --json`` (``allocation``, ``phase``).

>>> from oomkit.diagnose.events import LogContext, OomEvent
>>> e = OomEvent(runtime="llama.cpp", kind="buffer_alloc_failed", line=1, text="", stage="compute")
>>> allocation_of(e, LogContext(), "batch_or_activations"), phase_of(e, LogContext(), False)
('compute_buffer', 'load')
"""

from __future__ import annotations

from oomkit.diagnose.events import LogContext, OomEvent

__all__ = ["ALLOCATIONS", "PHASES", "allocation_of", "phase_of"]

ALLOCATIONS = (
    "weights_load",
    "kv_pool",
    "compute_buffer",
    "activations_forward",
    "activations_backward",
    "optimizer_step",
    "host_ram",
    "pinned_host",
    "workspace",
    "unknown",
)
PHASES = (
    "load",
    "warmup",
    "inference",
    "training_forward",
    "training_backward",
    "optimizer_step",
    "loop_later_iteration",
    "unknown",
)

_STAGE_ALLOC = {
    "weights": "weights_load",
    "kv_cache": "kv_pool",
    "kv_full": "kv_pool",
    "compute": "compute_buffer",
    "library_workspace": "workspace",
}
_FRAME_ALLOC = {
    "model_load": "weights_load",
    "kv_cache_alloc": "kv_pool",
    "forward": "activations_forward",
    "backward": "activations_backward",
    "optimizer_step": "optimizer_step",
    "cuda_graph_capture": "activations_forward",
    "warmup": "activations_forward",
    "serving_step": "activations_forward",
    "generate": "kv_pool",
    # the DataLoader's pin-memory thread (torch/utils/data/_utils/pin_memory.py): page-locked
    # host pages, not device memory (revfix18e's phase)
    "pin_memory": "pinned_host",
    # (docpost19) the checkpoint save (revfix18e's phase, parse_torch_frames): the save gathers
    # the full, unsharded weights (FSDP FULL_STATE_DICT `_full_post_state_dict_hook`, DeepSpeed
    # `_zero3_consolidated_16bit_state_dict`) and states onto one device: the whole model at
    # once, as a load places it; the corpus' GPU save records are labelled weights_load (the
    # FULL_STATE_DICT gather, a save after training: 2 of the 3 with an allocation label)
    "checkpoint_save": "weights_load",
}
_KIND_ALLOC = {
    "cpu_oom": "host_ram",
    "host_oom": "host_ram",
    "oom_killer": "host_ram",
    # docpost30: llama.cpp's mlock warning pins host pages (parse_wordings_warnings)
    "mlock_failed": "host_ram",
    "killed": "host_ram",
    "kv_capacity": "kv_pool",
    "no_kv_blocks": "kv_pool",
    "no_kv_pool": "kv_pool",
    "kv_pool_profiled": "kv_pool",
    "kv_pool_full": "kv_pool",
    "kv_slots_full": "kv_pool",
    "state_blocks": "kv_pool",  # vLLM's Mamba state pool (one block per running sequence)
    "workspace_overflow": "workspace",
    "dispatch_offload": "weights_load",
    "library_alloc_failed": "workspace",
    "workspace_alloc_failed": "workspace",  # TensorRT builder tactic scratch (parse_frameworks)
    "kernel_output_failed": "activations_forward",  # MindSpore MallocForKernelOutput
}
_CAUSE_ALLOC = {
    "model_too_large": "weights_load",
    "kv_cache_or_context": "kv_pool",
    "batch_or_activations": "activations_forward",
    "host_ram": "host_ram",
}
_FRAME_PHASE = {
    "model_load": "load",
    "kv_cache_alloc": "load",
    "forward": "training_forward",
    "backward": "training_backward",
    "optimizer_step": "optimizer_step",
    "generate": "inference",
    "cuda_graph_capture": "warmup",
    "warmup": "warmup",
    "serving_step": "inference",
    # (docpost19) a save runs after training steps completed (the corpus' save records are
    # labelled loop_later_iteration, 4 of 4)
    "checkpoint_save": "loop_later_iteration",
}
_STAGE_PHASE = {
    "weights": "load",
    "kv_cache": "load",
    "compute": "load",
    "startup": "load",
    "compile": "warmup",
    "warmup": "warmup",
    "runtime": "inference",
    "kv_full": "inference",
}


def allocation_of(e: OomEvent, ctx: LogContext, cause: str) -> str:
    """The allocation that failed (one of :data:`ALLOCATIONS`)."""
    if e.format == "llama.cpp_pinned_alloc":
        return "pinned_host"
    if e.runtime == "llama.cpp" and e.stage == "runtime":
        return "compute_buffer"  # at run time ggml allocates only graph/compute buffers
    if e.runtime == "jax" and e.kind in {"xla_oom", "xla_compile_oom", "xla_vmem", "xla_smem"}:
        return "compute_buffer"  # the compiled program's buffers and temporaries
    if e.kind in _KIND_ALLOC:
        return _KIND_ALLOC[e.kind]
    if e.stage in _STAGE_ALLOC:
        return _STAGE_ALLOC[e.stage]
    if ctx.frame_phase in _FRAME_ALLOC:
        return _FRAME_ALLOC[ctx.frame_phase]
    if e.kind == "host_alloc_failed":
        return "host_ram"
    if e.kind == "oom_keyword" and cause != "host_ram":
        # a message only the generic fallback read: its own words can still name RAM as what
        # ran out, whatever made it run out (a leak across runs)
        from oomkit.diagnose.rules_extra import names_host_memory

        if names_host_memory(e.text):
            return "host_ram"
    return _CAUSE_ALLOC.get(cause, "unknown")


def phase_of(e: OomEvent, ctx: LogContext, grew: bool) -> str:
    """The phase of the run (one of :data:`PHASES`); ``grew``: memory grew across OOMs."""
    if grew:
        return "loop_later_iteration"
    if ctx.frame_phase in _FRAME_PHASE:
        return _FRAME_PHASE[ctx.frame_phase]
    if e.stage in _STAGE_PHASE:
        return _STAGE_PHASE[e.stage]
    return "unknown"
