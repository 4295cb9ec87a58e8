"""Adapters that read model files (config.json, safetensors and GGUF headers) into ModelSpec."""

from __future__ import annotations

__all__: list[str] = []
