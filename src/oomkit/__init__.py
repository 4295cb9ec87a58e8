"""oomkit: will it fit, and if not, what is the best thing to change?"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
