"""Building blocks of :mod:`oomkit.spec.tensors`: the per-architecture GGUF tensor layout.

Each architecture family has a :class:`_Style` (which norms, fused projections, extra tensors),
looked up by ``ModelSpec.architecture``. The tensor names and shapes copy llama.cpp
``src/llama-model.cpp`` ``llama_model::load_tensors`` (``create_tensor(tn(LLM_TENSOR_..), {ne})``)
with the ``ne`` order reversed to ``[out, in]``; names come from ``src/llama-arch.cpp``
``LLM_TENSOR_NAMES``.
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.spec.model import (
    LAYER_FFN,
    LAYER_LINEAR,
    LAYER_MAMBA,
    ModelSpec,
    TensorInfo,
)
from oomkit.spec.tensors_ssm import gated_delta_net, mamba_mixer

__all__ = [
    "NON_PARAMETER_ROLES",
    "NON_PARAMETER_SUFFIXES",
    "BlockNorms",
    "Builder",
    "block_norms",
    "build_layout",
    "decoder_layer",
    "has_fused_gate_up",
]

#: GGUF tensors that are not model parameters (rope tables written by the converter).
NON_PARAMETER_ROLES: frozenset[str] = frozenset(
    {"rope_freqs.weight", "rope_factors_long.weight", "rope_factors_short.weight"}
)

#: Role suffixes of quantization state stored next to a weight (safetensors checkpoints);
#: ``oomkit.loaders.tensor_roles.QUANT_SIDECAR_SUFFIXES`` is this set.
NON_PARAMETER_SUFFIXES: frozenset[str] = frozenset(
    {
        "scales",
        "qzeros",
        "g_idx",
        "SCB",
        "weight_format",
        "weight_scale",
        "weight_scale_inv",
        "weight_scale_2",
        "weight_global_scale",
        "weight_zero_point",
        "weight_shape",
        "weight_g_idx",
        "input_scale",
        "input_scale_inv",
        "input_global_scale",
        "output_scale",
        "k_scale",
        "v_scale",
        "absmax",
        "quant_map",
        "nested_absmax",
        "nested_quant_map",
        "quant_state",
    }
)


class Builder:
    """Accumulates :class:`TensorInfo` rows with GGUF names."""

    def __init__(self) -> None:
        self.tensors: list[TensorInfo] = []

    def add(self, role: str, shape: tuple[int, ...], layer: int | None = None) -> None:
        """Add one tensor; ``role`` is the GGUF name without ``blk.{i}.``."""
        name = role if layer is None else f"blk.{layer}.{role}"
        self.tensors.append(TensorInfo(name=name, shape=shape, role=role, layer=layer))

    def linear(self, stem: str, out: int, inp: int, layer: int | None, bias: bool) -> None:
        """A ``[out, in]`` weight and, with ``bias``, an ``[out]`` bias."""
        self.add(f"{stem}.weight", (out, inp), layer)
        if bias:
            self.add(f"{stem}.bias", (out,), layer)

    def norm(self, stem: str, dim: int, layer: int | None, norm_type: str) -> None:
        """A norm weight ``[dim]`` plus, for LayerNorm with bias, a bias ``[dim]``."""
        self.add(f"{stem}.weight", (dim,), layer)
        if norm_type == "layer":
            self.add(f"{stem}.bias", (dim,), layer)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Style:
    """How one llama.cpp architecture lays out a decoder block."""

    attn_norm: bool = True  # "attn_norm" before attention
    post_attn_norm: bool = False  # "post_attention_norm" after attention (Gemma2/3, OLMo2, GLM4)
    ffn_norm: str | None = "ffn_norm"  # norm before the MLP (None: parallel block)
    post_ffn_norm: bool = False  # "post_ffw_norm" after the MLP
    fused_qkv: bool = False  # one "attn_qkv" tensor (GPT-2, NeoX, Falcon, Phi-3)
    fused_gate_up: bool = False  # "ffn_up" holds [2*ff, H] (Phi-3, GLM-4)
    # q/k norm weight shape: "head" [head_dim]; "full" [heads*head_dim] (OLMo2);
    # "matrix" [heads, head_dim] (Command-R+)
    qk_norm: str = "head"
    attn_sinks: bool = False  # gpt-oss "attn_sinks.weight" [n_head]
    q_gate: bool = False  # Qwen3-Next: attn_q outputs query and gate (2x rows)
    output_always_tied: bool = False  # Gemma: no output.weight ever


_LLAMA = _Style()
#: OLMo 2/3: post-norms only, q/k RMSNorm over all heads (modeling_olmo2.py, modeling_olmo3.py)
_OLMO2 = _Style(
    attn_norm=False, post_attn_norm=True, ffn_norm=None, post_ffn_norm=True, qk_norm="full"
)
_STYLES: dict[str, _Style] = {
    "Gemma2ForCausalLM": _Style(post_attn_norm=True, post_ffn_norm=True, output_always_tied=True),
    "Gemma3ForCausalLM": _Style(post_attn_norm=True, post_ffn_norm=True, output_always_tied=True),
    "Gemma3ForConditionalGeneration": _Style(
        post_attn_norm=True, post_ffn_norm=True, output_always_tied=True
    ),
    "GemmaForCausalLM": _Style(output_always_tied=True),
    # llama.cpp LLM_ARCH_GEMMA4 (src/models/gemma4-iswa.cpp): Gemma 3's sandwich norms
    **{
        arch: _Style(post_attn_norm=True, post_ffn_norm=True, output_always_tied=True)
        for arch in ("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration")
    },
    "Olmo2ForCausalLM": _OLMO2,
    "Olmo3ForCausalLM": _OLMO2,  # modeling_olmo3.py: OLMo 2's block (sliding layers aside)
    "OlmoeForCausalLM": _Style(qk_norm="full"),
    # llama.cpp LLM_ARCH_MINIMAX_M2: attn_q_norm [n_head * head_dim], attn_k_norm
    # [n_head_kv * head_dim] (transformers MiniMaxM2Attention q_norm/k_norm over the projection)
    "MiniMaxM2ForCausalLM": _Style(qk_norm="full"),
    "CohereForCausalLM": _Style(ffn_norm=None, qk_norm="matrix"),
    "Cohere2ForCausalLM": _Style(ffn_norm=None),
    "Phi3ForCausalLM": _Style(fused_qkv=True, fused_gate_up=True),
    "GptOssForCausalLM": _Style(ffn_norm="post_attention_norm", attn_sinks=True),
    "Glm4ForCausalLM": _Style(post_attn_norm=True, post_ffn_norm=True, fused_gate_up=True),
    "GlmForCausalLM": _Style(fused_gate_up=True),
    # llama.cpp LLM_ARCH_GLM4_MOE maps post_attention_layernorm to ATTN_POST_NORM
    "Glm4MoeForCausalLM": _Style(ffn_norm="post_attention_norm"),
    # llama.cpp LLM_ARCH_NEMOTRON_H: one "attn_norm" per block, before its one sublayer
    "NemotronHForCausalLM": _Style(ffn_norm=None),
    "GPT2LMHeadModel": _Style(fused_qkv=True),
    "GPTNeoXForCausalLM": _Style(fused_qkv=True),
    "FalconForCausalLM": _Style(fused_qkv=True, ffn_norm=None),
    "Qwen3NextForCausalLM": _Style(ffn_norm="post_attention_norm", q_gate=True),
    # llama.cpp src/models/qwen35.cpp load_arch_tensors: the same block layout as qwen3next
    # (attn_post_norm, attn_q of 2 x n_head x head_dim), ssm_alpha/ssm_beta instead of ssm_ba
    **{
        arch: _Style(ffn_norm="post_attention_norm", q_gate=True)
        for arch in (
            "Qwen3_5ForConditionalGeneration",
            "Qwen3_5ForCausalLM",
            "Qwen3_5MoeForConditionalGeneration",
            "Qwen3_5MoeForCausalLM",
        )
    },
}
# OPT and BERT are laid out like this too; their extra tensors come from ModelSpec fields.


def _style(spec: ModelSpec) -> _Style:
    return _STYLES.get(spec.architecture, _LLAMA)


def has_fused_gate_up(spec: ModelSpec) -> bool:
    """The MLP's gate and up projections are one ``gate_up_proj`` linear (Phi-3, GLM, GLM-4)."""
    return _style(spec).fused_gate_up


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockNorms:
    """Which norms one decoder block of ``spec`` applies (the layout :func:`decoder_layer` adds).

    ``pre_attn``/``pre_ffn``: norms on the sublayer inputs (Llama); ``post_attn``/``post_ffn``:
    norms on the sublayer outputs before the residual add (Gemma 2/3 and GLM-4 have both kinds,
    the "sandwich"; OLMo 2 only the post ones); ``qk``: ``"head"`` (RMSNorm over each head's
    ``head_dim``: Qwen3, Gemma 3), ``"full"`` (over all heads' q and k: OLMo 2, OLMoE),
    ``"matrix"`` (Cohere), or None without q/k norms.
    """

    pre_attn: bool
    pre_ffn: bool
    post_attn: bool
    post_ffn: bool
    qk: str | None


