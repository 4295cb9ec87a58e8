"""``stack_compute_bytes``: the short simulation of a stack of repeating layers is exact.

Every catalog model is built into its llama.cpp reserve graph for a few shapes (flash attention
on and off, small and large micro-batches, quantized KV with its rotation inputs, sub-graphs of
a layer split), and the shortcut's answer is compared with simulating every layer. The test
also checks that the shortcut is really taken for most of them (else it would prove nothing),
and that a real many-layer GGUF is estimated in time that does not grow with its layers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oomkit.api import load_model
from oomkit.catalog.models import all_models
from oomkit.estimate import llamacpp_stack as compute
from oomkit.estimate.llamacpp_compute import GraphShape, build_graph
from oomkit.estimate.llamacpp_galloc import simulate_gallocr
from oomkit.estimate.llamacpp_stack import stack_compute_bytes
from oomkit.spec.model import ModelSpec

SHAPES = (
    GraphShape(n_tokens=512, n_outputs=512, n_stream=1, n_kv=4096, n_kv_swa=1024,
               flash_attn=True),
    GraphShape(n_tokens=512, n_outputs=1, n_stream=1, n_kv=8192, n_kv_swa=None,
               flash_attn=False),
    GraphShape(n_tokens=2048, n_outputs=2048, n_stream=2, n_kv=32768, n_kv_swa=4096,
               flash_attn=True, mask_f16=False, k_rot=True, v_rot=True),
    GraphShape(n_tokens=1, n_outputs=1, n_stream=1, n_kv=256, n_kv_swa=256, flash_attn=True),
)  # fmt: skip


def _full(
    spec: ModelSpec, sh: GraphShape, layers: list[int], with_input: bool, with_output: bool
) -> tuple[int, int]:
    g = build_graph(spec, sh, layers=layers, with_input=with_input, with_output=with_output)
    return simulate_gallocr(g, 128), sum(n.size for n in g.nodes if n.is_input)


def _specs() -> list[ModelSpec]:
    return [load_model(entry.key, offline=True) for entry in all_models()]


def test_shortcut_equals_the_full_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = tried = 0
    real_cycle = compute._cycle

    def counting(*args: object) -> tuple[int, int] | None:
        nonlocal taken
        found = real_cycle(*args)  # type: ignore[arg-type]
        taken += found is not None
        return found

    monkeypatch.setattr(compute, "_cycle", counting)
    specs = _specs()
    assert len(specs) > 100
    for spec in specs:
        n = spec.num_hidden_layers
        splits = [
            (list(range(n)), True, True),  # one device
            (list(range(n // 3)), True, False),  # first GPU of three
            (list(range(n // 3, n)), False, True),  # the rest, with the output
        ]
        for sh in SHAPES:
            for layers, with_input, with_output in splits:
                if not layers:
                    continue
                tried += 1
                got = stack_compute_bytes(
                    spec, sh, layers=layers, with_input=with_input, with_output=with_output,
                    alignment=128,
                )  # fmt: skip
                assert got == _full(spec, sh, layers, with_input, with_output), (spec.name, sh)
    assert taken > tried // 2, (taken, tried)


def test_work_does_not_grow_with_layers(tmp_path: Path) -> None:
    """A real 4000-layer GGUF: the graphs simulated hold a handful of layers, not 4000 (counted,
    not timed: a timed assertion breaks when a GC pass lands in it)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    from bench_many_layers import write_gguf

    from oomkit.api import estimate_model
    from oomkit.spec.settings import InferenceSettings

    path = tmp_path / "m4000.gguf"
    write_gguf(path, 4000)
    spec = load_model(path)
    built: list[int] = []
    real = compute.build_graph

    def counting(spec: ModelSpec, sh: GraphShape, **kw: object) -> object:
        g = real(spec, sh, **kw)  # type: ignore[arg-type]
        built.append(len(g.layer_starts))
        return g

    compute.build_graph = counting  # type: ignore[assignment]
    try:
        stack_compute_bytes(spec, SHAPES[0], alignment=128)
        est = estimate_model(spec, InferenceSettings(ctx=4096))  # runs end to end
    finally:
        compute.build_graph = real
    assert est.devices
    assert built
    assert max(built) <= 32, built
