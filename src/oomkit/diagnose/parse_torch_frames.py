"""Where in the run a PyTorch OOM happened, from the traceback frames and log lines around it
(DataLoader pin-memory thread, checkpoint save, model load, KV-cache allocation,
forward/backward, optimizer step, serving loop, warmup, CUDA-graph capture), for
:mod:`oomkit.diagnose.parse_torch`."""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.parse_load_moves import moved_to_device
from oomkit.diagnose.text import Lines, clean, has_any, needles_re

__all__ = ["VLLM_PROFILE_RUN", "frames_of"]

# Traceback phases, most specific first. Each entry: phase and substrings of traceback lines.
_PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        # revfix18e: the DataLoader's pin-memory thread (torch/utils/data/_utils/pin_memory.py
        # `_pin_memory_loop` -> `do_one_step` -> `pin_memory(data, device)` ->
        # `data.pin_memory(device)`): page-locked host memory from cudaHostAlloc, whose failure
        # CUDA reports as its device enum ("CUDA error: out of memory")
        "pin_memory",
        ("in _pin_memory_loop", "in pin_memory", ".pin_memory(device)"),
    ),
    (
        # revfix18e: saving a checkpoint gathers what the steps held sharded: transformers
        # trainer.py `_save_checkpoint` -> `_save_optimizer_and_scheduler` ->
        # `FSDP.optim_state_dict` (torch/distributed/fsdp/_optim_utils.py
        # `_gather_all_orig_param_state` / `_allgather_orig_param_states` all-gather every
        # unsharded optimizer state), `state_dict` under FULL_STATE_DICT
        # (`_full_post_state_dict_hook`), DeepSpeed engine.py `save_16bit_model` ->
        # `_zero3_consolidated_16bit_state_dict`; a save's frames outrank the loop's around it
        "checkpoint_save",
        (
            "in _save_checkpoint",
            "in save_checkpoint",
            "in _save_optimizer_and_scheduler",
            "in optim_state_dict",
            "in _gather_all_orig_param_state",
            "in _allgather_orig_param_states",
            "in _full_post_state_dict_hook",
            "in save_16bit_model",
            "in _zero3_consolidated_16bit_state_dict",
        ),
    ),
    (
        # allocating the KV cache (ExLlamaV2Cache, vLLM _allocate_kv_cache, HF StaticCache), and
        # the source lines of the token-pool managers that preallocate one K and one V tensor per
        # layer at start-up: lightllm common/mem_manager.py `_init_buffers`
        # (`self.key_buffer = [torch.empty((size, head_num, head_dim), ...) for _ in
        # range(layer_num)]`, `self.value_buffer = ...`; later `self.kv_buffer = torch.empty(...)`)
        # and SGLang mem_cache/memory_pool.py MHATokenToKVPool (`self.k_buffer = [...]`,
        # `self.v_buffer = [...]`; MLA `self.kv_buffer = [...]`)
        "kv_cache_alloc",
        (
            "create_state_tensors",
            "_allocate_kv_cache",
            "allocate_kv_cache",
            "init_kv_cache",
            "Cache(model",
            "StaticCache(",
            "self.key_buffer = ",
            "self.value_buffer = ",
            "self.k_buffer = ",
            "self.v_buffer = ",
            "self.kv_buffer = ",
        ),
    ),
    (
        "model_load",
        (
            "from_pretrained",
            "load_state_dict",
            "_load_state_dict_into",
            "load_checkpoint",
            "in load_model",
            "model.to(",
            "model.cuda(",
            "in _apply",
            # nn.Module.to's inner `convert` (torch/nn/modules/module.py `Module.to`: `def
            # convert(t): ... return t.to(device, dtype if t.is_floating_point() ...)` passed to
            # `self._apply(convert)`): the source line of a traceback cut at that frame
            "t.to(device, dtype if t.is_floating_point()",
        ),
    ),
    (
        # autograd itself, and the hooks FSDP and DeepSpeed run inside it: FSDP's
        # torch/distributed/fsdp/_runtime_utils.py `_post_backward_hook` / `_pre_backward_hook`
        # (FSDP2 `post_backward`), DeepSpeed ZeRO's gradient reduce hooks (stage_1_and_2.py
        # `reduce_ready_partitions_and_remove_grads`, stage3.py `reduce_partition_and_remove_grads`)
        "backward",
        (
            ".backward(",
            "in backward",
            "_engine_run_backward",
            "torch/autograd/",
            "in _post_backward_hook",
            "in _pre_backward_hook",
            "in post_backward",
            "in _post_backward_final_callback",
            "in reduce_ready_partitions_and_remove_grads",
            "in reduce_partition_and_remove_grads",
            "in reduce_independent_p_g_buckets_and_remove_grads",
        ),
    ),
    (
        "optimizer_step",
        # (Adam/AdamW create their states lazily inside the first step(): torch/optim/adam.py
        # `_init_group` runs `state["exp_avg"] = torch.zeros_like(p, ...)`; DeepSpeed's
        # `initialize_optimizer_states` and older optimizers spell it the same way)
        (
            "optimizer.step(",
            "in _single_tensor_adam",
            "in _multi_tensor_adam",
            "torch/optim/",
            "in _init_group",
            "state['exp_avg']",
            'state["exp_avg"]',
            "in initialize_optimizer_states",
            # the update's own source lines, where a traceback shows only the failing line
            # (torch/optim/adam.py `_single_tensor_adam`: `exp_avg_sq.mul_(beta2).addcmul_(...)`,
            # `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`)
            "exp_avg_sq.",
        ),
    ),
    (
        # a serving engine's request loop: the weights and the KV pool were placed at start-up
        # (vLLM engine/worker loops, TGI's router span for a request)
        "serving_step",
        (
            "in run_engine_loop",
            "in engine_step",
            "in run_busy_loop",
            "in step_async",
        ),
    ),
    ("generate", (".generate(", "in generate", "in _sample", "in greedy_search")),
    (
        # an evaluation loop is forward passes (under no_grad or not): its frames place the
        # failure in activations as surely as `forward` does
        "forward",
        (
            "in forward",
            "empty_strided_cuda",
            "in _call_impl",
            # nn.Module.__call__ (torch/nn/modules/module.py, 2.0+: `_wrapped_call_impl` calls
            # `_call_impl`, whose line `return forward_call(*args, **kwargs)` runs `forward`)
            "in _wrapped_call_impl",
            "forward_call(",
            ".forward(",
            "in validate",
            "in validation",
            "in evaluate",
            "in evaluation",
        ),
    ),
)