def block_norms(spec: ModelSpec) -> BlockNorms:
    """The norm layout of a decoder block of ``spec`` (see :class:`BlockNorms`)."""
    st = _style(spec)
    return BlockNorms(
        pre_attn=st.attn_norm,
        pre_ffn=st.ffn_norm is not None and not spec.parallel_attn,
        post_attn=st.post_attn_norm,
        post_ffn=st.post_ffn_norm,
        qk=st.qk_norm if spec.qk_norm else None,
    )


def build_layout(spec: ModelSpec) -> tuple[TensorInfo, ...]:
    """All tensors of ``spec`` in GGUF naming (see :func:`oomkit.spec.tensors.derive_tensors`)."""
    st = _style(spec)
    b = Builder()
    hidden = spec.hidden_size
    emb = spec.word_embed_proj_dim or hidden
    b.add("token_embd.weight", (spec.vocab_size, emb))
    if spec.position_embedding_rows:
        b.add("position_embd.weight", (spec.position_embedding_rows, hidden))
    if spec.type_vocab_size:
        b.add("token_types.weight", (spec.type_vocab_size, hidden))
    if spec.is_encoder:
        b.norm("token_embd_norm", hidden, None, spec.norm_type)
    if spec.word_embed_proj_dim is not None and spec.word_embed_proj_dim != hidden:
        # OPT-350m project_in / project_out (no llama.cpp arch; HF names kept as stems)
        b.add("project_in.weight", (hidden, emb))
        b.add("project_out.weight", (emb, hidden))
    for i in range(spec.num_hidden_layers):
        decoder_layer(b, spec, i)
    if spec.architecture == "Glm4MoeForCausalLM":
        _nextn_blocks(b, spec)
    if spec.final_norm and not spec.is_encoder:
        b.norm("output_norm", hidden, None, spec.norm_type)
    if not spec.tie_word_embeddings and not st.output_always_tied and not spec.is_encoder:
        b.add("output.weight", (spec.vocab_size, emb))
    _rope_tables(b, spec)
    return tuple(b.tensors)


