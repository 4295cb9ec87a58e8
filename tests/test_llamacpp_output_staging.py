"""op_offload of the output head: with the output layer on the CPU, the main CUDA GPU runs the
large-batch output matmul and its compute buffer holds the weight copy and the logits."""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings


def _compute(est: Estimate, device: str) -> int:
    d = next(x for x in est.devices if x.device == device)
    return sum(c.n_bytes for c in d.components if c.label == "compute buffer")


def _est(runtime: str, ngl: int, gpu: str = "rtx-4070-ti-super", **kw: object) -> Estimate:
    s = InferenceSettings(  # type: ignore[arg-type]
        runtime=runtime, quant="F16", ctx=2048, n_gpu_layers=ngl, **kw
    )
    return estimate("command-r7b", s, hardware_for(parse_gpu_list(gpu), n_devices=1), offline=True)


def test_ollama_8471_compute_buffer_is_the_staged_output_head() -> None:
    # ollama #8471 (Ollama 0.5.x, 2025-01): command-r7b F16, 32/33 layers on a 4070 Ti SUPER:
    # 'ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 2629828608' =
    # token_embd (tied output) 256000 x 4096 f16 + input 4096 x 512 f32 + logits 256000 x 512 f32
    est = _est("ollama", 32, runtime_version="2025-01-17")
    assert _compute(est, "cuda:0") == 2629828608
    assert est.fits is False
    # the whole model on the GPU (output layer too): no staging, the layers' graph only
    full = _est("ollama", 33, gpu="rtx-4090", runtime_version="2025-01-17")
    assert _compute(full, "cuda:0") < 600 * 2**20


def test_llamacpp_output_on_cpu_stages_the_head_on_cuda_only() -> None:
    cuda = _est("llama.cpp", 32, gpu="rtx-4090")
    assert _compute(cuda, "cuda:0") >= 256000 * 4096 * 2  # at least the f16 weight copy
    assert any(a.startswith("output layer on the CPU") for a in cuda.assumptions)
    # a Mac: Metal reads the host buffer in place (unified memory), no copy
    mac = _est("llama.cpp", 32, gpu="m3-max-128gb")
    assert _compute(mac, "mps:0") < 600 * 2**20
