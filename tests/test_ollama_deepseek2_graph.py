"""Ollama before v0.1.45 had no ``deepseek2`` case in ``GraphSize`` (ollama commit e873841cb
"deepseek v2 graph", 2024-06-18, first in v0.1.45): memory.go took ``GQA x kv / 6`` (72 MiB for
DeepSeek-V2-Lite at num_ctx 2048) where llama.cpp's compute buffer is several times that.

Real run: ollama/ollama#4799 (rick-github, Ollama 0.1.40, RTX 4070 12 GB,
deepseek-v2:16b-lite-chat-q4_K_S): Ollama offloaded 26/28 layers (CUDA0 8764 MiB) and llama.cpp
died creating the context. On the whole card memory.go would have placed all 28; 26 is what it
picks with about 9.3-9.6 GiB free (the card was partly in use), and there what llama.cpp
allocates does not fit: the death follows from memory.go's undercount at the edge it fills to."""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

GiB = 1 << 30


def _run(version: str, vram: float | None) -> tuple[int, str]:
    s = InferenceSettings(runtime="ollama", quant="Q4_K_S", ctx=2048, runtime_version=version)
    vb = None if vram is None else int(vram * GiB)
    hw = hardware_for(parse_gpu_list("rtx-4070"), vram_bytes=vb)
    est = estimate("deepseek-v2-lite", s, hw, offline=True)
    return int(est.runtime_details["n_gpu_layers"]), verdict(est).level


def test_4799_whole_card_takes_every_layer() -> None:
    layers, level = _run("0.1.40", None)
    assert layers == 28
    assert level in ("fits", "tight")


def test_4799_the_logged_26_layers_come_with_about_9_5_gib_free() -> None:
    layers, level = _run("0.1.40", 9.7)
    assert layers == 26  # the log's 'offloaded 26/28 layers to GPU'
    assert level != "fits"  # and it died


def test_v0_1_45_counts_more_and_places_fewer_blocks() -> None:
    # the same free memory: v0.1.45's deepseek2 graph case and its K/V head sizes (192 + 128,
    # ollama 8e0641a9b) leave room for fewer blocks
    assert _run("0.1.45", 9.7)[0] < _run("0.1.40", 9.7)[0]
