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
"""

from __future__ import annotations

from oomkit.spec.model import ModelSpec

__all__ = ["REMOTE_LAST_LOGIT_SOURCE", "remote_code_keeps_last_logit"]

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
