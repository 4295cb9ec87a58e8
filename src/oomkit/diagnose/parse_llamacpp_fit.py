"""llama.cpp's parameter fit projecting more device memory than is free (docpost20, heldout42).

Since ggml-org/llama.cpp PR #16653 (December 2025) every common-based tool runs
``llama_params_fit`` before it loads a model (``src/llama.cpp`` ``llama_params_fit_impl``, later
``common/fit.cpp`` ``common_params_fit_impl``): it loads the model without allocating
(``llama_get_device_memory_data``), sums the model, context and compute buffers per device and
prints ``"%s: projected to use %" PRId64 " MiB of device memory vs. %" PRId64 " MiB of free
device memory"``. When the projection leaves less than the target free (1024 MiB by default) it
says ``"cannot meet free memory target of %d MiB, need to reduce device memory by %d MiB"``,
tries a smaller context unless the user set one (``"context size set by user to %u -> no
change"``) and then fewer layers unless the user set ``-ngl`` (the exception "n_gpu_layers
already set by user to %d, abort", logged as "failed to fit params to free device memory: ...").
After such an abort the load goes on with the user's settings.

A projection under the free memory only misses the margin (the load usually succeeds: a near
miss, ``upstream_wordings_history_engines``). A projection **above** the free memory is the
runtime's own measurement that the buffers it is about to allocate do not fit the device: that
is what this module recognises (event ``fit_shortfall``), with what the user fixed.
"""

from __future__ import annotations

import re
from typing import Any

from oomkit.diagnose.events import OomEvent
from oomkit.diagnose.sizes import to_bytes
from oomkit.diagnose.text import Lines

__all__ = ["FIT_FORMAT", "parse_llamacpp_fit"]

FIT_FORMAT = "llama.cpp_fit_shortfall"

_PROJECTED = re.compile(
    r"\b(?P<fn>\w{0,40}params_fit\w{0,10}): projected to use (?P<used>\d{1,9}) MiB of device "
    r"memory vs\. (?P<free>\d{1,9}) MiB of free device memory"
)
_USER_CTX = re.compile(r"params_fit\w{0,10}: context size set by user to (?P<n>\d{1,9})")
_USER_NGL = re.compile(r"n_gpu_layers already set by user to (?P<n>-?\d{1,6})")
_HEAD = 2000  # the fit runs before the load: the head of the log


def parse_llamacpp_fit(lines: Lines) -> tuple[list[OomEvent], dict[str, Any]]:
    """The fit's projection above the free device memory, with the user's context and layers."""
    for i, raw in enumerate(lines.text[:_HEAD]):
        if "projected to use" not in raw:
            continue
        m = _PROJECTED.search(raw)
        if m is None or int(m["used"]) <= int(m["free"]):
            continue
        tail = "\n".join(lines.text[i : i + 8])
        ctx_m, ngl_m = _USER_CTX.search(tail), _USER_NGL.search(tail)
        detail = "projected above free device memory"
        if ctx_m is not None:
            detail += f"; context set by user to {ctx_m['n']}"
        if ngl_m is not None:
            detail += f"; n_gpu_layers set by user to {ngl_m['n']}"
        event = OomEvent(
            runtime="llama.cpp",
            kind="fit_shortfall",
            format=FIT_FORMAT,
            line=lines.number[i],
            text=raw[:600],
            requested_bytes=to_bytes(m["used"], "MiB", "llama.cpp"),
            free_bytes=to_bytes(m["free"], "MiB", "llama.cpp"),
            detail=detail,
            stage="startup",
        )
        return [event], {}
    return [], {}
