"""The commands that make the file a llama.cpp or Ollama plan runs, when the user holds a
Hugging Face checkpoint directory (safetensors + ``config.json``) rather than a ``.gguf``.

llama.cpp runs GGUF files only. A checkpoint directory is converted with llama.cpp's
``convert_hf_to_gguf.py``, whose ``--outtype`` writes ``f32``, ``f16``, ``bf16`` or ``q8_0``
directly (its argparse ``choices``: f32, f16, bf16, q8_0, tq1_0, tq2_0, auto); every other
type (``Q4_K_M``, ``IQ4_XS``...) is made from that 16-bit file by ``llama-quantize IN OUT TYPE``
(tools/quantize/README.md: "Convert the original model to GGUF format", then "Quantize the
converted GGUF file").

Ollama imports a safetensors directory itself (``FROM /path/to/safetensors/directory`` in a
Modelfile, docs/import.md) and quantizes it with ``ollama create --quantize TYPE``, but only to
the types its ``fs/ggml/type.go`` ``ParseFileType`` accepts ("Only Ollama supported types are
considered valid"): ``Q8_0``, ``Q4_K_S``, ``Q4_K_M`` (and the float types, which need no
``--quantize``). Any other type goes through llama.cpp's tools first and Ollama imports the
``.gguf`` (``FROM ./file.gguf``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

__all__ = ["OLLAMA_QUANTIZE_TYPES", "Preparation", "checkpoint_gguf_name", "prepare_checkpoint"]

#: ``convert_hf_to_gguf.py --outtype`` values that are also the planner's quant names
_CONVERT_OUTTYPES = {"F32": "f32", "F16": "f16", "BF16": "bf16", "Q8_0": "q8_0"}
#: what ``ollama create --quantize`` accepts (ollama fs/ggml/type.go ParseFileType)
OLLAMA_QUANTIZE_TYPES = frozenset({"Q8_0", "Q4_K_S", "Q4_K_M"})
#: float types Ollama imports from safetensors as they are (no ``--quantize``)
_OLLAMA_FLOAT_TYPES = frozenset({"F32", "F16", "BF16"})
#: checkpoint SOURCES of a ModelSpec that name a local checkpoint directory
_LOCAL_CHECKPOINT_SOURCES = frozenset({"config", "safetensors"})


@dataclass(frozen=True, slots=True)
class Preparation:
    """Shell lines to run before the plan's command, and the file (or directory) the run
    command then points at."""

    lines: tuple[str, ...]
    target: str


def is_local_checkpoint(model_ref: str, source: str) -> bool:
    """True when ``model_ref`` names a checkpoint directory (or its ``config.json``) on disk
    that a GGUF runtime cannot load as it is."""
    if model_ref.lower().endswith(".gguf") or source not in _LOCAL_CHECKPOINT_SOURCES:
        return False
    return "/" in model_ref or model_ref.startswith((".", "~"))


def _checkpoint_dir(model_ref: str) -> str:
    ref = model_ref.rstrip("/")
    if ref.lower().endswith("config.json"):
        ref = ref.rsplit("/", 1)[0] if "/" in ref else "."
    return ref or "."


def checkpoint_gguf_name(model_ref: str, quant: str) -> str:
    """``<directory name>-<QUANT>.gguf``: the file the preparation writes."""
    base = _checkpoint_dir(model_ref).rstrip("/").rsplit("/", 1)[-1] or "model"
    if base in (".", "..", "~"):
        base = "model"
    return f"{base}-{quant}.gguf"


def _sixteen_bit(torch_dtype: str | None) -> str:
    """The float type the checkpoint holds, so the intermediate file loses nothing."""
    dtype = (torch_dtype or "").lower()
    if dtype in ("float32", "fp32"):
        return "F32"
    if dtype in ("float16", "fp16", "half"):
        return "F16"
    return "BF16"  # bfloat16, and the safe choice when the config does not say


def _llamacpp_lines(model_ref: str, quant: str, torch_dtype: str | None) -> list[str]:
    q = shlex.quote
    src = _checkpoint_dir(model_ref)
    out = checkpoint_gguf_name(model_ref, quant)
    direct = _CONVERT_OUTTYPES.get(quant.upper())
    if direct is not None:
        return [f"python convert_hf_to_gguf.py {q(src)} --outtype {direct} --outfile {q(out)}"]
    wide = _sixteen_bit(torch_dtype)
    mid = checkpoint_gguf_name(model_ref, wide)
    return [
        f"python convert_hf_to_gguf.py {q(src)} --outtype {_CONVERT_OUTTYPES[wide]} "
        f"--outfile {q(mid)}",
        f"llama-quantize {q(mid)} {q(out)} {quant}",
    ]


def prepare_checkpoint(
    runtime: str, model_ref: str, source: str, quant: str, torch_dtype: str | None
) -> Preparation | None:
    """What to run first so ``runtime`` can load a checkpoint directory at ``quant``; None when
    ``model_ref`` is not a local checkpoint directory or the runtime loads it as it is."""
    if runtime not in ("llama.cpp", "ollama") or not is_local_checkpoint(model_ref, source):
        return None
    quant = quant.upper()
    if runtime == "llama.cpp":
        return Preparation(
            tuple(_llamacpp_lines(model_ref, quant, torch_dtype)),
            checkpoint_gguf_name(model_ref, quant),
        )
    if quant in OLLAMA_QUANTIZE_TYPES or quant in _OLLAMA_FLOAT_TYPES:
        return Preparation((), _checkpoint_dir(model_ref))  # Ollama converts it at create
    name = checkpoint_gguf_name(model_ref, quant)
    return Preparation(tuple(_llamacpp_lines(model_ref, quant, torch_dtype)), f"./{name}")