# Log lines (not traceback frames) that put the failure in CUDA-graph capture: vLLM
# ("Capturing the model for CUDA graphs", "Capturing CUDA graph shapes"), SGLang ("Capture cuda
# graph"), torch.compile mode="reduce-overhead" (cudagraph trees).
_WARMUP = ("Unable to warmup model", "warmup{", "in warmup", "warming up")
# Log lines of a serving engine's request path (TGI router spans, vLLM's async engine errors)
# (not vLLM's async_llm_engine.py: its frames also appear in start-up tracebacks)
_SERVING = ("Request failed during generation", "prefill{id=", "decode{id=")
_GRAPH_CAPTURE = (
    "Capturing the model for CUDA graphs",
    "Capturing CUDA graph",
    "Capturing cudagraph",
    "Capture cuda graph",
    "Capture CUDA graph",
    "capture_model",
    "cudagraph_trees",
    # vLLM V1 gpu_model_runner.py `_capture_cudagraphs` (under `capture_model`), and
    # gpu_worker.py `profile_cudagraph_memory` (0.18+, PR #30515: graphs captured to measure
    # them inside `determine_available_memory`): a frame of either is graph capture
    "_capture_cudagraphs",
    "profile_cudagraph_memory",
)
#: vLLM's memory profile at start-up, before the KV cache is sized and before graphs are
#: captured (vllm/v1/worker/gpu_worker.py `determine_available_memory` -> gpu_model_runner.py
#: `profile_run` -> `_dummy_run(max_num_tokens)` + `_dummy_sampler_run`; V0 worker/worker.py
#: `determine_num_available_blocks` -> model_runner.py `profile_run`; graphs come later, in
#: `compile_or_warm_up_model` -> `capture_model`): a frame of it places the OOM in the profile
#: run's dummy batch, which is phase "warmup"
VLLM_PROFILE_RUN = (
    "profile_run",
    "_dummy_run",
    "_dummy_sampler_run",
    "determine_available_memory",
    "determine_num_available_blocks",
)


