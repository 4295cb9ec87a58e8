"""Settings of one run, in the runtimes' own vocabulary. ``None`` means "the runtime's default"."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["InferenceSettings", "TrainingSettings"]


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
    #: the runtime release or date the run uses ("0.6.3", "b4500", "2024-06"): picks the
    #: runtime generation (oomkit.estimate.generations); None = the newest
    runtime_version: str | None = None


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
