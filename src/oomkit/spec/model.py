"""ModelSpec: the architecture facts every estimator needs, independent of where they came from.

Field names copy Hugging Face ``config.json`` keys so a loader can be checked line by line.
Tensor names in :class:`TensorInfo` follow GGUF naming (``blk.{i}.attn_q.weight``) because
llama.cpp's quantizer chooses a type per tensor name, and the same table gives exact parameter
counts for safetensors checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

__all__ = [
    "LAYER_FULL",
    "LAYER_LINEAR",
    "LAYER_MAMBA",
    "LAYER_SLIDING",
    "MlaSpec",
    "MoESpec",
    "ModelSpec",
    "QuantizationSpec",
    "RecurrentSpec",
    "TensorInfo",
]

#: Layer kinds used in :attr:`ModelSpec.layer_types`.
LAYER_FULL = "full_attention"
LAYER_SLIDING = "sliding_attention"
LAYER_LINEAR = "linear_attention"  # gated delta-net / linear attention (Qwen3-Next)
LAYER_MAMBA = "mamba"  # Mamba/Mamba2 SSM mixer (Mamba, Granite-4 hybrid, Nemotron-H)


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorInfo:
    """One tensor of a checkpoint or of the derived layout.

    ``dtype`` is the storage type name (``"BF16"``, ``"Q4_K"``) when read from a header, else None.
    ``n_bytes`` is the exact stored size when read from a header, else None.
    """

    name: str
    shape: tuple[int, ...]
    role: str  # e.g. "token_embd", "output", "attn_q", "ffn_down_exps", "norm", "bias", "vision"
    layer: int | None = None
    dtype: str | None = None
    n_bytes: int | None = None
    n_params: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_params", prod(self.shape) if self.shape else 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class MoESpec:
    """Mixture-of-experts facts (Mixtral, Qwen-MoE, DeepSeek, gpt-oss, Llama-4)."""

    num_experts: int
    num_experts_per_tok: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    #: total intermediate size of the shared expert(s)
    #: (Qwen2-MoE ``shared_expert_intermediate_size``;
    #: DeepSeek ``n_shared_experts * moe_intermediate_size``)
    shared_expert_intermediate_size: int = 0
    #: layer indices that use a dense FFN of ``ModelSpec.intermediate_size`` instead of experts
    dense_layers: tuple[int, ...] = ()
    router_bias: bool = False
    expert_bias: bool = False
    shared_expert_gate: bool = False
    #: DeepSeek-V3 / GLM-4.5 ``e_score_correction_bias`` (GGUF ``exp_probs_b.bias``, [num_experts])
    score_correction_bias: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-4.7+)."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def latent_dim(self) -> int:
        """Elements cached per token per layer: kv_lora_rank + qk_rope_head_dim (e.g. 576)."""
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True, slots=True, kw_only=True)
class RecurrentSpec:
    """Per-sequence state of SSM / linear-attention layers (constant in context length).

    ``conv_state_elements`` and ``ssm_state_elements`` are per sequence per layer; llama.cpp
    stores both in f32 (the "RS buffer").
    """

    kind: str  # "mamba" | "mamba2" | "gated_delta_net"
    d_inner: int
    d_state: int
    d_conv: int
    n_groups: int = 1
    n_heads: int = 0
    head_dim: int = 0
    dt_rank: int = 0
    #: gated delta-net: number of key heads / key head dim (value heads/dim in n_heads/head_dim)
    n_k_heads: int = 0
    k_head_dim: int = 0
    conv_state_elements: int
    ssm_state_elements: int
    #: depthwise conv1d has a bias (Mamba ``use_conv_bias``, Granite ``mamba_conv_bias``)
    conv_bias: bool = True
    #: in/out projections have biases (Mamba ``use_bias``, Granite ``mamba_proj_bias``)
    proj_bias: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class QuantizationSpec:
    """A pre-quantized HF checkpoint's ``quantization_config`` (GPTQ, AWQ, fp8, bnb, mxfp4...)."""

    method: str  # "gptq", "awq", "fp8", "bitsandbytes_4bit", "bitsandbytes_8bit", "mxfp4"
    bits: int | None = None
    group_size: int | None = None
    weight_block_size: tuple[int, ...] | None = None
    modules_to_not_convert: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """Architecture facts of one model. Dimensions copy HF config.json names."""

    name: str
    architecture: str  # HF ``architectures[0]``, e.g. "LlamaForCausalLM"
    model_type: str  # HF ``model_type``, e.g. "llama"
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int  # K/Q head dim (explicit config ``head_dim`` wins over hidden/heads)
    v_head_dim: int  # V head dim (equals head_dim except for MLA and a few models)
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # q/k/v projection biases
    attention_out_bias: bool = False  # o_proj bias
    mlp_bias: bool = False
    mlp_gated: bool = True  # gate+up+down (SwiGLU/GeGLU) vs up+down
    norm_type: str = "rms"  # "rms" | "layer" (LayerNorm has a bias) | "layer_no_bias" (Cohere)
    qk_norm: bool = False
    #: one entry per layer, LAYER_* constants above
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    #: per-layer KV heads when layers differ (None: all layers use num_key_value_heads)
    kv_heads_per_layer: tuple[int, ...] | None = None
    moe: MoESpec | None = None
    mla: MlaSpec | None = None
    recurrent: RecurrentSpec | None = None
    #: parameters of vision/audio towers and projectors not in the text tensor table
    multimodal_params: int = 0
    #: exact tensors from a checkpoint header (safetensors/GGUF); None when derived from config
    tensors: tuple[TensorInfo, ...] | None = None
    #: the published exact parameter count, when known
    declared_params: int | None = None
    torch_dtype: str | None = None  # config ``torch_dtype``/``dtype`` ("bfloat16"...)
    quantization: QuantizationSpec | None = None
    source: str = "config"  # "catalog" | "config" | "safetensors" | "gguf" | "hub"
    assumptions: tuple[str, ...] = ()
    #: ``rope_scaling`` type ("llama3", "yarn", "longrope", "linear", "dynamic"), None without
    rope_scaling_type: str | None = None
    #: rows of a learned absolute position embedding (GPT-2 ``n_positions``, OPT
    #: ``max_position_embeddings + 2``, BERT ``max_position_embeddings``); 0 for RoPE/ALiBi models
    position_embedding_rows: int = 0
    #: BERT-style token type (segment) embedding rows; 0 for decoders
    type_vocab_size: int = 0
    #: bidirectional encoder (BERT, RoBERTa): no KV cache is kept between calls
    is_encoder: bool = False
    #: multi-token-prediction layers in the HF checkpoint (DeepSeek-V3, GLM-4.5
    #: ``num_nextn_predict_layers``); not part of ``num_hidden_layers``
    num_nextn_predict_layers: int = 0
    #: attention and MLP read the same normed input (Falcon ``parallel_attn``, Cohere, GPT-J)
    parallel_attn: bool = False
    #: Falcon-40B/180B layout: two LayerNorms per layer (``ln_attn``, ``ln_mlp``)
    new_decoder_architecture: bool = False
    #: OPT-350m: embeddings of this width, projected to/from ``hidden_size``
    word_embed_proj_dim: int | None = None
    #: the stack ends in a final norm (False for OPT-350m ``do_layer_norm_before=false``)
    final_norm: bool = True

    def __post_init__(self) -> None:
        if not self.layer_types:
            object.__setattr__(self, "layer_types", (LAYER_FULL,) * self.num_hidden_layers)
        if len(self.layer_types) != self.num_hidden_layers:
            raise ValueError(
                f"layer_types has {len(self.layer_types)} entries for "
                f"{self.num_hidden_layers} layers in '{self.name}'"
            )

    def kv_heads(self, layer: int) -> int:
        """KV heads of ``layer`` (per-layer override or the global value)."""
        if self.kv_heads_per_layer is not None:
            return self.kv_heads_per_layer[layer]
        return self.num_key_value_heads

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def attention_layers(self) -> tuple[int, ...]:
        """Indices of layers with a KV cache (full or sliding attention)."""
        return tuple(i for i, t in enumerate(self.layer_types) if t in (LAYER_FULL, LAYER_SLIDING))

    def recurrent_layers(self) -> tuple[int, ...]:
        """Indices of layers with constant-size recurrent state (SSM / linear attention)."""
        return tuple(i for i, t in enumerate(self.layer_types) if t in (LAYER_LINEAR, LAYER_MAMBA))
