"""The steady-state shortcut of the compute-buffer simulation equals simulating every layer.

:func:`oomkit.estimate.llamacpp_stack.stack_compute_bytes` builds three repeats of a layer
pattern and proves a steady state; this test simulates the whole graph the slow way for every
catalog model llama.cpp runs (dense, GQA, MoE with leading dense layers, SWA interleaves,
hybrids, MLA) under several reserve shapes and sub-graphs, and requires the same bytes.
"""

from __future__ import annotations

import dataclasses

import pytest

from oomkit.catalog.models import search_models
from oomkit.errors import OomkitError
from oomkit.estimate.llamacpp import gguf_arch
from oomkit.estimate.llamacpp_compute import GraphShape, build_graph
from oomkit.estimate.llamacpp_galloc import simulate_gallocr
from oomkit.estimate.llamacpp_stack import _periodic_layers, stack_compute_bytes
from oomkit.spec.model import ModelSpec

_SHAPES = (
    GraphShape(n_tokens=512, n_outputs=512, n_stream=1, n_kv=4096, n_kv_swa=None, flash_attn=True),
    GraphShape(n_tokens=512, n_outputs=1, n_stream=1, n_kv=32768, n_kv_swa=None, flash_attn=False),
    GraphShape(
        n_tokens=2048,
        n_outputs=2048,
        n_stream=1,
        n_kv=131072,
        n_kv_swa=4608,
        flash_attn=True,
        mask_f16=False,
        k_rot=True,
        v_rot=True,
    ),
)


def _specs() -> list[ModelSpec]:
    out = []
    for entry in search_models(None):
        try:
            spec = entry.spec()
            gguf_arch(spec)
        except OomkitError:
            continue
        out.append(spec)
    return out


_SPECS = _specs()


def _full(
    spec: ModelSpec, sh: GraphShape, layers: list[int], wi: bool, wo: bool
) -> tuple[int, int]:
    g = build_graph(spec, sh, layers=layers, with_input=wi, with_output=wo)
    return simulate_gallocr(g, 32), sum(n.size for n in g.nodes if n.is_input)


def _shape_for(spec: ModelSpec, sh: GraphShape) -> GraphShape:
    swa = spec.sliding_window
    return dataclasses.replace(sh, n_kv_swa=sh.n_kv_swa if swa else None)


@pytest.mark.parametrize("spec", _SPECS, ids=lambda s: s.name)
def test_shortcut_equals_full_simulation(spec: ModelSpec) -> None:
    n = spec.num_hidden_layers
    cases: list[tuple[list[int], bool, bool]] = [(list(range(n)), True, True)]
    if n >= 12:  # sub-graphs of a layer split: first device, middle, last
        third = n // 3
        cases += [
            (list(range(0, third)), True, False),
            (list(range(third, 2 * third)), False, False),
            (list(range(2 * third, n)), False, True),
        ]
    for sh in _SHAPES:
        shape = _shape_for(spec, sh)
        for layers, wi, wo in cases:
            got = stack_compute_bytes(
                spec, shape, layers=layers, with_input=wi, with_output=wo, alignment=32
            )
            assert got == _full(spec, shape, layers, wi, wo), (spec.name, shape, layers[0])


def test_shortcut_is_taken_for_deep_stacks() -> None:
    """A dense 80-layer model is a prefix-free stack of 1-layer repeats (else the test above
    would compare the full simulation with itself)."""
    spec = next(s for s in _SPECS if s.name.lower().endswith("llama-3.1-70b"))
    stack = _periodic_layers(spec, list(range(spec.num_hidden_layers)))
    assert stack is not None
    assert (stack.start, stack.period, stack.repeats) == (0, 1, 79)
    assert stack.short(3) == [0, 1, 2, 79]


def test_interleaved_pattern_found() -> None:
    """Gemma 3 (5 sliding : 1 full) repeats with period 6."""
    spec = next(s for s in _SPECS if "gemma-3-27b" in s.name.lower())
    stack = _periodic_layers(spec, list(range(spec.num_hidden_layers)))
    assert stack is not None
    assert stack.period == 6


def test_most_catalog_graphs_take_the_shortcut() -> None:
    """Count the graphs simulated in full: the shortcut must be the common path."""
    import oomkit.estimate.llamacpp_stack as compute

    full = 0
    real = compute.build_graph

    def counting(spec: ModelSpec, sh: GraphShape, **kw: object) -> object:
        nonlocal full
        if len(kw["layers"]) == spec.num_hidden_layers:  # type: ignore[arg-type]
            full += 1
        return real(spec, sh, **kw)  # type: ignore[arg-type]

    compute.build_graph = counting  # type: ignore[assignment]
    try:
        for spec in _SPECS:
            stack_compute_bytes(spec, _shape_for(spec, _SHAPES[0]))
    finally:
        compute.build_graph = real
    assert full <= len(_SPECS) // 10, full
