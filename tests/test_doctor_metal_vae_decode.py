"""A Metal command-buffer OOM inside a VAE decode is the decoder's activations, not an LLM's KV
cache (diagnose/parse_diffusion.py _metal_vae_decode, rules_diffusion.py, docfix22)."""

from __future__ import annotations

import json
from pathlib import Path

from oomkit.diagnose.doctor import diagnose_text

# ComfyUI on an Apple M2 Pro: the MPS command buffer's IOGPU status, then the VAEDecode node's
# traceback (nodes.py decode -> comfy/sd.py VAE.decode)
COMFY = """\\
got prompt
model_type EPS
Using split attention in VAE
Requested to load SDXL
loaded completely 0.0 4897.0483474731445 True
100%|██████████| 20/20 [01:12<00:00,  3.62s/it]
Requested to load AutoencoderKL
loaded completely 0.0 159.55708122253418 True
Error: command buffer exited with error status.
	The Metal Performance Shaders operations encoded on it may not have completed.
	Error:
	(null)
	Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)
	<AGXG14XFamilyCommandBuffer: 0x3a2c1e0f0>
    label = <none>
    device = <AGXG14XDevice: 0x10a3f2000>
        name = Apple M2 Pro
    commandQueue = <AGXG14XFamilyCommandQueue: 0x10b0c8a00>
        label = <none>
        device = <AGXG14XDevice: 0x10a3f2000>
            name = Apple M2 Pro
    retainedReferences = 1
!!! Exception during processing !!!
Traceback (most recent call last):
  File "/Users/me/ComfyUI/execution.py", line 323, in execute
    output_data, output_ui, has_subgraph = get_output_data(obj, input_data_all)
  File "/Users/me/ComfyUI/nodes.py", line 285, in decode
    images = vae.decode(samples["samples"])
  File "/Users/me/ComfyUI/comfy/sd.py", line 583, in decode
    out = self.process_output(self.first_stage_model.decode(samples).to(self.output_device))
"""

# llama.cpp on Metal: the same status in a language model's decode (the development record
# sv-kobold-1371-metal-m4)
LLAMA = (
    "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n"
    "llama_graph_compute: ggml_backend_sched_graph_compute_async failed with error -1\n"
    "llama_decode: failed to decode, ret = -3\n"
)


def test_comfyui_vae_decode_on_metal_is_activations() -> None:
    d = diagnose_text(COMFY)
    assert d.cause == "batch_or_activations"
    assert d.fixes[0].title == "Decode the VAE in tiles"
    assert not any("context" in f.title.lower() for f in d.fixes)


def test_same_metal_failure_outside_a_decode_keeps_the_kv_reading() -> None:
    # near-miss: the frames name no VAE decode
    text = COMFY.replace('images = vae.decode(samples["samples"])', "out = model.run(x)")
    text = text.replace("in decode", "in run").replace("first_stage_model.decode", "model")
    assert diagnose_text(text).cause == "kv_cache_or_context"


def test_llm_decode_on_metal_keeps_the_kv_reading() -> None:
    # near-miss: "decoding the image" in a llama.cpp log (a vision prompt) is an LLM's decode
    d = diagnose_text(LLAMA + "decoding the image embeddings\n")
    assert d.cause == "kv_cache_or_context"


def test_development_record_video_vae_decode() -> None:
    # h53-llmman-443 (batch_or_activations, high): "Decoding the whole clip in one graph ran
    # Metal out of memory"; the merged PR tiles the video VAE decode
    path = Path(__file__).parent / "fixtures" / "oom_corpus" / "heldout53_torch.jsonl"
    rec = next(
        r
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if r["id"] == "h53-llmman-443"
    )
    assert diagnose_text(rec["text"]).cause == "batch_or_activations"
