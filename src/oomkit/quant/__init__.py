"""Quantization formats: exact storage math for GGML block types and HF formats."""

from __future__ import annotations

__all__: list[str] = []
