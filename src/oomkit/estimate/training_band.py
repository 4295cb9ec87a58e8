"""The training estimate's allocator fraction and verdict band, from real training steps (pure).

``src/oomkit/data/training_band.json`` is written by ``python benchmarks/training_band.py`` from
``benchmarks/gpu/results/training_h100.json`` (and the H200 death boundaries of
``training_boundary_h200.json`` once they exist); that script's docstring says how each figure
is derived. Two uses:

* :func:`allocator_fraction`: what the estimate charges for PyTorch's caching allocator beyond
  ``max_memory_allocated``, as a fraction of the allocator peak. The formula estimate has no
  allocation trace to replay through the allocator model (``oomkit.inprocess.probe_allocator``
  needs the FakeTensor probe's trace, i.e. torch), so the fraction is measured: the smallest
  ``(max_memory_reserved - max_memory_allocated) / max_memory_allocated`` of a real step of the
  model's allocator family (``encoder``; ``dense`` decoder; ``moe`` decoder), each figure named
  with its source row in the JSON. The smallest, so that a run needing the least seen is never
  "does not fit" on a card it survives on.
* :func:`band_terms`: the verdict's training terms for one device: per category (weights,
  gradients, optimizer states: the tensors' storage, near exact; activations: the measured
  under-prediction) and the allocator's spread (the largest measured fraction less the charged
  one, times the allocator peak; less what ``--fragmentation`` charges beyond it, when given),
  so a run needing the most seen is never "fits" on a card it dies on. The platform terms
  (CUDA context by driver, display, WDDM) are inference's (:mod:`oomkit.estimate.verdict`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from oomkit.estimate.breakdown import DeviceUsage, Estimate
from oomkit.spec.model import ModelSpec

__all__ = [
    "ALLOCATOR_LABEL",
    "allocator_family",
    "allocator_fraction",
    "band_source",
    "band_terms",
    "request_ratio",
]

#: the band term of the allocator's reserved-minus-allocated spread
ALLOCATOR_LABEL = "caching allocator's reserved beyond allocated"
_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer": "optimizer states",
    "activations": "activations",
}


@lru_cache(maxsize=1)
def _doc() -> dict[str, Any]:
    text = resources.files("oomkit").joinpath("data/training_band.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def band_source() -> str:
    """The command (and results file) the band came from."""
    return str(_doc().get("_source", "training_band.json"))


def allocator_family(spec: ModelSpec, expandable_segments: bool = False) -> str:
    """``encoder`` (no vocabulary-sized logits), ``moe`` (expert buffers sized by routing) or
    ``dense``: the families whose allocator gaps were measured apart; ``expandable`` for any
    model under ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` (one growing segment per
    stream: the gap no longer depends on how a model's tensors split fixed segments; measured
    on the same H200 steps, ``training_boundary_h200_expandable.json``)."""
    if expandable_segments and "expandable" in _doc()["allocator"]:
        return "expandable"
    if spec.is_encoder:
        return "encoder"
    return "moe" if spec.moe is not None else "dense"


def _family_row(family: str) -> dict[str, Any]:
    rows: dict[str, Any] = _doc()["allocator"]
    row = rows.get(family) or rows["dense"]
    return dict(row)


def allocator_fraction(family: str) -> float:
    """The measured allocator fraction charged by the estimate (see the module docstring)."""
    return float(_family_row(family)["fraction"])


def allocator_spread(family: str) -> float:
    """The largest measured allocator fraction less the charged one."""
    return float(_family_row(family)["spread"])


def request_ratio(family: str) -> float | None:
    """The largest measured need beyond the charged fraction, in units of the step's largest
    single request (None when the band file has no such bound)."""
    v = _family_row(family).get("request_ratio")
    return float(v) if isinstance(v, int | float) else None


def band_terms(est: Estimate, d: DeviceUsage) -> list[tuple[str, int]]:
    """The training band terms of device ``d`` (label, bytes), before the platform's."""
    cats: dict[str, Any] = _doc()["categories"]
    terms = []
    for cat, label in _LABELS.items():
        frac = float(cats.get(cat, {}).get("fraction", 0.0))
        b = int(d.category_bytes(cat) * frac)
        if b > 0:
            terms.append((f"{label} (+{frac:.1%} seen)", b))
    family = est.runtime_details.get("allocator_family")
    peak = est.runtime_details.get("peak_allocated_bytes")
    if isinstance(family, str) and isinstance(peak, int):
        top = allocator_fraction(family) + allocator_spread(family)
        charged = est.settings.get("fragmentation_fraction")  # --fragmentation, when given
        if not isinstance(charged, float | int) or isinstance(charged, bool):
            charged = allocator_fraction(family)
        from oomkit.units import format_bytes

        # every figure of the label is one the user can trace: the measured bound, what it is
        # applied to (this step's allocated peak or largest single request) and what the
        # total already charges (it read "up to 2.5x the largest request seen": which request,
        # and how large, was nowhere in the text)
        need = peak * top  # the percentage bound, and the request bound when it is smaller
        how = f"up to {top:.2%} of the {format_bytes(peak)} allocated peak"
        ratio, req = request_ratio(family), est.runtime_details.get("largest_request_bytes")
        if ratio is not None and isinstance(req, int) and req > 0:
            by_request = peak * allocator_fraction(family) + ratio * req
            if by_request < need:
                need = by_request
                how = f"up to {ratio:.2f}x this step's largest single request, {format_bytes(req)}"
                if float(charged) != allocator_fraction(family):  # --fragmentation given
                    how = f"{allocator_fraction(family):.2%} of the peak + {how}"
        b = int(max(0.0, need - peak * float(charged)))
        if b > 0:
            if not how.startswith("up to") or "request" not in how:  # the charge is inside
                how += f", less the {float(charged):.2%} the total charges"
            terms.append((f"{ALLOCATOR_LABEL} ({how}; measured on {family} steps)", b))
    return terms
