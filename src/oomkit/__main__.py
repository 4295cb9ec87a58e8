"""``python -m oomkit``."""

from __future__ import annotations

from oomkit.cli import exit_process, main

exit_process(main())
