"""The Ollama library tag that serves a planned quantization, or an honest placeholder.

Ollama's library tags read ``<name>:<size>-<flavor>-<quant>`` (``llama3.1:8b-instruct-q6_K``,
``qwen2.5:32b-instruct-q4_K_M``): the size tag alone (``llama3.1:8b``) serves one default
quantization (the catalog's ``ollama`` map), the longer tags the others. The flavor differs by
family (``instruct``, ``it``, ``chat``, ``instruct-v0.3``) and newer families publish only a few
quantizations, so a tag is built only for the families below, whose tags were seen in use
(e.g. ``llama3.1:8b-instruct-q6_K``, ``llama3.2:3b-instruct-q8_0``,
``llama3.3:70b-instruct-q5_K_M``, ``qwen2.5:7b-instruct-q8_0``, ``llama3:8b-instruct-q6_K``)
and which publish the full legacy set of file types below. Elsewhere the Modelfile's ``FROM``
reads a shell parameter that must be set first: ``${VAR:?message}`` makes the shell stop with
the message when it is not (POSIX "Parameter Expansion"), so nothing looks like a real tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["OllamaFrom", "ollama_from"]

#: library name -> the flavor of its instruct tags, for families seen with every type below
_FLAVORS = {
    "llama3": "instruct",
    "llama3.1": "instruct",
    "llama3.2": "instruct",
    "llama3.3": "instruct",
    "qwen2.5": "instruct",
}
#: file types those families publish, as their tags spell them
_TAG_QUANTS = {
    **{
        q: "q" + q[1:]
        for q in (
            "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_0", "Q4_1", "Q4_K_S", "Q4_K_M",
            "Q5_0", "Q5_1", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0",
        )
    },
    "F16": "fp16",
}  # fmt: skip
_SIZE = re.compile(r"\d+(\.\d+)?[bm]")


@dataclass(frozen=True, slots=True)
class OllamaFrom:
    """What a Modelfile's ``FROM`` names: ``value`` goes in it as it is; ``note`` (None when
    the tag is a real one) is the one line telling the user what to set."""

    value: str
    note: str | None = None


def _canonical(name: str) -> str:
    from oomkit.quant.llamacpp_ftypes import FTYPE_ALIASES

    # the catalog's tag says MXFP4 where the planner names the file type MXFP4_MOE
    return FTYPE_ALIASES.get(name.upper(), name.upper())


def ollama_from(model_ref: str, quant: str) -> OllamaFrom:
    """The library tag serving ``quant`` of ``model_ref``, or a ``${VAR:?...}`` placeholder.

    >>> ollama_from("llama-3.1-8b", "Q6_K").value
    'llama3.1:8b-instruct-q6_K'
    >>> ollama_from("llama-3.1-8b", "Q4_K_M").value
    'llama3.1:8b'
    >>> ollama_from("gemma-3-12b", "Q6_K").value
    '${OLLAMA_TAG:?set OLLAMA_TAG to a gemma3 tag serving Q6_K}'
    """
    try:
        from oomkit.catalog.models import find_model

        tags = dict(find_model(model_ref).ollama_tags)
    except Exception:  # not in the catalog: Ollama pulls GGUFs straight from the Hub
        tags = {}
    for tag, tag_quant in tags.items():
        if _canonical(tag_quant) == _canonical(quant):
            return OllamaFrom(tag)
    sized = [t for t in tags if _SIZE.fullmatch(t.split(":", 1)[1])]
    if sized:
        name, size = sized[0].split(":", 1)
        flavor = _FLAVORS.get(name)
        suffix = _TAG_QUANTS.get(_canonical(quant))
        if flavor is not None and suffix is not None:
            return OllamaFrom(f"{name}:{size}-{flavor}-{suffix}")
    library = next(iter(tags)).split(":", 1)[0] if tags else None
    what = f"a {library} tag" if library else "a GGUF"
    where = f"ollama.com/library/{library}/tags" if library else "hf.co/<user>/<repo>-GGUF:<quant>"
    return OllamaFrom(
        f"${{OLLAMA_TAG:?set OLLAMA_TAG to {what} serving {quant}}}",
        f"no Ollama tag known for {quant}: set OLLAMA_TAG to one first ({where})",
    )
