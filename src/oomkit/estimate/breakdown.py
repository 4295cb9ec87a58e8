"""The estimate tree: per device, what holds memory, and how each part was computed.

Rule (tested): a :class:`DeviceUsage` total is the **sum** of its category fields; each category
is the sum of the :class:`Component` rows filed under it. An activation/compute component that is
itself a peak (the largest live set of a graph) says so in its formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from oomkit.units import format_bytes

__all__ = [
    "CATEGORIES",
    "Component",
    "DeviceUsage",
    "Estimate",
    "ModelInfo",
]

#: The categories of the JSON contract, in display order.
CATEGORIES: tuple[str, ...] = (
    "weights",
    "kv_cache",
    "activations",
    "overhead",
    "gradients",
    "optimizer",
)

InputValue = int | float | str | bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Component:
    """One explained term: ``n_bytes`` computed by ``formula`` from ``inputs``.

    ``source`` names the upstream code or document the formula models.
    """

    category: str  # one of CATEGORIES
    label: str  # e.g. "KV cache (f16)", "compute buffer"
    n_bytes: int
    formula: str
    inputs: Mapping[str, InputValue] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown component category '{self.category}'")

    def explain(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.inputs.items())
        text = f"{self.label}: {format_bytes(self.n_bytes)} = {self.formula}"
        if args:
            text += f" with {args}"
        if self.source:
            text += f"  [{self.source}]"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceUsage:
    """Memory on one device (``cuda:0``, ``cpu``). ``total_bytes`` sums the categories."""

    device: str
    components: tuple[Component, ...] = ()
    capacity_bytes: int | None = None
    #: runtime-specific values in the runtime's own terms (e.g. llama.cpp buffer sizes)
    details: Mapping[str, InputValue] = field(default_factory=dict)

    def category_bytes(self, category: str) -> int:
        if category not in CATEGORIES:
            raise ValueError(f"unknown category '{category}'")
        return sum(c.n_bytes for c in self.components if c.category == category)

    @property
    def weights_bytes(self) -> int:
        return self.category_bytes("weights")

    @property
    def kv_cache_bytes(self) -> int:
        return self.category_bytes("kv_cache")

    @property
    def activations_bytes(self) -> int:
        return self.category_bytes("activations")

    @property
    def overhead_bytes(self) -> int:
        return self.category_bytes("overhead")

    @property
    def gradients_bytes(self) -> int:
        return self.category_bytes("gradients")

    @property
    def optimizer_bytes(self) -> int:
        return self.category_bytes("optimizer")

    @property
    def total_bytes(self) -> int:
        return sum(c.n_bytes for c in self.components)

    @property
    def fits(self) -> bool | None:
        if self.capacity_bytes is None:
            return None
        return self.total_bytes <= self.capacity_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """The model an estimate is for (``params``: its parameter count)."""

    name: str
    architecture: str
    params: int
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimate:
    """The answer for one model x settings x hardware on one runtime."""

    model: ModelInfo
    runtime: str
    settings: Mapping[str, InputValue]
    devices: tuple[DeviceUsage, ...]
    host: DeviceUsage
    runtime_details: Mapping[str, object] = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    #: reasons the runtime refuses to start although the totals fit (e.g. vLLM: max_model_len
    #: needs more KV than the pool holds); any blocker makes ``fits`` False
    blockers: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        """Sum over accelerators and host."""
        return sum(d.total_bytes for d in self.devices) + self.host.total_bytes

    @property
    def fits(self) -> bool | None:
        """True when every device (and host, if its capacity is known) fits; None if unknown."""
        if self.blockers:
            return False
        checks = [d.fits for d in (*self.devices, self.host)]
        known = [c for c in checks if c is not None]
        if any(c is False for c in known):
            return False
        if not self.devices:  # CPU-only target: the host's fit is the answer
            return self.host.fits
        device_checks = [d.fits for d in self.devices]
        if any(c is None for c in device_checks):
            return None
        return True

    def components(self) -> tuple[tuple[str, Component], ...]:
        """Every component with its device name, devices first then host."""
        out = [(d.device, c) for d in self.devices for c in d.components]
        out += [(self.host.device, c) for c in self.host.components]
        return tuple(out)
