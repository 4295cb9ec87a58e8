"""Vision towers on the GGUF runtimes (llama.cpp, Ollama): what is counted and what is not.

A checkpoint's vision encoder (``ModelSpec.multimodal_params``) is not part of the text GGUF:

* **llama.cpp** loads a vision encoder only from a separate ``--mmproj`` file (libmtmd), sized
  by that file, which oomkit is not given: the tower is not counted, and the output says so.
  Llama 3.2 Vision (Mllama) is worse off: upstream llama.cpp has no ``mllama`` architecture
  (``LLM_ARCH_MLLAMA`` and its cross-attention KV only ever lived in Ollama's patched copy,
  ollama/llama/llama.cpp), so llama.cpp would not load the model at all; the text-stack figure
  is printed with that warning.
* **Ollama** (0.4+) runs ``llama3.2-vision`` with its own runner and a projector blob (the
  vision encoder + projector in F16, ~1.9 GB for 11B). ``llm/memory.go``
  (``EstimateGPULayers``) puts the projector's weights on the first GPU
  (``gpuZeroOverhead := projectorWeights + projectorGraph``): oomkit counts the weights there
  (``multimodal_params x 2`` bytes). The projector's graph and the cross-attention layers' image
  KV are not counted, and the output says so. Gemma 3 on the Ollama engine (0.7.1+) holds its
  SigLIP tower in the model's GGUF and loads it with the output layer:
  :mod:`oomkit.estimate.ollama_vision_graph` counts its weights and worst-case graph there.
"""

from __future__ import annotations

import dataclasses

from oomkit.estimate.breakdown import Component, Estimate
from oomkit.spec.model import ModelSpec

__all__ = ["gguf_vision"]

_F16 = 2


def gguf_vision(spec: ModelSpec, est: Estimate, runtime: str) -> Estimate:
    """``est`` with the vision tower counted (Ollama + Mllama) or a note that it is not."""
    params = spec.multimodal_params
    if params <= 0:
        return est
    size = f"{params / 1e9:.2f} B params"
    mllama = spec.vision_tower is not None and spec.vision_tower.kind == "mllama"
    if runtime == "ollama" and mllama and est.devices:
        proj = params * _F16
        first = est.devices[0]
        comp = Component(
            category="weights",
            label="vision projector (F16)",
            n_bytes=proj,
            formula="multimodal_params x 2 (Ollama's llama3.2-vision projector blob, F16)",
            inputs={"multimodal_params": params},
            source="ollama llm/memory.go EstimateGPULayers (projector weights on GPU 0)",
        )
        devices = (dataclasses.replace(first, components=(*first.components, comp)),)
        note = (
            f"Ollama loads the Mllama vision encoder + projector ({size}, F16 "
            f"{proj / 2**30:.2f} GiB) on the first GPU; its vision graph and the cross-attention "
            "layers' image KV are not counted"
        )
        return dataclasses.replace(
            est,
            model=dataclasses.replace(est.model, params=est.model.params + params),
            devices=(*devices, *est.devices[1:]),
            assumptions=(*est.assumptions, note),
        )
    counted = any(
        c.label.startswith("vision encoder + projector") for d in est.devices for c in d.components
    )
    if runtime == "ollama" and counted:  # Gemma 3 on the Ollama engine: ollama_vision_graph
        return est
    if runtime == "ollama" and spec.architecture == "Gemma3ForConditionalGeneration":
        note = (
            f"Gemma 3 vision encoder ({size}): Ollama loads it with the output layer "
            "(oomkit.estimate.ollama_vision_graph), counted when num_gpu (-ngl) includes that "
            "layer; here it is on the CPU or num_gpu is unset (Ollama's own layout)"
        )
        return dataclasses.replace(est, assumptions=(*est.assumptions, note))
    if runtime == "llama.cpp" and mllama:
        note = (
            "upstream llama.cpp has no mllama architecture (only Ollama's runner loads Llama "
            f"3.2 Vision): llama.cpp would not load this model; text stack only, the {size} "
            "vision encoder is not counted"
        )
    elif runtime == "llama.cpp":
        note = f"vision encoder ({size}) not counted: llama.cpp loads it from a separate --mmproj"
    else:
        note = f"vision encoder ({size}) not counted on {runtime}"
    return dataclasses.replace(est, assumptions=(*est.assumptions, note))
