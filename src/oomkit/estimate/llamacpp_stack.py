"""The reserve graph of a deep stack of layers, simulated in time that does not grow with depth.

A stack of layers that repeats a pattern (every dense model, every SWA/hybrid interleave) drives
ggml-alloc into a cycle; :func:`stack_compute_bytes` proves the cycle from snapshots of a short
graph and simulates only that many repeats (the graph itself and the allocator simulation are
:mod:`oomkit.estimate.llamacpp_compute` and :mod:`oomkit.estimate.llamacpp_galloc`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import ne, not_

from oomkit.estimate.llamacpp_compute import GraphShape, build_graph
from oomkit.estimate.llamacpp_galloc import simulate_gallocr
from oomkit.spec.model import ModelSpec

__all__ = ["layer_signature", "stack_compute_bytes"]


#: a periodic stack is first simulated with this many repeats of its layer pattern, then more
#: when the allocator has not settled yet (the full graph when it never does)
_TRIAL_REPEATS = (3, 8, 16)
#: the longest layer pattern looked for (Gemma 3: 6, Llama 4: 4, hybrids: up to 8)
_MAX_PERIOD = 12
#: the allocator's state may cycle over up to this many repeats (e.g. two offsets alternating)
_MAX_STATE_CYCLE = 4


def layer_signature(spec: ModelSpec, il: int) -> tuple[object, ...]:
    """Everything :func:`build_graph` reads per layer index (besides "is it the last layer")."""
    moe = spec.moe
    moe_layer = moe is not None and moe.num_experts > 0 and il not in moe.dense_layers
    return (spec.layer_types[il], spec.kv_heads(il), moe_layer)


def _signatures(spec: ModelSpec, ids: Sequence[int]) -> list[tuple[object, ...]]:
    """:func:`layer_signature` of each of ``ids``, column-wise (a 20k-layer stack)."""
    moe = spec.moe
    kv = spec.kv_heads_per_layer
    heads = repeat(spec.num_key_value_heads) if kv is None else map(kv.__getitem__, ids)
    if moe is not None and moe.num_experts > 0:
        moe_layer: Iterable[bool] = map(not_, map(frozenset(moe.dense_layers).__contains__, ids))
    else:
        moe_layer = repeat(False)
    # the repeat() columns are endless: the layer ids set the length
    return list(zip(map(spec.layer_types.__getitem__, ids), heads, moe_layer, strict=False))


@dataclass(frozen=True, slots=True)
class _Stack:
    """The layers but the last as ``prefix + repeats x pattern + remainder``."""

    layer_ids: tuple[int, ...]
    start: int  # index of the first repeat
    period: int  # layers in the pattern
    repeats: int  # M, repeats in the full graph

    def short(self, kept: int) -> list[int]:
        """The layer list with ``kept`` repeats instead of all of them."""
        body = self.layer_ids[:-1]
        end = self.start + self.repeats * self.period
        return [*body[: self.start + kept * self.period], *body[end:], self.layer_ids[-1]]


def _periodic_layers(spec: ModelSpec, layer_ids: Sequence[int]) -> _Stack | None:
    """The pattern that leaves the fewest layers to simulate at three repeats, or None."""
    body = list(layer_ids[:-1])
    n = len(body)
    sigs = _signatures(spec, body)
    best: tuple[int, _Stack] | None = None
    for p in range(1, min(_MAX_PERIOD, n) + 1):
        # the pattern reaches back from the end while sigs[i] == sigs[i + p] (i = n-p-1 down
        # to 0): the first mismatch in that order, compared in C (20k layers x 12 periods)
        differ = map(ne, reversed(sigs[: n - p]), reversed(sigs[p:]))
        first = next(compress(count(), differ), n - p)
        start = n - p - first
        repeats = (n - start) // p
        if repeats <= _TRIAL_REPEATS[0]:
            continue
        kept = n - (repeats - _TRIAL_REPEATS[0]) * p
        if best is None or kept < best[0]:
            best = (kept, _Stack(tuple(layer_ids), start, p, repeats))
    return None if best is None else best[1]


def _cycle(snaps: Sequence[object]) -> tuple[int, int] | None:
    """The first (k, q) with ``snaps[k] == snaps[k + q]``: the state cycles from repeat k."""
    for k in range(len(snaps)):
        for q in range(1, _MAX_STATE_CYCLE + 1):
            if k + q < len(snaps) and snaps[k] == snaps[k + q]:
                return k, q
    return None


def stack_compute_bytes(
    spec: ModelSpec,
    sh: GraphShape,
    *,
    layers: Sequence[int] | None = None,
    with_input: bool = True,
    with_output: bool = True,
    alignment: int = 32,
) -> tuple[int, int]:
    """(compute buffer bytes, bytes of the graph inputs) of the reserve graph of ``layers``.

    Equal to simulating the whole graph, in time that does not grow with the depth. A stack of
    layers that repeats a pattern (every dense model, every SWA/hybrid interleave) drives
    ggml-alloc into a cycle: from some repeat ``k`` on, the allocator's state (free blocks and
    live tensors, named by role) at the start of a repeat comes back every ``q`` repeats, and
    each repeat allocates and frees exactly as the one ``q`` before it. A graph with ``R``
    repeats, ``R >= k + q + 1`` and ``R = M (mod q)`` for the full graph's ``M``, then reaches
    every state the full graph reaches between the cycle's start and its final repeat, and
    starts its final repeat (where the graph inputs meet their last consumers) from the same
    state as the full graph does: its high-water mark is the full graph's. The cycle is found
    from snapshots of a short graph; without one, the full graph is simulated.
    """
    layer_ids = list(range(spec.num_hidden_layers)) if layers is None else list(layers)
    stack = _periodic_layers(spec, layer_ids) if len(layer_ids) > 2 else None

    def simulate(ids: list[int], snap_repeats: int = 0) -> tuple[int, int, list[object]]:
        graph = build_graph(spec, sh, layers=ids, with_input=with_input, with_output=with_output)
        snaps: list[object] = []
        size = 0
        if snap_repeats and stack is not None:
            starts = graph.layer_starts
            if any(nd.is_input for nd in graph.nodes[starts[0] :]):
                return -1, 0, []  # an input inside the layers: the shortcut does not apply
            points = [starts[stack.start + r * stack.period] for r in range(snap_repeats)]
            size = simulate_gallocr(
                graph, alignment, snapshot_at=points, relative_from=points[0], snapshots=snaps
            )
        else:
            size = simulate_gallocr(graph, alignment)
        return size, sum(nd.size for nd in graph.nodes if nd.is_input), snaps

    if stack is not None:
        for trial in _TRIAL_REPEATS:
            if trial >= stack.repeats:
                break
            size, inputs, snaps = simulate(stack.short(trial), trial)
            if size < 0:
                break
            found = _cycle(snaps)
            if found is None:
                continue
            k, q = found
            need = k + q + 1
            if trial >= need and (stack.repeats - trial) % q == 0:
                return size, inputs
            kept = need + (stack.repeats - need) % q
            if kept < stack.repeats:
                size, inputs, _ = simulate(stack.short(kept))
                return size, inputs
            break
    size, inputs, _ = simulate(layer_ids)
    return size, inputs
