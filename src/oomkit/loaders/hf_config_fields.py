"""Typed access to one ``config.json`` mapping, with errors that name the missing or bad key.

Used by the per-family adapters of :mod:`oomkit.loaders.hf_config`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from oomkit.errors import ConfigFormatError, UnsupportedModelError
from oomkit.spec.model import LAYER_FULL, LAYER_LINEAR, LAYER_MAMBA, LAYER_SLIDING, QuantizationSpec
from oomkit.validate import MAX_DIM, key_limit

__all__ = ["Fields", "parse_quantization", "rope_scaling_numbers"]

_MISSING = object()


#: config.json ``layer_types`` values -> ModelSpec layer kinds
_LAYER_KIND = {
    "full_attention": LAYER_FULL,
    "attention": LAYER_FULL,
    "global": LAYER_FULL,
    "sliding_attention": LAYER_SLIDING,
    "chunked_attention": LAYER_SLIDING,
    "local": LAYER_SLIDING,
    "linear_attention": LAYER_LINEAR,
    "mamba": LAYER_MAMBA,
    "mamba2": LAYER_MAMBA,
}


class Fields:
    """Reads keys from ``text`` (the text model's section) with ``top`` as fallback.

    ``text`` is ``config["text_config"]`` for multimodal wrappers (Gemma 3, Llama 4), else the
    config itself.
    """

    def __init__(
        self, config: Mapping[str, Any], *, name: str, architecture: str, path: str | None = None
    ) -> None:
        self.top = config
        #: the file read (a local config.json), named in errors; None: the catalog, the Hub
        self.path = path
        nested = config.get("text_config")
        self.text: Mapping[str, Any] = nested if isinstance(nested, Mapping) else config
        self.name = name
        self.architecture = architecture
        self.assumptions: list[str] = []

    def raw(self, *keys: str) -> Any:
        """First present, non-null value among ``keys`` (text section, then top level)."""
        return self.found(*keys)[1]

    def found(self, *keys: str) -> tuple[str, Any]:
        """The key :meth:`raw` read and its value (``keys[0]`` and ``_MISSING`` when none is
        present): an error names the key the file has (GPT-2's ``n_positions``), not the first
        alias asked for."""
        for section in (self.text, self.top):
            for key in keys:
                value = section.get(key, _MISSING)
                if value is not _MISSING and value is not None:
                    return key, value
        return keys[0], _MISSING

    def has(self, *keys: str) -> bool:
        return self.raw(*keys) is not _MISSING

    def present(self, key: str) -> bool:
        """True when ``key`` is in the config, even as ``null`` (``"q_lora_rank": null``)."""
        return key in self.text or key in self.top

    def _bad(self, key: str, value: object, want: str) -> ConfigFormatError:
        return ConfigFormatError(
            f"Cannot read {self._where}: '{key}' is {value!r}, expected {want}. Fix the value "
            "or pass the model's original config.json.",
            path=self.path or self.name,
            key=key,
        )

    @property
    def _where(self) -> str:
        if self.path is None:
            return f"config.json for '{self.name}' ({self.architecture})"
        return f"'{self.path}' ({self.name}, {self.architecture})"

    def integer(self, *keys: str, default: int | None = None) -> int:
        """An integer field; the first key names the field in the error when all are missing."""
        key, value = self.found(*keys)
        if value is _MISSING:
            if default is not None:
                return default
            raise UnsupportedModelError(
                f"Cannot model '{self.name}' ({self.architecture}): {self.path or 'config.json'} "
                f"has no '{keys[0]}'. Pass the model's original config.json, or a GGUF/safetensors "
                "file whose header holds the shapes.",
                architecture=self.architecture,
                feature=keys[0],
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, value, "an integer")
        if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
            raise self._bad(key, value, "an integer")
        if value < 0:
            raise self._bad(key, value, "a non-negative integer")
        hi = key_limit(key)
        if value > hi:
            raise self._bad(key, value, f"an integer of at most {hi}")
        return int(value)

    def opt_int(self, *keys: str) -> int | None:
        return None if self.raw(*keys) is _MISSING else self.integer(*keys)

    def opt_positive_float(self, key: str) -> float | None:
        """A number in (0, 1e9), or None when the key is missing or null."""
        value = self.raw(key)
        if value is _MISSING or value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, value, "a number")
        if not (0 < value < 1e9):
            raise self._bad(key, value, "a number between 0 and 1e9")
        return float(value)

    def flag(self, *keys: str, default: bool) -> bool:
        key, value = self.found(*keys)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self._bad(key, value, "true or false")
        return value

    def string(self, *keys: str) -> str | None:
        key, value = self.found(*keys)
        if value is _MISSING:
            return None
        if not isinstance(value, str):
            raise self._bad(key, value, "a string")
        return value

    def int_list(self, key: str) -> tuple[int, ...] | None:
        value = self.raw(key)
        if value is _MISSING:
            return None
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise self._bad(key, value, "a list of integers")
        out: list[int] = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int):
                raise self._bad(key, value, "a list of integers")
            out.append(item)
        return tuple(out)

    def layer_types(self, key: str, n_layers: int) -> tuple[str, ...] | None:
        """``layer_types``-style list mapped to LAYER_* kinds; None when absent."""
        value = self.raw(key)
        if value is _MISSING:
            return None
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise self._bad(key, value, "a list of layer kinds")
        kinds: list[str] = []
        for item in value:
            kind = _LAYER_KIND.get(item) if isinstance(item, str) else None
            if kind is None:
                raise UnsupportedModelError(
                    f"Cannot model '{self.name}' ({self.architecture}): config.json "
                    f"'{key}' holds the unknown layer kind {item!r}. Known kinds: "
                    f"{', '.join(sorted(_LAYER_KIND))}.",
                    architecture=self.architecture,
                    feature=key,
                )
            kinds.append(kind)
        if len(kinds) != n_layers:
            raise self._bad(key, f"{len(kinds)} entries", f"{n_layers} entries (one per layer)")
        return tuple(kinds)

    def note(self, text: str) -> None:
        self.assumptions.append(text)


def rope_scaling_numbers(fields: Fields) -> dict[str, Any]:
    """``rope_scaling_factor`` / ``rope_original_max_position_embeddings`` ModelSpec keyword
    arguments from the config's ``rope_scaling`` (or transformers 5's ``rope_parameters``);
    a value that is not a positive number is left out (None), as before these were read."""
    out: dict[str, Any] = {}
    for key in ("rope_scaling", "rope_parameters"):
        rs = fields.raw(key)
        if not isinstance(rs, Mapping) or rs.get("rope_type", rs.get("type")) in (None, "default"):
            continue
        factor = rs.get("factor")
        if isinstance(factor, int | float) and not isinstance(factor, bool) and 0 < factor < 1e9:
            out["rope_scaling_factor"] = float(factor)
        orig = rs.get("original_max_position_embeddings")
        if isinstance(orig, int) and not isinstance(orig, bool) and 0 < orig <= 1 << 30:
            out["rope_original_max_position_embeddings"] = orig
        break
    return out


def parse_quantization(fields: Fields) -> QuantizationSpec | None:
    """``quantization_config`` -> :class:`QuantizationSpec` (top level or text section)."""
    qc = fields.top.get("quantization_config")
    if not isinstance(qc, Mapping):
        qc = fields.text.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method", "unknown")).lower()
    bits = qc.get("bits", qc.get("w_bit"))
    if method == "bitsandbytes":
        if qc.get("load_in_4bit"):
            method, bits = "bitsandbytes_4bit", 4
        elif qc.get("load_in_8bit"):
            method, bits = "bitsandbytes_8bit", 8
    elif method == "fp8":
        bits = 8
    elif method == "mxfp4":
        bits = 4
    group = qc.get("group_size", qc.get("q_group_size"))
    block = qc.get("weight_block_size")
    skip = qc.get("modules_to_not_convert") or qc.get("ignored_layers") or ()

    def is_int(x: object) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if block is not None and not (
        isinstance(block, Sequence)
        and not isinstance(block, str)
        and 0 < len(block) <= 4
        and all(is_int(x) and 0 < x <= MAX_DIM for x in block)
    ):
        raise fields._bad("weight_block_size", block, "a list of positive integers like [128, 128]")
    if is_int(bits) and not 1 <= bits <= 32:
        raise fields._bad("bits", bits, "an integer in [1, 32]")
    if is_int(group) and not (group == -1 or 1 <= group <= MAX_DIM):
        raise fields._bad("group_size", group, f"-1 or an integer in [1, {MAX_DIM}]")
    return QuantizationSpec(
        method=method,
        bits=bits if is_int(bits) else None,
        group_size=group if is_int(group) else None,
        weight_block_size=tuple(block) if block is not None else None,
        modules_to_not_convert=tuple(str(m) for m in skip) if isinstance(skip, Sequence) else (),
    )
