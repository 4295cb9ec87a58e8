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

A context floor for two families (:func:`ollama_ctx_floor`), applied in server/routes.go
``scheduleRunner`` after the request, Modelfile and default are merged, so it lifts a num_ctx
the user set too: ``opts.NumCtx = max(opts.NumCtx, 8192)``

* gpt-oss from v0.11.0 (PR #11672, commit fa7776fd2), whatever the VRAM until v0.11.3;
* from v0.11.4 (commit f2e9c9aff, "server: Reduce gpt-oss context length for small VRAM
  GPUs") only when ``Serve`` did not enter "low vram mode": the GPUs' summed
  ``TotalMemory - OLLAMA_GPU_OVERHEAD`` is at least ``lowVRAMThreshold`` (20 GiB);
* qwen3vl / qwen3vlmoe join from v0.12.7 (PR #12665, commit 7d25b9e19);
* gone from v0.15.5 (commit 0334ffa62 replaced low-VRAM mode with the tiers above).

Before the new device discovery a machine without GPUs reported the CPU (its RAM) as the one
"GPU" (discover/gpu.go ``GetGPUInfo``); that case is read here as no VRAM (low VRAM mode).
"""

from __future__ import annotations

from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec

__all__ = [
    "CTX_FLOOR",
    "OLLAMA_TIERS_NOTE",
    "VRAM_TIERS",
    "ollama_ctx_floor",
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
#: server/routes.go ``scheduleRunner`` (v0.11.0-v0.15.4): ``max(opts.NumCtx, 8192)``
CTX_FLOOR = 8192
#: ``lowVRAMThreshold`` (v0.11.4-v0.15.4): below it the floor is skipped
_LOW_VRAM = 20 * _GIB
#: (release, its day) of fa7776fd2, f2e9c9aff, 7d25b9e19 and 0334ffa62; the day as ISO text, so
#: that this start-up module imports no datetime
_FLOOR_FROM = ((0, 11, 0), "2025-08-05")
_LOW_VRAM_FROM = ((0, 11, 4), "2025-08-07")
_QWEN3VL_FROM = ((0, 12, 7), "2025-10-29")
_FLOOR_UNTIL = ((0, 15, 5), "2026-02-05")
#: HF model types / architectures whose GGUF family is ``gptoss`` / ``gpt-oss``
_GPTOSS = frozenset({"gpt_oss", "GptOssForCausalLM"})
#: ... ``qwen3vl`` / ``qwen3vlmoe`` (Ollama's converter, convert/convert.go)
_QWEN3VL = frozenset(
    {
        "qwen3_vl",
        "qwen3_vl_moe",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
    }
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


def _since(version: str | None, change: tuple[tuple[int, ...], str]) -> bool:
    """``version`` (None: the newest) is the release of ``change`` or later; a date stands for
    the releases of that day."""
    if version is None or not version.strip():
        return True
    from oomkit.estimate.generations import parse_runtime_version

    when = parse_runtime_version("ollama", version)
    return when >= change[0] if isinstance(when, tuple) else when.isoformat() >= change[1]


def ollama_ctx_floor(
    spec: ModelSpec, version: str | None, hardware: Hardware | None, gpu_overhead_bytes: int = 0
) -> tuple[int, str] | None:
    """(8192, why) where Ollama ``version`` raises ``spec``'s num_ctx to at least 8192 on
    ``hardware`` (any num_ctx, set or default: server/routes.go ``scheduleRunner``), else
    None. ``hardware`` None or a GPU of unknown memory: read as low VRAM (no floor) from
    v0.11.4."""
    kinds = {spec.model_type, spec.architecture}
    gptoss = bool(kinds & _GPTOSS)
    if not (gptoss or kinds & _QWEN3VL) or version is None or not version.strip():
        return None  # the newest release has no floor (0334ffa62, v0.15.5)
    if not _since(version, _FLOOR_FROM) or _since(version, _FLOOR_UNTIL):
        return None
    if not gptoss and not _since(version, _QWEN3VL_FROM):
        return None
    family = "gpt-oss" if gptoss else "qwen3vl"
    if not _since(version, _LOW_VRAM_FROM):
        return CTX_FLOOR, (
            f"Ollama 0.11.0-0.11.3 raises {family}'s num_ctx to at least {CTX_FLOOR} "
            "(server/routes.go scheduleRunner, commit fa7776fd2)"
        )
    gpus = [] if hardware is None else [d for d in hardware.devices if d.backend != "cpu"]
    if not gpus or any(d.capacity_bytes is None for d in gpus):
        return None
    vram = total_vram(hardware, gpu_overhead_bytes) if hardware is not None else 0
    if vram < _LOW_VRAM:
        return None
    since = "0.11.4" if gptoss else "0.12.7"
    return CTX_FLOOR, (
        f"Ollama {since}-0.15.4 raises {family}'s num_ctx to at least {CTX_FLOOR} with 20 GiB "
        f"or more of total VRAM ({vram / _GIB:.1f} GiB here; server/routes.go scheduleRunner "
        "and lowVRAMThreshold, commit f2e9c9aff)"
    )
