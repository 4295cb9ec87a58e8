"""Where transformers' model code departs from what the config says: the dtype it loads a
config without one in, the K/V heads a ``DynamicCache`` really stores, and the positions a
learned position table can index.

* A config with no ``torch_dtype``/``dtype`` (GPT-2's): ``from_pretrained`` without ``dtype``
  loads ``torch.get_default_dtype()``, float32 (``modeling_utils._get_dtype``, the default
  before transformers 5); ``dtype="auto"`` (the default since 5.0, PR #42805, and what
  ``--emit`` writes) reads the config's dtype and, without one, the checkpoint's first
  floating weight (``get_state_dict_dtype``). Without a checkpoint header to read, that
  dtype is assumed float32 (both rules agree for a float32 checkpoint; the assumption is
  printed), never the bf16 a config-less guess elsewhere takes.

* Falcon with ``new_decoder_architecture`` (Falcon-40B/180B, Falcon2-11B): ``FalconAttention
  ._split_heads`` broadcasts K and V to every query head (``key = torch.broadcast_to(key,
  query.shape)``) and ``forward`` reshapes them with ``num_kv_heads = self.num_heads if
  self.new_decoder_architecture else self.num_kv_heads`` before ``layer_past.update``
  (transformers ``models/falcon/modeling_falcon.py``, 5.24 lines 254-261 and 313-328; the same
  lines since Falcon entered transformers in 4.33). The ``reshape`` of the transposed
  broadcast view cannot be a view, so it copies, and ``DynamicLayer.update`` stores the result
  and ``torch.cat``s the next tokens onto it (``cache_utils.py``): the cache holds
  ``num_attention_heads`` heads per layer, not ``num_kv_heads`` (x16 for Falcon-40B). vLLM,
  SGLang and llama.cpp store ``num_kv_heads`` (their own layouts), so this is for the
  transformers KV path only.
* Learned absolute position embeddings (GPT-2 ``wpe``, ``models/gpt2/modeling_gpt2.py``
  ``position_embeds = self.wpe(position_ids)``; OPT ``OPTLearnedPositionalEmbedding``, whose
  table has ``max_position_embeddings + 2`` rows for ``position_ids + self.offset`` with offset
  2): a position past the table is an out-of-range ``nn.Embedding`` index, an ``IndexError``
  on the CPU and a device-side assert on CUDA, never an OOM; the tokenizer warns "Running this
  sequence through the model will result in indexing errors"
  (``tokenization_utils_base._eventual_warn_about_too_long_sequence``). ``generate()`` does
  not stop at the table. ``max_new_tokens`` N after a prompt of P feeds N - 1 tokens back
  (the last one is sampled, never embedded), at positions up to P + N - 2: the run needs
  P + N <= rows + 1. A prompt past the table, or an asked-for N past it, is refused (a
  blocker); an unset N (oomkit's default 256) is cut to what the table leaves, with a note,
  as front ends that fit the prompt and the generation into the model's context do. RoPE/ALiBi
  models run past ``max_position_embeddings`` (quality degrades, memory does not refuse): no
  limit here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from oomkit.spec.model import ModelSpec, TensorInfo

__all__ = [
    "DEFAULT_NEW_TOKENS",
    "cache_spec",
    "ctx_cap",
    "generated_tokens",
    "learned_position_limit",
    "load_dtype",
    "position_limit_blocker",
    "training_position_blocker",
]

#: ``max_new_tokens`` when unset (oomkit's assumption, not transformers': ``generate()``'s own
#: default is ``max_length=20`` in all)
DEFAULT_NEW_TOKENS = 256

#: rows of the learned table no position id reaches (OPT's offset: ``OPTLearnedPositionalEmbedding``
#: ``self.offset = 2``, ``super().forward(position_ids + self.offset)``)
_POSITION_OFFSET = {"opt": 2}


def load_dtype(
    spec: ModelSpec, tensors: Sequence[TensorInfo], quant: str | None
) -> tuple[str | None, str | None]:
    """The ``quant`` transformers loads with and the assumption to print (None: none made).

    Only a config with neither ``torch_dtype`` nor ``quantization_config``, whose tensors have no
    header bytes (a checkpoint header already says its dtype), and no ``quant`` asked for."""
    if quant or spec.torch_dtype or spec.quantization is not None:
        return quant, None
    if tensors and all(t.n_bytes is not None for t in tensors):
        return quant, None
    return "fp32", (
        "the config has no dtype: float32 weights (transformers < 5 loads "
        "torch.get_default_dtype() without dtype=; dtype='auto', the default since 5.0, takes "
        "the checkpoint's first floating weight dtype: pass -q if it is not float32)"
    )


def cache_spec(spec: ModelSpec) -> ModelSpec:
    """``spec`` with the K/V heads transformers' ``DynamicCache`` stores per layer (Falcon's
    new decoder architecture broadcasts K/V to every query head before the cache update)."""
    if spec.model_type == "falcon" and spec.new_decoder_architecture:
        return dataclasses.replace(
            spec, num_key_value_heads=spec.num_attention_heads, kv_heads_per_layer=None
        )
    return spec


def learned_position_limit(spec: ModelSpec) -> int | None:
    """Positions a decoder's learned absolute position table can index (None: no such table)."""
    if spec.is_encoder or not spec.position_embedding_rows:
        return None
    return spec.position_embedding_rows - _POSITION_OFFSET.get(spec.model_type, 0)


