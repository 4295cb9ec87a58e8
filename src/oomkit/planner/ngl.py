"""``plan -ngl N``: the user fixed the layers on the GPU; the planner searches the rest.

llama.cpp's ``-ngl N`` puts the last N of the model's offloadable layers on the GPU: the
``n_layer`` repeating blocks and the output layer, ``n_layer + 1`` in all (``src/llama-model.cpp``
``load_tensors``: ``i_gpu_start = std::max(n_layer_all + 1 - n_gpu_layers, 0)``,
``act_gpu_layers = std::min(n_gpu_layers, n_layer_all + 1)``), so any N above ``n_layer + 1``
offloads what ``n_layer + 1`` does (the usual ``-ngl 99``/``999``). Ollama's ``num_gpu`` is
the same count (``PARAMETER num_gpu``). With N fixed the planner keeps its other choices
(weight quant, KV cache type, context; experts on the CPU when every layer is on the GPU) and
proposes only plans with exactly N layers on the GPU. vLLM, SGLang and transformers have no
layer count to fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.planner.knobs import LEVEL_EXPERTS_CPU, LEVEL_LAYERS_CPU, Candidate

if TYPE_CHECKING:
    from oomkit.planner.request import PlanRequest
    from oomkit.planner.search import Evaluation, Searcher

__all__ = ["LAYER_SPLIT_RUNTIMES", "fixed_candidates", "fixed_layers", "fixed_split"]

#: the runtimes whose layers split between GPU and CPU by count (llama.cpp -ngl, Ollama num_gpu)
LAYER_SPLIT_RUNTIMES = ("llama.cpp", "ollama")


def fixed_layers(runtime: str, n_layer: int, request: PlanRequest, notes: list[str]) -> int | None:
    """The layer count the plans must keep on the GPU (clamped to ``n_layer + 1``), or None.

    Raises:
        InvalidSettingError: ``runtime`` has no layer split, or ``--no-offload`` forbids the
            layers ``-ngl`` leaves on the CPU.
    """
    n = request.n_gpu_layers
    if n is None:
        return None
    if runtime not in LAYER_SPLIT_RUNTIMES:
        raise InvalidSettingError(
            f"-ngl {n}: {runtime} has no GPU layer count to fix (-ngl is llama.cpp's, num_gpu "
            "Ollama's); drop -ngl or plan with --runtime llama.cpp / ollama",
            setting="n_gpu_layers",
            value=n,
        )
    n_all = n_layer + 1
    if n > n_all:
        note = (
            f"-ngl {n} is above the model's {n_layer} layers + output: llama.cpp offloads "
            f"all {n_all} (as -ngl {n_all})"
        )
        if note not in notes:
            notes.append(note)
        return n_all
    if n < n_all and request.no_offload:
        raise InvalidSettingError(
            f"-ngl {n} leaves {n_all - n} of {n_all} layers on the CPU and --no-offload forbids "
            "it; drop one of them",
            setting="n_gpu_layers",
            value=n,
        )
    return n


def fixed_split(cand: Candidate, fixed: int | None) -> bool:
    """Whether ``cand`` is a candidate of the fixed split ``-ngl fixed`` (for the misses)."""
    return fixed is not None and cand.level == LEVEL_LAYERS_CPU and cand.n_gpu_layers == fixed


def fixed_candidates(s: Searcher, quant: str, *, upgrade: bool) -> list[Evaluation]:
    """The best fitting candidate of each level for one quant with the layer count fixed.

    Every layer on the GPU: the GPU level (and experts on the CPU for a MoE on llama.cpp); else
    the fixed split at the asked context with the best KV type that fits, else the longest
    context (an upgrade quant: the asked context only, as the unconstrained search does)."""
    n = s.fixed_ngl
    assert n is not None
    kvs = s.upgrade_kvs() if upgrade else s.kvs
    if n > s.n_layer:
        out: list[Evaluation] = []
        ev = s.level_gpu(quant, upgrade=upgrade, kvs=kvs if upgrade else ())
        if ev is not None:
            out.append(ev)
        if not upgrade and s.offload_ok and s.is_moe and s.runtime != "ollama":
            ev = s.level_offload(quant, LEVEL_EXPERTS_CPU)
            if ev is not None:
                out.append(ev)
        return out

    def make(kv: str, ctx: int) -> Candidate:
        return Candidate(quant, kv, ctx, LEVEL_LAYERS_CPU, n_gpu_layers=n)

    for kv in kvs:
        ev = s.evaluate(make(kv, s.target_ctx))
        if ev.fits:
            return [ev]
    if upgrade:
        return []
    best: Evaluation | None = None
    for kv in kvs:
        found = s._largest_ctx(lambda ctx, kv=kv: make(kv, ctx))  # type: ignore[misc]
        if found is None or not found[1].fits:
            continue
        if best is None or found[0] > best.cand.ctx:
            best = found[1]
    return [] if best is None else [best]
