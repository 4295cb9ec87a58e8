"""The Ollama library tag that serves a planned quantization, or an honest placeholder.

Ollama's library tags read ``<name>:<size>[-<flavor>]-<quant>``: the size tag alone
(``qwen3:8b``) serves one default quantization (the catalog's ``ollama`` map), the longer tags
the others. The flavor differs by family (``llama3.1:8b-instruct-q6_K``,
``gemma3:12b-it-q8_0``, ``mistral-nemo:12b-instruct-2407-q6_K``,
``deepseek-r1:14b-qwen-distill-q8_0``, none for ``qwen3:8b-q8_0`` or ``phi4:14b-q8_0``) and
newer families publish only a few quantizations (qwen3, gemma3, phi4, deepseek-r1: q4_K_M, q8_0,
fp16; gpt-oss: its MXFP4 default only). ``oomkit/data/ollama_library_tags.json`` stores, per
library name, each tag prefix with the quantizations published under it, as read from
ollama.com/library/<name>/tags (its ``source`` field names the public copy and each family's
``example``/``seen`` the tag seen in use). A tag is built only from that table; a planned
quantization the family does not publish gets a placeholder and a note naming the nearest
published one to re-plan with. The Modelfile's ``FROM`` then reads a shell parameter that must be
set first: ``${VAR:?message}`` makes the shell stop with the message when it is not (POSIX
"Parameter Expansion"), so nothing looks like a real tag.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec

__all__ = [
    "OllamaFrom",
    "library_families",
    "ollama_from",
    "ollama_plan_quants",
    "published_quants",
]

#: the quant at the end of a library tag (``-q4_K_M``, ``-fp16``), as Ollama spells it
_TAG_QUANT = re.compile(r"-(q\d\w*|fp16|bf16)$", re.IGNORECASE)
#: file sizes of Llama-3-8B per llama.cpp file type, GB, from llama.cpp's
#: tools/quantize/quantize.cpp QUANT_OPTIONS ("4.58G, +0.1754 ppl @ Llama-3-8B"; F16/BF16 14.00G
#: @ Mistral-7B): what "nearest published quantization" is measured in
_QUANTIZE_GB = {
    "Q2_K": 2.96, "Q3_K_S": 3.41, "Q3_K_M": 3.74, "Q3_K_L": 4.03, "Q4_0": 4.34,
    "Q4_K_S": 4.37, "Q4_K_M": 4.58, "Q4_1": 4.78, "Q5_0": 5.21, "Q5_K_S": 5.21,
    "Q5_K_M": 5.33, "Q5_1": 5.65, "Q6_K": 6.14, "Q8_0": 7.96, "F16": 14.0, "BF16": 14.0,
    "F32": 26.0,
}  # fmt: skip
_LLAMA3_8B_PARAMS_G = 8.03  # the model those sizes are for (bits per weight x this / 8 = GB)


@dataclass(frozen=True, slots=True)
class OllamaFrom:
    """What a Modelfile's ``FROM`` names: ``value`` goes in it as it is; ``note`` (None when
    the tag is a real one) is the one line telling the user what to set."""

    value: str
    note: str | None = None


@lru_cache(maxsize=1)
def library_families() -> Mapping[str, Any]:
    """``families`` of ``data/ollama_library_tags.json``: library name -> example, seen, tags."""
    text = resources.files("oomkit").joinpath("data/ollama_library_tags.json").read_text("utf-8")
    families: Mapping[str, Any] = json.loads(text)["families"]
    return families


def _canonical(name: str) -> str:
    from oomkit.quant.llamacpp_ftypes import FTYPE_ALIASES

    # the catalog's tag says MXFP4 where the planner names the file type MXFP4_MOE
    return FTYPE_ALIASES.get(name.upper(), name.upper())


def _tag_suffix(quant: str) -> str:
    """``Q4_K_M`` -> ``q4_K_M``, ``F16`` -> ``fp16``: how the library's tags spell a type."""
    return {"F16": "fp16", "BF16": "bf16"}.get(quant, "q" + quant[1:])


def _size_gb(quant: str) -> float:
    if quant in _QUANTIZE_GB:
        return _QUANTIZE_GB[quant]
    try:
        from oomkit.quant.formats import quant_format

        return quant_format(quant).bits * _LLAMA3_8B_PARAMS_G / 8
    except Exception:  # a type with no size known: rank it with the 4-bit default
        return _QUANTIZE_GB["Q4_K_M"]


def _nearest(wanted: str, published: Mapping[str, str]) -> str:
    """The largest published quant no larger than ``wanted`` (a re-plan with it still fits
    where ``wanted`` did), else the smallest published one."""
    ranked = sorted(published, key=_size_gb)
    below = [q for q in ranked if _size_gb(q) <= _size_gb(wanted)]
    return below[-1] if below else ranked[0]