def _nextn_blocks(b: Builder, spec: ModelSpec) -> None:
    """GLM-4.5 MTP layers, which llama.cpp's GGUF keeps as extra blocks ``blk.{n}`` (loaded with
    TENSOR_SKIP, src/models/glm4-moe.cpp): a decoder block plus the ``nextn.*`` tensors.
    (DeepSeek's converter drops its MTP layer instead.)"""
    hidden, vocab = spec.hidden_size, spec.vocab_size
    for i in range(spec.num_hidden_layers, spec.num_hidden_layers + spec.num_nextn_predict_layers):
        decoder_layer(b, spec, i)
        b.add("nextn.eh_proj.weight", (hidden, 2 * hidden), i)
        b.add("nextn.enorm.weight", (hidden,), i)
        b.add("nextn.hnorm.weight", (hidden,), i)
        b.add("nextn.embed_tokens.weight", (vocab, hidden), i)
        b.add("nextn.shared_head_head.weight", (vocab, hidden), i)
        b.add("nextn.shared_head_norm.weight", (hidden,), i)


def _rope_tables(b: Builder, spec: ModelSpec) -> None:
    """``rope_freqs`` (llama3 scaling) / Phi-3 LongRoPE factors, written by the converter."""
    half = spec.head_dim // 2
    if spec.rope_scaling_type == "llama3":
        # convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: rope_freqs [head_dim/2] f32
        b.add("rope_freqs.weight", (half,))
    elif spec.rope_scaling_type == "longrope" and spec.architecture == "Phi3ForCausalLM":
        # Phi3MiniModel.generate_extra_tensors: long/short factors [rotary_dim/2] each; taken as
        # head_dim/2 (Phi-4-mini's partial rotary 0.75 writes 48, not 64: 2 x 64 bytes of f32)
        b.add("rope_factors_long.weight", (half,))
        b.add("rope_factors_short.weight", (half,))


