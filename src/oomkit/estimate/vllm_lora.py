"""vLLM with LoRA adapters (``--enable-lora``): what the adapter slots cost, term by term.

vLLM cannot know at start-up which adapters will come, so it wraps every LoRA-capable layer and
preallocates ``max_loras`` slots of ``max_lora_rank`` in each (``LoRAModelManager``
``_create_lora_modules`` -> ``create_lora_weights``). Each term below is a pure function of the
model's shapes and cites the code it models (vllm-project/vllm, read at the 0.11-0.19 line):

* linear layers (vllm/lora/layers/base_linear.py ``BaseLinearLayerWithLoRA.create_lora_weights``,
  column_parallel_linear.py ``MergedColumnParallelLinearWithLoRA`` / ``MergedQKVParallelLinear
  WithLoRA``, row_parallel_linear.py): per slice ``lora_a_stacked = zeros(max_loras, 1, rank_a,
  input_size)`` and ``lora_b_stacked = zeros(max_loras, 1, output_size, rank)`` in ``lora_dtype``.
  Column-parallel layers (qkv_proj: 3 slices q/k/v; gate_up_proj: 2) keep the whole input and
  their output shard; row-parallel ones (o_proj, down_proj) keep their input shard and the whole
  output. ``fully_sharded_loras`` shards the column A's rank and the row B's output by ``tp``.
* fused MoE experts (vllm/lora/layers/fused_moe.py ``FusedMoEWithLoRA``, PR #21229, discussed
  as merged in October 2025, after 0.11.0; huggingface/trl#4584 dates it to 0.11.2):
  ``w13`` A ``(max_loras, experts, rank, hidden)`` and B ``(max_loras, experts, inter/tp, rank)``
  per gate/up slice, ``w2`` A ``(max_loras, experts, rank, inter/tp)`` and B ``(max_loras,
  experts, hidden, rank)``. Earlier releases had no expert LoRA (PR #20932: "we do not support
  FusedMoE LoRA inference").
* the input embedding (vllm/lora/layers/vocab_parallel_embedding.py ``VocabParallelEmbeddingWith
  LoRA``): A ``(max_loras, vocab [+ extra], rank)``, B ``(max_loras, 1, hidden, rank)``; before
  0.12 ``lora_extra_vocab_size`` (256, vllm/config/lora.py, "deprecated and will be removed in
  v0.12.0") added ``embeddings_tensors (max_loras, 256, hidden)`` and 256 rows to A.
* the Punica wrapper's metadata (vllm/lora/punica_wrapper/punica_base.py, punica_gpu.py
  ``LoRAKernelMeta.make`` twice over ``max_num_batched_tokens``): int64 token/embedding indices
  and int32 kernel maps, a few bytes per batched token.
* the profile run (vllm/v1/worker/lora_model_runner_mixin.py ``maybe_dummy_run_with_lora``): the
  ``max_loras`` dummy adapters are built on the CPU (``add_dummy_lora``) and copied into the slots
  above, so the GPU gains only ``add_lora_linear``'s fp32 shrink buffer ``(slices, tokens, rank)``
  of the widest LoRA layer (punica_gpu.py).
* CUDA graphs (PR #25914, "[LoRA] LoRA cuda graph specialization", after 0.11.0;
  ``CompilationConfig.cudagraph_specialize_lora`` default True): every capture size is captured
  ``for has_lora in [True, False]`` (vllm/v1/cudagraph_dispatcher.py), twice the graphs: the
  151B log of 0.19.1 reads "PIECEWISE=102 (largest=512), FULL=70 (largest=256)" where the same
  sizes give 51 and 35 without LoRA. The pool and the range a capture can take both double.

All of it is allocated inside ``load_model`` (``load_lora_model``), so vLLM's "Model loading
took" line includes the slots and the metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oomkit.estimate.breakdown import Component
from oomkit.spec.model import ModelSpec
from oomkit.units import ceil_div

if TYPE_CHECKING:
    from oomkit.spec.settings import InferenceSettings

__all__ = [
    "LORA_EXTRA_VOCAB",
    "LoraPlan",
    "dense_lora_bytes",
    "embedding_lora_bytes",
    "lora_components",
    "lora_details",
    "moe_lora_bytes",
    "plan_lora",
    "profile_lora_bytes",
    "punica_meta_bytes",
    "release_has",
    "settings_lora_plan",
]

#: ``LoRAConfig.lora_extra_vocab_size`` default (vllm/config/lora.py; removed in 0.12)
LORA_EXTRA_VOCAB = 256
#: vLLM releases that changed the LoRA memory (engine rows without a release: newest first)
_SPECIALIZE_FROM = (0, 11, 1)  # PR #25914 merged after the v0.11.0 tag
_MOE_LORA_FROM = (0, 11, 1)  # PR #21229 FusedMoE LoRA (after the v0.11.0 tag)
_NO_EXTRA_VOCAB_FROM = (0, 12, 0)  # lora_extra_vocab_size removed
#: engine generations (:data:`oomkit.estimate.vllm_engines.VLLM_ENGINES`) wholly after 0.11.0
_ENGINES_AFTER_0110 = ("v1-0.11.1", "v1-0.17", "v1-0.20", "current")
_ENGINES_AFTER_012 = ("v1-0.17", "v1-0.20", "current")
_LORA_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "fp16": 2, "bf16": 2}


def release_has(
    version: tuple[int, ...] | None, since: tuple[int, ...], engine: str, engines: tuple[str, ...]
) -> bool:
    """Whether a change released in ``since`` is in the run: by its release when known,
    else by its engine generation (a date or no version: the row's newest release).

    >>> release_has((0, 11, 0), (0, 11, 1), "v1-0.11", ())
    False
    >>> release_has(None, (0, 11, 1), "current", ("current",))
    True
    """
    if version is not None:
        return version[: len(since)] >= since
    return engine in engines


def _linear(
    *, loras: int, rank: int, in_features: int, slices: tuple[int, ...], elem: int, a_rank: int = 0
) -> int:
    """A and B stacks of one wrapped linear: per slice ``loras x a_rank x in`` (A; ``a_rank``
    defaults to ``rank``, fully sharded column layers store ``rank / tp``) + ``loras x out x
    rank`` (B, whose rank is never sharded), ``slices`` the stored output rows of B."""
    a_rank = a_rank or rank
    return sum(loras * (a_rank * in_features + out * rank) for out in slices) * elem


def dense_lora_bytes(
    spec: ModelSpec,
    *,
    layers: range,
    loras: int,
    rank: int,
    elem: int,
    tp: int = 1,
    fully_sharded: bool = False,
) -> int:
    """LoRA slots of the attention projections and the dense MLPs of ``layers``, one rank.

    >>> from oomkit.catalog.models import find_model
    >>> q = find_model("qwen3-4b").spec()
    >>> dense_lora_bytes(q, layers=range(36), loras=1, rank=16, elem=2) // 36
    1835008
    """
    h = spec.hidden_size
    col_rank = ceil_div(rank, tp) if fully_sharded else rank  # column A: rank / tp
    row_out = ceil_div(h, tp) if fully_sharded else h  # row B: output / tp
    total = 0
    moe = spec.moe
    for layer in layers:
        kv_heads = (spec.kv_heads_per_layer or ())[layer : layer + 1] or (spec.num_key_value_heads,)
        # QKVParallelLinear: num_kv_heads = max(1, total_kv / tp) (replicated below tp)
        hd = spec.layer_head_dim(layer)  # Gemma 4: 512 on full layers, 256 elsewhere
        q = spec.num_attention_heads * hd
        kv = max(1, kv_heads[0] // tp) * hd
        qkv = (q // tp, kv, kv)
        total += _linear(
            loras=loras, rank=rank, a_rank=col_rank, in_features=h, slices=qkv, elem=elem
        )
        total += _linear(loras=loras, rank=rank, in_features=q // tp, slices=(row_out,), elem=elem)
        if moe is not None and layer not in moe.dense_layers:
            inter = moe.shared_expert_intermediate_size  # the shared expert is a dense MLP
        else:
            inter = spec.intermediate_size
        if inter:
            up = (inter // tp,) * (2 if spec.mlp_gated else 1)
            total += _linear(
                loras=loras, rank=rank, a_rank=col_rank, in_features=h, slices=up, elem=elem
            )
            total += _linear(
                loras=loras, rank=rank, in_features=inter // tp, slices=(row_out,), elem=elem
            )
    return total


def moe_lora_bytes(
    spec: ModelSpec, *, layers: range, loras: int, rank: int, elem: int, tp: int = 1
) -> int:
    """``FusedMoEWithLoRA`` slots of the routed experts of ``layers`` (0 for a dense model).

    >>> from oomkit.catalog.models import find_model
    >>> moe_lora_bytes(find_model("qwen3-4b").spec(), layers=range(36), loras=1, rank=16, elem=2)
    0
    """
    moe = spec.moe
    if moe is None or not moe.expert_intermediate_size:
        return 0
    n = sum(1 for layer in layers if layer not in moe.dense_layers)
    h, e, inter = spec.hidden_size, moe.num_experts, moe.expert_intermediate_size // tp
    w13 = (2 if spec.mlp_gated else 1) * (rank * h + inter * rank)
    w2 = rank * inter + h * rank
    return n * loras * e * (w13 + w2) * elem


def embedding_lora_bytes(
    spec: ModelSpec, *, loras: int, rank: int, elem: int, extra_vocab: int
) -> int:
    """``VocabParallelEmbeddingWithLoRA`` slots (A over the whole vocabulary, unsharded).

    >>> from oomkit.catalog.models import find_model
    >>> embedding_lora_bytes(find_model("qwen3-4b").spec(), loras=1, rank=16, elem=2, extra_vocab=0)
    4943872
    """
    h = spec.hidden_size
    a = loras * (spec.vocab_size + extra_vocab) * rank
    b = loras * h * rank
    extra = loras * extra_vocab * h  # embeddings_tensors of the added tokens (before 0.12)
    return (a + b + extra) * elem


def punica_meta_bytes(*, loras: int, batched: int, seqs: int) -> int:
    """``PunicaWrapperGPU`` metadata: base indices (int64: token [T], embeddings [2, T], sampler
    and padded sampler [S], per-batch [S]) + two ``LoRAKernelMeta`` over T tokens (int32:
    token map and sorted indices [T], active ids and counts [loras + 1], start locs
    [loras + 2]).

    >>> punica_meta_bytes(loras=1, batched=8192, seqs=256)
    333880
    """
    base = 8 * (3 * batched + 3 * seqs)
    meta = 4 * (2 * batched + 2 * (loras + 1) + loras + 2)
    return base + 2 * meta


def profile_lora_bytes(spec: ModelSpec, *, tokens: int, rank: int, tp: int = 1) -> int:
    """``add_lora_linear``'s fp32 shrink buffer ``(slices, tokens, rank)`` of the widest wrapped
    layer (qkv_proj: 3 slices), live while that layer runs in the profile forward.

    >>> from oomkit.catalog.models import find_model
    >>> profile_lora_bytes(find_model("qwen3-4b").spec(), tokens=8192, rank=16)
    1572864
    """
    del spec, tp  # the buffer's width is the rank, whatever the layer's size
    return 3 * tokens * rank * 4


@dataclass(frozen=True, slots=True, kw_only=True)
class LoraPlan:
    """The LoRA terms of one vLLM rank (bytes)."""

    max_loras: int
    max_lora_rank: int
    lora_dtype_bytes: int
    fully_sharded: bool
    dense_bytes: int
    moe_bytes: int
    embedding_bytes: int
    extra_vocab: int
    meta_bytes: int
    profile_bytes: int
    #: CUDA-graph sets captured: 2 with ``cudagraph_specialize_lora`` (with and without LoRA)
    graph_sets: int
    notes: tuple[str, ...]

    @property
    def load_bytes(self) -> int:
        """What ``load_model`` allocates for LoRA (in vLLM's "Model loading took")."""
        return self.dense_bytes + self.moe_bytes + self.embedding_bytes + self.meta_bytes


def plan_lora(
    spec: ModelSpec,
    *,
    layers: range,
    first_stage: bool,
    max_loras: int | None,
    max_lora_rank: int | None,
    lora_dtype: str | None,
    model_elem: int,
    fully_sharded: bool | None,
    specialize: bool | None,
    enforce_eager: bool,
    batched: int,
    seqs: int,
    tp: int,
    engine: str,
    version: tuple[int, ...] | None,
) -> LoraPlan:
    """The LoRA slots, metadata, profile buffer and graph sets for one rank (vLLM's defaults:
    ``max_loras`` 1, ``max_lora_rank`` 16, ``lora_dtype`` auto = the model dtype)."""
    loras, rank = max_loras or 1, max_lora_rank or 16
    elem = _LORA_DTYPE_BYTES.get(lora_dtype or "auto", model_elem)
    sharded = bool(fully_sharded)
    notes: list[str] = []
    dense = dense_lora_bytes(
        spec, layers=layers, loras=loras, rank=rank, elem=elem, tp=tp, fully_sharded=sharded
    )
    moe = 0
    if spec.moe is not None:
        if release_has(version, _MOE_LORA_FROM, engine, _ENGINES_AFTER_0110):
            moe = moe_lora_bytes(spec, layers=layers, loras=loras, rank=rank, elem=elem, tp=tp)
        else:
            notes.append("LoRA: no slots on the routed experts (FusedMoE LoRA from 0.11.1)")
    extra = (
        0
        if release_has(version, _NO_EXTRA_VOCAB_FROM, engine, _ENGINES_AFTER_012)
        else (LORA_EXTRA_VOCAB)
    )
    emb = embedding_lora_bytes(spec, loras=loras, rank=rank, elem=elem, extra_vocab=extra)
    emb = emb if first_stage else 0
    if specialize is None:
        specialize = release_has(version, _SPECIALIZE_FROM, engine, _ENGINES_AFTER_0110)
    sets = 1 if enforce_eager or not specialize else 2
    if sets == 2:
        notes.append(
            "LoRA: cudagraph_specialize_lora captures every graph with and without LoRA "
            "(PR #25914): twice the CUDA graphs"
        )
    return LoraPlan(
        max_loras=loras,
        max_lora_rank=rank,
        lora_dtype_bytes=elem,
        fully_sharded=sharded,
        dense_bytes=dense,
        moe_bytes=moe,
        embedding_bytes=emb,
        extra_vocab=extra,
        meta_bytes=punica_meta_bytes(loras=loras, batched=batched, seqs=seqs),
        profile_bytes=profile_lora_bytes(spec, tokens=batched, rank=rank, tp=tp),
        graph_sets=sets,
        notes=tuple(notes),
    )


_SRC = "vllm/lora/layers/"


def lora_components(p: LoraPlan, tp: int) -> tuple[Component, ...]:
    """The weights lines of the LoRA slots and the Punica metadata, each with its source."""
    shape = {"max_loras": p.max_loras, "max_lora_rank": p.max_lora_rank, "tp": tp}
    shape["lora_dtype_bytes"] = p.lora_dtype_bytes
    out = [
        Component(
            category="weights",
            label="LoRA slots (linear layers)",
            n_bytes=p.dense_bytes,
            formula="per layer and slice: max_loras x (rank x in + out x rank) x lora dtype; "
            "qkv 3 slices, gate_up 2, o/down 1 (column: whole input, output shard; row: input "
            "shard, whole output" + ("; fully sharded" if p.fully_sharded else "") + ")",
            inputs=shape,
            source=_SRC + "base_linear.py create_lora_weights, column_parallel_linear.py",
        )
    ]
    if p.moe_bytes:
        out.append(
            Component(
                category="weights",
                label="LoRA slots (MoE experts)",
                n_bytes=p.moe_bytes,
                formula="per MoE layer: max_loras x experts x (w13: 2 x (rank x hidden + "
                "inter/tp x rank) + w2: rank x inter/tp + hidden x rank) x lora dtype",
                inputs=shape,
                source=_SRC + "fused_moe.py FusedMoEWithLoRA (PR #21229)",
            )
        )
    if p.embedding_bytes:
        out.append(
            Component(
                category="weights",
                label="LoRA slots (embedding)",
                n_bytes=p.embedding_bytes,
                formula="max_loras x ((vocab + extra) x rank + hidden x rank + extra x hidden)"
                " x lora dtype",
                inputs={**shape, "extra_vocab": p.extra_vocab},
                source=_SRC + "vocab_parallel_embedding.py create_lora_weights",
            )
        )
    out.append(
        Component(
            category="weights",
            label="Punica LoRA metadata",
            n_bytes=p.meta_bytes,
            formula="int64 indices over max_num_batched_tokens and max_num_seqs + two int32 "
            "LoRAKernelMeta over the tokens",
            inputs={"max_loras": p.max_loras},
            source="vllm/lora/punica_wrapper/punica_base.py, punica_gpu.py",
        )
    )
    return tuple(out)


def lora_details(p: LoraPlan) -> dict[str, object]:
    """``runtime_details`` entries of the LoRA terms (how each was computed is in the
    breakdown's lines)."""
    return {
        "lora_max_loras": p.max_loras,
        "lora_max_rank": p.max_lora_rank,
        "lora_slot_bytes": p.dense_bytes + p.moe_bytes + p.embedding_bytes,
        "lora_meta_bytes": p.meta_bytes,
        "lora_profile_bytes": p.profile_bytes,
        "cudagraph_sets": p.graph_sets,
    }


def settings_lora_plan(
    spec: ModelSpec, s: InferenceSettings, engine: str, stage: range, first: bool, elem: int,
    batched: int, seqs: int, tp: int,
) -> LoraPlan | None:  # fmt: skip
    """``--enable-lora``'s terms for one rank from the run's settings (None without it)."""
    if not s.enable_lora:
        return None
    from oomkit.estimate.generations import parse_runtime_version

    ver = parse_runtime_version("vllm", s.runtime_version) if s.runtime_version else None
    return plan_lora(
        spec, layers=stage, first_stage=first, max_loras=s.max_loras,
        max_lora_rank=s.max_lora_rank, lora_dtype=s.lora_dtype, model_elem=elem,
        fully_sharded=s.fully_sharded_loras, specialize=s.cudagraph_specialize_lora,
        enforce_eager=bool(s.enforce_eager), batched=batched, seqs=seqs, tp=tp, engine=engine,
        version=ver if isinstance(ver, tuple) else None,
    )  # fmt: skip
