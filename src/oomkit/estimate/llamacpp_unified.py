"""Apple silicon under partial offload: ggml-metal's op offload, and the one RAM both halves share.

**Op offload (staging) on Metal.** ``ggml_backend_sched_backend_id_from_cur`` sends a matmul
whose weight sits in a host buffer to the first backend whose ``offload_op`` accepts it
(ggml-backend.c at ggml commit 952fb4c, llama.cpp PR #6083, 2024-03-18: ``ggml_backend_offload_op``
lines 289-294 returns false when the backend's ``offload_op`` is NULL). ggml-metal's was NULL
(``ggml_backend_metal_i``, src/ggml-metal.m line 2840 at 952fb4c), then
``ggml_backend_metal_device_offload_op`` returned ``false`` (src/ggml-metal.m line 3748 at ggml
commit cd09b8f, llama.cpp PR #9713, 2024-10-07; line 3862 at da649f7), until llama.cpp PR
#15995 ("metal : refactor + optimize v2", ggml commit f05196c, 2025-09-20) made it accept
``MUL_MAT``/``MUL_MAT_ID`` with a batch of 32 or more (src/ggml-metal/ggml-metal.cpp line 618).
So before that PR no CPU weight is staged in the Metal compute buffer
(:data:`METAL_OP_OFFLOAD_SINCE`, ``LlamaCppOptions.metal_op_offload``); from it on the
scheduler's splits hold one weight copy at a time, as on CUDA
(:mod:`oomkit.estimate.llamacpp_offload_splits`; ``supports_buft`` of ggml-metal.cpp line 598
takes only Metal buffer types, so the host weight is copied).

**One RAM.** On a Mac the Metal buffers and the CPU layers live in the same installed RAM. The
GPU part is capped by the working set (``recommendedMaxWorkingSetSize``, the verdict's
capacity); the CPU part has no cap of its own, but it is not free: Ollama on Metal loads a
partial offload without mmap ("mmap has issues with partial offloading on metal",
llm/server.go of ollama/ollama from PR #4734, commit a50a87a, v0.1.40, until the llama-server
runner of PR #16031, v0.30.0), so the CPU layers' weights are read into anonymous memory
(llama.cpp's own ``--no-mmap`` does the same). Quantized weights do not compress, and macOS
does not check for them (Ollama skips its system-memory check on darwin: "Darwin has fully
dynamic swap", llm/server.go lines 135-144 at v0.3.13), so when the Metal buffers plus the CPU
weights exceed the installed RAM the process is killed by the OS (ollama#7255: 18 of 81 layers
of a 70B Q4_K_M on a 16 GB Mac, "signal: killed", free_swap 0 B). The CPU KV cache and compute
buffer are not counted: zero-filled or untouched pages, which macOS compresses or never
backs (a 16 GB M4 ran 32 Ollama slots with ~8 GiB of KV reserved at "9.894Gi/16.000Gi",
savoirtech/ollama-parallel-performance). No OS share is subtracted from the RAM: macOS
swaps and compresses what the OS and apps hold, and no source gives a floor, so the check
is the certain part of "GPU + CPU within RAM less the OS".
"""

from __future__ import annotations

import dataclasses

from oomkit.estimate.breakdown import Estimate
from oomkit.spec.hardware import Hardware
from oomkit.units import format_bytes

__all__ = [
    "METAL_OP_OFFLOAD_SINCE",
    "OLLAMA_METAL_NO_MMAP",
    "metal_op_offload",
    "ollama_metal_no_mmap",
    "unified_ram_blocker",
    "with_unified_ram_blocker",
]

#: the first day ggml-metal's offload_op accepts large-batch matmuls (llama.cpp PR #15995)
METAL_OP_OFFLOAD_SINCE = "2025-09-20"
#: Ollama releases whose llm/server.go loads a Metal partial offload with --no-mmap:
#: [v0.1.40 (PR #4734), v0.30.0 (PR #16031, llama-server only))
OLLAMA_METAL_NO_MMAP = ((0, 1, 40), (0, 30, 0))
#: the Ollama release date of v0.1.40 and of v0.30.0's llama-server switch, for dated versions
_OLLAMA_NO_MMAP_DATES = ("2024-05-31", "2026-06-01")

_PREFIX = "unified memory:"
NOTE = "Metal partial offload: no CPU weight staged (ggml-metal's offload_op refuses it)"


def metal_op_offload(llamacpp_version: str | None) -> bool:
    """Whether ggml-metal's ``offload_op`` accepts a large-batch matmul in this llama.cpp build
    (a build tag or date; None: today's).

    >>> metal_op_offload("b4500"), metal_op_offload("2025-10-01"), metal_op_offload(None)
    (False, True, True)
    """
    if llamacpp_version is None:
        return True
    from datetime import date

    from oomkit.estimate.generations import parse_runtime_version

    when = parse_runtime_version("llama.cpp", llamacpp_version)
    return not isinstance(when, date) or when >= date.fromisoformat(METAL_OP_OFFLOAD_SINCE)


def ollama_metal_no_mmap(ollama_version: str | None) -> bool:
    """Whether this Ollama release loads a Metal partial offload with ``--no-mmap``.

    >>> ollama_metal_no_mmap("0.3.13"), ollama_metal_no_mmap("0.1.32"), ollama_metal_no_mmap(None)
    (True, False, False)
    """
    if ollama_version is None:  # the newest release: llama-server, mmap as llama.cpp's
        return False
    from datetime import date

    from oomkit.estimate.generations import parse_runtime_version

    when = parse_runtime_version("ollama", ollama_version)
    if isinstance(when, date):
        lo, hi = (date.fromisoformat(d) for d in _OLLAMA_NO_MMAP_DATES)
        return lo <= when < hi
    return OLLAMA_METAL_NO_MMAP[0] <= when < OLLAMA_METAL_NO_MMAP[1]


def unified_ram_blocker(est: Estimate, hardware: Hardware) -> str | None:
    """The blocker of a Mac run whose Metal buffers plus CPU weights (read in, no mmap) exceed
    the installed RAM (``--ram``, else the catalog's memory of the Apple GPU); None otherwise."""
    apple = [d for d in hardware.devices if d.backend == "metal" and d.unified_memory]
    if not apple:
        return None
    from oomkit.estimate.verdict_platform import device_unified_bytes

    ram = hardware.host_ram_bytes or device_unified_bytes(apple[0])
    if ram is None:
        return None
    gpu = sum(d.total_bytes for d in est.devices)
    cpu = sum(c.n_bytes for c in est.host.components if c.category == "weights")
    if cpu == 0 or gpu + cpu <= ram:
        return None
    return (
        f"{_PREFIX} the Metal buffers ({format_bytes(gpu)}) and the CPU layers' weights "
        f"read in without mmap ({format_bytes(cpu)}) need {format_bytes(gpu + cpu)}, more than "
        f"the Mac's {format_bytes(ram)} of RAM: macOS kills the process (ollama#7255)"
    )


def with_unified_ram_blocker(est: Estimate, hardware: Hardware, *, no_mmap: bool) -> Estimate:
    """``est`` with :func:`unified_ram_blocker` added when the weights are read in (no mmap)."""
    if not no_mmap:
        return est
    why = unified_ram_blocker(est, hardware)
    if why is None or any(b.startswith(_PREFIX) for b in est.blockers):
        return est
    return dataclasses.replace(est, blockers=(*est.blockers, why))
