"""The fixes the PyTorch allocator rules propose (:mod:`oomkit.diagnose.rules_torch`): smaller
batches sized by the shortfall, allocator settings against fragmentation, a smaller or quantized
model, and the serving engines' headroom (CUDA graphs, sampler)."""

from __future__ import annotations

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.fixes import Fix, generic, size_text

__all__: list[str] = []


def _fb(n: int | None) -> str:
    return size_text(n)


def _alloc_env(e: OomEvent) -> str:
    return "PYTORCH_HIP_ALLOC_CONF" if e.kind == "hip_oom" else "PYTORCH_CUDA_ALLOC_CONF"


def _frag_fix(e: OomEvent, r: int) -> Fix:
    env = _alloc_env(e)
    if e.kind == "xpu_oom":
        return Fix(
            title="Release cached blocks between phases",
            why=f"{_fb(r)} is reserved by PyTorch but unallocated; the XPU allocator has no "
            "expandable segments, so return the cache before the large allocation.",
            commands=("torch.xpu.empty_cache()",),
            expected_saving_bytes=r,
        )
    return Fix(
        title="Let the allocator grow segments instead of splitting them",
        why=f"{_fb(r)} is reserved by PyTorch but unallocated (cached, fragmented); expandable "
        "segments let that memory serve the request (not supported on Windows: use "
        "max_split_size_mb there).",
        commands=(
            f"export {env}=expandable_segments:True",
            f"set {env}=max_split_size_mb:128   # Windows",
        ),
        expected_saving_bytes=r,
    )


#: PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp ``get_allocation_size``): a
#: request under kMinLargeAlloc (10 MiB) that no cached block serves needs a new segment of
#: kSmallBuffer (2 MiB, requests up to 1 MiB) or kLargeBuffer (20 MiB); a larger one its size
#: rounded up to kRoundLarge (2 MiB). Under 10 MiB usable no request over 1 MiB gets memory.
_MIN_LARGE_ALLOC = 10 << 20
_ROUND_LARGE = 2 << 20


def _largest_fitting(usable: int) -> int:
    """The largest tensor a new segment can give in ``usable`` bytes (0 under 10 MiB: only
    requests up to 1 MiB would, and a step's activations are larger)."""
    return usable // _ROUND_LARGE * _ROUND_LARGE if usable >= _MIN_LARGE_ALLOC else 0


def _batch_one_not_enough(x: int, usable: int, need: int) -> Fix:
    return Fix(
        title="Batch 1 is not enough: recompute activations or shorten the input",
        why=f"the failing tensor needs {_fb(x)} but only {_fb(max(0, usable))} can be found (it "
        f"needs ~{_fb(need)} more): under 10 MiB the allocator cannot give any request over "
        "1 MiB a new segment (CUDACachingAllocator get_allocation_size), so a batch cut makes "
        "room only where a cached block happens to fit it, and the step's other activations "
        "meet the same wall; what is already held (weights, optimizer state, stored "
        "activations) must shrink: "
        "checkpointing frees the stored activations, a shorter sequence (or smaller image) "
        "shrinks every one.",
        commands=("model.gradient_checkpointing_enable()   # transformers", "max_length //= 2"),
        expected_saving_bytes=None,
    )


