"""The catalog models' :class:`~oomkit.spec.model.ModelSpec`, computed at build time.

``CatalogEntry.spec()`` parses the entry's stored ``config.json`` with the Hugging Face config
reader (``oomkit.loaders.hf_config`` and its family adapters): importing and running it is
~1.5 ms of the ~20 ms ``oomkit estimate CATALOG-MODEL`` adds to the interpreter's start
(issue 10). The result depends only on the entry, so it is done once, here, and shipped as
``data/model_specs/<family>.json`` beside ``data/models/<family>.json``: the spec's fields that
differ from their defaults, tuples as lists (``{"__runs__": [[value, count], ...]}`` for the
long per-layer ones), nested specs as ``{"__type__": NAME, ...}``.

A row also holds, for the file types reverse search shops with (Q8_0 .. Q4_K_M), the GGML type
llama-quantize gives each of the spec's tensors (one letter per tensor, in
``model_tensors`` order; ``alphabet`` maps letters to types): the estimate's first prediction
then skips replaying the quantizer (:func:`precomputed_gguf_types`, used only for a spec equal
to the stored one).

Every row carries a digest of what it was built from (key, params, config), and every file one
of the code that built it (the config reader's modules, ``ModelSpec``, the tensor derivation,
the quantizer replay, this module): a row whose
digest differs from the entry (data edited, table not rebuilt) is ignored and the config is
parsed as before, as is every row of a file built by other code (a parser fix not yet rebuilt)
and any entry the table lacks (one the reader rejects: it raises as always). A stale table costs
the time it saves, never a number. ``tests/test_catalog_specs.py`` rebuilds every row and fails
when a committed file differs. Rebuild with::

    python -m oomkit.catalog.specs --write
"""

from __future__ import annotations

import dataclasses
import json
import sys
import zlib
from functools import cache
from typing import TYPE_CHECKING, Any

from oomkit.catalog.models import DATA_DIR, CatalogEntry, _name_index, _thaw
from oomkit.spec.model import (
    DropoutSpec,
    MlaSpec,
    ModelSpec,
    MoESpec,
    QuantizationSpec,
    RecurrentSpec,
    VisionTowerSpec,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["SPECS_DIR", "build_family", "precomputed_spec", "render_family"]

SPECS_DIR = DATA_DIR / "model_specs"
_SCHEMA = 1
#: the code a stored spec comes from (paths under oomkit/): editing any of them stales the table
_SOURCES = (
    "loaders/hf_config.py",
    "loaders/hf_config_dropout.py",
    "loaders/hf_config_fields.py",
    "loaders/hf_config_families.py",
    "loaders/hf_config_decoder.py",
    "loaders/hf_config_llama.py",
    "loaders/hf_config_gemma_phi.py",
    "loaders/hf_config_moe.py",
    "loaders/hf_config_hybrid.py",
    "loaders/hf_config_nemotron_h.py",
    "loaders/hf_config_gemma4.py",
    "spec/model.py",
    "validate.py",
    "catalog/models.py",
    "catalog/specs.py",
    # the tensors and the quantizer's type choice (the "gguf" rows)
    "spec/tensors.py",
    "spec/tensors_blocks.py",
    "spec/tensors_ssm.py",
    "estimate/llamacpp.py",
    "estimate/llamacpp_weights.py",
    "quant/llamacpp_mix.py",
    "quant/llamacpp_tensors.py",
    "quant/llamacpp_ftypes.py",
    "quant/ggml_types.py",
)
#: the file types whose per-tensor types are stored (as in oomkit.quant.mix_table)
GGUF_FTYPES = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M")
#: the GGML types a letter stands for in the "gguf" rows ("A" is the first)
_ALPHABET = (
    "F32",
    "F16",
    "BF16",
    "Q4_0",
    "Q4_1",
    "Q5_0",
    "Q5_1",
    "Q8_0",
    "Q2_K",
    "Q3_K",
    "Q4_K",
    "Q5_K",
    "Q6_K",
    "Q8_K",
    "IQ4_NL",
    "MXFP4",
)
#: the dataclasses a catalog spec is made of (``tensors`` is always None for the catalog)
_TYPES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        ModelSpec,
        MoESpec,
        MlaSpec,
        QuantizationSpec,
        RecurrentSpec,
        VisionTowerSpec,
        DropoutSpec,
    )
}