# A loader's progress bar that had not finished when the OOM came: the weights were still being
# placed (transformers' "Loading checkpoint shards", diffusers' "Loading pipeline components",
# accelerate's "Loading weights"), tqdm "k/N" with k < N
_LOADING = ("Loading checkpoint shards", "Loading pipeline components", "Loading weights")
_BAR = re.compile(r"\|\s{0,3}(?P<k>\d{1,6})/(?P<n>\d{1,6})\s{0,3}\[")


def _loading_bar(raw: str) -> bool:
    if "Loading" not in raw or not has_any(raw, _LOADING):
        return False
    bars = list(_BAR.finditer(raw))  # \r-joined bars: the last one is the state at the OOM
    return bool(bars) and int(bars[-1]["k"]) < int(bars[-1]["n"])


# torch.load restoring a CUDA storage onto the device recorded when it was saved
# (torch/serialization.py: `_cuda_deserialize`, called by `default_restore_location` when no
# map_location is given; `validate_cuda_device` names the saved device)
_RESTORE = ("in _cuda_deserialize", "in default_restore_location", "in validate_cuda_device")


# A loop's progress bar still at 0 of N after it has run for a while: "0%| | 0/52000
# [00:09<?, ?it/s]" (tqdm's `n/total [elapsed<remaining, rate]`): the loop began, its first
# iteration had been running for `elapsed` and none completed. Bars of loading and downloading
# (transformers' "Loading checkpoint shards", hub downloads) are not loops over inputs.
_ZERO_BAR = re.compile(r"\|\s{0,3}0/(?P<n>\d{1,9})\s{0,3}\[(?P<m>\d{1,3}):(?P<s>\d{2})")
_NOT_A_LOOP = ("Loading", "shards", "Fetching", "Downloading", "download", "Compiling")


def _first_step_bar(raw: str) -> bool:
    m = _ZERO_BAR.search(raw)
    if m is None or int(m["n"]) < 2 or int(m["m"]) * 60 + int(m["s"]) < 1:
        return False
    return not has_any(raw, _NOT_A_LOOP)


# nn.Module.__call__ (torch/nn/modules/module.py): ``_wrapped_call_impl`` (2.0+) calls
# ``_call_impl``, which runs ``forward``; a traceback cut at the first of them still shows the
# caller's line that ran the module (``outputs = model(**batch)``)
_MODULE_CALL = "in _wrapped_call_impl"


# A frame in PyTorch's own layer library: torch/nn/functional.py (F.relu, F.conv2d, F.linear,
# F.softmax, F.interpolate ...: each allocates its output, an activation) and the layers'
# forward methods under torch/nn/modules/ (conv.py `_conv_forward`, `forward`). A traceback cut
# at such a frame is inside a forward pass. Construction (`__init__`, `reset_parameters`: a
# layer built on the device allocates its weights) and module.py's placement (`to`, `cuda`,
# `convert`, `_apply`) are loads, read by the model_load needles, never here.
_NN_FRAME = re.compile(
    r'torch[\\/]{1,2}nn[\\/]{1,2}(?P<file>functional|modules[\\/]{1,2}\w{1,40})\.py", '
    r"line \d{1,7}, in (?P<fn>[\w<>]{1,80})"
)
_NN_FORWARD_FNS = frozenset({"forward", "_conv_forward", "_call_impl", "_wrapped_call_impl"})


def _nn_forward_frame(raw: str) -> bool:
    """Whether ``raw`` is a frame of torch.nn's forward computation (:data:`_NN_FRAME`)."""
    if "nn" not in raw or 'File "' not in raw:
        return False
    m = _NN_FRAME.search(raw)
    if m is None:
        return False
    return m["file"] == "functional" or m["fn"] in _NN_FORWARD_FNS


#: a line holding no needle of any phase is in none (one search instead of a test a phase)
_ANY_PHASE = needles_re(tuple(n for _, needles in _PHASES for n in needles)).search


