"""Ollama on an AMD APU under Linux: the system-memory check when the iGPU reports only free RAM.

Ollama refuses a load whose CPU part exceeds the free system memory plus free swap: its layout
(``llm/server.go`` ``verifyLayout``, v0.16.0 lines 1000-1047) sums what it did not place on a
GPU (``cpuSize = InputWeights + CPU.Graph + the layers left on the CPU``) and, on every OS but
macOS, returns "model requires more system memory (%s) than is available (%s)" when ``cpuSize >
FreeMemory + FreeSwap``. The layers left on the CPU are those that did not fit in the GPUs'
*reported* free memory (``buildLayout``/``assignLayers``, same file).

What an integrated Radeon reports as free is the deciding fact. Ollama's vendored ggml asks
sysfs first (``ggml_backend_cuda_device_get_memory`` -> ``ggml_hip_get_device_memory``,
ml/backend/ggml/ggml/src/mem_hip.cpp: ``mem_info_vram_total - mem_info_vram_used``, plus
``mem_info_gtt_*`` for an iGPU since v0.14.0): the carve-out (and GTT) free, and the model fits.
When that lookup does not answer it falls back to ``hipMemGetInfo`` and then, because the
device is integrated (``prop.integrated > 0``), replaces *free* with ``MemAvailable`` of
``/proc/meminfo`` (ggml-cuda.cu, "ref: https://github.com/ggml-org/llama.cpp/pull/17368", made
for DGX Spark; vendored by ollama#12992 "ggml update to b7108", commit 0cf7794b1, first in
v0.13.2). On a machine whose UEFI carve-out takes most of the memory (Strix Halo: 96 of 128 GB)
``MemAvailable`` is only the RAM left to the OS, so the iGPU "has" that much: the rest of the
model goes to the CPU, where it must fit in the same RAM plus swap.

ollama#14116 (Ryzen AI Max+ 395, 96 GB carve-out, v0.16.0-rocm in Docker): llama3.1:70b refused
with "model requires more system memory (92.5 GiB) than is available (38.1 GiB)" while
gpt-oss:120b (65 GB) ran. No carve-out-sized free report gives that: with ~96 GiB free (nearly)
every block fits and ``cpuSize`` is a few GiB. With the iGPU at ~29 GiB free (the OS's RAM)
the llama runner's accounting (``GraphSize``: blocks of 0.48 GiB weights + f16 KV) leaves
92 GiB on the CPU at 262144 KV cells (18 of 80 blocks on the GPU) and ~51 GiB at 131072:
refused either way; gpt-oss:120b (~63 GiB) leaves ~34 GiB, within RAM + swap (38.1 GiB).

oomkit cannot see which report the iGPU gives, nor the swap: the check is "tight", never "does
not fit", when under the fallback (GPU at most the host RAM, no swap) the CPU part would pass
the host RAM. Scope: Ollama 0.13.2 up to 0.30.0 (v0.30.0 drops ``llm/server.go`` and its
check), Linux or an unknown OS (the override is ``#if defined(__linux__)``), a ROCm device of
an APU, the host RAM known (``--ram``: on an APU the RAM the OS sees beside the carve-out).
"""

from __future__ import annotations

from collections.abc import Mapping

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import parse_runtime_version
from oomkit.estimate.verdict_platform import apu_rocm_devices

__all__ = [
    "OLLAMA_UMA_CHANGE",
    "OLLAMA_UMA_RISK",
    "OLLAMA_UMA_WHAT",
    "ollama_uma_applies",
    "ollama_uma_overs",
]

#: (release, tag date): the first with ggml's UMA MemAvailable override (v0.13.2), the first
#: without llm/server.go's system-memory check (v0.30.0)
_FIRST = ((0, 13, 2), (2025, 12, 7))
_UNTIL = ((0, 30, 0), (2026, 6, 1))

OLLAMA_UMA_WHAT = "Ollama's system-memory check if the iGPU reports only the OS's free RAM"
OLLAMA_UMA_RISK = (
    "over the host RAM (no swap) on the CPU if the iGPU reports /proc/meminfo MemAvailable as "
    "its free memory (ggml's UMA path when Ollama's sysfs VRAM+GTT read fails): Ollama then "
    "refuses with 'model requires more system memory' unless swap covers it (ollama#14116)"
)
OLLAMA_UMA_CHANGE = (
    "check `ollama serve`'s 'inference compute' line: if the iGPU's 'available' is the carve-out, "
    "it loads; if it is the OS's free RAM, lower num_ctx or the carve-out, or add swap"
)


def ollama_uma_applies(runtime_version: object, os_name: str | None) -> bool:
    """Whether the Ollama release ``runtime_version`` (a release or a date) on ``os_name`` has
    both the UMA free-memory override and the system-memory check.

    >>> ollama_uma_applies("0.16.0", "linux"), ollama_uma_applies("0.13.1", "linux")
    (True, False)
    >>> ollama_uma_applies("0.30.0", None), ollama_uma_applies("0.16.0", "windows")
    (False, False)
    >>> ollama_uma_applies(None, "linux"), ollama_uma_applies("2026-02-13", None)
    (False, True)
    """
    if (os_name or "linux").lower() != "linux" or not isinstance(runtime_version, str):
        return False
    when = parse_runtime_version("ollama", runtime_version)
    if isinstance(when, tuple):
        return _FIRST[0] <= when < _UNTIL[0]
    # a date: compared as (year, month, day), so that the estimate's command path does not
    # import datetime (tests/test_import_boundaries.py)
    day = (when.year, when.month, when.day)
    return _FIRST[1] <= day < _UNTIL[1]


def ollama_uma_overs(
    est: Estimate, os_name: str | None, unified_bytes: tuple[int | None, ...]
) -> list[tuple[str, int, str, str, str]]:
    """(device, bytes over, what, risk, safe change) of each ROCm device of an APU whose Ollama
    load would pass the host RAM on the CPU if the iGPU reported only that RAM as free: the
    shape of :func:`oomkit.estimate.verdict_runtime.tight_overs`.

    Under the fallback the GPU takes at most ``MemAvailable`` (at most the host RAM), the rest
    of the device total goes to the CPU beside the host part, and Ollama refuses when that
    passes ``MemAvailable + FreeSwap``; with no swap, what passes the host RAM is the over.
    """
    gen = est.runtime_details.get("generation")
    version = gen.get("requested") if isinstance(gen, Mapping) else None
    if est.runtime != "ollama" or not ollama_uma_applies(version, os_name):
        return []
    ram = est.host.capacity_bytes
    if ram is None:
        return []
    out = []
    for d in apu_rocm_devices(est, unified_bytes):
        spill = d.total_bytes - ram  # what the GPU could not take at "free = the host RAM"
        over = spill + est.host.total_bytes - ram
        if spill > 0 and over > 0:
            out.append((d.device, over, OLLAMA_UMA_WHAT, OLLAMA_UMA_RISK, OLLAMA_UMA_CHANGE))
    return out
