"""``oomkit estimate`` option checks: ranges before anything is built, ignored-flag warnings."""

from __future__ import annotations

import math

from oomkit.cli.output import print_warning
from oomkit.errors import InvalidSettingError
from oomkit.spec.settings import InferenceSettings
from oomkit.validate import MAX_CTX, MAX_DEVICES, MAX_LAYERS, MAX_TOKENS, check_int

__all__ = [
    "FLAG_NAMES",
    "check_count_options",
    "check_hf_runtime_quant",
    "parse_cpu_offload_gb",
    "parse_device_ordinals",
    "parse_draft_devices",
    "parse_tensor_split",
    "warn_ignored",
]

#: InferenceSettings field -> the CLI flag that sets it (for messages)
FLAG_NAMES: dict[str, str] = {
    "quant": "--quant",
    "ctx": "--ctx",
    "parallel": "--parallel",
    "batch_size": "--batch-size",
    "ubatch": "--ubatch",
    "cache_type_k": "--kv-dtype (-ctk/-ctv)",
    "cache_type_v": "--kv-dtype (-ctk/-ctv)",
    "kv_unified": "--kv-unified",
    "swa_full": "--swa-full",
    "flash_attn": "--flash-attn",
    "n_gpu_layers": "-ngl",
    "tensor_split": "--tensor-split",
    "split_mode": "--split-mode",
    "n_cpu_moe": "--n-cpu-moe",
    "mmap": "--mmap/--no-mmap",
    "llama_server": "--llama-server/--no-llama-server",
    "override_tensor": "--override-tensor",
    "tp": "--tp",
    "pp": "--pp",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "mem_fraction_static": "--mem-fraction-static",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "enforce_eager": "--enforce-eager",
    "disable_hybrid_swa_memory": "--disable-hybrid-swa-memory",
    "prompt_logprobs": "--prompt-logprobs",
    "llm_class": "--llm-class",
    "pooling": "--pooling",
    "enable_lora": "--enable-lora",
    "max_loras": "--max-loras",
    "max_lora_rank": "--max-lora-rank",
    "max_cpu_loras": "--max-cpu-loras",
    "fully_sharded_loras": "--fully-sharded-loras",
    "lora_dtype": "--lora-dtype",
    "cudagraph_specialize_lora": "--cudagraph-specialize-lora",
    "cpu_offload_bytes": "--cpu-offload-gb",
    "block_size": "--block-size",
    "overhead_bytes": "--overhead",
    "device_map": "--device-map",
    "max_memory_bytes": "--max-memory",
    "max_new_tokens": "--max-new-tokens",
    "draft_model": "--draft-model",
    "draft_quant": "--draft-quant",
    "draft_n_gpu_layers": "--draft-ngl",
    "draft_ctx": "--draft-ctx",
    "draft_cache_type_k": "--cache-type-k-draft",
    "draft_cache_type_v": "--cache-type-v-draft",
    "draft_devices": "--device-draft",
    "device_ordinals": "--device",
}


#: runtimes that load Hugging Face checkpoints: their --quant is an HF weight format
_HF_RUNTIMES = ("vllm", "sglang", "transformers")


def check_hf_runtime_quant(runtime: str, quant: str | None) -> None:
    """A GGUF file type (``Q4_K_M``) asked of vLLM, SGLang or transformers is a usage error
    naming the input, not an "unknown HF weight format": oomkit models GGUF quants for
    llama.cpp and the runtimes built on it (Ollama, LM Studio). (vLLM can load a single-file
    GGUF, ``vllm/model_executor/model_loader/gguf_loader.py``; oomkit has no measured run of
    that path to size it against, so it is not modelled.)"""
    if quant is None or runtime not in _HF_RUNTIMES:
        return
    from oomkit.errors import UnknownNameError
    from oomkit.quant.hf_formats import hf_format
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    try:
        hf_format(quant)
        return
    except UnknownNameError:
        pass
    try:
        ftype = llamacpp_ftype(quant)
    except UnknownNameError:
        return  # neither: the estimator's own "unknown format" error lists the valid ones
    raise InvalidSettingError(
        f"--quant {quant}: {ftype.name} is a GGUF (llama.cpp) quantization; oomkit models "
        f"GGUF quants for llama.cpp, Ollama and LM Studio, not {runtime}. Use -r llama.cpp or "
        "-r ollama, or an HF format for this runtime (e.g. awq, gptq, fp8, bf16)",
        setting="--quant",
        value=quant,
    )


def check_count_options(**values: int | None) -> None:
    """Range-check integer flags before any device or model is built (``--tp 1000000``)."""
    limits: dict[str, tuple[int, int]] = {
        "ctx": (1, MAX_CTX),
        "tp": (1, MAX_DEVICES),
        "pp": (1, MAX_DEVICES),
        "n_gpu_layers": (-1, MAX_LAYERS + 1),
        "n_cpu_moe": (0, MAX_LAYERS),
        "block_size": (1, 256),
        "draft_n_gpu_layers": (-1, MAX_LAYERS + 1),
        "draft_ctx": (0, MAX_CTX),  # llama.cpp -cd 0 = the default
        # transformers' GenerationConfig.validate refuses max_new_tokens <= 0
        "max_new_tokens": (1, MAX_CTX),
    }
    import sys

    click = sys.modules.get("click")  # the click-free estimate path must not import it
    ctx = click.get_current_context(silent=True) if click is not None else None
    for name, value in values.items():
        lo, hi = limits.get(name, (1, MAX_TOKENS))
        flag = FLAG_NAMES.get(name, "--" + name.replace("_", "-"))
        if ctx is not None and any(p.name == name for p in ctx.command.params):
            from oomkit.cli.args_command import typed_flag

            flag = typed_flag(ctx, name)  # as typed: `--max-model-len 0` was named "--ctx"
        elif ctx is None:  # estimate's click-free path
            from oomkit.cli.estimate_fast import TYPED

            flag = TYPED.get(name, flag)
        check_int(flag, value, lo=lo, hi=hi, optional=True)


