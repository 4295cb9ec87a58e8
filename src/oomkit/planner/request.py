"""What the user asks the planner for: workload, constraints and what to prefer (validated)."""

from __future__ import annotations

from dataclasses import dataclass

from oomkit.errors import InvalidSettingError
from oomkit.units import GiB
from oomkit.validate import MAX_CTX, check_int

__all__ = ["DEFAULT_HEADROOM_BYTES", "PREFERENCES", "PlanRequest"]

#: llama.cpp's ``--fit`` leaves 1 GiB free per device by default (common/arg.cpp ``-fitt``,
#: ``fit_params_target``); the planner keeps the same margin unless told otherwise
DEFAULT_HEADROOM_BYTES = 1 * GiB
PREFERENCES = ("quality", "speed", "context")
#: ctx values the planner proposes are multiples of this (llama.cpp pads n_ctx to 256)
CTX_STEP = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanRequest:
    """The workload and constraints of one planning question.

    Attributes:
        runtime: a runtime name, or ``"any"`` to compare runtimes.
        ctx: context the user wants (None: the runtime's default, or the model's maximum when
            ``prefer == "context"``).
        min_ctx: never propose a context below this (default: ``ctx`` itself when the user
            gave one and forbids shortening with ``min_ctx == ctx``; else 2048).
        parallel: concurrent sequences / users.
        quant: the weight quant to start from (None: the planner chooses, best first).
        min_quant: never go below this quant's quality.
        no_offload: never leave layers or experts on the CPU.
        headroom_bytes: memory each GPU keeps free beyond the estimate.
        prefer: ``quality`` (best quant, then least intrusive change), ``speed`` (everything
            on the GPU first), ``context`` (the longest context first).
        ctx_max: ``--ctx max``: aim for the model's whole context and propose each plan at the
            largest context its settings fit (``ctx`` must be None; ``min_ctx`` defaults to
            one ``ctx_step``).
        kv: a KV cache type the planner must use (f16, q8_0, q4_0; vLLM auto, fp8).
        display: a display is attached to the GPU(s) (True), known headless (False), or
            unknown (None: counted in the verdict's band as ``estimate`` does); a plan must
            clear that band, so this decides how much a desktop card keeps free.
    """

    runtime: str = "llama.cpp"
    ctx: int | None = None
    min_ctx: int | None = None
    parallel: int | None = None
    quant: str | None = None
    min_quant: str | None = None
    no_offload: bool = False
    headroom_bytes: int = DEFAULT_HEADROOM_BYTES
    prefer: str = "quality"
    ctx_step: int = CTX_STEP
    display: bool | None = None
    #: the KV cache type the user pinned (``--kv-dtype`` / ``-ctk``; None: the planner chooses)
    kv: str | None = None
    #: layers every plan keeps on the GPU (``-ngl N``, llama.cpp/Ollama; above the model's
    #: layers + output it means all of them, as llama.cpp reads it; None: the planner chooses)
    n_gpu_layers: int | None = None
    ctx_max: bool = False
    #: ``ctx`` is ``--ctx max`` resolved to the model's whole context (set by the planner, not
    #: the caller): the plan's text says "max" was asked, not the number it resolved to
    ctx_from_max: bool = False

    def __post_init__(self) -> None:
        if self.ctx_max and self.ctx is not None:
            raise InvalidSettingError(
                f"'ctx' ({self.ctx}) and ctx max ask two contexts: give one", setting="ctx"
            )
        if self.n_gpu_layers is not None:
            check_int("n_gpu_layers", self.n_gpu_layers, lo=0, hi=1 << 20)
        for name in ("ctx", "min_ctx", "parallel"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidSettingError(
                    f"'{name}' must be a whole number, got {value!r}", setting=name, value=value
                )
            # the one ceiling (and wording) of a token count, as `oomkit estimate --ctx`
            check_int(name, value, lo=1, hi=MAX_CTX)
        if self.ctx is not None and self.min_ctx is not None and self.min_ctx > self.ctx:
            raise InvalidSettingError(
                f"'min_ctx' ({self.min_ctx}) is larger than 'ctx' ({self.ctx})",
                setting="min_ctx",
                value=self.min_ctx,
            )
        if isinstance(self.headroom_bytes, bool) or not isinstance(self.headroom_bytes, int):
            raise InvalidSettingError(
                f"'headroom' must be a size in bytes, got {self.headroom_bytes!r}",
                setting="headroom",
                value=str(self.headroom_bytes),
            )
        if not 0 <= self.headroom_bytes <= 1 << 50:
            raise InvalidSettingError(
                f"'headroom' must be between 0 and 1 PiB, got {self.headroom_bytes}",
                setting="headroom",
                value=self.headroom_bytes,
            )
        if self.prefer not in PREFERENCES:
            raise InvalidSettingError(
                f"'prefer' must be one of {', '.join(PREFERENCES)}, got {self.prefer!r}",
                setting="prefer",
                value=str(self.prefer),
            )
        if isinstance(self.ctx_step, bool) or not isinstance(self.ctx_step, int):
            raise InvalidSettingError("'ctx_step' must be a whole number", setting="ctx_step")
        if not 1 <= self.ctx_step <= 65536:
            raise InvalidSettingError(
                f"'ctx_step' must be between 1 and 65536, got {self.ctx_step}",
                setting="ctx_step",
                value=self.ctx_step,
            )
        if self.display is not None and not isinstance(self.display, bool):
            raise InvalidSettingError(
                f"'display' must be True, False or None (unknown), got {self.display!r}",
                setting="display",
                value=str(self.display),
            )
