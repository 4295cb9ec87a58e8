"""The out-of-memory wordings that runtimes print, harvested from their own source code (issue 9).

Recognition must hold on messages nobody has shown the doctor yet. Rather than adding a format each
time a corpus record is missed, this table lists, family by family, the string each runtime's own
code emits when an allocation fails, with the file that prints it (``repo:path``; for
closed-source libraries the library and where its wording is documented).
``tests/test_doctor_upstream_wordings.py`` checks that the doctor recognises every entry as an
OOM, and reads the numbers the format carries.

Each :class:`Wording` holds:

* ``wording``: the format string as the source writes it (``%s``, ``{}``, ``<<`` pieces shown as
  ``%...``), for the reader;
* ``example``: a realistic line built from that format with numbers filled in (what a user pastes);
* the bytes the example states (``requested``, ``total``, ``free``, ``allocated``), when the
  format carries them: the test asserts that the doctor reads exactly these.

Deliberate decisions, kept in :data:`NOT_CAPACITY` (recognised, but said not to be a lack of memory,
cause ``unknown``): Triton's ``out of resource: shared memory`` is a per-block limit of on-chip
shared memory (``triton/runtime/errors.py`` ``OutOfResources``), not device memory; lowering the
batch does not help, smaller ``BLOCK``/``num_stages`` does. :data:`NEAR_MISSES` are texts with the
same words that no runtime prints on an allocation failure; the doctor must not call them OOM.
"""

from __future__ import annotations

from oomkit.diagnose.parse_wordings_exits import EXITS_NEAR_MISSES
from oomkit.diagnose.parse_wordings_kills import KILLS_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w
from oomkit.diagnose.upstream_wordings_codes import CODES, CODES_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_devices import CUDA, GGML, TORCH
from oomkit.diagnose.upstream_wordings_edge import EDGE, EDGE_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_engines import ENGINES, ENGINES_MORE, ENGINES_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_exits import EXITS
from oomkit.diagnose.upstream_wordings_history import HISTORY, HISTORY_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_hosts import HOSTS, HOSTS_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_legacy import LEGACY, LEGACY_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_libs import LIBS, LIBS_NOT_CAPACITY
from oomkit.diagnose.upstream_wordings_limits import (
    LIMITS,
    LIMITS_NEAR_MISSES,
    LIMITS_NOT_CAPACITY,
)
from oomkit.diagnose.upstream_wordings_more import MORE, MORE_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_native import NATIVE, NATIVE_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_paddle import PADDLE, PADDLE_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_runtimes import (
    RUNTIMES,
    RUNTIMES_NEAR_MISSES,
    RUNTIMES_NOT_CAPACITY,
)
from oomkit.diagnose.upstream_wordings_stacks import FRAMEWORKS, OS, SERVING
from oomkit.diagnose.upstream_wordings_titles import TITLES, TITLES_NEAR_MISSES
from oomkit.diagnose.upstream_wordings_warnings import WARNINGS, WARNINGS_NEAR_MISSES

__all__ = ["NEAR_MISSES", "NOT_CAPACITY", "WORDINGS", "Wording"]

#: Every harvested wording, family by family.
WORDINGS: tuple[Wording, ...] = (
    TORCH
    + CUDA
    + GGML
    + SERVING
    + FRAMEWORKS
    + OS
    + LIBS
    + HOSTS
    + LIMITS
    + RUNTIMES
    + TITLES
    + ENGINES
    + ENGINES_MORE
    + MORE
    + HISTORY
    + EDGE
    + LEGACY
    + NATIVE
    + WARNINGS
    + CODES
    + EXITS
    + PADDLE
)

#: Recognised as the runtime's own message, but not a lack of device memory (cause ``unknown``).
NOT_CAPACITY: tuple[Wording, ...] = (
    _w(
        "triton",
        "triton-lang/triton:python/triton/runtime/errors.py (OutOfResources)",
        "out of resource: %s, Required: %d, Hardware limit: %d. Reducing block sizes or "
        "`num_stages` may help.",
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
        "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
    ),
    *LIBS_NOT_CAPACITY,
    *LIMITS_NOT_CAPACITY,
    *RUNTIMES_NOT_CAPACITY,
)

#: Texts with the same words that no runtime prints on a failed allocation.
NEAR_MISSES: tuple[str, ...] = (
    "Memory access fault by GPU node-1 (Agent handle: 0x55) on address 0x7f. Reason: Page not "
    "present or supervisor privilege.",
    "CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.",
    "RuntimeError: CUDA error: device-side assert triggered",
    "ggml_vulkan: Found 1 Vulkan devices: allocateMemory supported",
    "INFO: kernel: process 4321 (python) exited normally",
    "显存占用：10.2 GB / 24 GB",
    "内存使用正常",
    "The paging file size is managed automatically",
    "Not enough arguments for format string",
    "CL_DEVICE_MAX_MEM_ALLOC_SIZE: 4294959104",
    "hipMemGetInfo: free 20.1 GiB of 24.0 GiB",
    "Killed 3 zombie workers after timeout",
    # RADV's other submit failure (-ECANCELED, radv_amdgpu_cs.c): a lost context, not memory
    "radv/amdgpu: The CS has been cancelled because the context is lost. This context is innocent.",
    # the new generic alternatives' neighbours: same verbs or schedulers, not memory
    "=>> PBS: job killed: walltime 3650 exceeded limit 3600",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n  exitcode  : 1 "
    "(pid: 4242)",
    "zsh: command not found: python",
    "The node was low on resource: ephemeral-storage.",
    "RecursionError: maximum recursion depth exceeded while calling a Python object",
    "This config does not fit the expected schema",
    "Could not allocate a port for the server",
    "Failed to reserve a name for the job",
    "VRAM 使用量: 10 GB",
    "メモリ使用量: 8.0 GB",
    # parse_libs' neighbours: the same libraries failing for other reasons, a texture check
    # that is not the size limit
    "Error: 'err == cudaSuccess' failed: Failed to cudaMalloc 1024 bytes on device 0 (error 1 "
    "invalid argument",
    "Error: Requested texture size [0x0] is invalid.",
    "what():  parallel_for failed: invalid device function",
    "GPU loading succeeded",
    *HOSTS_NEAR_MISSES,
    *LIMITS_NEAR_MISSES,
    *RUNTIMES_NEAR_MISSES,
    *TITLES_NEAR_MISSES,
    *ENGINES_NEAR_MISSES,
    *MORE_NEAR_MISSES,
    *HISTORY_NEAR_MISSES,
    *EDGE_NEAR_MISSES,
    *LEGACY_NEAR_MISSES,
    *NATIVE_NEAR_MISSES,
    *PADDLE_NEAR_MISSES,
    *WARNINGS_NEAR_MISSES,
    *CODES_NEAR_MISSES,
    *KILLS_NEAR_MISSES,
    *EXITS_NEAR_MISSES,
)