def decoder_layer(b: Builder, spec: ModelSpec, i: int) -> None:
    """Append the tensors of block ``i``."""
    st = _style(spec)
    hidden = spec.hidden_size
    nt = spec.norm_type
    kind = spec.layer_types[min(i, spec.num_hidden_layers - 1)]  # MTP blocks repeat the last kind
    if spec.is_encoder:
        _attention(b, spec, st, i)
        b.norm("attn_output_norm", hidden, i, nt)
        _ffn(b, spec, st, i)
        b.norm("layer_output_norm", hidden, i, nt)
        return
    if st.attn_norm:
        b.norm("attn_norm", hidden, i, nt)
    if spec.new_decoder_architecture:
        b.norm("attn_norm_2", hidden, i, nt)
    if kind == LAYER_FFN:  # Nemotron-H '-'/'E' block: its one norm, then the MLP/MoE alone
        _ffn(b, spec, st, i)
        return
    if kind == LAYER_MAMBA:
        mamba_mixer(b, spec, i)
    elif kind == LAYER_LINEAR:
        gated_delta_net(b, spec, i)
    else:
        _attention(b, spec, st, i)
    if st.post_attn_norm:
        b.norm("post_attention_norm", hidden, i, nt)
    if not spec.has_ffn(min(i, spec.num_hidden_layers - 1)):  # Mamba / Nemotron-H mixer blocks
        return
    if st.ffn_norm is not None and not spec.parallel_attn:
        b.norm(st.ffn_norm, hidden, i, nt)
    _ffn(b, spec, st, i)
    if st.post_ffn_norm:
        b.norm("post_ffw_norm", hidden, i, nt)


def _attention(b: Builder, spec: ModelSpec, st: _Style, i: int) -> None:
    hidden = spec.hidden_size
    n_q = spec.num_attention_heads
    il = min(i, spec.num_hidden_layers - 1)
    n_kv = spec.kv_heads(il)
    hd, vhd = spec.layer_head_dim(il), spec.layer_v_head_dim(il)
    bias = spec.attention_bias
    if spec.mla is not None:
        _mla(b, spec, i)
    elif st.fused_qkv:
        b.linear("attn_qkv", n_q * hd + n_kv * hd + n_kv * vhd, hidden, i, bias)
    else:
        q_rows = n_q * hd * (2 if st.q_gate else 1)
        b.linear("attn_q", q_rows, hidden, i, bias)
        b.linear("attn_k", n_kv * hd, hidden, i, bias)
        if il not in spec.k_eq_v_layers:  # Gemma 4 full layers: V = K, no v_proj
            b.linear("attn_v", n_kv * vhd, hidden, i, bias)
    b.linear("attn_output", hidden, n_q * vhd, i, spec.attention_out_bias)
    if spec.qk_norm:
        if st.qk_norm == "full":
            b.add("attn_q_norm.weight", (n_q * hd,), i)
            b.add("attn_k_norm.weight", (n_kv * hd,), i)
        elif st.qk_norm == "matrix":
            b.add("attn_q_norm.weight", (n_q, hd), i)
            b.add("attn_k_norm.weight", (n_kv, hd), i)
        else:
            b.add("attn_q_norm.weight", (hd,), i)
            b.add("attn_k_norm.weight", (hd,), i)
    if st.attn_sinks:
        b.add("attn_sinks.weight", (n_q,), i)


