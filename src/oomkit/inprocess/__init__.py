"""Helpers that run inside the user's PyTorch process (extra ``oomkit[torch]``).

Importing this package imports neither torch nor IPython; each helper loads torch when called.

- :func:`install` / :func:`uninstall` — OOM diagnosis under tracebacks (``inprocess.hook``)
- :func:`free_memory`, :func:`allocator_stats`, :func:`parse_alloc_conf`
  (``inprocess.torch_memory``)
- :func:`oom_retry`, :func:`find_batch_size`, :func:`is_oom_error` (``inprocess.retry``)
- :func:`snapshot_report` (``inprocess.snapshot``)
"""

from __future__ import annotations

from oomkit.inprocess.hook import install, uninstall
from oomkit.inprocess.retry import find_batch_size, is_oom_error, oom_retry
from oomkit.inprocess.snapshot import snapshot_report
from oomkit.inprocess.torch_memory import allocator_stats, free_memory, parse_alloc_conf

__all__ = [
    "allocator_stats",
    "find_batch_size",
    "free_memory",
    "install",
    "is_oom_error",
    "oom_retry",
    "parse_alloc_conf",
    "snapshot_report",
    "uninstall",
]
