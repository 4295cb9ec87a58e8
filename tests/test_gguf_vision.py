"""Vision towers on llama.cpp and Ollama (oomkit.estimate.gguf_vision): counted where the runtime
loads them, named where it does not. Real catalog configs (Llama 3.2 11B Vision, Gemma 3)."""

from __future__ import annotations

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

VISION = "llama-3.2-11b-vision"


def _run(model: str, runtime: str) -> Estimate:
    settings = InferenceSettings(runtime=runtime, ctx=4096, max_num_seqs=8)
    return estimate(model, settings, hardware_for(parse_gpu_list("a100-80gb-sxm")), offline=True)


def test_ollama_counts_the_mllama_projector_on_the_first_gpu() -> None:
    spec = load_model(VISION, offline=True)
    est = _run(VISION, "ollama")
    (proj,) = [c for c in est.devices[0].components if c.label.startswith("vision projector")]
    assert proj.n_bytes == spec.multimodal_params * 2
    assert 1.6 * 2**30 < proj.n_bytes < 1.75 * 2**30
    assert est.model.params == _run(VISION, "vllm").model.params  # 10.67 B on both
    assert any("vision graph" in n and "not counted" in n for n in est.assumptions)


def test_llama_cpp_says_it_cannot_run_mllama() -> None:
    est = _run(VISION, "llama.cpp")
    assert not any(c.label.startswith("vision") for c in est.devices[0].components)
    assert any("no mllama architecture" in n for n in est.assumptions)


def test_image_kv_note_only_on_vllm() -> None:
    for runtime in ("ollama", "llama.cpp"):
        assert not any("vLLM" in n for n in _run(VISION, runtime).assumptions), runtime
    assert any("vLLM caches the image tokens" in n for n in _run(VISION, "vllm").assumptions)


def test_other_vision_towers_on_llama_cpp_are_named_not_counted() -> None:
    spec = load_model("gemma-3-27b", offline=True)
    assert spec.multimodal_params > 0
    est = _run("gemma-3-27b", "llama.cpp")
    assert any("--mmproj" in n for n in est.assumptions)
