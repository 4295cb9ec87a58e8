"""ModelSpec: the architecture facts every estimator needs, independent of where they came from.

Field names copy Hugging Face ``config.json`` keys so a loader can be checked line by line.
Tensor names in :class:`TensorInfo` follow GGUF naming (``blk.{i}.attn_q.weight``) because
llama.cpp's quantizer chooses a type per tensor name, and the same table gives exact parameter
counts for safetensors checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oomkit.errors import InvalidModelSpecError
from oomkit.validate import MAX_DIM, MAX_EXPERTS, MAX_HEADS, MAX_LAYERS, MAX_VOCAB

if TYPE_CHECKING:
    from oomkit.spec.tensor_table import TensorTable

#: any single tensor dimension / state size / context-like count (2^40)
_MAX_COUNT = 1 << 40
#: parameters of one model (2^46 = 70T, 35x the largest published model)
_MAX_PARAMS = 1 << 46


def tensor_limits() -> tuple[int, int, int]:
    """(largest dimension, most elements, most bytes) one :class:`TensorInfo` may have."""
    return _MAX_COUNT, _MAX_PARAMS, _MAX_PARAMS * 4


def _check(
    owner: str, field_name: str, value: object, lo: int, hi: int, optional: bool = False
) -> None:
    """``value`` is an int in ``[lo, hi]``; else one-line :class:`InvalidModelSpecError`."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        shown = repr(value)[:60]
        raise InvalidModelSpecError(
            f"Invalid model '{owner}': {field_name} must be an integer in [{lo}, {hi}], "
            f"got {shown}. Check the config.json / GGUF header.",
            setting=field_name,
            value=value,
        )


__all__ = [
    "LAYER_FFN",
    "LAYER_FULL",
    "LAYER_LINEAR",
    "LAYER_MAMBA",
    "LAYER_SLIDING",
    "DropoutSpec",
    "MlaSpec",
    "MoESpec",
    "ModelSpec",
    "QuantizationSpec",
    "RecurrentSpec",
    "TensorInfo",
    "VisionTowerSpec",
]

