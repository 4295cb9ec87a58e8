"""Models that older transformers ran only through the Hub's ``trust_remote_code`` modelling.

GLM-4-9B (``model_type`` ``glm``, ``GlmForCausalLM``) got native transformers support with
huggingface/transformers PR #33823 ("Add GLM", released in v4.46.0, 2024-10). Before that release
the only way to run it in transformers was ``AutoModelForCausalLM.from_pretrained(
"THUDM/glm-4-9b-chat", trust_remote_code=True)``: the Hub's ``modeling_chatglm.py``
(``ChatGLMForConditionalGeneration``, ``model_type`` ``chatglm``, shared with ChatGLM2/ChatGLM3).
That class's ``prepare_inputs_for_generation`` returns ``"return_last_logit": True`` and its
``forward`` does ``if return_last_logit: hidden_states = hidden_states[:, -1:]`` before
``self.transformer.output_layer``: at prefill ``generate`` only ever sees the last position's
logits, B x 1 x V, whatever transformers' own generate of the time did for native models (full
B x S x V logits before PR #31292, v4.45). Read in THUDM/GLM-4 at 0423d7c (2024-06-05,
basic_demo/trans_stress_test.py loads ``THUDM/glm-4-9b-chat`` with ``trust_remote_code=True``
and calls ``model.generate``) and the ChatGLM3 ``modeling_chatglm.py`` the GLM-4 file was
derived from (same ``prepare_inputs_for_generation`` / ``forward`` lines).

Every transformers release whose generation row has ``full_logits`` (before 4.45) predates
v4.46, so a ``glm`` model on such a release can only be the remote code; ``chatglm`` is remote
code on every release.

DeepSeek-V2 (``model_type`` ``deepseek_v2``) likewise ran only through the Hub's
``modeling_deepseek.py`` in 2024: native support (huggingface/transformers PR #31976, "Deepseek
v2 support", opened 2024-07-15) was still unmerged in February 2025, after every release with
``full_logits``. That remote code gives EVERY attention layer its own rotary embedding
(``DeepseekV2Attention._init_rope``), whose ``_set_cos_sin_cache(seq_len=
max_position_embeddings, dtype=torch.get_default_dtype())`` registers ``cos_cached`` and
``sin_cached`` of ``max_position_embeddings x qk_rope_head_dim`` (``register_buffer(...,
persistent=False)``; YaRN: ``DeepseekV2YarnRotaryEmbedding``): 2 x 163840 x 64 x 2 B = 40 MiB
per layer in bf16 (``from_pretrained`` makes the load dtype the default dtype while it builds
the model). They are not in the checkpoint: built on the CPU (accelerate's
``init_empty_weights`` leaves buffers alone unless ``ACCELERATE_INIT_INCLUDE_BUFFERS``), counted
by ``infer_auto_device_map`` (``compute_module_sizes`` walks buffers too) and moved to each
layer's GPU by ``dispatch_model``'s ``attach_align_device_hook_on_blocks``.
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec

__all__ = ["REMOTE_LAST_LOGIT_SOURCE", "remote_code_keeps_last_logit", "remote_rope_cache_bytes"]

REMOTE_LAST_LOGIT_SOURCE = (
    "THUDM/glm-4-9b-chat modeling_chatglm.py (ChatGLMForConditionalGeneration."
    "prepare_inputs_for_generation: return_last_logit=True; forward: hidden_states[:, -1:] "
    "before output_layer); native GlmForCausalLM only from huggingface/transformers PR #33823 "
    "(v4.46.0)"
)

#: model_type -> the first transformers release with a native implementation (None: never)
_NATIVE_SINCE: dict[str, str | None] = {"glm": "4.46.0", "chatglm": None}


def remote_code_keeps_last_logit(spec: ModelSpec, *, release_full_logits: bool) -> bool:
    """True when ``generate`` runs ``spec`` through ChatGLM remote code (last-position logits).

    ``release_full_logits``: the release's generation row computes full-sequence logits for
    native models (transformers before 4.45, so before the native ``glm`` of 4.46).
    """
    mt = (spec.model_type or "").lower()
    if mt not in _NATIVE_SINCE:
        return False
    return _NATIVE_SINCE[mt] is None or release_full_logits


def remote_rope_cache_bytes(spec: ModelSpec, *, release_full_logits: bool, elem: int) -> int:
    """Bytes of the per-layer ``cos_cached`` + ``sin_cached`` buffers of DeepSeek-V2's remote
    code on a release before 4.45 (``release_full_logits``), else 0. ``elem``: the load dtype's
    element size (the default dtype while the model is built)."""
    if (spec.model_type or "").lower() != "deepseek_v2" or not release_full_logits:
        return 0
    if spec.mla is None or not spec.max_position_embeddings:
        return 0
    return 2 * spec.max_position_embeddings * spec.mla.qk_rope_head_dim * elem
