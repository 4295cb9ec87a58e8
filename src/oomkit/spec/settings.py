"""Settings of one run, in the runtimes' own vocabulary. ``None`` means "the runtime's default"."""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.spec.settings_checks import (
    SPECULATIVE_METHODS,
    check_block_size,
    check_device_ordinals,
    check_draft_settings,
    check_max_memory,
    check_override_tensor,
    check_speculative_settings,
    check_tensor_split,
)
from oomkit.spec.settings_lora import check_lora_settings
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

__all__ = [
    "FSDP_STRATEGIES",
    "GRAD_CHECKPOINTING",
    "LOSS_IMPLS",
    "MIXED_PRECISION",
    "OPTIMIZERS",
    "SPECULATIVE_METHODS",
    "TRAIN_METHODS",
    "InferenceSettings",
    "TrainingSettings",
]


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
    #: SGLang ``--disable-hybrid-swa-memory``: one uniform token pool for sliding-window models
    #: (:mod:`oomkit.estimate.sglang_swa`)
    disable_hybrid_swa_memory: bool | None = None
    #: vLLM: requests ask for prompt log-probs (``SamplingParams(prompt_logprobs=...)``, as
    #: lm-evaluation-harness's loglikelihood tasks do): the sampler's [prompt tokens, vocab]
    #: fp32 tensors, outside the profiled budget (:mod:`oomkit.estimate.vllm_logprobs`)
    prompt_logprobs: bool | None = None
    #: vLLM: the run drives the offline ``vllm.LLM`` class (a Python script,
    #: lm-evaluation-harness ``--model vllm``) rather than ``vllm serve``: V1 engines take
    #: ``UsageContext.LLM_CLASS``'s larger ``max_num_batched_tokens`` default
    #: (:func:`oomkit.estimate.vllm_engines.v1_batch_defaults`); None/False = the server's
    llm_class: bool | None = None
    #: vLLM: the model runs the pooling runner (an embedding/classify/reward model, ``LLM.embed``):
    #: the profile run calls ``_dummy_pooler_run``, not ``_dummy_sampler_run``
    #: (vllm/v1/worker/gpu_model_runner.py ``profile_run``), and Model Runner V2's defaults
    #: (0.22-0.28) cover generative models only (``runner_type == "generate"``)
    pooling: bool | None = None
    #: llama.cpp: the run is ``llama-server`` (an HTTP front end such as llmfit's bench talks to
    #: it): from PR #23861 (June 2026) it reserves outputs for its ``-np`` sequences only, not
    #: the whole micro-batch (:mod:`oomkit.estimate.llamacpp_outputs`); None/False = the C API
    #: default that llama-bench / llama-cli keep (``n_outputs_max = n_batch``)
    llama_server: bool | None = None
    #: vLLM ``--enable-lora``: every LoRA-capable layer gets ``max_loras`` slots of
    #: ``max_lora_rank`` (vllm/config/lora.py ``LoRAConfig``; :mod:`oomkit.estimate.vllm_lora`)
    enable_lora: bool | None = None
    max_loras: int | None = None  # --max-loras; None = vLLM's 1
    max_lora_rank: int | None = None  # --max-lora-rank; None = 16
    max_cpu_loras: int | None = None  # --max-cpu-loras (CPU cache; must be >= max_loras)
    fully_sharded_loras: bool | None = None  # --fully-sharded-loras
    lora_dtype: str | None = None  # --lora-dtype auto | float16 | bfloat16
    #: ``compilation_config.cudagraph_specialize_lora``; None = the release's default
    cudagraph_specialize_lora: bool | None = None
    cpu_offload_bytes: int | None = None  # vLLM --cpu-offload-gb (converted to bytes)
    block_size: int | None = None  # vLLM KV block size in tokens
    overhead_bytes: int | None = None  # user override of runtime overhead per GPU
    max_new_tokens: int | None = None  # transformers generate()
    attn_implementation: str | None = None  # transformers: "eager" | "sdpa" | "flash_attention_2"
    cache_implementation: str | None = None  # transformers: "dynamic" | "static"
    #: transformers: "auto" (from_pretrained(device_map="auto"): accelerate places modules,
    #: offloading what does not fit to CPU) | "sequential" (device_map="sequential", or a map
    #: the caller computed with ``infer_auto_device_map``: each GPU filled to its max_memory in
    #: turn, no balancing) | "none" (no device_map, then
    #: ``model.to("cuda")``: every weight on the first GPU, no offload) | None (unset: the
    #: "auto" placement, but a fit only by CPU offload is a blocker; see estimate.transformers)
    device_map: str | None = None
    #: transformers/accelerate ``from_pretrained(max_memory={0: "24000MiB", ...})``: the bytes
    #: of WEIGHTS accelerate may place on each GPU (activations, the KV cache and the CUDA
    #: context come on top at ``generate()``); one value: every GPU; several: GPU i's cap in
    #: ``Hardware.devices`` order. None = accelerate's default (free memory). See
    #: :func:`oomkit.estimate.transformers.auto_device_map`
    max_memory_bytes: tuple[int, ...] | None = None
    #: transformers ``from_pretrained(..., offload_folder=DIR)`` with a ``device_map``: the
    #: modules accelerate cannot fit in CPU RAM go to disk (memory-mapped) instead of failing
    #: the load; None/False = no folder (accelerate's "disk" placement is an error). See
    #: :func:`oomkit.estimate.transformers_placement.split_cpu_disk`
    offload_folder: bool | None = None
    #: the runtime release or date the run uses ("0.6.3", "b4500", "2024-06"): picks the
    #: runtime generation (oomkit.estimate.generations); None = the newest
    runtime_version: str | None = None
    #: llama.cpp speculative decoding (``llama-server -md``): the draft model, a catalog name
    #: or a local GGUF like the main model; the draft_* fields below need it
    #: (:mod:`oomkit.estimate.llamacpp_draft`)
    draft_model: str | None = None
    draft_quant: str | None = None  # the draft's GGUF type when draft_model is a catalog name
    #: ``-ngld``; None = llama.cpp's default (0 before PR #15434, all layers since); -1 = all
    draft_n_gpu_layers: int | None = None
    draft_ctx: int | None = None  # ``-cd``; None = the slot context of the main model
    draft_cache_type_k: str | None = None  # ``-ctkd`` (PR #13782); None = f16
    draft_cache_type_v: str | None = None  # ``-ctvd``
    #: ``-devd``: indices of the GPUs (in ``Hardware.devices`` order) the draft uses;
    #: None = every GPU, as the main model
    draft_devices: tuple[int, ...] | None = None
    #: vLLM/SGLang speculative decoding (:mod:`oomkit.estimate.speculative`): the method in
    #: vLLM's spelling ("mtp" | "eagle" | "eagle3" | "draft_model" | "ngram"; SGLang's NEXTN is
    #: "mtp", STANDALONE "draft_model"); None = no speculative decoding
    speculative_method: str | None = None
    #: the draft model / EAGLE head (a catalog name, HF path or repo id); MTP: None (the
    #: target checkpoint's own ``num_nextn_predict_layers``)
    speculative_model: str | None = None
    #: vLLM ``num_speculative_tokens``; SGLang ``--speculative-num-steps``
    num_speculative_tokens: int | None = None
    speculative_eagle_topk: int | None = None  # SGLang ``--speculative-eagle-topk``
    speculative_num_draft_tokens: int | None = None  # SGLang ``--speculative-num-draft-tokens``
    #: vLLM ``--speculative-config``'s other keys (``prompt_lookup_max``, ``kv_cache_dtype``,
    #: ...) as a JSON object, carried into the printed command as given; the memory-changing
    #: ones are not priced (:mod:`oomkit.estimate.speculative_keys`)
    speculative_extra: str | None = None
    #: llama.cpp ``--device``: the backend ordinal (CUDA index) of each GPU in
    #: ``Hardware.devices`` order, when the list picks or reorders the backend's devices
    #: (``--device CUDA2,CUDA1``: (2, 1)); None = GPU i is ordinal i. ``-sm row`` spreads a
    #: matrix's rows by ``tensor_split`` indexed by ordinal while layers follow the list
    #: position (:func:`oomkit.estimate.llamacpp_placement.row_shares`)
    device_ordinals: tuple[int, ...] | None = None

    #: ``TrainingSettings.method``
    def __post_init__(self) -> None:
        """Validate every field (types, ranges); ``n_gpu_layers=-1`` becomes None (all layers).

        Raises:
            InvalidSettingError: one line naming the field and the allowed range.
        """
        check_str("runtime", self.runtime, optional=False)
        for name in ("quant", "cache_type_k", "cache_type_v"):
            check_str(name, getattr(self, name))
        for name in ("attn_implementation", "cache_implementation", "runtime_version"):
            check_str(name, getattr(self, name))
        for name in (
            "kv_unified",
            "swa_full",
            "flash_attn",
            "mmap",
            "enforce_eager",
            "disable_hybrid_swa_memory",
            "prompt_logprobs",
            "llm_class",
            "pooling",
            "llama_server",
            "offload_folder",
        ):
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
        check_block_size(self)
        check_int("max_new_tokens", self.max_new_tokens, lo=0, hi=MAX_CTX, optional=True)
        check_lora_settings(self)
        check_choice("split_mode", self.split_mode, ("layer", "row", "none"))
        check_draft_settings(self)
        check_speculative_settings(self)
        check_device_ordinals(self)
        check_choice("device_map", self.device_map, ("auto", "sequential", "none"))
        check_max_memory(self)
        check_override_tensor(self)
        check_tensor_split(self)


