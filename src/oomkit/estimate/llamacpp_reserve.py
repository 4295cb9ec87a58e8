"""The reserve graph's compute buffer in time independent of the layer count.

:func:`reserve_graph_bytes` is ``simulate_gallocr(build_graph(...))`` (llamacpp_compute,
llamacpp_galloc) with a shortcut for runs of identical layers, proven exact by the allocator's
own state (see its docstring): a 20k-layer GGUF is simulated with 6 to 8 layers, a catalog
model's 32 to 126 layers with as few, and the answer is the full simulation's to the byte
(``tests/test_llamacpp_graph_steady.py`` compares the two over the model catalog).
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.estimate.llamacpp_compute import GraphShape, build_graph
from oomkit.estimate.llamacpp_galloc import (
    AllocState,
    GraphSim,
    simulate_gallocr,
    simulate_gallocr_states,
)
from oomkit.spec.model import ModelSpec

__all__ = ["PROBE_LAYERS", "reserve_graph_bytes"]


#: identical layers simulated when a long run of them is cut short (see reserve_graph_bytes)
PROBE_LAYERS = 6


def _layer_key(spec: ModelSpec, il: int) -> tuple[object, ...]:
    """Everything ``build_graph`` reads about layer ``il`` (besides it being the last layer)."""
    moe = spec.moe
    return (spec.layer_types[il], spec.kv_heads(il), moe is not None and il in moe.dense_layers)


def reserve_graph_bytes(
    spec: ModelSpec,
    sh: GraphShape,
    layers: Sequence[int] | None = None,
    *,
    with_input: bool = True,
    with_output: bool = True,
    alignment: int,
) -> tuple[int, int]:
    """(compute buffer bytes, bytes of the graph's inputs) of the reserve (sub-)graph.

    ``simulate_gallocr(build_graph(...))``, in time independent of the layer count when the
    layers are alike. A run of ``m`` identical layers (the last model layer, which selects the
    output rows, aside) is first simulated with only ``k`` of them (:data:`PROBE_LAYERS`, or
    one or two more). If the allocator's state before one of those layers equals its state
    ``p`` layers later (free blocks and live tensors the same, the earlier layers' tensors
    shifted by ``p`` layers, the graph inputs' remaining uses counted per layer still to come),
    every further identical layer repeats the cycle exactly: the full run reaches the same
    high-water mark and, when ``m - k`` is a multiple of ``p``, ends in the same state, so the
    short simulation is the answer. Otherwise every layer is simulated. The 20k-layer GGUF of
    ``benchmarks/bench_many_layers.py`` needs 6 or 7 layers, not 20,000;
    ``tests/test_llamacpp_graph_steady.py`` checks the shortcut against the full simulation
    over the model catalog.
    """
    ids = list(range(spec.num_hidden_layers)) if layers is None else list(layers)
    run = _uniform_run(spec, ids)
    if run is not None:
        body, tail = run
        for k in range(PROBE_LAYERS, PROBE_LAYERS + 3):
            g = build_graph(
                spec, sh, layers=[*body[:k], *tail], with_input=with_input, with_output=with_output
            )
            peak, states = simulate_gallocr_states(g, alignment, tuple(g.layer_starts[1:k]))
            period = _period(g, states, k)
            if period is None:
                break
            if (len(body) - k) % period == 0:
                return peak, sum(n.size for n in g.nodes if n.is_input)
    g = build_graph(spec, sh, layers=ids, with_input=with_input, with_output=with_output)
    return simulate_gallocr(g, alignment), sum(n.size for n in g.nodes if n.is_input)


def _uniform_run(spec: ModelSpec, ids: list[int]) -> tuple[list[int], list[int]] | None:
    """``ids`` as (identical layers, [the last model layer] or []) when there are more than a
    few identical layers to spare; else None."""
    last = spec.num_hidden_layers - 1
    body = ids[:-1] if ids and ids[-1] == last else ids
    if len(body) <= PROBE_LAYERS + 2 or last in body:
        return None
    key = _layer_key(spec, body[0])
    if any(_layer_key(spec, il) != key for il in body):
        return None
    return body, ids[len(body) :]


def _period(g: GraphSim, states: list[AllocState], k: int) -> int | None:
    """The period (1 to 3 layers) after which the allocator's state repeats in the probe
    graph ``g`` of ``k`` identical layers; None when it does not within the probe."""
    starts = g.layer_starts
    if len(starts) < k or len(states) != k - 1:
        return None
    base = starts[0]
    stride = starts[1] - starts[0]
    if any(starts[i + 1] - starts[i] != stride for i in range(k - 1)):
        return None
    nodes = g.nodes

    def shape(i: int) -> list[tuple[object, ...]]:  # layer i's nodes, relative to its start
        at = starts[i]
        out: list[tuple[object, ...]] = []
        for nd in nodes[at : at + stride]:
            srcs = tuple(s - at if s >= base else ("in", s) for s in nd.srcs)
            vs = nd.view_src
            view = None if vs is None else (vs - at if vs >= base else ("in", vs))
            out.append((nd.name, nd.size, srcs, view, nd.inplace, nd.is_input, nd.is_output,
                        nd.external))  # fmt: skip
        return out

    first = shape(1)
    if any(shape(i) != first for i in range(2, k)):
        return None
    # uses of each graph input (a node before the first layer) by one layer
    uses: dict[int, int] = {}
    views: dict[int, int] = {}
    for nd in nodes[starts[1] : starts[1] + stride]:
        for s in nd.srcs:
            if s < base:
                uses[s] = uses.get(s, 0) + 1
        if nd.view_src is not None and nd.view_src < base:
            views[nd.view_src] = views.get(nd.view_src, 0) + 1

    def norm(i: int) -> AllocState:  # the state before layer i, layer-independent
        blocks, live = states[i - 1]
        left = k - i  # identical layers still to come
        rows = tuple(
            (j - starts[i], a, off, nc, nv)
            if j >= base
            else (j, a, off, nc - uses.get(j, 0) * left, nv - views.get(j, 0) * left)
            for j, a, off, nc, nv in live
        )
        return blocks, rows

    normed = [norm(i) for i in range(1, k)]  # before layers 1 .. k-1
    for p in (1, 2, 3):
        if any(normed[i] == normed[i + p] for i in range(len(normed) - p)):
            return p
    return None