def generated_tokens(
    spec: ModelSpec, prompt: int, asked: int | None, default: int
) -> tuple[int, str | None]:
    """``max_new_tokens`` to model and the note saying it was cut (None: not cut).

    Only an unset count after a prompt the table holds is cut, to the tokens it leaves (at
    least 1: the prefill's own logits need no further position); a longer prompt is refused
    (:func:`position_limit_blocker`)."""
    limit = learned_position_limit(spec)
    if asked is not None or limit is None or prompt > limit or prompt + default <= limit + 1:
        return asked or default, None
    new = max(1, limit + 1 - prompt)
    return new, (
        f"max_new_tokens unset: {spec.model_type}'s learned position table has {limit} "
        f"positions, so {new} new token(s) after a {prompt}-token prompt, not the default "
        f"{default} (more would index past it)"
    )


def position_limit_blocker(spec: ModelSpec, prompt: int, new: int) -> str | None:
    """The refusal for ``prompt`` tokens and ``new`` generated past the learned table, or None
    (``new`` - 1 generated tokens are fed back: positions up to prompt + new - 2)."""
    limit = learned_position_limit(spec)
    if limit is None or (prompt <= limit and prompt + new <= limit + 1):
        return None
    return _past_table(
        spec, limit, f"{prompt} prompt + {new} new tokens", f"ctx + max_new_tokens <= {limit + 1}"
    )


def training_position_blocker(spec: ModelSpec, seq: int) -> str | None:
    """The refusal for a training sequence of ``seq`` tokens past the learned table, or None.

    A training step embeds every position of the sequence at once (GPT-2: position ids from
    ``cache_position``, ``0 .. seq - 1``; OPT: ``cumsum(attention_mask) - 1`` plus its offset 2):
    ``seq`` may be the table's length and no more.
    The same out-of-range ``nn.Embedding`` index as inference past the table, at the first
    forward, whatever the memory."""
    limit = learned_position_limit(spec)
    if limit is None or seq <= limit:
        return None
    return _past_table(spec, limit, f"a {seq}-token training sequence", f"seq <= {limit}")


#: ``--seq`` when not given (training)
DEFAULT_TRAIN_SEQ = 2048


def default_training_seq(spec: ModelSpec, asked: int | None) -> tuple[int, str | None]:
    """The training sequence to price and the note saying it was chosen (None: no note).

    ``asked`` is the user's ``--seq`` (None: not given): kept as given (a length past the table
    is then the blocker of :func:`training_position_blocker`). Not given: 2048 tokens, or the
    learned position table when it is shorter (GPT-2: 1024), so a bare ``plan gpt2 --train full``
    plans a step the model can run instead of answering "Nothing fits"."""
    if asked is not None:
        return asked, None
    limit = learned_position_limit(spec)
    if limit is None or limit >= DEFAULT_TRAIN_SEQ:
        return DEFAULT_TRAIN_SEQ, None
    return limit, (
        f"--seq not given: {limit} tokens, {spec.model_type}'s learned position table "
        f"(the default {DEFAULT_TRAIN_SEQ} would index past it)"
    )


def _past_table(spec: ModelSpec, limit: int, what: str, keep: str) -> str:
    """One wording for inference and training past the learned table."""
    verb = "indexes" if what.startswith("a ") else "index"
    return (
        f"{spec.model_type} has a learned position table of {limit} positions "
        f"(n_positions/max_position_embeddings): {what} {verb} past "
        f"it (IndexError, or a CUDA device-side assert), whatever the memory; keep {keep}"
    )


def ctx_cap(
    spec: ModelSpec, max_new_tokens: int | None, default: int = DEFAULT_NEW_TOKENS
) -> int | None:
    """The longest prompt ``--ctx max`` may pick: the table less the generated tokens."""
    limit = learned_position_limit(spec)
    return None if limit is None else max(1, limit + 1 - (max_new_tokens or default))
