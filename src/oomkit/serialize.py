"""The one JSON serialisation shared by the CLI's ``--json`` and the web API."""

from __future__ import annotations

import json
from typing import Any

from oomkit.estimate.breakdown import CATEGORIES, DeviceUsage, Estimate

__all__ = ["SCHEMA_VERSION", "dumps", "estimate_to_dict"]

SCHEMA_VERSION = 1


def _device_to_dict(d: DeviceUsage, *, with_capacity: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"device": d.device}
    for cat in CATEGORIES:
        out[f"{cat}_bytes"] = d.category_bytes(cat)
    out["total_bytes"] = d.total_bytes
    if with_capacity:
        out["capacity_bytes"] = d.capacity_bytes
    out["components"] = [
        {
            "category": c.category,
            "label": c.label,
            "bytes": c.n_bytes,
            "formula": c.formula,
            "inputs": dict(c.inputs),
            "source": c.source,
        }
        for c in d.components
    ]
    return out


def estimate_to_dict(est: Estimate) -> dict[str, Any]:
    """The ``estimate --json`` document of DESIGN.md (sizes are integer bytes)."""
    host = _device_to_dict(est.host)
    return {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "name": est.model.name,
            "architecture": est.model.architecture,
            "params": est.model.params,
            "source": est.model.source,
        },
        "runtime": est.runtime,
        "settings": dict(est.settings),
        "devices": [_device_to_dict(d) for d in est.devices],
        "host": host,
        "total_bytes": est.total_bytes,
        "fits": est.fits,
        "runtime_details": dict(est.runtime_details),
        "assumptions": list(est.assumptions),
        "blockers": list(est.blockers),
    }


def dumps(doc: Any) -> str:
    """Serialise a JSON document (key order is the contract order)."""
    return json.dumps(doc, indent=2, ensure_ascii=False)
