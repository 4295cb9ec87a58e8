"""Activations a training step keeps for backward, per decoder layer and for the loss.

The starting point is Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models" (arXiv 2205.05198, section 4): ``s·b·h·(34 + 5·a·s/h)`` bytes per layer in
fp16 with dropout. oomkit counts the tensors autograd really saves in a modern decoder layer (HF
``modeling_llama.py`` / torchtune ``modules/transformer.py``), per token:

* RMSNorm (``hidden_states.to(torch.float32)``; ``pow`` and ``mul`` save the fp32 input: 4h), the
  normalised input of ``self.weight * x`` (e·h) when the norm weight trains, and the norm's output
  (e·h) when the next linear saves it (its weight or a LoRA adapter on it trains). Every norm
  the block really has counts (:func:`oomkit.spec.tensors_blocks.block_norms`): post-norms on
  the sublayer outputs (Gemma 2/3 and GLM-4 "sandwich", OLMo 2 post-only: a block without
  input norms feeds its linears the residual stream itself), and q/k norms keep the fp32 upcast
  of the whole q and k (per head: Qwen3, Gemma 3; full width: OLMo 2). Gemma and OLMo 2 scale by
  the weight in fp32, so a trained norm weight keeps an fp32 normalised copy (measured on an
  H100: OLMo 2 7B LoRA and Gemma-3-1B full were 10.4% and 8.9% above the two-pre-norm count);
* a linear layer saves its *input* only when its weight needs a gradient (full fine-tuning, or a
  LoRA adapter on it: ``lora_A`` saves the same input); a frozen linear saves only its weight;
* fused attention (SDPA flash/efficient backends, FlashAttention-2) saves q, k, v, the output and
  an fp32 logsumexp per head: no ``s²`` term; k and v stay at KV heads (HF passes
  ``enable_gqa=True`` to SDPA on torch >= 2.5 when there is no mask; FlashAttention-2 takes GQA
  natively), while eager attention, and SDPA on a sliding layer whose mask is materialised,
  run ``repeat_kv`` first (:func:`_kv_heads_saved`). Eager attention saves the fp32 softmax
  output and its 16-bit copy (a·s·(4 + e) per token) — the Korthikanti ``5as/h`` term; on
  torch < 1.11 (``softmax_saves_input``) the softmax node also held its input, the masked
  scores in the stream dtype (pytorch/pytorch#64000, fixed in 1.11 by #65242);
* SwiGLU MLP: gate output (SiLU input), SiLU output and up output (``mul`` inputs), and the
  product when ``down_proj`` trains: 3-4 x i x e. A GELU MLP saves fc1 output (+ GELU output);
* dropout masks (1 byte per element) where the config's dropout is > 0
  (:func:`training_dropout`; placed per architecture by
  :mod:`oomkit.loaders.hf_config_dropout`): ``nn.Dropout``/``F.dropout`` in training mode run
  ``native_dropout`` on CUDA, which returns ``(output, mask)`` with a bool mask and saves only
  the mask for backward (aten/src/ATen/native/Dropout.cpp ``is_fused_kernel_acceptable``;
  tools/autograd/derivatives.yaml ``native_dropout: native_dropout_backward(grad, result1,
  ...)``): one per residual-branch dropout of a layer, one for the embeddings (full
  fine-tuning: a frozen embedding's output needs no gradient), and on the attention
  probabilities in eager attention (``a·s`` per token). SDPA's flash and memory-efficient
  kernels regenerate the attention mask from the Philox seed and offset they save
  (aten/src/ATen/native/transformers/cuda/attention.cu, ``philox_seed``/``philox_offset``
  outputs), so they keep nothing more; the math backend (``_scaled_dot_product_attention_math``
  in attention.cpp: ``at::dropout(attn, dropout_p, true)``) keeps the mask and the fp32
  dropped probabilities ``attn @ v`` saves;
* MoE (HF Mixtral/Qwen-MoE loop): router fp32 softmax (4·E), each token's hidden state gathered
  per chosen expert (k·h·e) and each expert's MLP on it, the weighted expert outputs (k·h·e);
* tensor parallelism splits the attention heads and ``i`` (Megatron column/row parallel); norms
  and the residual stream are split too only with sequence parallelism (Korthikanti eq. 4/5).

Gradient checkpointing: ``full`` (HF ``gradient_checkpointing_enable``, torchtune
``enable_activation_checkpointing``) keeps only each layer's input (e·h per token) and recomputes
one layer at a time in backward; ``selective`` is Megatron's: recompute only core attention (drops
the eager ``s²`` tensors and attention dropout masks; with fused attention it saves nothing more).
Measured (``benchmarks/training_lora_phases.py`` over the H200 allocator traces of LoRA steps):
the checkpointed stack is exactly the bf16 layer inputs (transformers 5.24 defaults to
``use_reentrant=False``; the non-reentrant checkpoint's pack hook stores no tensor and its
``recompute_fn`` holds the layer's positional input), the loss forward exactly 10 B per logit;
left out are the final norm's fp32 input and bf16 output (6 B per token x hidden) and autocast's
cached casts of the adapter weights, so the forward end is 0.9-2.0% under, never over.

``torch.compile`` (``TrainingSettings.compiled``; :mod:`oomkit.estimate.training_compile`): the
min-cut partitioner recomputes RMSNorm internals and ``silu(gate)`` in backward, so each RMSNorm
keeps its input (stream dtype) instead of an fp32 copy and a weight-gradient copy, and SwiGLU keeps
gate and up outputs only (+ the product when ``down_proj`` trains); ``compiled_loss`` fuses the
cross-entropy (its input and a logsumexp kept, one gradient in backward).

Loss: ``lm_head`` output B·S·V in e bytes, upcast to fp32 by the loss (HF ``ForCausalLMLoss``
``logits.float()``), ``log_softmax`` saves its fp32 output; in backward ``nll_loss`` and
``log_softmax`` each produce an fp32 B·S·V gradient. "chunked" (torchtune
``CEWithChunkedOutputLoss``, 8 chunks) upcasts one chunk at a time; "fused" (Liger
``LigerFusedLinearCrossEntropyLoss``) never materialises the logits.
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.estimate.hf_attention_bytes import sdpa_runs_math
from oomkit.estimate.training_compile import (
    compiled_gated_mlp_bytes,
    compiled_loss_bytes,
    compiled_rms_norm_bytes,
)
from oomkit.loaders.hf_config_dropout import dropout_everywhere
from oomkit.spec.model import (
    LAYER_FFN,
    LAYER_LINEAR,
    LAYER_MAMBA,
    LAYER_SLIDING,
    DropoutSpec,
    ModelSpec,
)
from oomkit.spec.settings import TrainingSettings
from oomkit.spec.tensors import model_tensors
from oomkit.spec.tensors_blocks import block_norms

__all__ = [
    "CHUNKED_LOSS_CHUNKS",
    "FP32_SCALE_NORMS",
    "LayerActivations",
    "LossActivations",
    "autocast_stream",
    "dropout_note",
    "kbit_head_cast_bytes",
    "largest_request_bytes",
    "layer_activations",
    "loss_activations",
    "training_dropout",
]

#: ``model_type``s whose RMSNorm multiplies by its weight in fp32 before casting back
#: (transformers modeling_gemma*.py ``output * (1.0 + self.weight.float())``, PR #29402;
#: modeling_olmo2.py / modeling_olmo3.py ``(self.weight * hidden_states).to(input_dtype)``)
FP32_SCALE_NORMS: frozenset[str] = frozenset(
    {"gemma", "gemma2", "gemma3", "gemma3_text", "olmo2", "olmo3"}
)

#: torchtune ``CEWithChunkedOutputLoss(num_output_chunks=8)``
CHUNKED_LOSS_CHUNKS = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerActivations:
    """Bytes for one decoder layer and one micro-batch."""

    layer: int
    saved_bytes: int  # kept from forward to backward without checkpointing
    checkpoint_bytes: int  # kept with full checkpointing (the layer input)
    selective_bytes: int  # kept with selective (core-attention) recomputation
    backward_working_bytes: int  # transient gradient buffers while this layer runs backward


@dataclass(frozen=True, slots=True, kw_only=True)
class LossActivations:
    """Logits and cross-entropy bytes for one micro-batch."""

    saved_bytes: int  # held from the loss forward until its backward
    forward_transient_bytes: int  # extra on top of saved during the loss forward
    backward_transient_bytes: int  # extra on top of saved during the loss backward
    formula: str


def _norm(h: int, e: int, output_saved: bool, copies: int = 1) -> int:
    return 4 * h + (copies * e * h if output_saved else 0)


def autocast_stream(settings: TrainingSettings) -> bool:
    """Whether the residual stream stays fp32 under ``torch.autocast`` (fp32 weights + AMP).

    Single GPU / DDP with ``master_weights`` and mixed precision is HF Trainer's AMP: the
    embeddings and norms produce fp32, and every linear casts its input to 16 bits itself
    (autocast does not cache activation casts), so q, k and v each save their own copy of the
    normed input. DeepSpeed and FSDP ``MixedPrecision`` run the model in 16 bits instead. QLoRA
    after PEFT's ``prepare_model_for_kbit_training`` is the same stream: its fp32 embeddings
    and norms produce fp32 hidden states, and the 4-bit linears and adapters cast them.
    """
    if settings.kbit_prep:
        return settings.mixed_precision != "no"
    return (
        settings.mixed_precision != "no"
        and settings.master_weights
        and settings.zero == 0
        and not settings.fsdp
        and settings.method == "full"
    )


def training_dropout(spec: ModelSpec, settings: TrainingSettings) -> DropoutSpec:
    """The dropouts active in the training step: the config's (``ModelSpec.dropout``), or every
    dropout the architecture has at ``settings.dropout`` when that is given (``--dropout``)."""
    if settings.dropout is None:
        return spec.dropout or DropoutSpec()
    return dropout_everywhere(
        spec.model_type, parallel_attn=spec.parallel_attn, p=float(settings.dropout)
    )


def dropout_note(spec: ModelSpec, settings: TrainingSettings) -> str:
    """The assumption line: which dropouts the step runs and which masks were counted."""
    d = training_dropout(spec, settings)
    origin = "config" if settings.dropout is None else f"--dropout {settings.dropout:g}"
    if not d.any:
        return f"no dropout ({origin}: every p = 0): no dropout masks"
    counted: list[str] = []
    resid = [p for p in d.residual if p > 0]
    if resid:
        counted.append(f"{len(resid)} residual per layer (p={max(resid):g})")
    if d.embedding > 0:
        full = settings.method == "full"
        counted.append(f"embeddings (p={d.embedding:g})" + ("" if full else ": frozen, none"))
    if d.attention > 0:
        impl = settings.attn_implementation
        if impl == "eager":
            where = "a heads x seq x seq mask per layer (eager)"
        elif impl == "sdpa" and sdpa_runs_math(spec):
            where = "mask and fp32 probabilities per layer (SDPA math backend)"
        else:
            where = f"none kept ({impl} regenerates it from the Philox seed)"
        counted.append(f"attention probabilities (p={d.attention:g}): {where}")
    if settings.grad_checkpointing == "full":  # a layer's masks exist while it recomputes
        counted.append("the layers' masks regenerated with each checkpointed layer's recompute")
    return f"dropout ({origin}), 1-byte bool masks saved for backward: " + "; ".join(counted)


def embedding_dropout_bytes(
    spec: ModelSpec, settings: TrainingSettings, *, trainable_roles: frozenset[str] | None
) -> int:
    """The embedding dropout's bool mask (GPT-2 ``self.drop``, ``embd_pdrop``): saved only when
    the embedding output needs a gradient (its weight trains: full fine-tuning), outside every
    checkpointed layer; replicated across tensor-parallel ranks unless sequence parallel."""
    if training_dropout(spec, settings).embedding <= 0:
        return 0
    if trainable_roles is not None and "token_embd" not in trainable_roles:
        return 0
    sp_div = settings.tp if settings.sp else 1
    return settings.micro_batch * settings.seq * spec.hidden_size // sp_div


def layer_activations(
    spec: ModelSpec, settings: TrainingSettings, *, trainable_roles: frozenset[str] | None
) -> tuple[LayerActivations, ...]:
    """Saved activation bytes of every decoder layer for one micro-batch.

    Args:
        trainable_roles: GGUF role stems whose weights need gradients (LoRA targets), or None for
            full fine-tuning (every weight trains).

    Returns:
        One entry per layer (bytes per micro-batch on one GPU, after tensor/sequence parallelism).
    """
    e = 4 if settings.mixed_precision == "no" else 2
    amp = autocast_stream(settings)
    stream_e = 4 if amp else e  # bytes per element of the residual stream
    tokens = settings.micro_batch * settings.seq
    t = settings.tp
    sp_div = t if settings.sp else 1
    h = spec.hidden_size
    dropout = training_dropout(spec, settings)
    attn_drop = dropout.attention > 0
    # bool masks of the residual-branch dropouts (GPT-2 resid_dropout after attention and after
    # the MLP; OPT's F.dropout after self_attn and fc2), 1 byte per element of the stream
    resid_masks = sum(1 for p in dropout.residual if p > 0)
    emb_mask = embedding_dropout_bytes(spec, settings, trainable_roles=trainable_roles)

    def trains(*roles: str) -> bool:
        return _trains(trainable_roles, roles)

    eager = settings.attn_implementation == "eager"
    # Falcon's multi-query SDPA call runs PyTorch's math backend on CUDA (no enable_gqa, K/V not
    # expanded: oomkit.estimate.hf_attention_bytes.sdpa_runs_math), a composite of autograd ops
    # on fp32 copies (attention.cpp _scaled_dot_product_attention_math): ``_safe_softmax``
    # saves its fp32 result (derivatives.yaml), the one tensor ``attn @ v`` saves too
    math = settings.attn_implementation == "sdpa" and sdpa_runs_math(spec)
    fused_qkv = any(t.role.startswith("attn_qkv") for t in model_tensors(spec))
    # HF RMSNorm's ``self.weight * hidden_states.to(input_dtype)`` saves its input (a tensor
    # distinct from the norm's output) when the norm weight trains (full fine-tuning); torch's
    # native layer_norm recomputes the normalised input from the saved mean and rstd instead
    rms = spec.norm_type == "rms"
    full = trainable_roles is None
    norm_weight_input = stream_e * h if full and rms else 0
    compiled = settings.compiled
    if compiled and rms:
        norm_weight_input = 0  # the pre-scale normalised tensor is recomputed (fused kernel)

    def norm(output_saved: bool, copies: int) -> int:
        if compiled and rms:  # input kept in the stream dtype; casts CSE'd to one copy
            return compiled_rms_norm_bytes(h, stream_e, e, output_saved)
        return _norm(h, e, output_saved, copies)

    bn = block_norms(spec)
    # Gemma's and OLMo 2's RMSNorm scale in fp32 and cast after (``output * (1.0 +
    # self.weight.float())``, ``(self.weight * hidden_states).to(input_dtype)``): the
    # normalised tensor the weight gradient needs is fp32, not the input dtype
    scale_e = 4 if spec.model_type in FP32_SCALE_NORMS else 0
    if norm_weight_input and scale_e:
        norm_weight_input = scale_e * h

    def pre_norm(exists: bool, output_saved: bool, copies: int) -> int:
        if exists:
            return norm(output_saved, copies) + norm_weight_input
        # no norm before the sublayer (OLMo 2): its linears take the residual stream itself,
        # saved in the compute dtype (one cast per linear under AMP) when one of them trains
        return copies * e * h if output_saved else 0

    # a post-norm on a sublayer's output (its input is the o_proj/down_proj output, compute
    # dtype) keeps the fp32 upcast (``pow`` and ``mul``) and, when its weight trains, the
    # normalised input of the weight multiply (transformers modeling_gemma3.py Gemma3RMSNorm,
    # modeling_olmo2.py Olmo2RMSNorm, modeling_glm4.py Glm4RMSNorm)
    post_weight = (scale_e or e) * h if full and rms else 0
    post_norm = (e * h if compiled and rms else 4 * h + post_weight) * (
        int(bn.post_attn) + int(bn.post_ffn)
    )

    out: list[LayerActivations] = []
    for i, kind in enumerate(spec.layer_types):
        # per-token bytes: "rep" replicated across TP ranks (/sp_div), "split" divided by t
        rep = 0
        split = 0
        eager_sq = 0  # per-token bytes that scale with s (eager attention), split by t
        qkv_roles = ("attn_q", "attn_k", "attn_v", "attn_qkv", "attn_q_a", "attn_kv_a_mqa")
        rep += pre_norm(bn.pre_attn, trains(*qkv_roles), 1 if fused_qkv or not amp else 3)
        rep += post_norm if kind not in (LAYER_MAMBA, LAYER_LINEAR, LAYER_FFN) else 0
        if kind == LAYER_FFN:  # a Nemotron-H MLP/MoE block: no token mixer
            pass
        elif kind in (LAYER_MAMBA, LAYER_LINEAR):
            rec = spec.recurrent
            d_inner = rec.d_inner if rec is not None else 2 * h
            # in_proj output (x, z), conv output, SSM output, gated output: ~4 d_inner + input
            split += 4 * d_inner * e + (h * e if trains("ssm_in") else 0)
        else:
            a = spec.num_attention_heads
            d, dv = spec.layer_head_dim(i), spec.layer_v_head_dim(i)
            kv = spec.kv_heads(i)
            # eager runs repeat_kv before the matmuls; SDPA gets enable_gqa=True (HF
            # integrations/sdpa_attention.py use_gqa_in_sdpa, torch >= 2.5) and FA2 takes GQA
            k_saved, v_saved = _kv_heads_saved(spec, settings, kind, kv, amp=amp)
            split += (a * d + k_saved * d + v_saved * dv + a * dv) * e + a * 4  # q k v out lse
            if bn.qk is not None:
                split += _qk_norm_bytes(a * d + kv * d, e, scale_e, full, compiled)
            if trains("attn_output"):
                split += a * dv * e  # o_proj input (transpose(1, 2).contiguous() copy)
            if spec.mla is not None:
                mla = spec.mla
                rep += _norm(mla.kv_lora_rank, e, True) + (
                    _norm(mla.q_lora_rank, e, True) if mla.q_lora_rank else 0
                )
            if math:
                s = settings.seq
                # the scores per token, and the fp32 q (upcast and scaled) with K and V
                # upcast and broadcast to every head by the batched matmuls
                eager_sq += a * s * 4
                split += 2 * a * d * 4 + a * d * 4 + a * dv * 4
                if attn_drop:  # at::dropout's bool mask and fp32 output (attn @ v saves it)
                    eager_sq += a * s * (1 + 4)
            elif settings.attn_implementation == "eager":
                # HF eager_attention_forward: sliding layers are masked, still S x S
                s = settings.seq
                eager_sq += a * s * (4 + e) + (a * s if attn_drop else 0)
                if spec.attn_logit_softcapping:
                    # Gemma-2 eager_attention_forward: ``tanh(w / cap) * cap`` keeps the tanh
                    # output (compute dtype) for backward (transformers modeling_gemma2.py)
                    eager_sq += a * s * e
                if settings.softmax_saves_input:
                    # torch < 1.11 SoftmaxBackward held ``self`` too: the scores as they reach
                    # softmax. transformers of that era always added the extended attention
                    # mask, built in the model's dtype (``get_extended_attention_mask``:
                    # ``dtype=self.dtype``), so under AMP with fp32 weights the 16-bit scores
                    # were promoted to fp32 by the add; otherwise the compute dtype
                    eager_sq += a * s * stream_e
        if spec.has_ffn(i):
            if not spec.parallel_attn:
                gated_copies = 2 if (amp and spec.mlp_gated) else 1
                mlp_in = trains("ffn_gate", "ffn_up", "ffn_gate_inp")
                rep += pre_norm(bn.pre_ffn, mlp_in, gated_copies)
            split += _mlp_per_token(spec, i, e, trainable_roles, compiled=compiled)
        rep += resid_masks * h  # residual dropout masks (bool)
        per_token_saved = rep // sp_div + split // t + eager_sq // t
        # the embedding dropout's mask lives outside the layers: counted with layer 0
        first = emb_mask if i == 0 else 0
        saved = tokens * per_token_saved + first
        ckpt = tokens * h * stream_e // sp_div + first
        selective = tokens * (rep // sp_div + split // t) + first
        # backward: gradient of the widest intermediate (MLP) and of the stream, in e bytes,
        # plus the fp32 grad of the norm input
        widest = max(_widest(spec, i), h)
        eager_grads = 3 * spec.num_attention_heads * settings.seq * e if eager else 0
        if math:  # the score gradients are fp32 on the math backend
            eager_grads = 3 * spec.num_attention_heads * settings.seq * 4
        working = tokens * (
            (2 * widest * e + eager_grads) // t + (4 * h + 2 * h * stream_e) // sp_div
        )
        out.append(
            LayerActivations(
                layer=i,
                saved_bytes=saved,
                checkpoint_bytes=ckpt,
                selective_bytes=selective,
                backward_working_bytes=working,
            )
        )
    return tuple(out)


def _qk_norm_bytes(width: int, e: int, scale_e: int, weight_trains: bool, compiled: bool) -> int:
    """Per-token bytes the q and k norms keep over ``width`` = q + k elements (per head: Qwen3,
    Gemma 3; over the full projections: OLMo 2 ``q_norm``/``k_norm`` before the head split).

    The norm's input is the projection's output in the compute dtype; RMSNorm upcasts it
    (``hidden_states.to(torch.float32)``) and ``pow``/``mul`` save the fp32 copy (4 bytes per
    element). When the norm weight trains (full fine-tuning) the weight multiply also saves the
    normalised tensor: fp32 where the norm scales in fp32 (Gemma, OLMo 2), else in the input's
    dtype (Qwen3's ``self.weight * hidden_states.to(input_dtype)``). Under ``torch.compile``
    the fused norm keeps its input only.
    """
    if compiled:
        return e * width
    return 4 * width + ((scale_e or e) * width if weight_trains else 0)


def _kv_heads_saved(
    spec: ModelSpec, settings: TrainingSettings, kind: str, kv: int, *, amp: bool
) -> tuple[int, int]:
    """Heads of k and of v that attention saves for backward (q and the output have all ``a``).

    Eager attention runs ``repeat_kv`` first. SDPA gets ``enable_gqa=True`` on CUDA only without
    a mask (transformers integrations/sdpa_attention.py ``use_gqa_in_sdpa``: ``attention_mask
    is None``); a sliding layer whose sequence reaches its window always gets a materialised mask
    (masking_utils.py ``_ignore_causal_mask_sdpa``: ``kv_length >= local_attention_size``), so
    ``repeat_kv`` runs: with several KV heads its ``reshape`` copies k and v to all heads; with
    one it is a stride-0 view, but under AMP with an fp32 stream RoPE's k is fp32 (``cos``
    follows the hidden states' dtype) and autocast's bf16 cast of the expanded view is a dense
    copy. FlashAttention-2 takes GQA natively.
    """
    a = spec.num_attention_heads
    impl = settings.attn_implementation
    if impl == "eager":
        return a, a
    window = spec.sliding_window
    masked = impl == "sdpa" and kind == LAYER_SLIDING and window and settings.seq >= window
    if not masked or kv >= a:
        return kv, kv
    if kv > 1:
        return a, a
    return (a if amp else kv), kv


def _widest(spec: ModelSpec, i: int) -> int:
    moe = spec.moe
    if moe is not None and i not in moe.dense_layers:
        return max(moe.expert_intermediate_size * moe.num_experts_per_tok, spec.hidden_size)
    return spec.intermediate_size


def _trains(trainable_roles: frozenset[str] | None, roles: tuple[str, ...]) -> bool:
    """Whether any of ``roles`` has a weight that needs a gradient (None: everything trains)."""
    return trainable_roles is None or any(r in trainable_roles for r in roles)


def _mlp_per_token(
    spec: ModelSpec,
    i: int,
    e: int,
    trainable_roles: frozenset[str] | None,
    *,
    compiled: bool = False,
) -> int:
    """Saved bytes per token of the MLP / MoE block (see module docstring).

    ``compiled``: a dense SwiGLU MLP keeps what the min-cut partitioner saves
    (:func:`~oomkit.estimate.training_compile.compiled_gated_mlp_bytes`); MoE expert loops stay
    as eager (an upper bound).
    """

    def tr(*roles: str) -> bool:
        return _trains(trainable_roles, roles)

    moe = spec.moe
    h = spec.hidden_size

    def dense(inter: int, down_roles: tuple[str, ...]) -> int:
        if spec.mlp_gated:
            return 3 * inter * e + (inter * e if tr(*down_roles) else 0)
        return inter * e + (inter * e if tr(*down_roles) else 0)

    if moe is None or i in moe.dense_layers:
        if compiled and spec.mlp_gated:
            return compiled_gated_mlp_bytes(spec.intermediate_size, e, tr("ffn_down"))
        return dense(spec.intermediate_size, ("ffn_down",))
    k = moe.num_experts_per_tok
    total = moe.num_experts * 4  # router softmax (fp32)
    total += k * h * e  # hidden state gathered per chosen expert
    total += k * dense(moe.expert_intermediate_size, ("ffn_down_exps",))
    total += k * h * e  # expert output x routing weight (mul saves the expert output)
    if moe.shared_expert_intermediate_size:
        total += dense(moe.shared_expert_intermediate_size, ("ffn_down_shexp",))
    return total


def largest_request_bytes(spec: ModelSpec, settings: TrainingSettings, largest_grad: int) -> int:
    """The largest single allocation a step asks PyTorch's caching allocator for (one GPU).

    The allocator's waste under a memory limit is measured in these units: a request that finds
    no free block of its size splits a new segment, and the pieces left beside earlier large
    blocks are useless to it (c10/cuda/CUDACachingAllocator.cpp ``release_cached_blocks`` frees
    whole unused segments only). The candidates: the loss's fp32 B·S·V buffers (the upcast, the
    ``log_softmax`` output, its gradients; one chunk of them with a chunked loss, none fused),
    the largest trainable tensor's gradient, and the widest per-layer activation (the MLP
    intermediate, B·S·i in the compute dtype).
    """
    e = 4 if settings.mixed_precision == "no" else 2
    tokens = settings.micro_batch * settings.seq
    v = -(-spec.vocab_size // settings.tp)
    if spec.is_encoder or settings.loss == "fused":
        loss = 0
    elif settings.loss == "chunked":
        loss = 4 * tokens * v // CHUNKED_LOSS_CHUNKS
    else:
        loss = 4 * tokens * v
    widest = max((_widest(spec, i) for i in range(len(spec.layer_types))), default=spec.hidden_size)
    act = tokens * -(-widest // settings.tp) * e
    return max(loss, largest_grad, act)


def kbit_head_cast_bytes(spec: ModelSpec, settings: TrainingSettings) -> int:
    """The 16-bit copy autocast makes of an fp32 *frozen* output head on every forward.

    After ``prepare_model_for_kbit_training`` the head is fp32 and does not train: autocast
    caches casts of leaf tensors that require grad only (aten/src/ATen/autocast_mode.cpp
    ``cached_cast``), so ``F.linear`` gets a fresh V x h cast, which autograd saves for the
    input gradient until the head's backward (measured on an H200: Llama-3.1-8B QLoRA b1 s2048
    needed 3.43 GiB more allocated with the prep; fp32 embeddings/head 1.96 GiB + this 0.98
    GiB + the fp32 stream's checkpoints 0.50 GiB).
    """
    if not settings.kbit_prep or settings.mixed_precision == "no" or spec.is_encoder:
        return 0
    return -(-spec.vocab_size // settings.tp) * spec.hidden_size * 2


def loss_activations(spec: ModelSpec, settings: TrainingSettings) -> LossActivations:
    """Logits and cross-entropy bytes for one micro-batch (vocabulary split by TP)."""
    e = 4 if settings.mixed_precision == "no" else 2
    tokens = settings.micro_batch * settings.seq
    v = -(-spec.vocab_size // settings.tp)
    bsv = tokens * v
    if spec.is_encoder:
        return LossActivations(
            saved_bytes=0, forward_transient_bytes=0, backward_transient_bytes=0, formula="none"
        )
    if settings.loss == "fused":
        h = spec.hidden_size
        # Liger FLCE: per chunk of ~B·S·h/V tokens the logits (fp32) and their gradient exist;
        # the gradient w.r.t. the hidden states (B·S·h·e) is kept for backward
        chunk = 2 * 4 * tokens * h
        return LossActivations(
            saved_bytes=tokens * h * e,
            forward_transient_bytes=chunk,
            backward_transient_bytes=0,
            formula="fused linear cross-entropy: B·S·h·e kept + 8·B·S·h chunk transient",
        )
    up = 0 if e == 4 else 4  # the fp32 upcast is a no-op in fp32 training
    held = {"none": 0, "compute": e, "fp32": 4}[settings.held_logits]
    if settings.compiled_loss:
        saved, fwd_t, bwd_t, formula = compiled_loss_bytes(
            tokens=tokens,
            vocab=v,
            e=e,
            held=held,
            chunked=settings.loss == "chunked",
            chunks=CHUNKED_LOSS_CHUNKS,
        )
        return LossActivations(
            saved_bytes=saved,
            forward_transient_bytes=fwd_t,
            backward_transient_bytes=bwd_t,
            formula=formula,
        )
    held_note = f"; + {held}·B·S·V logits held by the loop" if held else ""
    if settings.loss == "chunked":
        n = CHUNKED_LOSS_CHUNKS
        fwd = e + up // n
        return LossActivations(
            saved_bytes=(4 + held) * bsv,
            forward_transient_bytes=max(0, fwd - held) * bsv,
            backward_transient_bytes=8 * bsv // n,
            formula=f"4·B·S·V log_softmax kept; B·S·V·e logits + fp32 upcast of one chunk (1/{n}) "
            f"in forward; the two fp32 gradients one chunk at a time in backward{held_note}",
        )
    # Gemma-2's head soft-caps the logits (``tanh(logits / cap) * cap``, transformers
    # Gemma2ForCausalLM.forward): the tanh output stays saved in the compute dtype
    capped = e if spec.final_logit_softcapping else 0
    cap_note = "; + B·S·V·e tanh output of the logit soft-capping kept" if capped else ""
    head_cast = kbit_head_cast_bytes(spec, settings)
    if head_cast:
        cap_note += "; + V·h·e 16-bit cast of the fp32 frozen head (kbit prep), kept for backward"
    return LossActivations(
        saved_bytes=(4 + held + capped) * bsv + head_cast,
        forward_transient_bytes=max(0, e + up - held) * bsv,
        backward_transient_bytes=8 * bsv,
        formula="4·B·S·V log_softmax output kept; + B·S·V·e logits + 4·B·S·V fp32 upcast in "
        f"forward; + 8·B·S·V (nll_loss and log_softmax gradients) in backward{held_note}"
        f"{cap_note}",
    )
