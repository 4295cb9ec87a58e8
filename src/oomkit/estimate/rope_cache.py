"""The rotary cos/sin cache vLLM and SGLang build with the model (before memory is profiled).

``get_rope()`` (vllm/model_executor/layers/rotary_embedding.py; SGLang's
sglang/srt/layers/rotary_embedding.py is the same code) keeps one cached ``RotaryEmbedding`` per
rope config, shared by all layers: its ``cos_sin_cache`` is ``[max_position_embeddings,
rotary_dim]`` cast to the model dtype, the config's length rather than the served context
(Llama 4: 10M positions x 128 x 2 B = 2.5 GiB per rank). A second rope config (Gemma 3's local
layers) has its own cache: counted once.
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec

__all__ = ["rope_cache_bytes"]


def rope_cache_bytes(spec: ModelSpec, fallback_len: int, elem: int) -> int:
    """``max_position x rotary_dim x elem``; ``fallback_len`` when the config has no
    ``max_position_embeddings``. The rotary dim is ``qk_rope_head_dim`` for MLA models."""
    rotary = spec.head_dim if spec.mla is None else spec.mla.qk_rope_head_dim
    return (spec.max_position_embeddings or fallback_len) * rotary * elem
