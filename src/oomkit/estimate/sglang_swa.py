"""SGLang's hybrid sliding-window KV pool: full and sliding layers get their own token counts.

``ModelRunner`` sizes one token pool as if every layer held every token (``max_total_num_tokens
= rest // cell_size``), then, for a hybrid-SWA model, splits that memory between the full and the
sliding-window layers (``SWAKVPool`` / ``SWATokenToKVPoolAllocator``) so that ``swa_tokens =
full_tokens x --swa-full-tokens-ratio`` (default 0.8, server_args.py) and
``max_total_num_tokens`` becomes ``full_tokens``. The memory is the same; a request may be as long
as the full layers' count, which is larger than the uniform count.

* v0.4.10 (model_runner.py ``set_num_token_hybrid``): by token count, ``full_tokens =
  int(max_total_num_tokens x num_hidden_layers / (ratio x n_swa + n_full))``; on for every model
  whose class has ``get_attention_sliding_window_size`` (Gemma 2, Gemma 3, Gemma 3n) and not
  Llama 4 (its own ``--hybrid-kvcache-ratio``, off by default, v0.4.9);
* v0.4.10.post2 - v0.5.7: server_args.py turns it off for Gemma 2/3/3n ("FIXME: PR #7367 is not
  compatible with gemma2 model") and for GPT-OSS: no model of the catalog uses it;
* v0.5.8 (configs/model_config.py ``is_hybrid_swa_model``: Llama 4, GptOssForCausalLM, MiMo-V2):
  GPT-OSS on again, except with speculative decoding or the trtllm_mha backend (v0.5.9: only
  trtllm_mha; v0.5.10: always);
* v0.5.9 (model_runner_kv_cache_mixin.py ``_resolve_hybrid_swa_tokens``): by memory, ``full_tokens
  = int(T x (F n_full + S n_swa) / (F n_full + ratio x S n_swa))`` with F, S a full and a sliding
  layer's bytes per token: the same number where the two are equal.
``--disable-hybrid-swa-memory`` keeps the uniform pool. Llama 4's split (chunked attention) and
the trtllm_mha backend (SGLang's default for GPT-OSS on Blackwell) are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from oomkit.estimate.hf_kv import KvLayer

__all__ = ["SWA_FULL_TOKENS_RATIO", "SwaSplit", "hybrid_swa_split"]

#: ``ServerArgs.swa_full_tokens_ratio`` (v0.4.10 - v0.5.10 server_args.py)
SWA_FULL_TOKENS_RATIO = 0.8


@dataclass(frozen=True, slots=True)
class SwaSplit:
    """The full and sliding layers' token counts of a hybrid-SWA pool."""

    full_tokens: int
    swa_tokens: int
    ratio: float
    rule: str  # "tokens" | "memory"


def hybrid_swa_split(
    architecture: str,
    layers: tuple[KvLayer, ...],
    tokens: int,
    effects: Mapping[str, object],
    *,
    speculative: bool = False,
    ratio: float = SWA_FULL_TOKENS_RATIO,
) -> SwaSplit | None:
    """The split SGLang makes of a uniform pool of ``tokens`` (None: no hybrid pool).

    ``effects``: the generation's ``hybrid_swa`` (architectures that get the pool),
    ``swa_split`` ("tokens" or "memory") and ``swa_off_speculative``.
    """
    archs = {a for a in str(effects.get("hybrid_swa", "")).split(",") if a}
    if architecture not in archs or tokens <= 0:
        return None
    if speculative and effects.get("swa_off_speculative"):
        return None
    full = [lay for lay in layers if lay.kind == "full"]
    swa = [lay for lay in layers if lay.kind == "sliding" and not lay.chunked]
    if not full or not swa:
        return None
    rule = str(effects.get("swa_split", "tokens"))
    if rule == "memory":
        f_bytes = full[0].bytes_per_token
        s_bytes = swa[0].bytes_per_token
        total = tokens * (f_bytes * len(full) + s_bytes * len(swa))
        full_tokens = int(total / (f_bytes * len(full) + ratio * s_bytes * len(swa)))
    else:
        full_tokens = int(tokens * len(layers) / (ratio * len(swa) + len(full)))
    return SwaSplit(
        full_tokens=full_tokens, swa_tokens=int(full_tokens * ratio), ratio=ratio, rule=rule
    )
