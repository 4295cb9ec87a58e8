"""vLLM's speculative-decoding terms in one rank's plan (V1 spec decode).

The draft (:func:`oomkit.estimate.speculative.draft_terms`) is loaded with the target
(gpu_model_runner.py ``load_model``: its weights add to the rank's), its KV layers share the
target's block budget (``get_kv_cache_spec``), the CUDA graphs are captured for a decode query
of ``1 + k`` tokens per sequence (``decode_query_len``) over the target's and the draft's layers,
and on the last stage the profile run's sampler adds the rejection sampler's dummy logits
(:func:`oomkit.estimate.speculative.rejection_sampler_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.estimate.hf_kv import KvLayer
from oomkit.estimate.speculative import DraftTerms, rejection_sampler_bytes
from oomkit.estimate.vllm_cudagraph import cudagraph_bytes
from oomkit.spec.model import ModelSpec

__all__ = ["DraftFold", "fold_draft"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftFold:
    """One rank's plan figures with the draft folded in."""

    weights_bytes: int
    layers: tuple[KvLayer, ...]
    cudagraph_bytes: int
    activation_bytes: int
    rejection_sampler_bytes: int
    notes: tuple[str, ...]


def fold_draft(
    spec: ModelSpec,
    draft: DraftTerms,
    *,
    engine: str,
    weights_bytes: int,
    layers: tuple[KvLayer, ...],
    stage_layers: int,
    cudagraph_bytes_: int,
    graph_sets: int,
    capture_graphs: bool,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    elem_bytes: int,
    tp: int,
    hip: bool,
    samples: bool,
    rows: int,
    sampler_bytes: int,
    activation_bytes: int,
) -> DraftFold:
    """The rank's weights, KV layers, CUDA graphs and activation peak with ``draft`` in.

    ``capture_graphs``: not ``--enforce-eager`` (the graphs are re-sized for ``1 + k`` tokens
    per sequence, times the LoRA ``graph_sets``); ``samples``: the last stage of a sampling
    (not pooling) run, whose profile holds the rejection sampler's logits.
    """
    notes = list(draft.notes)
    if engine.startswith("v0"):
        notes.append(
            "speculative decoding priced as vLLM V1 runs it (draft layers in the shared "
            "block pool); the V0 spec-decode worker of this release sized the draft's "
            "blocks its own way"
        )
    graphs = cudagraph_bytes_
    if capture_graphs:  # decode_query_len = 1 + k tokens per sequence
        graphs, _ = cudagraph_bytes(
            spec,
            engine,
            layers=stage_layers + draft.n_layers,
            max_num_seqs=max_num_seqs * (1 + draft.k),
            max_num_batched_tokens=max_num_batched_tokens,
            elem_bytes=elem_bytes,
            tp=tp,
            hip=hip,
        )
        graphs *= graph_sets
    rejection = 0
    act = activation_bytes
    if samples:
        rejection = rejection_sampler_bytes(rows, spec.vocab_size)
        act = max(act, sampler_bytes + rejection)
    return DraftFold(
        weights_bytes=weights_bytes + draft.weights_bytes,
        layers=(*layers, *draft.layers),
        cudagraph_bytes=graphs,
        activation_bytes=act,
        rejection_sampler_bytes=rejection,
        notes=tuple(notes),
    )
