"""review21 finding 18: probe lists modules that add the same memory in natural order
(layers.0, 1, 2, ..., 10), not string order (layers.0, 1, 10, 11, ..., 2)."""

from __future__ import annotations

from oomkit.inprocess.probe import ordered_modules


def test_equal_modules_in_natural_order() -> None:
    peaks = {f"model.layers.{i}": (100, 10) for i in range(12)}
    peaks["lm_head"] = (500, 400)
    names = [name for name, _ in ordered_modules(peaks)]
    assert names[0] == "lm_head"  # the largest first, as before
    assert names[1:] == [f"model.layers.{i}" for i in range(12)]


def test_nested_indices() -> None:
    peaks = {n: (1, 1) for n in ("layers.10.mlp", "layers.2.mlp", "layers.2.attn", "layers.1")}
    assert [n for n, _ in ordered_modules(peaks)] == [
        "layers.1", "layers.2.attn", "layers.2.mlp", "layers.10.mlp"
    ]  # fmt: skip
