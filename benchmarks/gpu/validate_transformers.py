"""GPU validation: real transformers models (random weights, built from configs) vs oomkit.

For each case, builds the model on a CUDA GPU from a catalog config (no downloads), runs
``generate()`` and records ``torch.cuda.max_memory_reserved()``/``max_memory_allocated()`` over
``generate()`` (the peak statistics are reset once the model is built: random initialisation
from a config makes temporaries that a checkpoint load does not) and the ``nvidia-smi`` used
memory, next to oomkit's transformers estimate for the same settings.

    python benchmarks/gpu/validate_transformers.py --out benchmarks/gpu/results_transformers.json

Exits 0 with a message when CUDA, torch or transformers is missing (this repo's CI has no GPU).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: (catalog model, overrides to shrink layers so every case fits a 24 GiB+ card, batch, prompt, new)
CASES: tuple[tuple[str, dict[str, Any], int, int, int, str], ...] = (
    ("llama-3.2-1b", {}, 1, 2048, 64, "sdpa"),
    ("llama-3.2-1b", {}, 4, 4096, 64, "sdpa"),
    ("llama-3.2-1b", {}, 1, 2048, 32, "eager"),
    ("qwen2.5-0.5b", {}, 8, 1024, 64, "sdpa"),
    ("llama-3.1-8b", {"num_hidden_layers": 8}, 1, 8192, 32, "sdpa"),
    ("mistral-7b-v0.3", {"num_hidden_layers": 8}, 2, 4096, 32, "sdpa"),
    ("qwen3-8b", {"num_hidden_layers": 8}, 1, 4096, 32, "sdpa"),
    ("gemma-2-2b", {}, 1, 2048, 32, "eager"),
)


def _smi_used_mib() -> int | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            check=True,
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
        return int(out.strip().splitlines()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def run_case(
    model: str,
    overrides: dict[str, Any],
    batch: int,
    prompt: int,
    new: int,
    attn: str,
    device: str = "cuda",
) -> dict[str, Any]:
    """One case; ``device="cpu"`` is a smoke run (no memory figures) used by the test suite."""
    import dataclasses

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    import oomkit
    from oomkit.hardware.catalog import find_gpu_by_nvml_name
    from oomkit.hardware.targets import hardware_for
    from oomkit.inprocess.probe_model import load_config_dict
    from oomkit.loaders.hf_config import parse_config

    # plain dicts all the way down: the catalog's nested mappings (``rope_scaling``) are
    # read-only views, which transformers >= 5's strict config fields refuse
    cfg_dict = {**load_config_dict(model), **overrides}
    cfg = AutoConfig.for_model(
        cfg_dict["model_type"],
        **{k: v for k, v in cfg_dict.items() if k not in ("architectures", "model_type")},
    )
    cuda = device == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    with torch.device(device):
        m = AutoModelForCausalLM.from_config(
            cfg, torch_dtype=torch.bfloat16, attn_implementation=attn
        )
    m.eval()
    param_bytes = sum(p.numel() * p.element_size() for p in m.parameters())
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device=device)
    # building from a config initialises random weights on the device, with temporaries a
    # checkpoint load does not make: the build's peak is kept apart, and generate()'s peak
    # (the weights resident, as after any load) is what the estimate is compared with
    build_peak = torch.cuda.max_memory_allocated() if cuda else None
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with torch.no_grad():
        m.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
    if cuda:
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    measured: dict[str, Any] = {
        "max_memory_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else None,
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "nvidia_smi_used_MiB": _smi_used_mib() if cuda else None,
        "build_from_config_max_memory_allocated_bytes": build_peak,
        "parameter_bytes": param_bytes,
    }
    spec = dataclasses.replace(parse_config(cfg_dict, name=model), torch_dtype="bfloat16")
    if cuda:
        name = torch.cuda.get_device_name(0)
        total = torch.cuda.get_device_properties(0).total_memory
        gpu = find_gpu_by_nvml_name(name, total)
        hw = hardware_for((gpu,) if gpu else (), vram_bytes=None if gpu else total)
    else:
        hw = hardware_for()
    est = oomkit.estimate_model(
        spec,
        oomkit.InferenceSettings(
            runtime="transformers",
            quant="bf16",
            ctx=prompt,
            max_new_tokens=new,
            parallel=batch,
            attn_implementation=attn,
        ),
        hw,
    )
    dev = est.devices[0]
    predicted_torch = dev.total_bytes - dev.overhead_bytes
    del m
    if cuda:
        torch.cuda.empty_cache()
    return {
        "model": model,
        "overrides": overrides,
        "batch": batch,
        "prompt": prompt,
        "new": new,
        "attn_implementation": attn,
        "elapsed_s": round(elapsed, 2),
        "measured": measured,
        "predicted": {
            "torch_bytes": predicted_torch,
            "device_total_bytes": dev.total_bytes,
            "weights_bytes": dev.weights_bytes,
            "kv_cache_bytes": dev.kv_cache_bytes,
            "activations_bytes": dev.activations_bytes,
        },
        "error_vs_max_allocated": (
            round(predicted_torch / measured["max_memory_allocated_bytes"] - 1, 4) if cuda else None
        ),
    }


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _suite import run_suite

    return run_suite(
        __doc__.splitlines()[0], "benchmarks/gpu/results_transformers.json", CASES, run_case
    )


if __name__ == "__main__":
    sys.exit(main())
