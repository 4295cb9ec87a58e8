"""The runtime generations table as written (data for :mod:`oomkit.estimate.generations`).

One row per dated generation of a runtime, oldest first: runtime, key, label, first day (ISO
date), first release, the upstream change that starts it, what differs in memory, and the
effects the estimators read (listed in :mod:`oomkit.estimate.generations`' docstring). Rows are
text so that importing them costs no :mod:`datetime` (issue 10); :mod:`~oomkit.estimate.
generations` turns them into :class:`~oomkit.estimate.generations.Generation` objects on first
use.

The rows themselves live in one module per runtime (``generation_rows_<runtime>``); this module
gathers them under the runtime names.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from oomkit.estimate.generation_row import Effect, Row
from oomkit.estimate.generation_rows_llamacpp import LLAMACPP_ROWS
from oomkit.estimate.generation_rows_ollama import OLLAMA_ROWS
from oomkit.estimate.generation_rows_sglang import SGLANG_ROWS
from oomkit.estimate.generation_rows_transformers import TRANSFORMERS_ROWS
from oomkit.estimate.generation_rows_vllm import VLLM_ROWS

__all__ = ["ROWS", "Effect", "Row"]

#: Oldest first, per runtime. Every row cites the change that starts it.
ROWS: Mapping[str, tuple[Row, ...]] = MappingProxyType(
    {
        "llama.cpp": LLAMACPP_ROWS,
        "ollama": OLLAMA_ROWS,
        "vllm": VLLM_ROWS,
        "sglang": SGLANG_ROWS,
        "transformers": TRANSFORMERS_ROWS,
    }
)
