"""Ollama 0.1.20 - 0.1.31: ``llm/llm.go`` picks ``num_gpu`` from free VRAM minus its own overhead.

Before ``llm/memory.go`` (v0.1.32, 2024-04-16) Ollama chose the layers to offload in
``llm.New`` (ollama/ollama ``llm/llm.go`` at v0.1.20 .. v0.1.31, the same formula in each)::

    vram      = gpu.CheckVRAM()  = FreeMemory - overhead
    kv        = 2 x 2 x num_ctx x block_count x embedding_length x head_count_kv / head_count
    graph     = NumGQA x kv / 6                 (NumGQA = head_count / head_count_kv)
    maxlayers = block_count + 1
    avg       = vram / DeviceCount
    layers    = min(maxlayers x (avg - graph) / (kv + size / DeviceCount), maxlayers)
    CPU only when layers <= 0 or graph + kv x layers / maxlayers > avg

with ``size`` the GGUF's tensor data end (``ggml.Size = ro.offset``) and int64 arithmetic
(truncating division). ``FreeMemory`` is summed over the CUDA devices (``gpu_info_cuda.c``:
``resp->free += memInfo.free``, NVML, no context of its own). ``gpu/gpu.go`` ``CheckVRAM``
keeps ``overhead`` free:

* v0.1.20 (2024-01-11): ``max(FreeMemory / 10, DeviceCount x 512 MiB)``;
* v0.1.21 - v0.1.31 (2024-01-25 .. 2024-04-04): ``max(FreeMemory / 10, DeviceCount x 1024
  MiB)`` ("leave 10% or 1024MiB of VRAM free per GPU to handle unaccounted for overhead";
  v0.1.30 sets it to 0 on Jetson/Tegra only);
* from v0.1.32 ``gpu.go``'s ``cudaMinimumMemory`` / ``rocmMinimumMemory`` = 457 MiB per GPU
  (oomkit.estimate.overhead), and memory.go picks the layers.

This is the "minimum free memory of the run's version" for those releases: what the verdict
counts as Ollama's reserve (``runtime_details["ollama"]["reserve_bytes"]``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import parse_runtime_version
from oomkit.estimate.llamacpp_params import LlamaCppOptions
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB, format_bytes

__all__ = ["llm_go_era", "llm_go_layers", "llm_go_num_gpu", "llm_go_overhead_bytes"]

#: (first release, its tag date, per-GPU floor of CheckVRAM's overhead)
_ERAS: tuple[tuple[tuple[int, ...], date, int], ...] = (
    ((0, 1, 20), date(2024, 1, 11), 512 * MiB),
    ((0, 1, 21), date(2024, 1, 25), 1024 * MiB),
)
#: v0.1.32 (tag 2024-04-16): memory.go and the 457 MiB minimum
_UNTIL = ((0, 1, 32), date(2024, 4, 16))


def llm_go_era(when: date | tuple[int, ...] | None) -> int | None:
    """The per-GPU overhead floor of the llm.go release ``when`` names (a release tuple or
    the run's date, read as the newest release tagged by then); None outside 0.1.20-0.1.31.

    >>> llm_go_era((0, 1, 29)) == 1024 * MiB, llm_go_era(date(2024, 1, 15)) == 512 * MiB
    (True, True)
    >>> llm_go_era((0, 1, 32)), llm_go_era(date(2024, 1, 5)), llm_go_era(None)
    (None, None, None)
    """
    if when is None:
        return None
    pick: int | None = None
    for release, tagged, floor in _ERAS:
        if (release if isinstance(when, tuple) else tagged) <= when:  # type: ignore[operator]
            pick = floor
    end = _UNTIL[0] if isinstance(when, tuple) else _UNTIL[1]
    if pick is None or when >= end:  # type: ignore[operator]
        return None
    return pick


def llm_go_overhead_bytes(free_total_bytes: int, n_devices: int, floor_bytes: int) -> int:
    """``CheckVRAM``'s overhead: 10% of the summed free memory, at least ``floor`` per GPU."""
    return max(free_total_bytes // 10, n_devices * floor_bytes)


def _div(a: int, b: int) -> int:
    """Go's int64 division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def llm_go_num_gpu(
    spec: ModelSpec,
    num_ctx: int,
    size_bytes: int,
    free_bytes: Sequence[int],
    floor_bytes: int,
) -> int:
    """``opts.NumGPU`` as ``llm.New`` sets it when ``num_gpu`` is unset (-1).

    Llama-2-7B at 2048 (kv 1 GiB, graph kv / 6) on 4 GiB free: vram 3 GiB,
    33 x (3 GiB - 170.7 MiB) / (1 GiB + 3825 MiB) = 19.7 -> 19 layers.

    >>> from oomkit.catalog.models import find_model
    >>> llm_go_num_gpu(find_model("llama-2-7b").spec(), 2048, 3825 * MiB, [8192 * MiB], 1024 * MiB)
    33
    >>> llm_go_num_gpu(find_model("llama-2-7b").spec(), 2048, 3825 * MiB, [4096 * MiB], 1024 * MiB)
    19
    """
    n_dev = len(free_bytes)
    if n_dev == 0:
        return 0
    free = sum(free_bytes)
    vram = free - llm_go_overhead_bytes(free, n_dev, floor_bytes)
    n_head = max(spec.num_attention_heads, 1)
    n_kv = spec.num_key_value_heads or n_head
    kv = _div(2 * 2 * num_ctx * spec.num_hidden_layers * spec.hidden_size * n_kv, n_head)
    graph = _div((n_head // n_kv) * kv, 6)
    maxlayers = spec.num_hidden_layers + 1
    avg = _div(vram, n_dev)
    layers = _div(maxlayers * (avg - graph), kv + _div(size_bytes, n_dev))
    layers = min(layers, maxlayers)
    if layers <= 0 or graph + _div(kv * layers, maxlayers) > avg:
        return 0
    return layers


def llm_go_layers(
    spec: ModelSpec,
    mapped: InferenceSettings,
    hardware: Hardware,
    est: Estimate,
    settings: InferenceSettings,
    opts: LlamaCppOptions,
    notes: list[str],
    default_ctx: int,
) -> tuple[int, Estimate | None, int] | None:
    """Ollama 0.1.20-0.1.31 on CUDA/ROCm: (llm.go's
    ``num_gpu``, the estimate with it when ``num_gpu`` is unset else None, CheckVRAM's
    overhead per GPU); None for other releases, Metal or an unknown capacity."""
    if settings.runtime_version is None or not settings.runtime_version.strip():
        return None
    floor = llm_go_era(parse_runtime_version("ollama", settings.runtime_version))
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    if floor is None or not gpus or any(d.backend not in ("cuda", "rocm") for d in gpus):
        return None
    free = [d.capacity_bytes for d in gpus]
    if any(f is None for f in free):
        return None
    known = [f for f in free if f is not None]
    per_gpu = llm_go_overhead_bytes(sum(known), len(known), floor) // len(known)
    size = est.runtime_details.get("weights_file_bytes")
    if settings.n_gpu_layers is not None or not isinstance(size, int):
        return 0, None, per_gpu
    ctx = mapped.ctx or default_ctx
    from oomkit.estimate.llamacpp import estimate_llamacpp  # the estimator, only for this era

    ngl = llm_go_num_gpu(spec, ctx, size, known, floor)
    picked = estimate_llamacpp(
        spec,
        dataclasses.replace(mapped, n_gpu_layers=ngl),
        hardware,
        options=opts,
        default_swa_full=False,
        runtime_name="llama.cpp",
        vision_note=False,
    )
    notes.append(
        f"Ollama 0.1.20-0.1.31: llm/llm.go picked num_gpu {ngl} from free VRAM minus "
        f"CheckVRAM's overhead ({format_bytes(per_gpu)} per GPU: 10% of free, at least "
        f"{format_bytes(floor)}), KV 4 x num_ctx x block_count x n_embd x n_head_kv / n_head and "
        "graph GQA x KV / 6; before memory.go (v0.1.32)"
    )
    return ngl, picked, per_gpu
