"""The embedded model catalog: popular models stored as their public ``config.json`` facts.

The data lives in ``oomkit/data/models/*.json`` (one file per family, provenance in
``PROVENANCE.md`` beside them) and is read once, lazily, with :mod:`json` only, so
``oomkit estimate llama-3.1-8b`` works offline and fast. A name index precomputed from those
files (``oomkit/data/models_index.json``, written by ``python -m oomkit.catalog.models_index``
and checked against the data by the tests) lets :func:`find_model` read one family file instead
of all of them; a name the index does not know falls back to the full scan.

Names are matched fuzzily: case, ``-``/``_``/``.``/``:``/space differences and organisation
prefixes (``meta-llama/``) are ignored; Ollama tags (``llama3.1:8b-instruct-q4_K_M``) and
Hugging Face repo ids resolve to the same entry, and ``-instruct``/``-chat``/``-it``/``-base``
suffixes are dropped when nothing matches exactly.

Examples:
    >>> find_model("meta-llama/Llama-3.1-8B-Instruct").key
    'llama-3.1-8b'
    >>> find_model("qwen3:30b-a3b").key
    'qwen3-30b-a3b'
    >>> ollama_default_quant("gpt-oss:20b")
    'MXFP4'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from oomkit.errors import ConfigFormatError, UnknownNameError, close_matches

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec

__all__ = [
    "CatalogEntry",
    "all_models",
    "find_model",
    "loose_name",
    "normalize_name",
    "ollama_default_quant",
    "search_models",
]

#: the data folder inside the installed package (package data, not an importable package)
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
MODELS_DIR = DATA_DIR / "models"
INDEX_FILE = DATA_DIR / "models_index.json"
_HINT = (
    "Run 'oomkit models --search <text>' to search the catalog, "
    "or pass a config.json path or a Hugging Face repo id."
)
#: characters that never distinguish two model names
_SEPARATORS = re.compile(r"[-_:\s]+")
#: a dot that is not a decimal point between two digits
_NON_DECIMAL_DOT = re.compile(r"(?<![0-9])\.|\.(?![0-9])")


@cache
def _quant_suffix() -> re.Pattern[str]:
    """An Ollama tag's quantization suffix, e.g. ``-q4_K_M``, ``-fp16``, ``-instruct-q8_0``
    (compiled when a name with a ``:`` tag is first read: ~0.3 ms)."""
    return re.compile(
        r"[-_](?:i?q\d[a-z0-9_]*|fp16|fp32|f16|f32|bf16|fp8|mxfp4|int4|int8|nf4|awq|gptq)$",
        re.IGNORECASE,
    )


#: splitting a raw name into words, and a parameter-size word ("8b", "1.5b", "135m")
_TOKEN_SPLIT = re.compile(r"[-_:\s]+")
_SIZE_TOKEN = r"^(\d+(?:\.\d+)?)([bm])$"  # only for suggestions: compiled by re.match
#: suffixes dropped when no entry matches the name as given
_VARIANT_SUFFIX = re.compile(
    r"[-_. ](?:instruct|chat|it|base|hf|text|gguf|preview)$",
    re.IGNORECASE,
)


def normalize_name(name: str) -> str:
    """Fold a model name to its lookup form.

    Lowercases, drops an organisation prefix (everything up to the last ``/``) and removes
    ``-``, ``_``, ``:``, whitespace and every ``.`` that is not a decimal point between two
    digits (so ``opt-1.3b`` and ``opt-13b`` stay apart while ``llama3.1:8b`` and
    ``Llama-3.1-8B`` meet).

    Examples:
        >>> normalize_name("meta-llama/Llama-3.1-8B")
        'llama3.18b'
        >>> normalize_name("llama3.1:8b")
        'llama3.18b'
    """
    tail = name.strip().rsplit("/", 1)[-1].lower()
    return _SEPARATORS.sub("", _NON_DECIMAL_DOT.sub("", tail))


def loose_name(name: str) -> str:
    """:func:`normalize_name` with every ``.`` dropped too (``llama-31-8b`` ~ ``llama-3.1-8b``).

    Examples:
        >>> loose_name("Llama_3_1_8B")
        'llama318b'
    """
    return normalize_name(name).replace(".", "")


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogEntry:
    """One catalog model: its public ``config.json`` facts and the names people use for it.

    ``ollama_tags`` maps an Ollama library tag to the quantization Ollama serves for it by
    default (``{"llama3.1:8b": "Q4_K_M"}``). ``params`` is the published exact parameter count
    when one was verified (else None); ``params_tolerance`` is the documented difference allowed
    between ``params`` and the count derived from ``config`` (e.g. an MTP layer or a vision tower
    that the text config does not describe), with ``params_note`` saying why.
    """

    key: str
    name: str
    hf_repo: str | None
    aliases: tuple[str, ...]
    ollama_tags: Mapping[str, str]
    params: int | None
    params_source: str | None
    config: Mapping[str, Any]
    source: str
    params_tolerance: int = 0
    params_note: str | None = None
    #: where the values were compared against a public copy (None: recalled; see PROVENANCE.md)
    checked_against: str | None = None

    def spec(self) -> ModelSpec:
        """Build the :class:`~oomkit.spec.model.ModelSpec` from the stored config.

        Returns:
            The spec with ``source="catalog"`` and ``declared_params`` set to ``params``.

        Raises:
            UnsupportedModelError: the config's architecture cannot be modelled yet.
            ConfigFormatError: the stored config lacks a field the parser needs.
        """
        from oomkit.catalog.specs import precomputed_spec  # built from this method's parse

        built = precomputed_spec(self)  # the parse below, done at build time
        if built is not None:
            return built
        from oomkit.loaders.hf_config import parse_config  # lazy: keeps catalog loading light

        spec = parse_config(_thaw(self.config), name=self.key, source="catalog")
        return replace(spec, declared_params=self.params)

    def names(self) -> tuple[str, ...]:
        """Every name this entry answers to: key, display name, repo, aliases, Ollama tags."""
        repo = (self.hf_repo,) if self.hf_repo else ()
        return (self.key, self.name, *repo, *self.aliases, *self.ollama_tags)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, for ``oomkit models --json`` and the web API."""
        return {
            "key": self.key,
            "name": self.name,
            "hf_repo": self.hf_repo,
            "aliases": list(self.aliases),
            "ollama": dict(self.ollama_tags),
            "params": self.params,
            "params_source": self.params_source,
            "params_tolerance": self.params_tolerance,
            "params_note": self.params_note,
            "config": _thaw(self.config),
            "source": self.source,
            "checked_against": self.checked_against,
        }


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _entry(raw: Mapping[str, Any], where: str) -> CatalogEntry:
    try:
        return CatalogEntry(
            key=str(raw["key"]),
            name=str(raw["name"]),
            hf_repo=raw.get("hf_repo"),
            aliases=tuple(raw.get("aliases", ())),
            ollama_tags=MappingProxyType(dict(raw.get("ollama", {}))),
            params=raw.get("params"),
            params_source=raw.get("params_source"),
            config=_freeze(dict(raw["config"])),
            source=str(raw["source"]),
            params_tolerance=int(raw.get("params_tolerance", 0)),
            params_note=raw.get("params_note"),
            checked_against=raw.get("checked_against"),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigFormatError(
            f"Reading the model catalog failed for '{where}' (entry {raw.get('key')!r}): "
            f"missing or malformed field {e}. Reinstall oomkit.",
            path=where,
        ) from e


@lru_cache(maxsize=1)
def all_models() -> tuple[CatalogEntry, ...]:
    """Every catalog entry, read once from the packaged JSON files (sorted by file name).

    Returns:
        The entries in file order.

    Raises:
        ConfigFormatError: a packaged data file is malformed (a broken install).
    """
    entries: list[CatalogEntry] = []
    for item in sorted(MODELS_DIR.glob("*.json"), key=lambda p: p.name):
        where = f"oomkit/data/models/{item.name}"
        entries.extend(_entry(raw, where) for raw in _read_family(item.name))
    return tuple(entries)


@cache
def _read_family(file_name: str) -> tuple[Mapping[str, Any], ...]:
    """The raw entries of one ``data/models/*.json`` file."""
    where = f"oomkit/data/models/{file_name}"
    try:
        doc = json.loads((MODELS_DIR / file_name).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigFormatError(
            f"Reading the model catalog failed for '{where}' (line {e.lineno}): {e.msg}. "
            "Reinstall oomkit.",
            path=where,
        ) from e
    return tuple(doc["models"])


@lru_cache(maxsize=1)
def _name_index() -> Mapping[str, Any] | None:
    """The precomputed name index, or None when it is missing or unreadable (full scan then)."""
    try:
        doc = json.loads(INDEX_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("schema_version") == 1 else None


@cache
def _indexed_entry(key: str) -> CatalogEntry | None:
    index = _name_index()
    file_name = index["files"].get(key) if index is not None else None
    if not isinstance(file_name, str):
        return None
    for raw in _read_family(file_name):
        if raw.get("key") == key:
            return _entry(raw, f"oomkit/data/models/{file_name}")
    return None


def _find_indexed(candidates: list[str]) -> CatalogEntry | None:
    """:func:`find_model`'s answer from the precomputed index, or None to fall back.

    Every hit is checked against the entry's own names, so a stale index can only miss (and
    fall back to the full scan), never answer with another model.
    """
    index = _name_index()
    if index is None:
        return None
    for candidate in candidates:
        folded = normalize_name(candidate)
        entry = _indexed_entry(index["strict"].get(folded, ""))
        if entry is not None and folded in {normalize_name(n) for n in entry.names()}:
            return entry
    for candidate in candidates:
        folded = loose_name(candidate)
        keys = index["loose"].get(folded, ())
        if len(keys) == 1:
            entry = _indexed_entry(keys[0])
            if entry is not None and folded in {loose_name(n) for n in entry.names()}:
                return entry
    return None


@lru_cache(maxsize=1)
def _indexes() -> tuple[Mapping[str, CatalogEntry], Mapping[str, tuple[CatalogEntry, ...]]]:
    """(exact-ish index by :func:`normalize_name`, loose index by :func:`loose_name`)."""
    strict: dict[str, CatalogEntry] = {}
    loose: dict[str, dict[str, CatalogEntry]] = {}
    for entry in all_models():
        for name in entry.names():
            strict.setdefault(normalize_name(name), entry)
            loose.setdefault(loose_name(name), {})[entry.key] = entry
    return strict, {k: tuple(v.values()) for k, v in loose.items()}


def _candidates(name: str) -> list[str]:
    """Progressively looser spellings of ``name`` to try, most exact first."""
    out = [name.strip()]
    tagless = _quant_suffix().sub("", out[0]) if ":" in out[0] else out[0]
    if tagless != out[0]:
        out.append(tagless)
    current = tagless
    while True:
        stripped = _VARIANT_SUFFIX.sub("", current)
        if stripped == current:
            break
        out.append(stripped)
        current = stripped
    if ":" not in current:
        out.append(current + ":latest")  # a bare Ollama model name ("llama3.1", "mistral")
    elif current.endswith(":latest"):
        out.append(current[: -len(":latest")])
    return out


def find_model(name: str) -> CatalogEntry:
    """Look a model up by key, alias, Hugging Face repo id or Ollama tag (fuzzy).

    Args:
        name: e.g. ``"llama-3.1-8b"``, ``"meta-llama/Llama-3.1-8B-Instruct"``,
            ``"llama3.1:8b-instruct-q4_K_M"``.

    Returns:
        The matching entry.

    Raises:
        UnknownNameError: no entry matches; ``suggestions`` holds close catalog keys.
    """
    candidates = _candidates(name)
    fast = _find_indexed(candidates)
    if fast is not None:
        return fast
    strict, loose = _indexes()
    for candidate in candidates:
        hit = strict.get(normalize_name(candidate))
        if hit is not None:
            return hit
    for candidate in candidates:
        hits = loose.get(loose_name(candidate), ())
        if len(hits) == 1:  # ignoring dots must not pick one of two models ("opt-13b", "opt-1.3b")
            return hits[0]
    raise UnknownNameError(kind="model", name=name, suggestions=_suggest(name), hint=_HINT)


def _size_split(name: str) -> tuple[str, float] | None:
    """``"llama-3.1-7b"`` → ``("llama3.1", 7e9)``: the family and the size token, if any."""
    tokens = [t for t in _TOKEN_SPLIT.split(name.strip().rsplit("/", 1)[-1].lower()) if t]
    for i in range(len(tokens) - 1, -1, -1):
        size = re.match(_SIZE_TOKEN, tokens[i])
        if size is not None:
            scale = 1e9 if size.group(2) == "b" else 1e6
            return normalize_name("".join(tokens[:i])), float(size.group(1)) * scale
    return None


def family_of(name: str) -> str | None:
    """The family part of a sized model name: ``"llama-3.1-70b"`` -> ``"llama3.1"``."""
    split = _size_split(name)
    return None if split is None else split[0]


def _suggest(name: str) -> tuple[str, ...]:
    """Close catalog keys for ``name``: the same family at the nearest sizes, then spelling."""
    plain = [c for c in _candidates(name) if not c.endswith(":latest")][-1]
    picked: list[str] = []
    wanted = _size_split(plain)
    if wanted is not None and wanted[0]:
        family, size = wanted
        same: dict[str, float] = {}
        for entry in all_models():
            for alias in entry.names():
                got = _size_split(alias)
                if got is not None and got[0] == family and got[1] > 0:
                    distance = abs(math.log(got[1] / size))
                    same[entry.key] = min(distance, same.get(entry.key, distance))
        picked = sorted(same, key=lambda k: same[k])[:2]
    by_norm: dict[str, str] = {}
    for entry in all_models():
        for alias in entry.names():
            by_norm.setdefault(normalize_name(alias), entry.key)
    picked += [by_norm[h] for h in close_matches(normalize_name(plain), by_norm, n=8)]
    return tuple(dict.fromkeys(picked))[:3]


def search_models(query: str | None = None) -> tuple[CatalogEntry, ...]:
    """Entries whose key, name, aliases, repo or Ollama tags contain ``query``.

    Matching is case-insensitive and also tried on the normalized form, so ``"llama3.1"``
    finds ``llama-3.1-8b``. ``None`` or an empty query returns the whole catalog.
    """
    if not query or not query.strip():
        return all_models()
    raw = query.strip().lower()
    folded = normalize_name(query)
    hits: list[CatalogEntry] = []
    for entry in all_models():
        names = entry.names()
        if any(raw in n.lower() for n in names) or (
            folded and any(folded in normalize_name(n) for n in names)
        ):
            hits.append(entry)
    return tuple(hits)


def ollama_default_quant(tag: str) -> str | None:
    """The quantization Ollama serves by default for a library tag, if the catalog knows it.

    An explicit quant suffix in the tag wins (``"llama3.1:8b-instruct-q8_0"`` → ``"Q8_0"``).

    Examples:
        >>> ollama_default_quant("llama3.1:8b")
        'Q4_K_M'
        >>> ollama_default_quant("llama3.1:8b-instruct-q8_0")
        'Q8_0'
    """
    text = tag.strip()
    suffix = _quant_suffix().search(text) if ":" in text else None
    if suffix is not None:
        return suffix.group(0)[1:].upper()
    if ":" not in text:
        text += ":latest"
    wanted = normalize_name(text)
    for entry in all_models():
        for known, quant in entry.ollama_tags.items():
            if normalize_name(known) == wanted:
                return quant
    return None
