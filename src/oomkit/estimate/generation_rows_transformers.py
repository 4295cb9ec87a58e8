"""The transformers rows of the runtime generations table.

Oldest first; every row cites the change that starts it. Gathered with the other runtimes'
rows in :data:`oomkit.estimate.generation_table.ROWS`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["TRANSFORMERS_ROWS"]

#: Oldest first. Every row cites the change that starts it.
TRANSFORMERS_ROWS: tuple[Row, ...] = (
    _g(
        "transformers",
        "eager-attention",
        "transformers <4.36 (eager attention, full-sequence logits)",
        "2023-01-01",
        "4.0.0",
        "huggingface/transformers before PR #26572 (F.scaled_dot_product_attention support, "
        "released in v4.36.0, 2023-12-11: 'In Transformers 4.36, we started adding native "
        "support of torch.nn.functional.scaled_dot_product_attention (SDPA), enabled by "
        "default', huggingface/transformers#28005)",
        "no attn_implementation: the decoder layers' own attention materialises the "
        "B x a x S x S scores and their softmax (4.30 models/llama/modeling_llama.py "
        "LlamaAttention.forward: torch.matmul(q, k^T) / sqrt(d) + mask, softmax(dim=-1, "
        "dtype=float32).to(q.dtype)); prefill logits for every prompt token as below",
        full_logits=True,
        bnb_fused_experts_unquantized=False,
        moe_experts="loop",
        default_attn="eager",
    ),
    _g(
        "transformers",
        "full-logits",
        "transformers 4.36-4.44 (SDPA by default, full-sequence logits)",
        "2023-12-11",
        "4.36.0",
        "huggingface/transformers PR #26572 (SDPA by default, v4.36.0); before PR #31292",
        "prefill computes logits for every prompt token and upcasts them to fp32: "
        "B x S x V x (e + 4) instead of B x V x (e + 4)",
        full_logits=True,
        bnb_fused_experts_unquantized=False,
        moe_experts="loop",
    ),
    _g(
        "transformers",
        "logits-to-keep",
        "transformers 4.45+ (logits_to_keep=1)",
        "2024-09-25",
        "4.45.0",
        "huggingface/transformers PR #31292 (num_logits_to_keep in generate); PR #33129 "
        "(Phi-3's cache dropped and re-prefilled at the long/short RoPE switch)",
        "only the last position's logits at prefill; DynamicCache/StaticCache "
        "(cache_implementation) as today",
        bnb_fused_experts_unquantized=False,
        moe_experts="loop",
        phi3_rope_recompute=True,
    ),
    _g(
        "transformers",
        "dynamic-sliding-window",
        "transformers 4.56+ (dynamic sliding-window cache layers)",
        "2025-08-29",
        "4.56.0",
        "huggingface/transformers PR #40039 (DynamicSlidingWindowLayer, released in v4.56.0; "
        "generate() unsets the Hub's cache_implementation='hybrid' so that sliding-window "
        "models get it by default)",
        "a sliding layer's DynamicCache keeps the last window - 1 tokens as "
        "full_key_states[:, :, -window + 1:], a view of the whole prefill's K/V: at the "
        "prefill's peak every sliding layer holds the prompt (cache_utils.py "
        "DynamicSlidingWindowLayer.update), not its window (before: the static HybridCache "
        "of window-sized sliding layers, the Hub default of Gemma-2/3)",
        bnb_fused_experts_unquantized=False,
        moe_experts="loop",
        phi3_rope_recompute=True,
        sliding_prefill_full=True,
    ),
    _g(
        "transformers",
        "v5-fused-experts",
        "transformers 5.0+ (fused MoE experts)",
        "2026-01-26",
        "5.0.0",
        "huggingface/transformers release v5.0.0: MoE experts are fused 3-D nn.Parameters "
        "(MixtralExperts.gate_up_proj, models/mixtral/modeling_mixtral.py), which "
        "replace_with_bnb_linear (nn.Linear only) leaves unquantized: "
        "bitsandbytes-foundation/bitsandbytes#1849",
        "load_in_4bit / load_in_8bit quantize attention and dense MLP linears only; an "
        "MoE model's experts stay in the load dtype; the experts run as grouped GEMMs over "
        "the tokens sorted by expert (integrations/moe.py grouped_mm_experts_forward), "
        "whose buffers hold every token x top-k row",
        bnb_fused_experts_unquantized=True,
        moe_experts="grouped_mm",
        phi3_rope_recompute=True,
        sliding_prefill_full=True,
    ),
)
