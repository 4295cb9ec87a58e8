"""A simulation of ggml's graph allocator: the compute buffer is the allocator's high-water mark.

Models ``ggml_gallocr_alloc_graph_impl`` and ``ggml_dyn_tallocr_alloc/free_tensor`` in
ggml/src/ggml-alloc.c:

* graph inputs are allocated first, in the order the node-counting pass meets them (an input
  node before its input sources);
* nodes are allocated in graph order; a node whose op may run in place (``ggml_op_can_inplace``:
  ADD, MUL, SCALE, UNARY, ROPE, RMS_NORM, SOFT_MAX, ...) reuses a parent's memory when that parent
  is allocated by this allocator (``ggml_gallocr_is_own``: never true for a view), is not a graph
  output, has the same layout, exactly one consumer and no views;
* a tensor is freed after its last consumer; a view keeps its source alive; graph outputs are
  never freed;
* allocation is best-fit over the free blocks except the tail block, falling back to the tail;
  freed blocks merge with their neighbours; the buffer size is the highest offset ever reached.

Sizes are whatever the caller gives (``ggml_nbytes``); each is padded to the buffer alignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["GGML_MAX_SRC", "GraphSim", "Node", "simulate_gallocr"]

#: ggml.h GGML_MAX_SRC: sources per node (an allocation-dependency node keeps this many tensors)
GGML_MAX_SRC = 10


@dataclass(slots=True)
class Node:
    """One tensor of the simulated graph, with what the allocator needs to know about it."""

    name: str
    size: int  # bytes; 0 for views and tensors that live in another buffer
    srcs: tuple[int, ...] = ()
    view_src: int | None = None
    inplace: bool = False  # ggml_op_can_inplace(op)
    is_input: bool = False
    is_output: bool = False
    external: bool = False  # data lives outside this buffer (weights, KV cache views)


@dataclass(slots=True)
class GraphSim:
    """A graph under construction (nodes in execution order)."""

    nodes: list[Node] = field(default_factory=list)
    #: node index at which each transformer layer starts (filled by the graph builder)
    layer_starts: list[int] = field(default_factory=list)
    #: tensors to keep alive until the next node added is computed (:meth:`keep_until_next`)
    pending_keep: list[int] = field(default_factory=list)
    #: the allocator of builds before PR #4766 (ggml-alloc.c of llama-cpp-python 0.2.24,
    #: ``allocate_node``): an in-place op may reuse memory through a view parent whose source
    #: has no other consumer and that one view (``view_src_hn->n_views == 1 &&
    #: n_children == 0``, offset 0: the graph's reshapes)
    reuse_view_parents: bool = False

    def add(self, node: Node) -> int:
        self.nodes.append(node)
        i = len(self.nodes) - 1
        if self.pending_keep:
            keep, self.pending_keep = self.pending_keep, []
            self.keep_alive(keep)
        return i

    def keep_alive(self, keep: Sequence[int]) -> None:
        """Allocation-dependency nodes: ``keep`` stays allocated until the last node added.

        ``ggml_backend_sched_split_graph`` (ggml/src/ggml-backend.cpp) turns each dependency a
        backend's ``graph_optimize`` asks for (``add_alloc_dep(tensor, until)``) into
        ``GGML_OP_NONE`` nodes right after ``until``, each with up to ``GGML_MAX_SRC`` of the
        kept tensors as sources: one more consumer for each, so ggml-alloc neither frees them
        before ``until`` has run nor lets a node reuse them in place. The node itself is never
        allocated and is not counted as a view (ggml_gallocr_alloc_graph_impl skips
        ``GGML_OP_NONE`` there).
        """
        for k in range(0, len(keep), GGML_MAX_SRC):
            self.nodes.append(Node("alloc_dep", 0, tuple(keep[k : k + GGML_MAX_SRC])))

    def keep_until_next(self, keep: Sequence[int]) -> None:
        """Keep ``keep`` alive until the next node added (then :meth:`keep_alive`)."""
        self.pending_keep = [*self.pending_keep, *keep]

    def inp(self, name: str, size: int) -> int:
        return self.add(Node(name, size, is_input=True))

    def op(self, name: str, size: int, *srcs: int | None, inplace: bool = False) -> int:
        return self.add(Node(name, size, tuple(s for s in srcs if s is not None), inplace=inplace))

    def view(self, src: int, name: str = "view") -> int:
        """A view (reshape/permute/view): no memory of its own, keeps ``src`` alive."""
        root = src
        while self.nodes[root].view_src is not None:
            vs = self.nodes[root].view_src
            assert vs is not None
            root = vs
        ext = self.nodes[root].external
        return self.add(Node(name, 0, (src,), view_src=None if ext else root, external=ext))

    def ext(self, name: str, *srcs: int | None) -> int:
        """An op whose result lives elsewhere (``ggml_set_rows`` into the KV cache)."""
        return self.add(Node(name, 0, tuple(s for s in srcs if s is not None), external=True))


class _DynAlloc:
    """ggml_dyn_tallocr: best-fit free list with a growing tail block."""

    def __init__(self, alignment: int) -> None:
        self.alignment = alignment
        self.blocks: list[list[int]] = [[0, 1 << 62]]  # [offset, size], sorted by offset
        self.max_size = 0

    def alloc(self, size: int) -> int:
        size = -(-size // self.alignment) * self.alignment
        best = -1
        best_size = 1 << 63
        for i in range(len(self.blocks) - 1):
            b = self.blocks[i]
            if b[1] >= size and b[1] <= best_size:
                best, best_size = i, b[1]
        if best == -1:
            best = len(self.blocks) - 1
        blk = self.blocks[best]
        offset = blk[0]
        blk[0] += size
        blk[1] -= size
        if blk[1] == 0:
            del self.blocks[best]
        self.max_size = max(self.max_size, offset + size)
        return offset

    def free(self, offset: int, size: int) -> None:
        size = -(-size // self.alignment) * self.alignment
        blocks = self.blocks
        for i, b in enumerate(blocks):
            if b[0] + b[1] == offset:
                b[1] += size
                if i + 1 < len(blocks) and b[0] + b[1] == blocks[i + 1][0]:
                    b[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                return
            if offset + size == b[0]:
                b[0] = offset
                b[1] += size
                if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == b[0]:
                    blocks[i - 1][1] += b[1]
                    del blocks[i]
                return
        j = 0
        while j < len(blocks) and blocks[j][0] < offset:
            j += 1
        blocks.insert(j, [offset, size])


def simulate_gallocr(
    graph: GraphSim,
    alignment: int = 32,
    *,
    snapshot_at: Sequence[int] = (),
    relative_from: int = 0,
    snapshots: list[object] | None = None,
) -> int:
    """High-water mark in bytes of allocating ``graph`` with ggml-alloc's algorithm.

    With ``snapshot_at`` (node indices, ascending) and a ``snapshots`` list, the allocator's
    state just before each of those nodes is appended to ``snapshots``: the free blocks and every
    live allocation as (offset, size, node), where nodes from ``relative_from`` on are named
    relative to the snapshot point (so that the same tensor role in two repeats of a layer
    pattern compares equal). :func:`oomkit.estimate.llamacpp_compute.periodic_compute_bytes`
    uses it to prove that a stack of identical layers has reached a steady state.
    """
    nodes = graph.nodes
    n = len(nodes)
    n_children = [0] * n
    n_views = [0] * n
    for nd in nodes:
        if nd.view_src is not None:
            n_views[nd.view_src] += 1
        for s in nd.srcs:
            n_children[s] += 1
    alloc = _DynAlloc(alignment)
    allocated = [False] * n
    offset = [0] * n
    owner = list(range(n))  # which allocation a node's memory belongs to (in-place chains)

    def own(i: int) -> bool:
        nd = nodes[i]
        return not nd.external and nd.view_src is None and nd.size > 0

    def allocate(i: int) -> None:
        nd = nodes[i]
        if allocated[i] or not own(i):
            return
        allocated[i] = True
        if nd.inplace:
            for p in nd.srcs:
                pn = nodes[p]
                if pn.external or pn.is_output:
                    continue
                if pn.view_src is not None:
                    # ggml_gallocr_is_own(parent) is false for a view (views are never
                    # allocated themselves), so ggml never reuses memory through a view parent;
                    # the allocator before PR #4766 did (GraphSim.reuse_view_parents)
                    vs = pn.view_src
                    if (
                        graph.reuse_view_parents
                        and n_children[p] == 1
                        and n_views[p] == 0
                        and n_views[vs] == 1
                        and n_children[vs] == 0
                        and allocated[vs]
                        and nodes[vs].size == nd.size
                        and not nodes[vs].is_output
                    ):
                        offset[i] = offset[vs]
                        owner[i] = owner[vs]
                        allocated[vs] = False
                        return
                    continue
                if pn.size != nd.size or not allocated[p]:
                    continue
                if n_children[p] == 1 and n_views[p] == 0:
                    offset[i] = offset[p]
                    owner[i] = owner[p]
                    allocated[p] = False
                    return
        offset[i] = alloc.alloc(nd.size)

    def free(i: int) -> None:
        if nodes[i].is_output or not allocated[i]:
            return
        allocated[i] = False
        alloc.free(offset[i], nodes[i].size)

    # inputs are placed before any other tensor, in the order the node-counting pass meets
    # them: a node flagged as input first, then its input sources (ggml 0.25.3 behaviour as
    # the oracle shows it: there is no earlier pass over the graph leafs)
    for nd_i, nd in enumerate(nodes):
        for p in nd.srcs:
            if nodes[p].is_input:
                allocate(p)
        if nd.is_input and nd.srcs:
            allocate(nd_i)
    points = list(snapshot_at) if snapshots is not None else []
    points.reverse()
    for i, nd in enumerate(nodes):
        if points and points[-1] == i:
            points.pop()
            assert snapshots is not None
            live = tuple(
                sorted(
                    (offset[j], nodes[j].size, j if j < relative_from else j - i)
                    for j in range(n)
                    if allocated[j]
                )
            )
            snapshots.append((tuple(tuple(b) for b in alloc.blocks), live))
        allocate(i)
        for p in nd.srcs:
            n_children[p] -= 1
            if n_children[p] == 0 and n_views[p] == 0:
                vs = nodes[p].view_src
                if vs is not None:
                    n_views[vs] -= 1
                    if n_views[vs] == 0 and n_children[vs] == 0:
                        free(vs)
                else:
                    free(p)
    return alloc.max_size