#: Layer kinds used in :attr:`ModelSpec.layer_types`.
LAYER_FULL = "full_attention"
LAYER_SLIDING = "sliding_attention"
LAYER_LINEAR = "linear_attention"  # gated delta-net / linear attention (Qwen3-Next)
LAYER_MAMBA = "mamba"  # Mamba/Mamba2 SSM mixer (Mamba, Granite-4 hybrid, Nemotron-H)
#: a block with no token mixer, only an MLP or a MoE (Nemotron-H's ``-`` and ``E`` blocks). A spec
#: with such blocks lays every block out as ONE sublayer: its mixer blocks (attention, Mamba) carry
#: no MLP (:meth:`ModelSpec.has_ffn`), as transformers/vLLM ``NemotronHBlock`` builds one mixer
#: per block from ``hybrid_override_pattern``
LAYER_FFN = "ffn"


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
        if not isinstance(self.shape, tuple) or len(self.shape) > 8:
            raise InvalidModelSpecError(
                f"Invalid tensor '{self.name}': shape must be a tuple of at most 8 dimensions, "
                f"got {self.shape!r}"[:200],
                setting="shape",
                value=self.shape,
            )
        n = 1
        for d in self.shape:  # hot: ~10 tensors per layer; the slow path only on bad input
            if type(d) is not int and (isinstance(d, bool) or not isinstance(d, int)):
                _check(self.name, "tensor dimension", d, 0, _MAX_COUNT)
            if not 0 <= d <= _MAX_COUNT:
                _check(self.name, "tensor dimension", d, 0, _MAX_COUNT)
            n *= d
        if n > _MAX_PARAMS:
            _check(self.name, "tensor elements", n, 0, _MAX_PARAMS)
        nb = self.n_bytes
        if nb is not None and (type(nb) is not int or not 0 <= nb <= _MAX_PARAMS * 4):
            _check(self.name, "n_bytes", nb, 0, _MAX_PARAMS * 4)
        object.__setattr__(self, "n_params", n)


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

    def __post_init__(self) -> None:
        _check("moe", "num_experts", self.num_experts, 1, MAX_EXPERTS)
        _check("moe", "num_experts_per_tok", self.num_experts_per_tok, 1, self.num_experts)
        _check("moe", "expert_intermediate_size", self.expert_intermediate_size, 0, MAX_DIM)
        _check("moe", "num_shared_experts", self.num_shared_experts, 0, MAX_EXPERTS)
        _check(
            "moe",
            "shared_expert_intermediate_size",
            self.shared_expert_intermediate_size,
            0,
            MAX_DIM * MAX_EXPERTS,
        )
        if len(self.dense_layers) > MAX_LAYERS:
            _check("moe", "dense layer count", len(self.dense_layers), 0, MAX_LAYERS)
        for i in self.dense_layers:
            _check("moe", "dense layer index", i, 0, MAX_LAYERS)


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-4.7+)."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    def __post_init__(self) -> None:
        _check("mla", "q_lora_rank", self.q_lora_rank, 0, MAX_DIM, optional=True)
        _check("mla", "kv_lora_rank", self.kv_lora_rank, 1, MAX_DIM)
        _check("mla", "qk_nope_head_dim", self.qk_nope_head_dim, 0, MAX_DIM)
        _check("mla", "qk_rope_head_dim", self.qk_rope_head_dim, 0, MAX_DIM)
        _check("mla", "v_head_dim", self.v_head_dim, 1, MAX_DIM)

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

    def __post_init__(self) -> None:
        for name in ("d_inner", "d_state", "d_conv", "n_groups", "n_heads", "head_dim"):
            _check("recurrent", name, getattr(self, name), 0, MAX_DIM)
        for name in ("dt_rank", "n_k_heads", "k_head_dim"):
            _check("recurrent", name, getattr(self, name), 0, MAX_DIM)
        _check("recurrent", "conv_state_elements", self.conv_state_elements, 0, _MAX_COUNT)
        _check("recurrent", "ssm_state_elements", self.ssm_state_elements, 0, _MAX_COUNT)