def _published(tags: Mapping[str, str]) -> tuple[str, str, Mapping[str, str]] | None:
    """(library name, size tag, canonical quant -> tag) for the catalog's tags found in the
    table: each prefix's quantizations plus the defaults the size tags serve."""
    families = library_families()
    for tag in tags:
        name, size = tag.split(":", 1)
        family = families.get(name)
        if family is None or size == "latest":
            continue
        base = _TAG_QUANT.sub("", size)
        by_quant: dict[str, str] = {}
        for t, q in sorted(tags.items(), key=lambda kv: kv[0].endswith(":latest")):
            if t.split(":", 1)[0] == name:  # the size tag before :latest, which moves
                by_quant.setdefault(_canonical(q), t)
        for prefix, row in family["tags"].items():
            if base in row["sizes"]:
                for q in row["quants"]:
                    by_quant.setdefault(q, f"{name}:{prefix}-{_tag_suffix(q)}")
                return name, size, by_quant
        if not family["tags"]:  # a family that publishes its default tags only (gpt-oss)
            return name, size, by_quant
    return None


def _catalog_tags(model_ref: str) -> dict[str, str]:
    try:
        from oomkit.catalog.models import find_model

        return dict(find_model(model_ref).ollama_tags)
    except Exception:  # not in the catalog: Ollama pulls GGUFs straight from the Hub
        return {}


def published_quants(model_ref: str) -> tuple[str, ...] | None:
    """The quantizations (llama.cpp file-type names) the Ollama library publishes for
    ``model_ref``, or None when its family is not in the table (nothing is known to be
    missing): what :func:`ollama_from` turns into a real tag.

    >>> published_quants("qwen3-8b")
    ('Q4_K_M', 'Q8_0', 'F16')
    >>> published_quants("granite-3.3-8b") is None
    True
    """
    known = _published(_catalog_tags(model_ref))
    return None if known is None else tuple(known[2])


def ollama_plan_quants(
    runtime: str, spec: ModelSpec, quant: str | None, min_quant: str | None, model_ref: str
) -> tuple[str, ...] | None:
    """The quantizations an Ollama plan of ``model_ref`` is limited to: those its library
    family publishes (:func:`published_quants`), when the user pinned no ``--quant``, the
    command pulls a library tag (not a converted checkpoint directory nor a .gguf file) and the
    limit removes something from the planner's ladder; None otherwise (the search stays
    unrestricted, and a plan off the table gets the placeholder and its note)."""
    from oomkit.planner.knobs import quant_ladder
    from oomkit.planner.prepare import is_local_checkpoint

    if runtime != "ollama" or quant is not None or spec.source == "gguf":
        return None
    if is_local_checkpoint(model_ref, spec.source):
        return None
    published = published_quants(model_ref)
    if published is None:
        return None
    full = quant_ladder(runtime, spec, None, min_quant)[0]
    kept = quant_ladder(runtime, spec, None, min_quant, published)[0]
    return published if kept != full else None


def ollama_from(model_ref: str, quant: str) -> OllamaFrom:
    """The library tag serving ``quant`` of ``model_ref``, or a ``${VAR:?...}`` placeholder.

    >>> ollama_from("llama-3.1-8b", "Q6_K").value
    'llama3.1:8b-instruct-q6_K'
    >>> ollama_from("qwen3-8b", "Q4_K_M").value
    'qwen3:8b'
    >>> ollama_from("gemma-3-12b", "Q8_0").value
    'gemma3:12b-it-q8_0'
    >>> ollama_from("gemma-3-12b", "Q6_K").value
    '${OLLAMA_TAG:?set OLLAMA_TAG to a gemma3 tag serving Q6_K}'
    """
    tags = _catalog_tags(model_ref)
    wanted = _canonical(quant)
    for tag, tag_quant in tags.items():
        if _canonical(tag_quant) == wanted:
            return OllamaFrom(tag)
    known = _published(tags)
    if known is not None:
        name, size, by_quant = known
        if wanted in by_quant:
            return OllamaFrom(by_quant[wanted])
        near = _nearest(wanted, by_quant)
        listed = ", ".join(sorted(by_quant, key=_size_gb))
        return OllamaFrom(
            f"${{OLLAMA_TAG:?set OLLAMA_TAG to a {name} tag serving {quant}}}",
            f"{name}:{size} is published as {listed} only, not {quant}: re-plan with"
            f" --quant {near} ({by_quant[near]}), or set OLLAMA_TAG to an imported GGUF",
        )
    library = next(iter(tags)).split(":", 1)[0] if tags else None
    what = f"a {library} tag" if library else "a GGUF"
    where = f"ollama.com/library/{library}/tags" if library else "hf.co/<user>/<repo>-GGUF:<quant>"
    return OllamaFrom(
        f"${{OLLAMA_TAG:?set OLLAMA_TAG to {what} serving {quant}}}",
        f"no Ollama tag known for {quant}: set OLLAMA_TAG to one first ({where})",
    )
