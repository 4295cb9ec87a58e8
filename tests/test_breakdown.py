"""The estimate tree obeys its rule: device total = sum of categories = sum of components."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oomkit.estimate.breakdown import CATEGORIES, Component, DeviceUsage, Estimate, ModelInfo
from oomkit.serialize import estimate_to_dict

components = st.builds(
    Component,
    category=st.sampled_from(CATEGORIES),
    label=st.text(min_size=1, max_size=8),
    n_bytes=st.integers(min_value=0, max_value=1 << 45),
    formula=st.just("x"),
)


@given(st.lists(components, max_size=12), st.none() | st.integers(0, 1 << 46))
def test_total_is_sum_of_categories(comps: list[Component], cap: int | None) -> None:
    d = DeviceUsage(device="cuda:0", components=tuple(comps), capacity_bytes=cap)
    assert d.total_bytes == sum(d.category_bytes(c) for c in CATEGORIES)
    assert d.total_bytes == sum(c.n_bytes for c in comps)
    if cap is None:
        assert d.fits is None
    else:
        assert d.fits == (d.total_bytes <= cap)


def _est(devs: tuple[DeviceUsage, ...], host: DeviceUsage) -> Estimate:
    return Estimate(
        model=ModelInfo(name="m", architecture="A", params=1, source="config"),
        runtime="llama.cpp",
        settings={"ctx": 8},
        devices=devs,
        host=host,
    )


def test_estimate_fits_rules_and_json_contract() -> None:
    w = Component(category="weights", label="w", n_bytes=10, formula="f")
    kv = Component(category="kv_cache", label="kv", n_bytes=5, formula="f")
    host = DeviceUsage(device="cpu", components=(w,))
    ok = _est((DeviceUsage(device="cuda:0", components=(w, kv), capacity_bytes=15),), host)
    assert ok.fits is True
    assert ok.total_bytes == 25
    over = _est((DeviceUsage(device="cuda:0", components=(w, kv), capacity_bytes=14),), host)
    assert over.fits is False
    unknown = _est((DeviceUsage(device="cuda:0", components=(w,)),), host)
    assert unknown.fits is None
    doc = estimate_to_dict(ok)
    assert doc["schema_version"] == 1
    dev = doc["devices"][0]
    for key in (
        "weights_bytes",
        "kv_cache_bytes",
        "activations_bytes",
        "overhead_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "total_bytes",
        "capacity_bytes",
    ):
        assert isinstance(dev[key], int), key
    assert dev["kv_cache_bytes"] == 5
    assert dev["total_bytes"] == 15
    assert doc["total_bytes"] == 25
    assert doc["fits"] is True


def test_component_rejects_unknown_category() -> None:
    with pytest.raises(ValueError, match="category"):
        Component(category="vibes", label="x", n_bytes=1, formula="f")