def _digest(entry: CatalogEntry) -> str:
    """What a row was built from: key, published parameter count and config (CRC-32 of their
    canonical JSON: a check against editing the data without rebuilding, not against forgery)."""
    doc = [entry.key, entry.params, _thaw(entry.config)]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{zlib.crc32(text.encode()):08x}"


@cache
def _code_digest() -> str | None:
    """CRC-32 of the ``_SOURCES`` files (None when one cannot be read: no table then)."""
    crc = 0
    try:
        for rel in _SOURCES:
            crc = zlib.crc32((DATA_DIR.parent / rel).read_bytes(), crc)
    except OSError:
        return None
    return f"{crc:08x}"


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if _TYPES.get(cls.__name__) is not cls:
            raise TypeError(f"cannot store a {cls.__name__} in the spec table")
        out: dict[str, Any] = {"__type__": cls.__name__}
        for f in dataclasses.fields(value):
            if not f.init:
                continue  # derived in __post_init__
            v = getattr(value, f.name)
            if (
                f.default is not dataclasses.MISSING
                and type(v) is type(f.default)
                and v == f.default
            ):
                continue
            out[f.name] = _encode(v)
        return out
    if isinstance(value, tuple):
        runs = _runs(value)
        if runs is not None:
            return {"__runs__": runs}
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value  # bool is an int
    raise TypeError(f"cannot store a {type(value).__name__} in the spec table")


def _runs(value: tuple[Any, ...]) -> list[list[Any]] | None:
    """``("full_attention",) * 32`` as ``[["full_attention", 32]]`` when that is shorter (layer
    lists repeat one or two values); None to store the tuple as a list."""
    if len(value) < 8 or not all(type(v) in (str, int) for v in value):
        return None
    runs: list[list[Any]] = []
    for v in value:
        if runs and runs[-1][0] == v and type(runs[-1][0]) is type(v):
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return runs if 2 * len(runs) < len(value) else None


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if isinstance(value, dict):
        runs = value.get("__runs__")
        if runs is not None:
            return tuple(v for v, n in runs for _ in range(n))
        cls = _TYPES[value["__type__"]]
        return cls(**{k: _decode(v) for k, v in value.items() if k != "__type__"})
    return value


def _built_spec(entry: CatalogEntry) -> ModelSpec:
    """The spec from the parser (what the table stores)."""
    from oomkit.loaders.hf_config import parse_config

    spec = parse_config(_thaw(entry.config), name=entry.key, source="catalog")
    return dataclasses.replace(spec, declared_params=entry.params)


