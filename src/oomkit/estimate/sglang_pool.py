"""SGLang's KV token pool: sized per rank, then split for hybrid sliding-window models.

Each rank's pool is ``free0 x mem_fraction_static - weights - rotary cache - vision tower``
(``ModelRunner.profile_max_num_token``, python/sglang/srt/model_executor/model_runner.py) in cells
of ``cell_size`` bytes; the smallest rank's count is the server's ``max_total_num_tokens``. After
it ``init_memory_pool`` allocates the ``ReqToTokenPool`` and the ``1 - mem_fraction_static`` rest
holds activations and CUDA graphs (:mod:`oomkit.estimate.sglang` explains the terms). Then a
hybrid-SWA model splits that memory between its full and sliding layers
(:mod:`oomkit.estimate.sglang_swa`), and a pool below one request of the context length caps the
request (:func:`pool_below_context_note`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oomkit.estimate.breakdown import Component, DeviceUsage
from oomkit.estimate.hf_activations import forward_peak_bytes
from oomkit.estimate.hf_kv import KvLayer, kv_bytes
from oomkit.estimate.hf_weights import WeightsPlan
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.estimate.sglang_multimodal import MultimodalPolicy
from oomkit.estimate.sglang_outside import outside_pool
from oomkit.estimate.sglang_swa import SwaSplit, hybrid_swa_split
from oomkit.estimate.speculative import DraftTerms
from oomkit.estimate.speculative_sglang import draft_components, draft_pool_share, draft_rest
from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB, format_bytes

__all__ = [
    "PoolInputs",
    "PoolLimit",
    "TokenPools",
    "pool_below_context_note",
    "pool_limit",
    "token_pools",
]

#: NCCL communicator buffers created by ``init_torch_distributed`` before ``free0`` is read:
#: they lower ``free0`` itself (same order as vLLM's TP non-torch growth)
_NCCL_INIT = 256 * MiB

#: one pipeline stage: its weights, its layers' KV cells and its bytes per token (cell size)
Stage = tuple[WeightsPlan, tuple[KvLayer, ...], int]


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolInputs:
    """What every rank's token pool reads, worked out once by
    :func:`oomkit.estimate.sglang.estimate_sglang`."""

    spec: ModelSpec
    settings: InferenceSettings
    devices: tuple[DeviceTarget, ...]
    stages: Sequence[Stage]  # one per pipeline stage
    tp: int
    pp: int
    ctx: int  # context_len
    elem: int  # the model dtype's bytes per element
    frac: float  # mem_fraction_static
    rope: int  # rotary cos/sin cache bytes
    vision: int  # vision tower bytes on a first-stage rank
    mm: MultimodalPolicy
    graph_bs: int  # cuda_graph_max_bs
    graph_tables: int  # fa3 CUDA-graph attention table bytes
    draft: DraftTerms | None
    chunk: int  # chunked_prefill_size
    check_outside: bool  # compare the prefill chunk + graph logits with the rest


@dataclass(frozen=True, slots=True)
class TokenPools:
    """Each rank's usage and what the smallest pool bounds."""

    usages: tuple[DeviceUsage, ...]
    tokens: int | None  # uniform max_total_num_tokens (None: capacity unknown)
    reqs: int | None  # max_num_reqs
    prefill: int | None  # one-forward prefill peak when chunked prefill is off
    outside: dict[str, int] | None  # chunk + graph logits vs the rest (sglang_outside)
    blockers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PoolLimit:
    """The server's token count after any hybrid-SWA split, with its notes and blockers."""

    tokens: int | None  # max_total_num_tokens (the full layers' count under a split)
    swa: SwaSplit | None
    notes: tuple[str, ...]
    blockers: tuple[str, ...]


