"""The dropouts a Hugging Face model applies in training mode, read from its ``config.json``.

Each row names the config keys (and the ``configuration_*.py`` default used when the key is
absent: GPT-2's and OPT's defaults are 0.1, so a config without the key trains with dropout) and
where the modeling file applies them (transformers 5.24, ``models/<type>/modeling_<type>.py``):

* ``gpt2``, ``gpt_bigcode``: ``self.drop = nn.Dropout(config.embd_pdrop)`` on the embeddings
  once (GPT2Model), ``attn_dropout`` (``attn_pdrop``) on the attention probabilities (eager) or
  as SDPA's ``dropout_p``, ``resid_dropout`` after ``c_proj`` of attention and ``self.dropout``
  after ``c_proj`` of the MLP (both ``resid_pdrop``);
* ``opt``: ``nn.functional.dropout(p=config.dropout)`` after ``self_attn`` and after ``fc2`` of
  every OPTDecoderLayer, ``attention_dropout`` on the probabilities; no embedding dropout
  (OPTDecoder stores ``config.dropout`` but its forward never applies it);
* ``phi``: ``embed_dropout`` (``embd_pdrop``), ``resid_dropout`` (``resid_pdrop``) on the
  attention output and on the MLP output of the parallel block, ``attention_dropout``;
* ``phi3``: ``resid_attn_dropout`` and ``resid_mlp_dropout`` (``resid_pdrop``),
  ``attention_dropout`` (no embedding dropout in Phi3Model);
* ``gpt_neox``: ``emb_dropout``, ``post_attention_dropout``, ``post_mlp_dropout`` (all
  ``hidden_dropout``), ``attention_dropout``;
* ``falcon``: ``dropout_add`` once per layer with ``hidden_dropout`` for the parallel block, else
  after attention with ``attention_dropout`` and after the MLP with ``hidden_dropout``;
* ``bert``, ``roberta``: embeddings, BertSelfOutput and BertOutput (``hidden_dropout_prob``),
  ``attention_probs_dropout_prob`` on the probabilities;
* ``starcoder2``: ``embedding_dropout``, ``residual_dropout`` after attention and after the MLP,
  ``attention_dropout``;
* every other decoder (Llama, Mistral, Qwen, Gemma, ...): ``attention_dropout`` only (default 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oomkit.errors import ConfigFormatError
from oomkit.spec.model import DropoutSpec

__all__ = ["DROPOUT_KEYS", "config_dropout", "dropout_everywhere"]

#: model_type -> (embedding key, attention key, residual keys per layer); a key is
#: ``(name, default)``, None where the architecture has no such dropout
_Key = tuple[str, float] | None
_LAYOUTS: dict[str, tuple[_Key, _Key, tuple[tuple[str, float], ...]]] = {
    "gpt2": (("embd_pdrop", 0.1), ("attn_pdrop", 0.1), (("resid_pdrop", 0.1),) * 2),
    "gpt_bigcode": (("embd_pdrop", 0.1), ("attn_pdrop", 0.1), (("resid_pdrop", 0.1),) * 2),
    "opt": (None, ("attention_dropout", 0.0), (("dropout", 0.1),) * 2),
    "phi": (("embd_pdrop", 0.0), ("attention_dropout", 0.0), (("resid_pdrop", 0.0),) * 2),
    "phi3": (None, ("attention_dropout", 0.0), (("resid_pdrop", 0.0),) * 2),
    "gpt_neox": (
        ("hidden_dropout", 0.0),
        ("attention_dropout", 0.0),
        (("hidden_dropout", 0.0),) * 2,
    ),
    "bert": (
        ("hidden_dropout_prob", 0.1),
        ("attention_probs_dropout_prob", 0.1),
        (("hidden_dropout_prob", 0.1),) * 2,
    ),
    "roberta": (
        ("hidden_dropout_prob", 0.1),
        ("attention_probs_dropout_prob", 0.1),
        (("hidden_dropout_prob", 0.1),) * 2,
    ),
    "starcoder2": (
        ("embedding_dropout", 0.0),
        ("attention_dropout", 0.0),
        (("residual_dropout", 0.0),) * 2,
    ),
}
_FALCON_PARALLEL = (None, ("attention_dropout", 0.0), (("hidden_dropout", 0.0),))
_FALCON_SEQUENTIAL = (
    None,
    ("attention_dropout", 0.0),
    (("attention_dropout", 0.0), ("hidden_dropout", 0.0)),
)
_DEFAULT = (None, ("attention_dropout", 0.0), ())

#: every config key read here (the catalog copies them from the real ``config.json``)
DROPOUT_KEYS: frozenset[str] = frozenset(
    k[0]
    for lay in (*_LAYOUTS.values(), _FALCON_PARALLEL, _FALCON_SEQUENTIAL)
    for k in (lay[0], lay[1], *lay[2])
    if k is not None
)


def _prob(config: Mapping[str, Any], key: tuple[str, float] | None, name: str) -> float:
    if key is None:
        return 0.0
    value = config.get(key[0])
    if value is None:  # absent (or null: Falcon/Phi allow None) -> the configuration default
        return key[1]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        raise ConfigFormatError(
            f"Cannot read config.json for '{name}': {key[0]} is {value!r}, not a dropout "
            "probability in [0, 1). Pass the model's original config.json.",
            path=name,
        )
    return float(value)


def _layout(
    model_type: str, parallel_attn: bool
) -> tuple[_Key, _Key, tuple[tuple[str, float], ...]]:
    if model_type == "falcon":
        return _FALCON_PARALLEL if parallel_attn else _FALCON_SEQUENTIAL
    return _LAYOUTS.get(model_type, _DEFAULT)


def dropout_everywhere(model_type: str, *, parallel_attn: bool, p: float) -> DropoutSpec:
    """Every dropout the architecture applies, at probability ``p`` (``--dropout``: the config's
    dropout keys all set to ``p``; a Llama-like decoder has attention dropout only)."""
    emb, attn, resid = _layout(model_type, parallel_attn)
    return DropoutSpec(
        embedding=p if emb is not None else 0.0,
        attention=p if attn is not None else 0.0,
        residual=(p,) * len(resid),
    )


def config_dropout(
    config: Mapping[str, Any], *, model_type: str, parallel_attn: bool, name: str
) -> DropoutSpec | None:
    """The model's training-mode dropouts, or None when every probability is 0.

    Raises:
        ConfigFormatError: a dropout key holds something other than a probability in [0, 1).
    """
    emb, attn, resid = _layout(model_type, parallel_attn)
    spec = DropoutSpec(
        embedding=_prob(config, emb, name),
        attention=_prob(config, attn, name),
        residual=tuple(_prob(config, k, name) for k in resid),
    )
    return spec if spec.any else None