#: ``TrainingSettings.method``
TRAIN_METHODS: tuple[str, ...] = ("full", "lora", "qlora")
#: ``TrainingSettings.optimizer`` (torch.optim / bitsandbytes.optim / transformers names)
OPTIMIZERS: tuple[str, ...] = (
    "adamw",
    "adamw8bit",
    "paged_adamw",
    "paged_adamw8bit",
    "sgd",
    "sgd_momentum",
    "adafactor",
    "lion",
    "torchao_adamw8bit",
)
#: ``TrainingSettings.mixed_precision`` (accelerate/Trainer vocabulary; "no" = fp32 compute)
MIXED_PRECISION: tuple[str, ...] = ("bf16", "fp16", "no")
#: ``TrainingSettings.grad_checkpointing``
GRAD_CHECKPOINTING: tuple[str, ...] = ("none", "full", "selective")
#: ``TrainingSettings.fsdp_strategy`` (torch.distributed.fsdp.ShardingStrategy member names)
FSDP_STRATEGIES: tuple[str, ...] = ("FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD")
#: ``TrainingSettings.loss``: "standard" materialises B x S x V logits; "chunked" upcasts them
#: chunk by chunk (torchtune CEWithChunkedOutputLoss); "fused" never materialises them
#: (Liger ``LigerFusedLinearCrossEntropyLoss``)
LOSS_IMPLS: tuple[str, ...] = ("standard", "chunked", "fused")
_ATTN_IMPLS: tuple[str, ...] = ("sdpa", "flash_attention_2", "eager")


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidSettingError(
            f"Invalid {name} '{value}': choose one of {', '.join(allowed)}.",
            setting=name,
            value=value,
        )