def token_pools(p: PoolInputs) -> TokenPools:
    """Every rank's components around its KV token pool (see the module docstring)."""
    spec, settings, devices, stages, tp, pp = p.spec, p.settings, p.devices, p.stages, p.tp, p.pp
    ctx, elem, frac, rope, vision, mm = p.ctx, p.elem, p.frac, p.rope, p.vision, p.mm
    graph_bs, graph_tables, draft, chunk = p.graph_bs, p.graph_tables, p.draft, p.chunk
    usages = []
    tokens: int | None = None
    reqs: int | None = None
    prefill: int | None = None
    outside: dict[str, int] | None = None
    blockers: list[str] = []
    for rank in range(tp * pp):
        weights, layers, cell = stages[rank // tp]
        v_rank = vision if rank < tp else 0  # the tower lives on the first stage
        d = devices[rank] if rank < len(devices) else devices[0]
        cap = d.capacity_bytes
        if settings.overhead_bytes is not None:
            overhead, why = settings.overhead_bytes, "--overhead (user value)"
        else:
            overhead, why = cuda_context_bytes("sglang", d)
            if tp * pp > 1:
                overhead += _NCCL_INIT
                why += "; + NCCL communicator buffers"
        req_pool = 0
        if cap is not None:
            free0 = cap - overhead
            rest = int(free0 * frac) - weights.bytes_per_rank - rope - v_rank
            pool = max(0, rest)
            stage_tokens = pool // cell if cell else None
            # the smallest pool of all ranks bounds the server (SGLang syncs the minimum)
            if stage_tokens is not None and (tokens is None or stage_tokens < tokens):
                tokens = stage_tokens
            if tokens is not None:
                # --max-running-requests is passed straight to init_memory_pool(max_num_reqs)
                reqs = settings.max_num_seqs or min(max(int(tokens / ctx * 512), 2048), 4096)
                reqs = min(reqs, max(1, tokens // 2))
                req_pool = (reqs + 1) * (ctx + 4) * 4
            reserve = max(0, free0 - int(free0 * frac) - req_pool - graph_tables)
            reserve, draft_blocker = draft_rest(draft, reserve, frac)
            blockers.extend([draft_blocker] if draft_blocker else [])
            if mm.chunked_prefill is False and prefill is None:
                prefill = forward_peak_bytes(spec, tokens=ctx, elem_bytes=elem, tp=tp).n_bytes
            if p.check_outside and outside is None:
                out = outside_pool(
                    spec,
                    chunk=chunk,
                    tokens=tokens,
                    graph_bs=None if settings.enforce_eager else graph_bs,
                    elem=elem,
                    tp=tp,
                )
                outside = {
                    "chunk_tokens": out.chunk_tokens,
                    "prefill_chunk_bytes": out.prefill_chunk_bytes,
                    "graph_logits_bytes": out.graph_logits_bytes,
                    "need_bytes": out.total_bytes,
                    "rest_bytes": reserve,
                }
            if prefill is not None and prefill > reserve:
                blockers.append(
                    f"chunked prefill is off for this multimodal model in this SGLang: one "
                    f"request of {ctx} tokens is prefilled in one forward, whose activations "
                    f"({format_bytes(prefill)}) exceed the {format_bytes(reserve)} left outside "
                    f"mem_fraction_static {frac:.3f} after the req_to_token pool"
                )
            if rest <= 0:
                blockers.append(
                    "weights exceed mem_fraction_static of the GPU: SGLang stops with "
                    "'Not enough memory. Please try to increase --mem-fraction-static.'"
                )
        else:
            pool = kv_bytes(layers, seq_len=ctx)
            reserve = 0
        comps = (
            Component(
                category="weights",
                label="weights",
                n_bytes=weights.bytes_per_rank,
                formula=weights.formula,
                inputs={"tp": tp},
            ),
            *(
                (
                    Component(
                        category="weights",
                        label="vision encoder + projector",
                        n_bytes=v_rank,
                        formula="multimodal_params x dtype"
                        + (" (whole on every rank)" if mm.vision == "replicated" else " / tp"),
                        inputs={"multimodal_params": spec.multimodal_params, "tp": tp},
                        source="sglang/srt/models/gemma3_mm.py, mllama4.py (vision tower)",
                    ),
                )
                if v_rank
                else ()
            ),
            Component(
                category="weights",
                label="rotary cos/sin cache",
                n_bytes=rope,
                formula="max_position x rotary_dim x dtype",
                source="sglang/srt/layers/rotary_embedding.py get_rope",
            ),
            *draft_components(draft, pool, cell, tp),
            Component(
                category="kv_cache",
                label="KV token pool",
                n_bytes=pool - draft_pool_share(draft, pool, cell),
                formula="free0 x mem_fraction_static - weights, rotary cache, vision tower "
                "(free0: after context/NCCL)",
                inputs={"mem_fraction_static": frac, "cell_size": cell},
                source="sglang/srt/model_executor/model_runner.py profile_max_num_token",
            ),
            Component(
                category="overhead",
                label="req_to_token pool",
                n_bytes=req_pool,
                formula="(max_num_reqs + 1) x (context_len + 4) x int32",
                inputs={"max_num_reqs": reqs, "context_len": ctx},
                source="sglang/srt/model_executor/model_runner.py init_memory_pool",
            ),
            *(
                (
                    Component(
                        category="overhead",
                        label="CUDA-graph attention tables",
                        n_bytes=graph_tables,
                        formula="3 x max_bs x context_len int32 + local_block_table",
                        inputs={"max_bs": graph_bs, "context_len": ctx},
                        source="sglang/srt/layers/attention/flashattention_backend.py "
                        "init_cuda_graph_state (PR #6273)",
                    ),
                )
                if graph_tables and cap is not None
                else ()
            ),
            Component(
                category="activations",
                label="activations + CUDA graphs (reserved rest)",
                n_bytes=reserve,
                formula="free0 x (1 - mem_fraction_static) - req_to_token pool"
                + (" - CUDA-graph attention tables" if graph_tables and cap else "")
                + (" - draft model weights" if draft is not None and draft.weights_bytes else ""),
                inputs={"mem_fraction_static": frac},
            ),
            Component(
                category="overhead",
                label="CUDA context",
                n_bytes=overhead,
                formula=why,
                source="oomkit.estimate.overhead",
            ),
        )
        usages.append(
            DeviceUsage(device=device_label(d, rank), components=comps, capacity_bytes=cap)
        )
    return TokenPools(tuple(usages), tokens, reqs, prefill, outside, tuple(blockers))


def pool_limit(
    spec: ModelSpec,
    settings: InferenceSettings,
    layers: tuple[KvLayer, ...],
    tokens: int | None,
    ctx: int,
    effects: Mapping[str, object],
) -> PoolLimit:
    """The hybrid-SWA split of a uniform pool of ``tokens`` (``layers``: the first stage's) and
    what the resulting count means for one request of ``ctx`` tokens."""
    blockers: list[str] = []
    pool_note: tuple[str, ...] = ()
    if (
        settings.ctx is None
        and spec.max_position_embeddings
        and ctx != spec.max_position_embeddings
    ):
        pool_note = (
            f"no --context-length: SGLang derives {ctx} tokens (max_position_embeddings "
            f"{spec.max_position_embeddings} x the {spec.rope_scaling_type} rope_scaling factor, "
            "get_context_length), which sizes the req_to_token pool; pass --context-length to "
            "shrink it",
        )
    swa = (
        None
        if tokens is None or settings.disable_hybrid_swa_memory
        else hybrid_swa_split(
            spec.architecture,
            layers,
            tokens,
            effects,
            speculative=settings.speculative_method is not None,
        )
    )
    if swa is not None and tokens is not None:
        # the same memory, split: max_total_num_tokens is the full layers' count (sglang_swa)
        pool_note = (
            *pool_note,
            f"hybrid sliding-window pool: the full layers hold {swa.full_tokens} tokens, the "
            f"sliding ones {swa.swa_tokens} (--swa-full-tokens-ratio {swa.ratio}; a uniform "
            f"pool would hold {tokens}); --disable-hybrid-swa-memory keeps the uniform pool",
        )
        tokens = swa.full_tokens
    if tokens is not None and tokens > 0:
        # managers/tp_worker.py (v0.4.6 and the stored newest): max_req_len = min(context_len
        # - 1, max_total_num_tokens - 1), max_req_input_len = max_req_len - 5, and only
        # `assert max_req_len > 0 and max_req_input_len > 0, "Memory pool size is too small"`
        max_req_len = min(ctx - 1, tokens - 1)
        if max_req_len - 5 <= 0:
            blockers.append(
                f"the token pool ({tokens} tokens) holds no request: SGLang stops with "
                "'Memory pool size is too small'"
            )
        elif tokens < ctx:
            pool_note = (*pool_note, pool_below_context_note(tokens, ctx))
    return PoolLimit(tokens, swa, pool_note, tuple(blockers))


def pool_below_context_note(tokens: int, ctx: int) -> str:
    """What SGLang does when its token pool is smaller than one request of the context length.

    It starts and serves: ``TpModelWorker.__init__`` (python/sglang/srt/managers/tp_worker.py,
    v0.4.6 and the stored newest, commit 0045f98) caps a request at ``max_req_len =
    min(context_len - 1, max_total_num_tokens - 1)`` and its input at ``max_req_input_len =
    max_req_len - 5``; the only start-up check is ``max_req_len > 0 and max_req_input_len > 0``
    ("Memory pool size is too small"). A longer input is refused by
    ``managers/utils.py validate_input_length`` ("Input length (N tokens) exceeds the maximum
    allowed length (M tokens)", HTTP 400) or truncated with ``--allow-auto-truncate``, and
    ``Scheduler.handle_generate_request`` caps ``max_new_tokens`` at ``max_req_len - input - 1``.
    So it is a limit on the longest request, not a failure to load.

    >>> pool_below_context_note(25644, 40960).split(": ")[1][:54]
    'SGLang still starts but caps a request at 25643 tokens'
    """
    max_req_len = min(ctx - 1, tokens - 1)
    return (
        f"the token pool ({tokens} tokens) is smaller than one request of {ctx} tokens: SGLang "
        f"still starts but caps a request at {max_req_len} tokens (tp_worker.py max_req_len); "
        f"a longer input ({max_req_len - 5}+ tokens) is refused with HTTP 400 'Input length ... "
        "exceeds the maximum allowed length' (or truncated with --allow-auto-truncate)"
    )
