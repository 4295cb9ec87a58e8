"""Embedded catalogs: popular models as their public ``config.json`` facts (see ``models``)."""

from __future__ import annotations

__all__: list[str] = []
