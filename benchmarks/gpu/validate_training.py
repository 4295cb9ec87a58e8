"""GPU validation of the training estimate: a real training step on CUDA vs formula vs probe.

For each case, builds a real transformers model on the GPU from a catalog config (random
weights, no downloads), runs two training steps (forward with labels, backward, AdamW step,
``zero_grad(set_to_none=True)``; pure bf16 like torchtune's ``dtype: bf16``) and records
``torch.cuda.max_memory_allocated()`` / ``max_memory_reserved()`` over the second step, next to
oomkit's formula (``runtime_details.peak_allocated_bytes``) and the FakeTensor probe's peak for the
same settings.

    python benchmarks/gpu/validate_training.py --out benchmarks/gpu/results_training.json

Exits 0 with a message when CUDA, torch or transformers is missing (this repo's CI has no GPU).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

#: (catalog model, config overrides, micro-batch, seq, gradient checkpointing, attention)
CASES: tuple[tuple[str, dict[str, Any], int, int, bool, str], ...] = (
    ("llama-3.2-1b", {}, 1, 2048, False, "sdpa"),
    ("llama-3.2-1b", {}, 2, 4096, True, "sdpa"),
    ("qwen2.5-0.5b", {}, 4, 2048, False, "sdpa"),
    ("llama-3.1-8b", {"num_hidden_layers": 4}, 1, 4096, False, "sdpa"),
    ("qwen1.5-moe-a2.7b", {"num_hidden_layers": 4}, 1, 2048, False, "sdpa"),
    ("gemma-2-2b", {"num_hidden_layers": 8}, 1, 2048, False, "eager"),
)


def _formula(cfg: dict[str, Any], name: str, batch: int, seq: int, ckpt: bool, attn: str) -> int:
    from oomkit.estimate.training import estimate_training
    from oomkit.loaders.hf_config import parse_config
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import TrainingSettings

    settings = TrainingSettings(
        master_weights=False,
        micro_batch=batch,
        seq=seq,
        grad_checkpointing="full" if ckpt else "none",
        attn_implementation=attn,
    )
    est = estimate_training(parse_config(cfg, name=name), settings, Hardware())
    peak = est.runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    return peak


def run_case(
    model: str,
    overrides: dict[str, Any],
    batch: int,
    seq: int,
    ckpt: bool,
    attn: str,
    device: str = "cuda",
    probe: bool = True,
) -> dict[str, Any]:
    """One case; ``device="cpu"`` is a smoke run (no memory figures) used by the test suite."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from oomkit.catalog.models import find_model
    from oomkit.inprocess.fake_probe import probe_hf

    cfg_dict = json.loads(json.dumps({**dict(find_model(model).config), **overrides}, default=dict))
    hf = AutoConfig.for_model(
        cfg_dict["model_type"],
        **{k: v for k, v in cfg_dict.items() if k not in ("architectures", "model_type")},
    )
    cuda = device == "cuda"
    with torch.device(device):
        m = AutoModelForCausalLM.from_config(hf, dtype=torch.bfloat16, attn_implementation=attn)
    if ckpt:  # transformers 5 renamed gradient_checkpointing_enable
        kw = {"use_reentrant": False}
        if hasattr(m, "activation_checkpointing_enable"):
            m.activation_checkpointing_enable(activation_checkpointing_kwargs=kw)
        else:
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)
    m.train()
    optim = torch.optim.AdamW(m.parameters(), lr=1e-5, foreach=True)
    ids = torch.randint(0, hf.vocab_size, (batch, seq), device=device)
    for step in range(2):
        if cuda and step == 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        del loss
        optim.step()
        optim.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
    measured = {
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "max_memory_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else None,
        "parameter_bytes": sum(p.numel() * p.element_size() for p in m.parameters()),
    }
    del m, optim
    if cuda:
        torch.cuda.empty_cache()
    formula = _formula(cfg_dict, model, batch, seq, ckpt, attn)
    probe_bytes = (
        probe_hf(
            cfg_dict, batch=batch, seq=seq, train=True, grad_checkpointing=ckpt,
            attn_implementation=attn,
        ).peak_bytes
        if probe
        else None
    )  # fmt: skip
    alloc = measured["max_memory_allocated_bytes"]
    return {
        "model": model,
        "overrides": overrides,
        "micro_batch": batch,
        "seq": seq,
        "grad_checkpointing": ckpt,
        "attn_implementation": attn,
        "measured": measured,
        "formula_peak_allocated_bytes": formula,
        "probe_peak_bytes": probe_bytes,
        "formula_error": round(formula / alloc - 1, 4) if alloc else None,
        "probe_error": round(probe_bytes / alloc - 1, 4) if alloc and probe_bytes else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/gpu/results_training.json")
    args = ap.parse_args()
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"skipped: {e.name} is not installed (needs torch + transformers + CUDA)")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no CUDA GPU visible")
        return 0
    env = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }
    results = []
    for case in CASES:
        try:
            results.append(run_case(*case))
        except Exception as e:  # a failing case is recorded, not fatal
            results.append({"model": case[0], "error": f"{type(e).__name__}: {e}"[:500]})
        print(json.dumps(results[-1]), flush=True)
    with open(args.out, "w") as f:
        json.dump({"environment": env, "results": results}, f, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