def parse_tensor_split(text: str | None) -> tuple[float, ...] | None:
    """``"3,1"`` or ``"3/1"`` (llama.cpp accepts both separators) -> proportions."""
    if text is None:
        return None
    parts = [p for p in text.replace("/", ",").split(",")]
    out: list[float] = []
    for p in parts:
        try:
            x = float(p)
        except ValueError:
            x = math.nan
        if not math.isfinite(x) or x < 0:
            raise InvalidSettingError(
                f"--tensor-split must be non-negative numbers separated by commas (e.g. 3,1), "
                f"got {text[:80]!r}",
                setting="--tensor-split",
                value=text,
            )
        out.append(x)
    if len(out) > MAX_DEVICES or not any(x > 0 for x in out):
        raise InvalidSettingError(
            f"--tensor-split needs 1 to {MAX_DEVICES} proportions, not all 0, got {text[:80]!r}",
            setting="--tensor-split",
            value=text,
        )
    return tuple(out)


def _device_indices(text: str, flag: str, expected: str) -> tuple[int, ...]:
    """Distinct device indices from ``0,1`` or llama.cpp's names (``CUDA2,CUDA1``)."""
    out: list[int] = []
    for part in text.replace("/", ",").split(","):
        p = part.strip().upper()
        for prefix in ("CUDA", "ROCM", "VULKAN", "METAL"):  # llama.cpp's names, read as indices
            p = p.removeprefix(prefix)
        if not p.isdigit() or int(p) >= MAX_DEVICES or int(p) in out:
            raise InvalidSettingError(
                f"{flag} must be {expected}, got {text[:80]!r}", setting=flag, value=text
            )
        out.append(int(p))
    return tuple(out)


def parse_draft_devices(text: str | None) -> tuple[int, ...] | None:
    """``--device-draft 1`` or ``0,1``: 0-based indices of the ``--gpu`` list (llama.cpp's
    ``-devd CUDA1`` names a device; oomkit's GPUs are the ones ``--gpu`` lists, in order)."""
    if text is None:
        return None
    return _device_indices(
        text,
        "--device-draft",
        "distinct 0-based GPU indices of --gpu separated by commas (e.g. 1 or 0,1)",
    )


def parse_device_ordinals(text: str | None) -> tuple[int, ...] | None:
    """``--device CUDA2,CUDA1`` or ``2,1``: the backend index (CUDA ordinal) of each ``--gpu``
    in order, as llama.cpp's ``--device`` names them."""
    if text is None:
        return None
    return _device_indices(
        text,
        "--device",
        "distinct backend device indices separated by commas, one per --gpu in order "
        "(e.g. CUDA2,CUDA1 or 2,1)",
    )


def parse_cpu_offload_gb(value: float | None) -> int | None:
    """vLLM ``--cpu-offload-gb`` is GiB despite its name (``cpu_offload_gb * 1024**3``)."""
    if value is None:
        return None
    if not math.isfinite(value) or not 0 <= value <= 1 << 20:
        raise InvalidSettingError(
            f"--cpu-offload-gb must be a number in [0, 1048576] (GiB), got {value}",
            setting="--cpu-offload-gb",
            value=value,
        )
    return int(value * (1 << 30))


def warn_ignored(settings: InferenceSettings, runtime: str) -> None:
    """One stderr warning naming the flags ``runtime`` does not use (never silently dropped)."""
    from oomkit.estimate.checks import ignored_settings

    ignored = ignored_settings(settings, runtime)
    if ignored:
        flags = ", ".join(dict.fromkeys(FLAG_NAMES.get(f, f) for f in ignored))
        # a serving user's "--batch 64" means concurrent requests: name the flag that sets them
        # (oomkit plan writes --parallel as vLLM's --max-num-seqs / SGLang's
        # --max-running-requests)
        hint = (
            "; concurrent sequences are --max-num-seqs"
            if "parallel" in ignored and runtime in ("vllm", "sglang")
            else ""
        )
        print_warning(f"{runtime} does not use {flags}: ignored{hint}")


def context_product_error(
    err: InvalidSettingError, ctx: int | None, parallel: int | None
) -> InvalidSettingError:
    """``err`` re-worded when the context it rejects is one the runtime derived, not the
    user's ``--ctx``: llama.cpp's ``-c`` (and Ollama's ``OLLAMA_CONTEXT_LENGTH``) is shared by
    the ``-np`` sequences, so a run without ``--ctx`` asks for the model's context per sequence
    times ``--parallel`` (``llama_context``: ``n_ctx_seq = n_ctx / n_seq_max``). Naming
    ``--ctx``, which the user never gave, hid the input that was wrong.
    """
    value = err.value
    if (
        err.setting != "ctx"
        or not isinstance(value, int)
        or not parallel
        or parallel < 2
        or value == ctx
        or value % parallel
    ):
        return err
    per_seq = value // parallel
    given = f"--ctx {ctx}" if ctx is not None else f"the context ({per_seq})"
    out = InvalidSettingError(
        f"--parallel {parallel} x {given} per sequence = {value} tokens, above "
        f"the {MAX_CTX} one context can hold: give a smaller --parallel or a shorter --ctx",
        setting="--parallel",
        value=parallel,
    )
    out.__cause__ = err
    return out