def _whole(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSettingError(
            f"Invalid {name} {value!r}: it must be a whole number.", setting=name, value=value
        )


def _at_least(name: str, value: int, low: int) -> None:
    if value < low:
        raise InvalidSettingError(
            f"Invalid {name} {value}: it must be at least {low}.", setting=name, value=value
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingSettings:
    """Options of a fine-tuning run (CLI long options in snake_case).

    ``grad_checkpointing`` also accepts ``True``/``False`` (read as ``"full"``/``"none"``) so code
    written against the first version of this class keeps working. ``zero`` > 0 means DeepSpeed
    ZeRO; ``fsdp`` means PyTorch FSDP with ``fsdp_strategy``; neither (and ``gpus * nodes`` > 1)
    means DDP. ``gpus`` counts GPUs per node.

    Raises:
        InvalidSettingError: a value out of range or two options that contradict each other.
    """

    method: str = "full"  # "full" | "lora" | "qlora"
    optimizer: str = "adamw"  # OPTIMIZERS
    #: torch optimizer implementation: "foreach" (torch default on CUDA), "fused"
    #: (``fused=True``, HF ``adamw_torch_fused``), "forloop" (``foreach=False``, HF ``adamw_hf``)
    optimizer_impl: str = "foreach"
    mixed_precision: str = "bf16"  # "bf16" | "fp16" | "no"
    #: fp32 master weights kept by the optimizer under mixed precision (DeepSpeed, FSDP
    #: MixedPrecision, Apex/AMP); False = pure 16-bit training (torchtune ``dtype: bf16``)
    master_weights: bool = True
    micro_batch: int = 1
    seq: int = 2048
    grad_checkpointing: str = "none"  # "none" | "full" | "selective"
    zero: int = 0  # 0..3 DeepSpeed ZeRO stage
    fsdp: bool = False
    fsdp_strategy: str = "FULL_SHARD"
    gpus: int = 1  # per node
    nodes: int = 1
    tp: int = 1  # tensor parallel degree (Megatron-style column/row split)
    sp: bool = False  # sequence parallel (with tp > 1)
    lora_rank: int = 16
    #: HF module names (``q_proj``, ``v_proj``...), ``("all-linear",)``, or None for PEFT's
    #: default for the architecture
    lora_targets: tuple[str, ...] | None = None
    offload_optimizer: bool = False
    offload_params: bool = False
    loss: str = "standard"  # LOSS_IMPLS
    #: the training loop keeps the model's output logits alive through backward: "none" (HF
    #: Trainer drops ``outputs``), "compute" (bf16/fp16 logits kept), "fp32" (the model upcasts
    #: and the loop keeps them: torchtune recipes of 2024, ``self.output(h).float()``)
    held_logits: str = "none"
    #: ``optimizer.zero_grad(set_to_none=...)``: True (torch >= 2.0 default) frees gradients
    #: between steps; False (torch < 2.0 default, HF Trainer of 2022) keeps them allocated
    zero_grad_set_to_none: bool = True
    #: torch < 1.11 autograd: ``softmax`` saved its input as well as its output
    #: (pytorch/pytorch#64000, fixed by #65242 in torch 1.11), so eager attention kept one more
    #: ``heads x seq x seq`` tensor per layer until its backward
    softmax_saves_input: bool = False
    optimizer_in_backward: bool = False  # torchtune optimizer_in_bwd: step per parameter
    #: torchtune ``enable_activation_offloading``: saved activations go to pinned host memory in
    #: the forward and come back layer by layer in the backward
    activation_offloading: bool = False
    #: ``torch.compile`` of the decoder layers (torchtune ``compile: True``): AOTAutograd's
    #: min-cut partitioner recomputes pointwise intermediates (RMSNorm internals, SiLU) in
    #: backward instead of saving them (:mod:`oomkit.estimate.training_compile`)
    compiled: bool = False
    #: the loss is compiled too (torchtune >= 0.3 ``training.compile_loss``): fused upcast and
    #: cross-entropy keep the input logits and a logsumexp, no fp32 log-probs
    compiled_loss: bool = False
    attn_implementation: str = "sdpa"  # "sdpa" | "flash_attention_2" | "eager"
    #: dropout probability applied to every dropout the architecture has (embedding,
    #: attention probabilities, residual branches): None = the model config's own values
    #: (``ModelSpec.dropout``), 0 = none (a config edited to drop them)
    dropout: float | None = None
    #: allocator fragmentation margin as a fraction of the peak (None: documented default)
    fragmentation_fraction: float | None = None
    #: ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``: the allocator's margin and band are
    #: those measured with it (:mod:`oomkit.estimate.training_band`, family ``expandable``)
    expandable_segments: bool = False
    #: QLoRA prepared with PEFT's ``prepare_model_for_kbit_training`` (the PEFT docs' and the
    #: QLoRA notebook's recipe): every fp16/bf16 parameter that is not 4-bit (embeddings, norms,
    #: the output head, MoE experts transformers 5 leaves unquantized) is upcast to fp32, so the
    #: residual stream runs in fp32 under autocast and the frozen head is cast to 16 bits on
    #: every forward (peft/utils/other.py)
    kbit_prep: bool = False
    overhead_bytes: int | None = None  # CUDA context override per GPU
    dtype: str = "bf16"  # dtype the frozen base is loaded in (LoRA) / compute copy
    grad_accum: int = 1
    #: QLoRA of an MoE: transformers >= 5 fuses the experts into 3-D ``nn.Parameter``s that
    #: bitsandbytes' Linear4bit replacement never touches, so they stay in ``dtype``; False =
    #: transformers 4.x, whose per-expert ``nn.Linear`` modules are quantized to NF4
    #: (``--transformers-version``; the generation ``v5-fused-experts``)
    fused_experts_unquantized: bool = True

    def __post_init__(self) -> None:
        gc: object = self.grad_checkpointing
        if isinstance(gc, bool):
            object.__setattr__(self, "grad_checkpointing", "full" if gc else "none")
        if self.mixed_precision == "fp16" and self.dtype == "bf16":
            # the 16-bit copy (a LoRA base as loaded, the compute copy) is in the compute
            # dtype: an fp16 run echoed "mixed_precision=fp16 ... dtype=bf16"
            object.__setattr__(self, "dtype", "fp16")
        # types first (a float, NaN, bool or string where a count belongs is refused); the
        # ranges below say what each value means
        for name in ("micro_batch", "seq", "zero", "gpus", "nodes", "tp", "lora_rank"):
            _whole(name, getattr(self, name))
        _whole("grad_accum", self.grad_accum)
        check_int("seq", self.seq, lo=1, hi=MAX_CTX)
        check_int("gpus", self.gpus, lo=1, hi=MAX_DEVICES)
        check_int("overhead_bytes", self.overhead_bytes, lo=0, hi=MAX_BYTES, optional=True)
        for name in ("fsdp", "sp", "offload_optimizer", "offload_params", "master_weights",
                     "activation_offloading", "compiled", "compiled_loss",
                     "fused_experts_unquantized"):  # fmt: skip
            check_bool(name, getattr(self, name), optional=False)
        if self.dropout is not None and (
            not isinstance(self.dropout, int | float) or isinstance(self.dropout, bool)
        ):
            raise InvalidSettingError(
                f"Invalid dropout {self.dropout!r}: a probability in [0, 1).", setting="dropout"
            )
        _choice("method", self.method, TRAIN_METHODS)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _choice("mixed_precision", self.mixed_precision, MIXED_PRECISION)
        _choice("optimizer_impl", self.optimizer_impl, ("foreach", "fused", "forloop"))
        _choice("grad_checkpointing", self.grad_checkpointing, GRAD_CHECKPOINTING)
        _choice("fsdp_strategy", self.fsdp_strategy, FSDP_STRATEGIES)
        _choice("loss", self.loss, LOSS_IMPLS)
        _choice("held_logits", self.held_logits, ("none", "compute", "fp32"))
        _choice("attn_implementation", self.attn_implementation, _ATTN_IMPLS)
        for name, value in (
            ("micro_batch", self.micro_batch),
            ("seq", self.seq),
            ("gpus", self.gpus),
            ("nodes", self.nodes),
            ("tp", self.tp),
            ("lora_rank", self.lora_rank),
            ("grad_accum", self.grad_accum),
        ):
            _at_least(name, value, 1)
        check_int("micro_batch", self.micro_batch, lo=1, hi=MAX_TOKENS)
        if self.micro_batch * self.seq > MAX_TOKENS:  # no real step holds 2^30 tokens per GPU
            raise InvalidSettingError(
                f"micro_batch {self.micro_batch} x seq {self.seq} must be at most "
                f"{MAX_TOKENS} tokens per step",
                setting="micro_batch",
                value=self.micro_batch,
            )
        if not 0 <= self.zero <= 3:
            raise InvalidSettingError(
                f"Invalid zero stage {self.zero}: DeepSpeed ZeRO stages are 0, 1, 2 and 3.",
                setting="zero",
                value=self.zero,
            )
        if self.zero and self.fsdp:
            raise InvalidSettingError(
                "Invalid zero/fsdp combination: DeepSpeed ZeRO and FSDP are two engines; "
                "choose one.",
                setting="zero",
                value=self.zero,
            )
        if (self.offload_optimizer or self.offload_params) and not (self.zero or self.fsdp):
            raise InvalidSettingError(
                "Invalid offload: CPU offload needs DeepSpeed ZeRO (--zero) or FSDP (--fsdp).",
                # the flag the user gave (an error about --offload-params named --offload-optimizer)
                setting="offload_optimizer" if self.offload_optimizer else "offload_params",
            )
        if self.offload_optimizer and self.fsdp and not self.offload_params:
            # the estimate kept the states on the GPU, so the flag was a silent no-op
            raise InvalidSettingError(
                "Invalid offload_optimizer with fsdp: PyTorch FSDP has no optimizer-only "
                "offload; CPUOffload(offload_params=True) moves the parameters, gradients and "
                "optimizer step to the CPU: use offload_params (--offload-params).",
                setting="offload_optimizer",
            )
        if self.offload_params and self.zero and self.zero < 3:
            raise InvalidSettingError(
                f"Invalid offload_params with zero {self.zero}: DeepSpeed offloads parameters "
                "only at ZeRO-3.",
                setting="offload_params",
            )
        if self.sp and self.tp == 1:
            raise InvalidSettingError(
                "Invalid sp: sequence parallelism splits activations across the tensor-parallel "
                "group; set tp > 1.",
                setting="sp",
            )
        if (n := self.gpus * self.nodes) % self.tp:
            # not "--gpus {tp}": that count may be one the heads refuse (training_tp)
            divisors = ", ".join(str(t) for t in range(1, n + 1) if n % t == 0)
            fix = (
                f"give the GPUs with --gpus (e.g. --gpus {self.tp})"
                if self.tp > n
                else f"give a --tp that divides them ({divisors}; the model's attention heads "
                "must divide by it too)"
            )
            raise InvalidSettingError(
                f"Invalid tp {self.tp}: it must divide the {n} GPUs (gpus x nodes); {fix}.",
                setting="tp",
                value=self.tp,
            )
        if self.optimizer_in_backward and self.grad_accum > 1:
            raise InvalidSettingError(
                "Invalid optimizer_in_backward with grad_accum > 1: the step runs inside "
                "backward, so gradients cannot accumulate.",
                setting="optimizer_in_backward",
            )
        if self.method == "qlora" and self.mixed_precision == "no":
            raise InvalidSettingError(
                "Invalid mixed_precision 'no' with qlora: the NF4 base dequantizes to bf16/fp16.",
                setting="mixed_precision",
            )
        if self.kbit_prep and self.method != "qlora":
            raise InvalidSettingError(
                f"Invalid kbit_prep with method {self.method!r}: prepare_model_for_kbit_training "
                "upcasts a 4-bit model's other parameters; use it with qlora.",
                setting="kbit_prep",
            )
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise InvalidSettingError(
                f"Invalid dropout {self.dropout}: it must be in [0, 1).",
                setting="dropout",
                value=self.dropout,
            )
        frag = self.fragmentation_fraction
        if frag is not None and not 0.0 <= frag < 1.0:
            raise InvalidSettingError(
                f"Invalid fragmentation_fraction {frag}: it must be in [0, 1).",
                setting="fragmentation_fraction",
                value=frag,
            )

    @property
    def world_size(self) -> int:
        """GPUs in the job (``gpus`` per node x ``nodes``)."""
        return self.gpus * self.nodes

    @property
    def data_parallel(self) -> int:
        """Data-parallel replicas: world size / tensor-parallel degree."""
        return self.world_size // self.tp
