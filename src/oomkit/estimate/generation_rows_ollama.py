"""The Ollama rows of the runtime generations table.

Oldest first; every row cites the change that starts it. Gathered with the other runtimes'
rows in :data:`oomkit.estimate.generation_table.ROWS`; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g

__all__ = ["OLLAMA_ROWS"]

#: Oldest first. Every row cites the change that starts it.
OLLAMA_ROWS: tuple[Row, ...] = (
    _g(
        "ollama",
        "llama-runner-2k",
        "Ollama <0.6.4 (llama.cpp runner, num_ctx 2048)",
        "2023-09-25",
        "0.1.0",
        "ollama/ollama llm/memory.go estimator + vendored llama.cpp of its day "
        "(per release: oomkit.estimate.ollama_vendored, the v0.1.0 release on)",
        "llama runner for every model; default num_ctx 2048; flash attention off unless "
        "OLLAMA_FLASH_ATTENTION=1; vendored llama.cpp before MLA/SWA caches (DeepSeek "
        "full K/V, Gemma full SWA)",
        num_ctx=2048,
        flash_attention=False,
        llamacpp_date="2025-01-15",
    ),
    _g(
        "ollama",
        "llama-runner-4k",
        "Ollama 0.6.4-0.11 (num_ctx 4096)",
        "2025-04-01",
        "0.6.4",
        "ollama/ollama v0.6.4 release (default context 4096)",
        "default num_ctx 4096; Ollama's own engine for some architectures, llama runner "
        "and old estimator otherwise; vendored llama.cpp with MLA but full SWA cache",
        num_ctx=4096,
        flash_attention=False,
        llamacpp_date="2025-04-20",
    ),
    _g(
        "ollama",
        "engine-0.12",
        "Ollama 0.12+ (Ollama engine, new memory estimates)",
        "2025-09-11",
        "0.12.0",
        "ollama/ollama PR #12252 (new memory estimates on by default for the Ollama engine)",
        "Ollama-engine models are laid out from their real allocations and get flash "
        "attention by default; llama-runner models keep the old estimator",
    ),
)
