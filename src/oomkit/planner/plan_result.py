"""What :func:`oomkit.plan` answers: one fitting configuration (:class:`Plan`), one that does
not fit (:class:`Rejected`), and the whole answer (:class:`PlanResult`) with its JSON form."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from oomkit.estimate.breakdown import Estimate, ModelInfo
from oomkit.planner.quality import QuantQuality
from oomkit.planner.request import PlanRequest
from oomkit.planner.speed import SpeedEstimate
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

__all__ = ["SCHEMA_VERSION", "Plan", "PlanResult", "Rejected"]

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """One fitting configuration, its estimate, what changed, and how to run it."""

    runtime: str
    settings: InferenceSettings
    estimate: Estimate
    level: int
    margin_bytes: int
    changes: tuple[str, ...]
    command: str
    speed: SpeedEstimate | None = None
    quality: QuantQuality | None = None
    #: shell lines to run before ``command`` (converting a checkpoint directory to GGUF)
    prepare: tuple[str, ...] = ()
    #: the runtime asked for, whose command this is (koboldcpp, lmstudio: sized as llama.cpp)
    launcher: str = ""

    @property
    def summary(self) -> str:
        return ", ".join(self.changes) if self.changes else "as asked"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected:
    """An alternative that does not fit, and why (needed vs available per device)."""

    runtime: str
    description: str
    reason: str
    launcher: str = ""  # as Plan.launcher


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanResult:
    """The answer of :func:`plan`: plans best first (empty when nothing fits)."""

    model: ModelInfo
    request: PlanRequest
    hardware: Hardware
    target_ctx: int
    plans: tuple[Plan, ...]
    rejected: tuple[Rejected, ...]
    #: one paragraph when nothing fits: what would be needed
    impossible: str | None = None
    n_estimates: int = 0
    #: what the planner took into account about the hardware (precision, Apple memory)
    notes: tuple[str, ...] = ()
    #: no ``--ctx`` on a llama-server with ``--fit``: the trained context the fit starts from;
    #: each all-on-the-GPU plan runs the largest context up to it that fits
    #: (:func:`oomkit.planner.target_ctx.fit_ctx_top`); ``target_ctx`` is then the fit's floor
    fit_ctx_top: int | None = None

    @property
    def fits(self) -> bool:
        return bool(self.plans)

    def to_dict(self) -> dict[str, Any]:
        from oomkit.serialize import estimate_to_dict

        def plan_dict(p: Plan) -> dict[str, Any]:
            est = estimate_to_dict(p.estimate)
            return {
                "runtime": p.runtime,
                "launcher": p.launcher or p.runtime,
                "settings": est["settings"],
                "command_settings": command_settings(p),
                "level": p.level,
                "changes": list(p.changes),
                "margin_bytes": p.margin_bytes,
                "command": p.command,
                "prepare": list(p.prepare),
                "devices": est["devices"],
                "host": est["host"],
                "runtime_details": est["runtime_details"],
                "speed": None if p.speed is None else p.speed.to_dict(),
                "quality": None if p.quality is None else dataclasses.asdict(p.quality),
            }

        return {
            "schema_version": SCHEMA_VERSION,
            "model": dataclasses.asdict(self.model),
            "request": dataclasses.asdict(self.request),
            "hardware": {
                "devices": [
                    {"name": d.name, "key": d.key, "capacity_bytes": d.capacity_bytes}
                    for d in self.hardware.devices
                ],
                "host_ram_bytes": self.hardware.host_ram_bytes,
            },
            "target_ctx": self.target_ctx,
            "fit_ctx_top": self.fit_ctx_top,
            "fits": self.fits,
            "plans": [plan_dict(p) for p in self.plans],
            "rejected": [dataclasses.asdict(r) for r in self.rejected],
            "impossible": self.impossible,
            "notes": list(self.notes),
            "n_estimates": self.n_estimates,
        }


def command_settings(p: Plan) -> dict[str, Any]:
    """The plan JSON's ``command_settings``: the settings the plan fixed (pinned by the user
    or chosen by the search) that ``p.command`` writes, with ``-ngl`` as written; defaults the
    command leaves to the runtime or writes from them (``-fa on``) are in ``settings`` beside
    it, the estimate's, every default resolved. So llama-server's ``-ngl 99`` ("every layer",
    clamped by llama.cpp to the model's layers + 1) is ``n_gpu_layers: 99`` here and the
    resolved ``n_gpu_layers: 33`` (Llama-3.1-8B's 32 + output) in ``settings``."""
    out = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in dataclasses.asdict(p.settings).items()
        if v is not None and k != "runtime"
    }
    # the release is the user's (or the newest): the command does not set it; it stays in
    # ``settings`` beside this
    out.pop("runtime_version", None)
    if (p.launcher or p.runtime) in ("llama.cpp",):
        from oomkit.planner.commands_llamacpp import (
            command_ngl,
            llamacpp_cpu_moe_flags,
            n_cpu_moe_spelled,
        )

        out["n_gpu_layers"] = command_ngl(p.settings)
        n_cpu_moe = p.settings.n_cpu_moe
        if n_cpu_moe and not n_cpu_moe_spelled(p.settings.runtime_version):
            # a build before PR #15077 gets the -ot rules --n-cpu-moe stands for, as printed
            import shlex

            flags = llamacpp_cpu_moe_flags(n_cpu_moe, p.settings.runtime_version)
            del out["n_cpu_moe"]
            out["override_tensor"] = shlex.split(flags[1])
    return out
