"""The model a runtime runs, as the estimator sees it for each of the planner's quants.

A Hugging Face checkpoint directory (``config.json`` + ``*.safetensors``) on llama.cpp or Ollama
runs as the GGUF ``convert_hf_to_gguf.py`` (then ``llama-quantize``) writes from it, not as the
checkpoint: :func:`oomkit.api.estimate_model` (``_as_converted_gguf``) drops the header's tensors
and estimates the config's at the asked quant. The planner calls the estimators directly, so
without the same step every rung of its quant ladder read the header's bytes (Q2_K weighed what
BF16 does). vLLM, SGLang and transformers load the checkpoint itself: the header stays.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec

__all__ = ["runtime_spec"]

_GGUF_RUNTIMES = ("llama.cpp", "ollama")


def runtime_spec(spec: ModelSpec, runtime: str, notes: list[str]) -> ModelSpec:
    """``spec`` as ``runtime`` runs it; a note is appended to ``notes`` when it differs."""
    if spec.source != "safetensors" or runtime not in _GGUF_RUNTIMES or spec.tensors is None:
        return spec
    note = (
        f"{runtime}: weights of the GGUF a conversion of this checkpoint gives at each quant "
        "(convert_hf_to_gguf.py / llama-quantize), as estimate --quant Q does; the safetensors "
        "header holds the checkpoint's names and dtypes, not the GGUF's"
    )
    if note not in notes:
        notes.append(note)
    return dataclasses.replace(spec, tensors=None)
