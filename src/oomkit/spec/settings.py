"""Settings of one run, in the runtimes' own vocabulary. ``None`` means "the runtime's default"."""

from __future__ import annotations

import math
from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.validate import (
    MAX_BYTES,
    MAX_CTX,
    MAX_DEVICES,
    MAX_LAYERS,
    MAX_TOKENS,
    check_bool,
    check_choice,
    check_fraction,
    check_int,
    check_str,
)

__all__ = ["InferenceSettings", "TrainingSettings"]

#: vLLM ``CacheConfig.block_size`` (vllm/config/cache.py ``BlockSize`` literal)
_VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceSettings:
    """Options shared by the inference estimators (CLI long options in snake_case)."""

    runtime: str = "llama.cpp"  # "llama.cpp" | "ollama" | "vllm" | "sglang" | "transformers"
    quant: str | None = None  # GGUF file type ("Q4_K_M") or HF dtype/format ("bf16", "fp8", "nf4")
    ctx: int | None = None  # n_ctx / num_ctx / max_model_len
    parallel: int | None = None  # llama.cpp -np, parallel sequences, transformers batch
    batch_size: int | None = None  # llama.cpp -b (logical batch)
    ubatch: int | None = None  # llama.cpp -ub (physical batch)
    cache_type_k: str | None = None  # f16, bf16, q8_0, q4_0, ... / vLLM "auto" | "fp8"
    cache_type_v: str | None = None
    kv_unified: bool | None = None
    swa_full: bool | None = None
    flash_attn: bool | None = None  # None = runtime default ("auto" in llama.cpp)
    n_gpu_layers: int | None = None  # None = all layers (-ngl 999)
    tensor_split: tuple[float, ...] | None = None
    split_mode: str | None = None  # "layer" | "row" | "none"
    n_cpu_moe: int | None = None  # llama.cpp --n-cpu-moe N: experts of the first N layers on CPU
    #: llama.cpp -ot PATTERN=BUFFER rules; expert tensors sent to CPU become n_cpu_moe
    override_tensor: tuple[str, ...] | None = None
    mmap: bool | None = None
    tp: int | None = None  # vLLM/SGLang tensor parallel size
    pp: int | None = None  # pipeline parallel size
    gpu_memory_utilization: float | None = None  # vLLM fraction of total memory per instance
    mem_fraction_static: float | None = None  # SGLang
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool | None = None
    cpu_offload_bytes: int | None = None  # vLLM --cpu-offload-gb (converted to bytes)
    block_size: int | None = None  # vLLM KV block size in tokens
    overhead_bytes: int | None = None  # user override of runtime overhead per GPU
    max_new_tokens: int | None = None  # transformers generate()
    attn_implementation: str | None = None  # transformers: "eager" | "sdpa" | "flash_attention_2"
    cache_implementation: str | None = None  # transformers: "dynamic" | "static"

    def __post_init__(self) -> None:
        """Validate every field (types, ranges); ``n_gpu_layers=-1`` becomes None (all layers).

        Raises:
            InvalidSettingError: one line naming the field and the allowed range.
        """
        check_str("runtime", self.runtime, optional=False)
        for name in ("quant", "cache_type_k", "cache_type_v"):
            check_str(name, getattr(self, name))
        for name in ("attn_implementation", "cache_implementation"):
            check_str(name, getattr(self, name))
        for name in ("kv_unified", "swa_full", "flash_attn", "mmap", "enforce_eager"):
            check_bool(name, getattr(self, name))
        check_int("ctx", self.ctx, lo=1, hi=MAX_CTX, optional=True)
        for name in ("parallel", "batch_size", "ubatch", "max_num_seqs", "max_num_batched_tokens"):
            check_int(name, getattr(self, name), lo=1, hi=MAX_TOKENS, optional=True)
        # llama.cpp: a negative n_gpu_layers means all layers (llama.h llama_model_params);
        # only -1 is accepted, as the CLI documents, anything lower is a typo
        check_int("n_gpu_layers", self.n_gpu_layers, lo=-1, hi=MAX_LAYERS + 1, optional=True)
        if self.n_gpu_layers == -1:
            object.__setattr__(self, "n_gpu_layers", None)
        check_int("n_cpu_moe", self.n_cpu_moe, lo=0, hi=MAX_LAYERS, optional=True)
        check_int("tp", self.tp, lo=1, hi=MAX_DEVICES, optional=True)
        check_int("pp", self.pp, lo=1, hi=MAX_DEVICES, optional=True)
        check_fraction("gpu_memory_utilization", self.gpu_memory_utilization)
        check_fraction("mem_fraction_static", self.mem_fraction_static)
        check_int("cpu_offload_bytes", self.cpu_offload_bytes, lo=0, hi=MAX_BYTES, optional=True)
        check_int("overhead_bytes", self.overhead_bytes, lo=0, hi=MAX_BYTES, optional=True)
        # vLLM CacheConfig.block_size: BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]
        if self.block_size is not None:
            check_int("block_size", self.block_size, lo=1, hi=256)
            if self.block_size not in _VLLM_BLOCK_SIZES:
                raise InvalidSettingError(
                    f"block_size must be one of {', '.join(map(str, _VLLM_BLOCK_SIZES))} "
                    f"(vLLM CacheConfig), got {self.block_size}",
                    setting="block_size",
                    value=self.block_size,
                )
        check_int("max_new_tokens", self.max_new_tokens, lo=0, hi=MAX_CTX, optional=True)
        check_choice("split_mode", self.split_mode, ("layer", "row", "none"))
        if self.override_tensor is not None:
            ot = self.override_tensor
            if isinstance(ot, list):
                ot = tuple(ot)
                object.__setattr__(self, "override_tensor", ot)
            if not isinstance(ot, tuple) or not all(
                isinstance(r, str) and "=" in r and len(r) < 1024 for r in ot
            ):
                raise InvalidSettingError(
                    "override_tensor must be PATTERN=BUFFER rules (e.g. 'exps=CPU'), got "
                    f"{self.override_tensor!r}"[:200],
                    setting="override_tensor",
                    value=self.override_tensor,
                )
        if self.tensor_split is not None:
            ts = self.tensor_split
            if isinstance(ts, list):
                ts = tuple(ts)
                object.__setattr__(self, "tensor_split", ts)
            ok = isinstance(ts, tuple) and 0 < len(ts) <= MAX_DEVICES
            ok = ok and all(
                not isinstance(x, bool)
                and isinstance(x, int | float)
                and math.isfinite(x)
                and 0 <= x < 1e12
                for x in ts
            )
            if not ok or not any(x > 0 for x in ts):
                raise InvalidSettingError(
                    f"tensor_split must be 1 to {MAX_DEVICES} non-negative finite proportions "
                    f"(one per GPU, not all 0), got {self.tensor_split!r}"[:200],
                    setting="tensor_split",
                    value=self.tensor_split,
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingSettings:
    """Options of a fine-tuning run."""

    method: str = "full"  # "full" | "lora" | "qlora"
    optimizer: str = "adamw"  # "adamw" | "adamw8bit" | "sgd" | "adafactor"
    micro_batch: int = 1
    seq: int = 2048
    grad_checkpointing: bool = False
    zero: int = 0  # 0..3; FSDP FULL_SHARD is zero=3
    fsdp: bool = False
    gpus: int = 1
    lora_rank: int = 16
    dtype: str = "bf16"
    grad_accum: int = 1

    def __post_init__(self) -> None:
        check_choice("method", self.method, ("full", "lora", "qlora"), optional=False)
        check_str("optimizer", self.optimizer, optional=False)
        check_str("dtype", self.dtype, optional=False)
        check_int("micro_batch", self.micro_batch, lo=1, hi=MAX_TOKENS)
        check_int("seq", self.seq, lo=1, hi=MAX_CTX)
        check_int("zero", self.zero, lo=0, hi=3)
        check_int("gpus", self.gpus, lo=1, hi=MAX_DEVICES)
        check_int("lora_rank", self.lora_rank, lo=1, hi=1 << 16)
        check_int("grad_accum", self.grad_accum, lo=1, hi=MAX_TOKENS)
        check_bool("grad_checkpointing", self.grad_checkpointing, optional=False)
        check_bool("fsdp", self.fsdp, optional=False)
