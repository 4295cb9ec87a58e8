"""The quantizer's name checks answer once per tensor kind (``blk.#.``) exactly as per name."""

from __future__ import annotations

import contextlib

from oomkit.catalog.models import all_models
from oomkit.errors import OomkitError
from oomkit.quant import llamacpp_tensors as lt
from oomkit.spec.tensors import model_tensors


def _names() -> set[str]:
    names: set[str] = set()
    for entry in all_models():
        with contextlib.suppress(OomkitError):  # a model the reader rejects has no tensors
            names.update(t.name for t in model_tensors(entry.spec()))
    # every fragment after a layer prefix, and layer numbers that look like fragment digits
    for f in lt._NO_QUANT_FRAGMENTS + tuple(f for f, _ in lt._CATEGORY_FRAGMENTS):
        for n in ("0", "1", "2", "12", "120"):
            names.update(
                (f"blk.{n}.{f}", f"blk.{n}{f}", f"blk.{n}.x{f}.weight", f"blk.{n}.{f}.weight")
            )
    return names


def test_layer_free_answers_equal_the_per_name_scan() -> None:
    assert lt._CATEGORY_LAYER_FREE
    assert lt._NO_QUANT_LAYER_FREE
    names = _names()
    assert len(names) > 2000
    for name in names:
        assert lt.tensor_category(name) == lt._category_of(name), name
        for quantize_output in (True, False):
            got = lt._name_allows_quantization(name, quantize_output)
            assert got == lt._allows_of(name, quantize_output), name


def test_layer_free_key() -> None:
    assert lt._layer_free("blk.12.attn_q.weight") == "blk.#.attn_q.weight"
    assert lt._layer_free("blk.x.attn_q.weight") == "blk.x.attn_q.weight"
    assert lt._layer_free("blk..attn_q.weight") == "blk..attn_q.weight"
    assert lt._layer_free("blk.3") == "blk.3"
    assert lt._layer_free("output.weight") == "output.weight"


def test_a_fragment_that_could_match_across_the_layer_number_turns_it_off() -> None:
    assert lt._fragments_are_layer_free(("time_mix_w0.weight", "ssm_conv1d", "altup"))
    assert not lt._fragments_are_layer_free(("2.attn_q",))  # "blk.12.attn_q"
    assert not lt._fragments_are_layer_free(("k.1",))  # "blk.1."
    assert not lt._fragments_are_layer_free((".0",))
    assert not lt._fragments_are_layer_free(("#",))
