"""Ollama's default ``num_ctx`` when neither the request, the Modelfile nor
``OLLAMA_CONTEXT_LENGTH`` sets one.

* before 0.6.7: 2048; 0.6.7 up to 0.15.4: 4096 (commit 44b466eeb; ``envconfig.ContextLength``
  default; the generation rows' ``num_ctx`` effect);
* 0.15.5 and later (ollama/ollama commit 0334ffa62, "server: use tiered VRAM-based default
  context length", first in release v0.15.5; unchanged through v0.30 and main): ``Serve`` in
  server/routes.go sums ``gpu.TotalMemory - envconfig.GpuOverhead()`` over every GPU that
  ``discover.GPUDevices`` reports (the *total* memory, not the free, and no CPU) and sets
  ``s.defaultNumCtx`` to 262144 from 47 GiB, 32768 from 23 GiB, 4096 below
  (docs.ollama.com/context-length: "< 24 GiB VRAM: 4k, 24-48 GiB: 32k, >= 48 GiB: 256k";
  the code's thresholds are 1 GiB lower "to account for small differences in the exact
  value"). The scheduler then caps it at the GGUF's trained context as it caps any num_ctx
  (:func:`oomkit.estimate.ollama_layers.clamps_num_ctx`). On Apple Silicon a GPU's
  ``TotalMemory`` is Metal's recommended working set, which is what a Metal
  :class:`~oomkit.spec.hardware.DeviceTarget`'s ``capacity_bytes`` holds.

From v0.30.0 (PR #16031, server/sched.go ``reduceAutoNumCtxForLoadOOM``) a load that fails
out of memory with such an automatic num_ctx is retried once a tier lower (``nextLowerAutoNumCtx``:
above 32768 -> 32768, above 4096 -> 4096); the estimate is of the first load.
"""

from __future__ import annotations

from oomkit.spec.hardware import Hardware

__all__ = [
    "OLLAMA_TIERS_NOTE",
    "VRAM_TIERS",
    "ollama_default_num_ctx",
    "ollama_vram_tiered",
]

_GIB = 1 << 30
#: (least total VRAM, default num_ctx), largest first: server/routes.go ``Serve`` (v0.15.5+)
VRAM_TIERS: tuple[tuple[int, int], ...] = ((47 * _GIB, 262144), (23 * _GIB, 32768), (0, 4096))
#: the tiers in words, for a listing whose rows have different GPUs (``gpus --for``)
OLLAMA_TIERS_NOTE = (
    "each row gets Ollama 0.15.5+'s default for its GPUs' total VRAM (4096 under 23 GiB, 32768 "
    "for 23-47 GiB, 262144 from 47 GiB; capped at the model's trained context)"
)
#: the num_ctx default of releases 0.6.7-0.15.4 (and of the tiers' lowest rung)
_FIXED_DEFAULT = 4096


def ollama_vram_tiered(version: str | None) -> bool:
    """The Ollama release (None: the newest) picks its default num_ctx from the total VRAM."""
    from oomkit.estimate.generations import resolve_generation

    return bool(resolve_generation("ollama", version).effects.get("num_ctx_vram_tiers"))


def total_vram(hardware: Hardware, gpu_overhead_bytes: int = 0) -> int:
    """Ollama's ``totalVRAM``: every GPU's total memory less ``OLLAMA_GPU_OVERHEAD``."""
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    return sum(max((d.capacity_bytes or 0) - gpu_overhead_bytes, 0) for d in gpus)


def ollama_default_num_ctx(
    version: str | None, hardware: Hardware | None, gpu_overhead_bytes: int = 0
) -> tuple[int, str]:
    """(the num_ctx Ollama ``version`` (None: the newest) uses when none is set on
    ``hardware``, the reason in words). ``hardware`` None: the fixed default of the release
    (a tiered release is then read as below 23 GiB, its 4096)."""
    from oomkit.estimate.generations import resolve_generation

    gen = resolve_generation("ollama", version)
    if not gen.effects.get("num_ctx_vram_tiers"):
        fixed = int(gen.effects.get("num_ctx", _FIXED_DEFAULT) or _FIXED_DEFAULT)
        since = "before 0.6.7" if fixed == 2048 else "0.6.7-0.15.4; 2048 before 0.6.7"
        return fixed, f"Ollama default {fixed} ({since})"
    gpus = [] if hardware is None else [d for d in hardware.devices if d.backend != "cpu"]
    if any(d.capacity_bytes is None for d in gpus):
        return 4096, (
            "the GPUs' memory is not known, 4096 assumed (Ollama 0.15.5+ picks 32768 from 23 "
            "GiB and 262144 from 47 GiB of total VRAM: give --gpu or --vram)"
        )
    vram = total_vram(hardware, gpu_overhead_bytes) if hardware is not None else 0
    ctx = next(c for least, c in VRAM_TIERS if vram >= least)
    band = {262144: "47 GiB or more", 32768: "23-47 GiB", 4096: "under 23 GiB"}[ctx]
    return ctx, (
        f"Ollama 0.15.5+ picks {ctx} for {band} of total VRAM ({vram / _GIB:.1f} GiB over "
        "the GPUs; server/routes.go, 4096 before 0.15.5)"
    )
