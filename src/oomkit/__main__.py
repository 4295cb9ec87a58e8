"""``python -m oomkit``."""

from __future__ import annotations

import sys

from oomkit.cli import main

sys.exit(main())