@dataclass(frozen=True, slots=True, kw_only=True)
class QuantizationSpec:
    """A pre-quantized HF checkpoint's ``quantization_config`` (GPTQ, AWQ, fp8, bnb, mxfp4...)."""

    method: str  # "gptq", "awq", "fp8", "bitsandbytes_4bit", "bitsandbytes_8bit", "mxfp4"
    bits: int | None = None
    group_size: int | None = None
    weight_block_size: tuple[int, ...] | None = None
    modules_to_not_convert: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class VisionTowerSpec:
    """A vision encoder whose serving-time activations the runtimes size from its shape.

    Today only Mllama's tiled ViT (``kind`` ``"mllama"``, HF ``MllamaVisionConfig``): one image
    is ``max_num_tiles`` tiles of ``(image_size / patch_size)**2 + 1`` tokens, padded to a
    multiple of 8 per tile in vLLM's encoder (``tokens_per_image``; ``tokens_per_image_unpadded``
    without the padding); ``saved_layers`` hidden states (``intermediate_layers_indices``) are
    kept and concatenated with the final one.
    """

    kind: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_global_layers: int
    tokens_per_image: int
    tokens_per_image_unpadded: int
    saved_layers: int

    def __post_init__(self) -> None:
        for name in ("hidden_size", "intermediate_size", "tokens_per_image"):
            _check("vision_tower", name, getattr(self, name), 1, _MAX_COUNT)
        for name in ("num_layers", "num_global_layers", "saved_layers"):
            _check("vision_tower", name, getattr(self, name), 0, MAX_LAYERS)
        _check(
            "vision_tower",
            "tokens_per_image_unpadded",
            self.tokens_per_image_unpadded,
            1,
            self.tokens_per_image,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DropoutSpec:
    """Dropout probabilities of the model's config, placed as its transformers modeling file
    applies them in training mode (:mod:`oomkit.loaders.hf_config_dropout`).

    ``embedding``: once on the embeddings (GPT-2 ``embd_pdrop``); ``attention``: on the
    attention probabilities (``attn_pdrop``/``attention_dropout``); ``residual``: one entry per
    dropout on a residual branch of every layer (GPT-2: after attention and after the MLP).
    """

    embedding: float = 0.0
    attention: float = 0.0
    residual: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for name, p in (
            ("embedding", self.embedding),
            ("attention", self.attention),
            *(("residual", r) for r in self.residual),
        ):
            if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p < 1.0:
                raise InvalidModelSpecError(
                    f"Invalid {name} dropout {p!r}: a probability in [0, 1).",
                    setting=f"dropout.{name}",
                    value=p,
                )

    @property
    def any(self) -> bool:
        """Whether any dropout is active (p > 0) in training mode."""
        return self.embedding > 0 or self.attention > 0 or any(r > 0 for r in self.residual)


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
    #: per-layer K (= V = Q) head size when layers differ (None: every layer uses ``head_dim`` /
    #: ``v_head_dim``). Gemma 4: sliding layers ``head_dim`` 256, full layers ``global_head_dim``
    #: 512 (transformers ``Gemma4TextAttention``: ``self.head_dim = layer_config.head_dim``)
    head_dim_per_layer: tuple[int, ...] | None = None
    #: layers whose V is the K projection: no ``v_proj`` weight (Gemma 4 ``attention_k_eq_v`` on
    #: full layers). The runtimes still cache V (transformers ``past_key_values.update(key,
    #: value)``, vLLM's QKV slot loaded with K, llama.cpp ``Vcur = Kcur``): only weights change
    k_eq_v_layers: tuple[int, ...] = ()
    moe: MoESpec | None = None
    mla: MlaSpec | None = None
    recurrent: RecurrentSpec | None = None
    #: parameters of vision/audio towers and projectors not in the text tensor table
    multimodal_params: int = 0
    #: a vision encoder whose profiling activations a runtime sizes (Mllama), None otherwise
    vision_tower: VisionTowerSpec | None = None
    #: exact tensors from a checkpoint header (safetensors/GGUF; a GGUF's as columns, see
    #: :class:`~oomkit.spec.tensor_table.TensorTable`); None when derived from config
    tensors: tuple[TensorInfo, ...] | TensorTable | None = None
    #: the published exact parameter count, when known
    declared_params: int | None = None
    torch_dtype: str | None = None  # config ``torch_dtype``/``dtype`` ("bfloat16"...)
    quantization: QuantizationSpec | None = None
    source: str = "config"  # "catalog" | "config" | "safetensors" | "gguf" | "hub"
    assumptions: tuple[str, ...] = ()
    #: ``rope_scaling`` type ("llama3", "yarn", "longrope", "linear", "dynamic"), None without
    rope_scaling_type: str | None = None
    #: its ``factor`` and, for YaRN, ``original_max_position_embeddings`` (None when absent):
    #: vLLM derives the longest ``max_model_len`` from them (:func:`oomkit.estimate.checks.
    #: vllm_max_model_len`)
    rope_scaling_factor: float | None = None
    rope_original_max_position_embeddings: int | None = None
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
    #: Gemma-2 soft-capping (``cap * tanh(x / cap)``) of the attention scores and of the final
    #: logits; None without. Eager attention then keeps the ``tanh`` output for backward
    attn_logit_softcapping: float | None = None
    final_logit_softcapping: float | None = None
    #: dropout of the config in training mode (None: the architecture has none, or all p = 0)
    dropout: DropoutSpec | None = None

    def __post_init__(self) -> None:
        self._validate_dims()
        if not self.layer_types:
            object.__setattr__(self, "layer_types", (LAYER_FULL,) * self.num_hidden_layers)
        if (
            not isinstance(self.layer_types, tuple)
            or len(self.layer_types) != self.num_hidden_layers
        ):
            raise InvalidModelSpecError(
                f"Invalid model '{self.name}': layer_types has {len(self.layer_types)} entries "
                f"for {self.num_hidden_layers} layers; give one entry per layer.",
                setting="layer_types",
                value=len(self.layer_types),
            )
        self._validate_consistency()

    def _validate_dims(self) -> None:
        """Types and ranges of the scalar fields (one-line errors naming the field)."""
        n = self.name if isinstance(self.name, str) else repr(self.name)
        for text_field in ("name", "architecture", "model_type"):
            if not isinstance(getattr(self, text_field), str):
                raise InvalidModelSpecError(
                    f"Invalid model {n!r}: {text_field} must be a string",
                    setting=text_field,
                    value=getattr(self, text_field),
                )
        _check(n, "num_hidden_layers", self.num_hidden_layers, 1, MAX_LAYERS)
        _check(n, "hidden_size", self.hidden_size, 1, MAX_DIM)
        _check(n, "num_attention_heads", self.num_attention_heads, 0, MAX_HEADS)
        _check(n, "num_key_value_heads", self.num_key_value_heads, 0, MAX_HEADS)
        _check(n, "head_dim", self.head_dim, 0, MAX_DIM)
        _check(n, "v_head_dim", self.v_head_dim, 0, MAX_DIM)
        _check(n, "intermediate_size", self.intermediate_size, 0, MAX_DIM)
        _check(n, "vocab_size", self.vocab_size, 0, MAX_VOCAB)
        _check(n, "max_position_embeddings", self.max_position_embeddings, 1, _MAX_COUNT, True)
        _check(
            n,
            "rope_original_max_position_embeddings",
            self.rope_original_max_position_embeddings,
            1,
            _MAX_COUNT,
            True,
        )
        factor = self.rope_scaling_factor
        if factor is not None and (
            isinstance(factor, bool)
            or not isinstance(factor, int | float)
            or not 0 < factor < 1e9  # (NaN fails it)
        ):
            raise InvalidModelSpecError(
                f"Invalid model {n!r}: rope_scaling_factor must be a number in (0, 1e9), "
                f"got {factor!r}"[:200],
                setting="rope_scaling_factor",
                value=factor,
            )
        _check(n, "sliding_window", self.sliding_window, 0, _MAX_COUNT, True)
        _check(n, "multimodal_params", self.multimodal_params, 0, _MAX_PARAMS)
        _check(n, "declared_params", self.declared_params, 0, _MAX_PARAMS, True)
        _check(n, "position_embedding_rows", self.position_embedding_rows, 0, _MAX_COUNT)
        _check(n, "type_vocab_size", self.type_vocab_size, 0, MAX_VOCAB)
        _check(n, "num_nextn_predict_layers", self.num_nextn_predict_layers, 0, MAX_LAYERS)
        _check(n, "word_embed_proj_dim", self.word_embed_proj_dim, 1, MAX_DIM, True)
        for cap_field in ("attn_logit_softcapping", "final_logit_softcapping"):
            cap = getattr(self, cap_field)
            if cap is not None and (
                isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap < 1e9
            ):
                raise InvalidModelSpecError(
                    f"Invalid model {n!r}: {cap_field} must be a number in (0, 1e9) or None, "
                    f"got {cap!r}"[:200],
                    setting=cap_field,
                    value=cap,
                )

    def _validate_consistency(self) -> None:
        """Heads vs layers: attention layers need heads; KV heads never exceed query heads."""
        n = self.name
        has_attention = any(t in (LAYER_FULL, LAYER_SLIDING) for t in self.layer_types)
        if has_attention:
            _check(
                n,
                "num_attention_heads (model has attention layers)",
                self.num_attention_heads,
                1,
                MAX_HEADS,
            )
            if self.mla is None:
                _check(n, "head_dim (model has attention layers)", self.head_dim, 1, MAX_DIM)
                if self.kv_heads_per_layer is None:
                    _check(
                        n,
                        "num_key_value_heads (at most num_attention_heads)",
                        self.num_key_value_heads,
                        1,
                        self.num_attention_heads,
                    )
        if self.kv_heads_per_layer is not None:
            if len(self.kv_heads_per_layer) != self.num_hidden_layers:
                _check(
                    n,
                    "kv_heads_per_layer entries",
                    len(self.kv_heads_per_layer),
                    self.num_hidden_layers,
                    self.num_hidden_layers,
                )
            for h in self.kv_heads_per_layer:
                _check(n, "kv_heads_per_layer entry", h, 0, MAX_HEADS)
        if self.head_dim_per_layer is not None:
            _check(
                n,
                "head_dim_per_layer entries",
                len(self.head_dim_per_layer),
                self.num_hidden_layers,
                self.num_hidden_layers,
            )
            for d in self.head_dim_per_layer:
                _check(n, "head_dim_per_layer entry", d, 1, MAX_DIM)
        for i in self.k_eq_v_layers:
            _check(n, "k_eq_v_layers index", i, 0, self.num_hidden_layers - 1)
        if self.moe is not None:
            for i in self.moe.dense_layers:
                _check(n, "moe dense layer index", i, 0, self.num_hidden_layers - 1)

    def has_ffn(self, layer: int) -> bool:
        """Whether block ``layer`` holds an MLP/MoE: every block of a model without
        :data:`LAYER_FFN` blocks that has one at all, else only the :data:`LAYER_FFN` blocks."""
        if self.intermediate_size == 0 and self.moe is None:
            return False
        if LAYER_FFN not in self.layer_types:
            return True
        return self.layer_types[layer] == LAYER_FFN

    def kv_heads(self, layer: int) -> int:
        """KV heads of ``layer`` (per-layer override or the global value)."""
        if self.kv_heads_per_layer is not None:
            return self.kv_heads_per_layer[layer]
        return self.num_key_value_heads

    def layer_head_dim(self, layer: int) -> int:
        """K (and Q) head size of ``layer`` (per-layer override or ``head_dim``)."""
        if self.head_dim_per_layer is not None:
            return self.head_dim_per_layer[layer]
        return self.head_dim

    def layer_v_head_dim(self, layer: int) -> int:
        """V head size of ``layer``: the per-layer head size where layers differ (their V heads
        equal their K heads: Gemma 4), else ``v_head_dim``."""
        if self.head_dim_per_layer is not None:
            return self.head_dim_per_layer[layer]
        return self.v_head_dim

    def widest_attention(self) -> tuple[int, int, int]:
        """(kv_heads, head_dim, v_head_dim) of the attention layer whose q, k and v projections
        are widest, for the one-layer activation peaks. Where head sizes differ per layer
        (Gemma 4: the full layers' 32 x 512 queries and 4 x 512 keys) that layer's; otherwise
        the global ``num_key_value_heads``, ``head_dim`` and ``v_head_dim`` as always."""
        if self.head_dim_per_layer is None:
            return self.num_key_value_heads, self.head_dim, self.v_head_dim

        def width(i: int) -> int:
            hd, vhd = self.layer_head_dim(i), self.layer_v_head_dim(i)
            return 2 * self.num_attention_heads * hd + self.kv_heads(i) * (hd + vhd)

        layers = self.attention_layers()
        if not layers:
            return self.num_key_value_heads, self.head_dim, self.v_head_dim
        i = max(layers, key=width)
        return self.kv_heads(i), self.layer_head_dim(i), self.layer_v_head_dim(i)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def attention_layers(self) -> tuple[int, ...]:
        """Indices of layers with a KV cache (full or sliding attention)."""
        return tuple(i for i, t in enumerate(self.layer_types) if t in (LAYER_FULL, LAYER_SLIDING))

    def recurrent_layers(self) -> tuple[int, ...]:
        """Indices of layers with constant-size recurrent state (SSM / linear attention)."""
        return tuple(i for i, t in enumerate(self.layer_types) if t in (LAYER_LINEAR, LAYER_MAMBA))