@cache
def _family_rows(file_name: str) -> dict[str, Any] | None:
    try:
        doc = json.loads((SPECS_DIR / file_name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema_version") != _SCHEMA:
        return None
    code = _code_digest()
    if code is None or doc.get("code") != code:
        return None
    rows = doc.get("specs")
    return rows if isinstance(rows, dict) else None


def _row_for(key: str) -> dict[str, Any] | None:
    index = _name_index()
    file_name = index["files"].get(key) if index is not None else None
    if not isinstance(file_name, str):
        return None
    rows = _family_rows(file_name)
    row = rows.get(key) if rows is not None else None
    return row if isinstance(row, dict) else None


@cache
def _stored_spec(key: str) -> ModelSpec | None:
    row = _row_for(key)
    spec = _decode(row["spec"]) if row is not None else None
    return spec if isinstance(spec, ModelSpec) else None


def precomputed_gguf_types(spec: ModelSpec, ftype: str) -> tuple[str, ...] | None:
    """The GGML type llama-quantize gives each tensor of ``model_tensors(spec)`` for the
    canonical file type ``ftype``, from the build-time table; None unless ``spec`` equals a
    catalog model's stored spec and the table has the file type."""
    if spec.source != "catalog" or ftype not in GGUF_FTYPES:
        return None
    stored = _stored_spec(spec.name)
    if stored is None or stored != spec:
        return None
    row = _row_for(spec.name)
    letters = row.get("gguf", {}).get(ftype) if row is not None else None
    if not isinstance(letters, str):
        return None
    try:
        return tuple(_ALPHABET[ord(c) - 65] for c in letters)
    except IndexError:
        return None


def _gguf_letters(spec: ModelSpec) -> dict[str, str]:
    """The replayed types of ``spec``'s tensors per stored file type, one letter each."""
    from oomkit.errors import OomkitError
    from oomkit.estimate.llamacpp_weights import replay_facts
    from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes
    from oomkit.spec.tensors import model_tensors

    try:
        tensors = model_tensors(spec)
        facts = replay_facts(spec)
    except OomkitError:
        return {}
    out: dict[str, str] = {}
    for ftype in GGUF_FTYPES:
        try:
            rows = predict_gguf_tensor_bytes(ftype, tensors, **facts)  # type: ignore[arg-type]
        except OomkitError:
            continue  # llama-quantize aborts on this model: the replay raises it, as before
        if all(ty in _ALPHABET for _, ty, _ in rows):
            out[ftype] = "".join(chr(65 + _ALPHABET.index(ty)) for _, ty, _ in rows)
    return out


def precomputed_spec(entry: CatalogEntry) -> ModelSpec | None:
    """``entry``'s spec from the build-time table, or None (no index, no row, a stale row)."""
    index = _name_index()
    file_name = index["files"].get(entry.key) if index is not None else None
    if not isinstance(file_name, str):
        return None
    rows = _family_rows(file_name)
    row = rows.get(entry.key) if rows is not None else None
    if not isinstance(row, dict) or row.get("digest") != _digest(entry):
        return None
    spec = _decode(row["spec"])
    return spec if isinstance(spec, ModelSpec) else None


def _family_entries(file_name: str) -> Iterator[CatalogEntry]:
    from oomkit.catalog.models import _entry, _read_family

    for raw in _read_family(file_name):
        yield _entry(raw, file_name)


def build_family(file_name: str) -> dict[str, Any]:
    """The table of one ``data/models`` file: a row for each entry the parser reads."""
    from oomkit.errors import OomkitError

    specs: dict[str, Any] = {}
    for entry in _family_entries(file_name):
        try:
            spec = _built_spec(entry)
        except OomkitError:
            continue  # the parser rejects it: estimates raise its error, as before
        row: dict[str, Any] = {"digest": _digest(entry), "spec": _encode(spec)}
        letters = _gguf_letters(spec)
        if letters:
            row["gguf"] = letters
        specs[entry.key] = row
    return {
        "schema_version": _SCHEMA,
        "about": f"Generated by 'python -m oomkit.catalog.specs --write' from models/{file_name}.",
        "code": _code_digest(),
        "specs": specs,
    }


def render_family(file_name: str) -> str:
    """The committed file's exact text: one row per line."""
    doc = build_family(file_name)
    lines = ["{", f'  "schema_version": {_SCHEMA},', f'  "about": {json.dumps(doc["about"])},']
    lines.append(f'  "code": {json.dumps(doc["code"])},')
    lines.append('  "specs": {')
    rows = list(doc["specs"].items())
    for i, (key, row) in enumerate(rows):
        comma = "," if i < len(rows) - 1 else ""
        text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"    {json.dumps(key)}: {text}{comma}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def family_files() -> list[str]:
    """The ``data/models`` files the table mirrors."""
    from oomkit.catalog.models import MODELS_DIR

    return sorted(p.name for p in MODELS_DIR.glob("*.json"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["--write"]:
        print("usage: python -m oomkit.catalog.specs --write", file=sys.stderr)
        return 2
    SPECS_DIR.mkdir(exist_ok=True)
    wanted = family_files()
    for stale in SPECS_DIR.glob("*.json"):
        if stale.name not in wanted:
            stale.unlink()
    for name in wanted:
        (SPECS_DIR / name).write_text(render_family(name), encoding="utf-8")
    print(f"wrote {len(wanted)} files to {SPECS_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