def _mla(b: Builder, spec: ModelSpec, i: int) -> None:
    """DeepSeek-V2/V3 multi-head latent attention (llama.cpp LLM_ARCH_DEEPSEEK2).

    The converter splits ``kv_b_proj`` into ``attn_k_b`` [n_head, kv_lora, nope] and ``attn_v_b``
    [n_head, v_head_dim, kv_lora] (convert_hf_to_gguf.py DeepseekV2Model.modify_tensors); their
    sizes add up to ``kv_b_proj``'s.
    """
    mla = spec.mla
    assert mla is not None
    hidden = spec.hidden_size
    n_q = spec.num_attention_heads
    qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    if mla.q_lora_rank is None:
        b.add("attn_q.weight", (n_q * qk, hidden), i)
    else:
        b.add("attn_q_a.weight", (mla.q_lora_rank, hidden), i)
        b.add("attn_q_a_norm.weight", (mla.q_lora_rank,), i)
        b.add("attn_q_b.weight", (n_q * qk, mla.q_lora_rank), i)
    b.add("attn_kv_a_mqa.weight", (mla.kv_lora_rank + mla.qk_rope_head_dim, hidden), i)
    b.add("attn_kv_a_norm.weight", (mla.kv_lora_rank,), i)
    b.add("attn_k_b.weight", (n_q, mla.kv_lora_rank, mla.qk_nope_head_dim), i)
    b.add("attn_v_b.weight", (n_q, mla.v_head_dim, mla.kv_lora_rank), i)


def _ffn(b: Builder, spec: ModelSpec, st: _Style, i: int) -> None:
    hidden = spec.hidden_size
    moe = spec.moe
    if moe is not None and i not in moe.dense_layers:
        n_e, eff = moe.num_experts, moe.expert_intermediate_size
        b.linear("ffn_gate_inp", n_e, hidden, i, moe.router_bias)
        if moe.score_correction_bias:
            b.add("exp_probs_b.bias", (n_e,), i)
        if spec.mlp_gated:  # Nemotron-H's experts are relu2 up/down only (no gate)
            b.add("ffn_gate_exps.weight", (n_e, eff, hidden), i)
            if moe.expert_bias:
                b.add("ffn_gate_exps.bias", (n_e, eff), i)
        b.add("ffn_up_exps.weight", (n_e, eff, hidden), i)
        if moe.expert_bias:
            b.add("ffn_up_exps.bias", (n_e, eff), i)
        b.add("ffn_down_exps.weight", (n_e, hidden, eff), i)
        if moe.expert_bias:
            b.add("ffn_down_exps.bias", (n_e, hidden), i)
        sff = moe.shared_expert_intermediate_size
        if sff:
            if moe.shared_expert_gate:
                b.add("ffn_gate_inp_shexp.weight", (1, hidden), i)
            if spec.mlp_gated:
                b.add("ffn_gate_shexp.weight", (sff, hidden), i)
            b.add("ffn_up_shexp.weight", (sff, hidden), i)
            b.add("ffn_down_shexp.weight", (hidden, sff), i)
        return
    ff = spec.intermediate_size
    bias = spec.mlp_bias
    if st.fused_gate_up:
        b.linear("ffn_up", 2 * ff, hidden, i, bias)
    else:
        if spec.mlp_gated:
            b.linear("ffn_gate", ff, hidden, i, bias)
        b.linear("ffn_up", ff, hidden, i, bias)
    b.linear("ffn_down", hidden, ff, i, bias)
