"""Hugging Face ``config.json`` -> :class:`~oomkit.spec.model.ModelSpec`.

One small adapter per architecture family (``architectures[0]``), in
:mod:`oomkit.loaders.hf_config_families`; each reads the keys that family's ``transformers``
``configuration_*.py`` defines and their defaults. A config whose architecture is unknown but that
has the standard keys is read as a Llama-like decoder, with a note in ``assumptions``.

>>> spec = parse_config({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 16,
...     "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8,
...     "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": True},
...     name="llama-3.2-1b")
>>> spec.head_dim, spec.num_key_value_heads, spec.tie_word_embeddings
(64, 8, True)
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oomkit.errors import ConfigFormatError, SourceNotFoundError
from oomkit.loaders.hf_config_dropout import config_dropout
from oomkit.loaders.hf_config_families import ADAPTERS, MODEL_TYPE_ARCHITECTURES, generic_decoder
from oomkit.loaders.hf_config_fields import Fields
from oomkit.spec.model import ModelSpec

__all__ = ["SUPPORTED_ARCHITECTURES", "load_config", "parse_config", "parse_config_text"]

#: ``architectures[0]`` values with a dedicated adapter.
SUPPORTED_ARCHITECTURES: frozenset[str] = frozenset(ADAPTERS)


def _architecture(config: Mapping[str, Any]) -> str:
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type in MODEL_TYPE_ARCHITECTURES:
        return MODEL_TYPE_ARCHITECTURES[model_type]
    text = config.get("text_config")
    if isinstance(text, Mapping):
        text_type = text.get("model_type")
        if isinstance(text_type, str) and text_type in MODEL_TYPE_ARCHITECTURES:
            return MODEL_TYPE_ARCHITECTURES[text_type]
    return str(model_type) if isinstance(model_type, str) else "unknown"


def parse_config(
    config: Mapping[str, Any], *, name: str, source: str = "config", path: str | None = None
) -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed ``config.json`` (pure; no I/O).

    Args:
        config: the JSON object; minimal configs holding only the needed keys are fine.
        name: the model's name, used in the spec and in error messages.
        source: provenance stored in ``ModelSpec.source`` (``"config"``, ``"catalog"``, ``"hub"``).
        path: the file read, named in a bad or missing key's error (a local config.json).

    Returns:
        The spec; ``tensors`` is None (use :func:`oomkit.spec.tensors.derive_tensors`).

    Raises:
        UnsupportedModelError: a field the architecture needs is missing (the message names it).
        ConfigFormatError: a field has the wrong type (e.g. ``"hidden_size": "4096"``).
    """
    if not isinstance(config, Mapping):
        raise ConfigFormatError(
            f"Cannot read config.json for '{name}' ({source}): the top level is "
            f"{type(config).__name__}, not a JSON object. Pass the model's config.json.",
            path=name,
        )
    arch = _architecture(config)
    fields = Fields(config, name=name, architecture=arch, path=path)
    adapter = ADAPTERS.get(arch) or generic_decoder
    try:
        spec = adapter(fields, source)
    except (ArithmeticError, TypeError, KeyError, IndexError, AttributeError) as e:
        # a value combination no real config has (0 heads, a list where a number belongs...)
        raise ConfigFormatError(
            f"Cannot read config.json for '{name}' ({arch}): inconsistent values "
            f"({type(e).__name__}: {e}). Pass the model's original config.json.",
            path=name,
        ) from e
    # the config's dropouts (transformers applies them in training mode; the keys and their
    # configuration defaults per architecture: oomkit.loaders.hf_config_dropout)
    text = config.get("text_config")
    drop = config_dropout(
        text if isinstance(text, Mapping) and spec.model_type == text.get("model_type") else config,
        model_type=spec.model_type,
        parallel_attn=spec.parallel_attn,
        name=name,
    )
    return spec if drop is None else dataclasses.replace(spec, dropout=drop)


def load_config(path: str | os.PathLike[str]) -> ModelSpec:
    """Read ``config.json`` (a file, or a directory holding one) into a :class:`ModelSpec`.

    The model name is the directory name (``.../Llama-3.1-8B/config.json`` -> ``Llama-3.1-8B``).

    Raises:
        SourceNotFoundError: the path or the ``config.json`` inside the directory does not exist.
        ConfigFormatError: the file is not valid JSON (message gives path, line and column).
        UnsupportedModelError: a required field is missing.
    """
    p = Path(path)
    file = p / "config.json" if p.is_dir() else p
    if not file.is_file():
        where = f"no config.json in directory '{p}'" if p.is_dir() else f"'{p}' does not exist"
        raise SourceNotFoundError(
            f"Cannot load config for '{p}' (config.json): {where}. "
            "Pass a config.json file or a model directory that holds one.",
            source=str(p),
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigFormatError(
            f"Cannot read config.json for '{file}' (file): {e}. Check the file is readable UTF-8.",
            path=str(file),
        ) from e
    name = file.parent.name if file.name == "config.json" and file.parent.name else file.stem
    return parse_config_text(text, name=name, path=str(file))


def parse_config_text(text: str, *, name: str, path: str) -> ModelSpec:
    """Parse config.json text (pure): JSON errors, too-deep nesting -> ConfigFormatError.

    Raises:
        ConfigFormatError: not JSON (line and column), or nested too deeply.
        UnsupportedModelError: a required field is missing.
    """
    try:
        data = json.loads(text)
    except RecursionError as e:
        raise ConfigFormatError(
            f"Cannot parse config.json for '{path}': JSON nested too deeply. "
            "Pass the model's original config.json.",
            path=path,
        ) from e
    except json.JSONDecodeError as e:
        raise ConfigFormatError(
            f"Cannot parse config.json for '{path}' (line {e.lineno}, column {e.colno}): "
            f"{e.msg}. Fix the JSON or download the file again.",
            path=path,
            offset=e.pos,
        ) from e
    return parse_config(data, name=name, source="config", path=path)