def _frames(lines: Lines, facts: dict[str, Any]) -> None:
    found: dict[str, str] = {}
    prev = ""
    for raw in lines.text:
        if _MODULE_CALL in raw and 'File "' in raw and "(" in prev and 'File "' not in prev:
            facts.setdefault("module_call", clean(prev)[:200])
        prev = raw
        if "0/" in raw and _first_step_bar(raw):
            facts.setdefault("first_step_bar", clean(raw)[:300])
        if ("restore" in raw or "deserialize" in raw or "validate_cuda" in raw) and has_any(
            raw, _RESTORE
        ):
            facts.setdefault("restore_frame", clean(raw)[:300])
        if _loading_bar(raw):
            found["model_load"] = clean(raw)[:300]  # the latest unfinished load bar
            continue
        if ("apture" in raw or "profile_cudagraph" in raw) and has_any(raw, _GRAPH_CAPTURE):
            found.setdefault("cuda_graph_capture", clean(raw)[:300])
            continue
        if "arm" in raw and has_any(raw, _WARMUP):
            found.setdefault("warmup", clean(raw)[:300])
        if (
            ("profile" in raw or "dummy" in raw or "determine_" in raw)
            and ('File "' in raw or "(" in raw)  # a frame or its source line, not a log line
            and has_any(raw, VLLM_PROFILE_RUN)
        ):
            found.setdefault("warmup", clean(raw)[:300])
        if has_any(raw, _SERVING):
            found.setdefault("serving_step", clean(raw)[:300])
        if (
            'File "' not in raw
            and "empty_strided" not in raw
            and "(" not in raw
            and "_buffer = " not in raw  # a multi-line `self.k_buffer = [` shows its first line
        ):
            continue
        if _ANY_PHASE(raw) is not None:
            for phase, needles in _PHASES:
                if phase not in found and has_any(raw, needles):
                    found[phase] = clean(raw)[:300]
        if "forward" not in found and _nn_forward_frame(raw):
            found["forward"] = clean(raw)[:300]
    order = (*(p for p, _ in _PHASES[:4]), "cuda_graph_capture", "warmup")
    for phase in (*order, *(p for p, _ in _PHASES[4:])):
        if phase in found:
            facts["frame_phase"] = phase
            facts["frame_text"] = found[phase]
            return
    ctor = _constructor_frame(lines) or moved_to_device(lines.text)
    if ctor is not None:
        facts["frame_phase"] = "model_load"
        facts["frame_text"] = ctor
        return
    last = _innermost_frame(lines)
    if last is not None:
        facts["last_frame"] = last


# One traceback frame: `File "path", line N, in name`
_FRAME = re.compile(r'File "[^"\n]{1,400}", line \d{1,7}, in (?P<fn>[\w<>.]{1,80})')


def _innermost_frame(lines: Lines) -> str | None:
    """The innermost traceback frame (``File "train.py", line 32, in <module>``), else ``None``."""
    last: str | None = None
    for raw in lines.text:
        if 'File "' in raw and _FRAME.search(raw) is not None:
            last = clean(raw)[:200]
    return last


def _constructor_frame(lines: Lines) -> str | None:
    """The innermost traceback frame when it is a constructor (``__init__``), else ``None``.

    A library whose allocations happen in native code (CTranslate2's ``WhisperModel.__init__``
    calls ``ctranslate2.models.Whisper(model_path, device=...)``, which copies the weights to the
    device; ONNX Runtime's ``InferenceSession.__init__``; TensorRT engines) raises the OOM out of
    the Python constructor that built the model: no frame of a forward pass or a generate loop
    can lie below it, so the failure is at construction, i.e. while the weights are placed
    (phase ``model_load``). Only the innermost frame counts (an outer ``__init__`` of a trainer
    or app says nothing about where the allocation was). GitHub's markdown renders a pasted
    ``__init__`` as bold ``init``, so ``in init`` is read as the same frame.
    """
    last: tuple[str, str] | None = None
    for raw in lines.text:
        if 'File "' not in raw:
            continue
        for m in _FRAME.finditer(raw):
            last = (m["fn"], clean(raw)[:300])
    if last is None or last[0] not in {"__init__", "init"}:
        return None
    return last[1]


def frames_of(lines: Lines) -> dict[str, Any]:
    """The phase facts (``frame_phase``, ``frame_text``) of any log with a Python traceback or a
    loader's progress bar, whatever runtime printed the OOM (a generic ``CUDA error: out of
    memory`` under a PyTorch traceback is placed by its frames as surely as PyTorch's own)."""
    facts: dict[str, Any] = {}
    if any('File "' in raw or "Loading" in raw for raw in lines.text):
        _frames(lines, facts)
    return facts