def _batch_fixes(e: OomEvent, need: int | None) -> list[Fix]:
    out: list[Fix] = []
    x = e.requested_bytes
    if x is not None and need is not None and need > 0:
        largest = _largest_fitting(x - need)
        if largest == 0:
            return [_batch_one_not_enough(x, x - need, need), *_batch_fixes(e, None)[2:]]
        factor = -(-x // largest)
        out.append(
            Fix(
                title=f"Cut the batch size / input size by at least {factor}x",
                why=f"the failing tensor needs {_fb(x)} but only {_fb(x - need)} can be found "
                f"(it needs ~{_fb(need)} more); activation tensors scale linearly with batch and "
                f"sequence length (and with pixels for images), so {factor}x smaller frees "
                f"{_fb(x - x // factor)} of it.",
                commands=(f"batch_size = max(1, batch_size // {factor})",),
                # what the cut frees (the tensor shrinks to x / factor), not the shortfall
                expected_saving_bytes=x - x // factor,
            )
        )
    out.append(
        generic(
            "Recompute activations instead of storing them",
            "gradient (activation) checkpointing trades ~30% more compute for most of the "
            "activation memory in training.",
            ("model.gradient_checkpointing_enable()   # transformers",),
        )
    )
    out.append(
        generic(
            "Run in bf16/fp16",
            "half-precision activations and weights take half the bytes of fp32.",
            ("with torch.autocast('cuda', dtype=torch.bfloat16): ...",),
        )
    )
    return out


def _model_fixes() -> list[Fix]:
    return [
        generic(
            "Load the weights quantized (8-bit or 4-bit)",
            "4-bit weights take about a quarter of fp16 weights; 8-bit about half.",
            (
                "from transformers import BitsAndBytesConfig",
                "model = AutoModelForCausalLM.from_pretrained(name, "
                "quantization_config=BitsAndBytesConfig(load_in_4bit=True))",
            ),
        ),
        generic(
            "Spread or offload the model",
            "device_map='auto' places layers on other GPUs and then CPU RAM when one GPU is "
            "full; for training use LoRA/QLoRA or an 8-bit optimizer instead of full AdamW.",
            (
                "model = AutoModelForCausalLM.from_pretrained(name, device_map='auto', "
                "torch_dtype=torch.bfloat16)",
            ),
        ),
    ]


def _graph_fixes(e: OomEvent, short: int) -> tuple[Fix, ...]:
    """Fixes for an OOM in the engine's headroom (CUDA graphs, sampler, activations)."""
    return (
        Fix(
            title="Skip CUDA-graph capture: --enforce-eager",
            why="captured graphs keep one activation pool per batch size; eager mode needs none "
            f"(slower decoding). This allocation was short by {_fb(short)}.",
            commands=(
                "--enforce-eager   # vLLM",
                "--disable-cuda-graph   # SGLang",
                "torch.compile(model, mode='default')   # not 'reduce-overhead'",
            ),
            expected_saving_bytes=None,
        ),
        generic(
            "Capture graphs for fewer batch sizes / fewer concurrent sequences",
            "graph and sampler memory grow with the largest captured batch (max_num_seqs): "
            "vLLM V1 captures sizes 1, 2, 4, then every multiple of 8 up to 2 x max_num_seqs "
            "(at most 512; oomkit.estimate.vllm_cudagraph), and its CompilationConfig takes the "
            "list itself.",
            (
                "--max-num-seqs 64   # vLLM",
                """--compilation-config '{"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64]}'"""
                "   # vLLM V1 (0.8+)",
                "--cuda-graph-max-bs 16   # SGLang",
            ),
        ),
        *_batch_fixes(e, None)[:1],
    )


def _vllm_profile_fixes() -> tuple[Fix, ...]:
    """The levers of vLLM's profile batch (vllm/v1/worker/gpu_model_runner.py ``profile_run``
    -> ``_dummy_run(self.max_num_tokens)`` + ``_dummy_sampler_run``; V0 model_runner.py
    ``profile_run``: ``max_num_seqs`` sequences, ``max_num_batched_tokens`` tokens in all, which
    without chunked prefill is ``max(max_model_len, 2048)``, :mod:`oomkit.estimate.vllm`)."""
    return (
        generic(
            "Profile (and serve) a smaller batch: fewer batched tokens and sequences",
            "the profile run's dummy batch is max_num_batched_tokens tokens (activations linear "
            "in them; chunked prefill splits longer prompts) and its sampler pass holds logits "
            "for max_num_seqs rows; without chunked prefill (V0 engines, some multimodal models) "
            "the batch is max(max_model_len, 2048) tokens, so there the context is the lever.",
            (
                "--max-num-batched-tokens 2048   # vLLM",
                "--max-num-seqs 64   # vLLM",
                "--max-model-len 8192   # vLLM without chunked prefill",
            ),
        ),
    )


def _unaccounted_fix(e: OomEvent, unaccounted: int) -> Fix:
    """Stop what holds the card outside this process's allocator (T6)."""
    return Fix(
        title="Find and stop what else holds the GPU",
        why=f"{_fb(unaccounted)} of the card is not this process's PyTorch memory.",
        commands=(
            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"
            if e.kind != "hip_oom"
            else "rocm-smi --showpids --showmeminfo vram",
        ),
        expected_saving_bytes=unaccounted,
    )


def server_batch_fixes(runtime: str | None) -> tuple[Fix, ...]:
    """A serving engine's own batch levers, or ``()`` for any other runtime (revfix18e: a
    ``vllm serve`` log got "batch_size //= 2" and ``gradient_checkpointing_enable()``).

    A server has no batch_size argument and no backward: its step's activations are sized by
    the tokens it batches, ``--max-num-batched-tokens`` / ``--max-num-seqs`` in vLLM (and
    ``max_model_len`` where chunked prefill is off, :func:`_vllm_profile_fixes`),
    ``--chunked-prefill-size`` / ``--max-running-requests`` in SGLang
    (``server_args.py``), ``--max-batch-prefill-tokens`` in TGI (``launcher/src/main.rs``),
    ``--max_num_tokens`` / ``--max_batch_size`` in TensorRT-LLM (``trtllm-serve``).
    """
    if runtime == "vllm":
        return _vllm_profile_fixes()
    flags = {
        "sglang": ("--chunked-prefill-size 2048", "--max-running-requests 32"),
        "tgi": ("--max-batch-prefill-tokens 2048", "--max-batch-total-tokens 16384"),
        "tensorrt-llm": ("--max_num_tokens 2048", "--max_batch_size 8"),
    }.get(runtime or "")
    if flags is None:
        return ()
    return (
        generic(
            "Serve smaller batches: fewer batched tokens and requests",
            "a server's step activations are linear in the tokens it batches at once.",
            flags,
        ),
    )
