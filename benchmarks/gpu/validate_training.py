"""GPU validation of training memory: a real training step vs the FakeTensor probe and the formula.

For each case, builds a real ``transformers`` model (random weights, from a catalog config, no
downloads) on the GPU, runs one training step the way the probe models it (bf16 autocast over
fp32 parameters for full fine-tuning, or a frozen bf16 base with fp32 LoRA adapters; the model's
own loss from ``labels``; ``loss.backward()``; ``AdamW.step()``; ``zero_grad(set_to_none)``)
and records ``torch.cuda.max_memory_allocated()`` over the step (the parameters included),
next to :func:`oomkit.probe`'s peak (CUDA-block rounded) and, when the training estimator is
present, ``estimate_training``'s ``peak_allocated_bytes``.

    python benchmarks/gpu/validate_training.py --out benchmarks/gpu/results_training.json

Exits 0 with a message when CUDA, torch or transformers is missing. ``run_case(...,
device="cpu")`` is the smoke mode the test suite runs: the same step on real CPU tensors,
whose model-state bytes (parameters, gradients, AdamW states) the probe must reproduce.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

#: (catalog model, config overrides, method, batch, seq, gradient checkpointing)
CASES: tuple[tuple[str, dict[str, Any], str, int, int, bool], ...] = (
    ("qwen2.5-0.5b", {}, "full", 1, 1024, False),
    ("qwen2.5-0.5b", {}, "full", 2, 2048, True),
    ("llama-3.2-1b", {}, "full", 1, 2048, False),
    ("llama-3.2-1b", {}, "lora", 4, 2048, False),
    ("llama-3.1-8b", {"num_hidden_layers": 4}, "full", 1, 4096, False),
    ("llama-3.1-8b", {"num_hidden_layers": 8}, "lora", 2, 4096, True),
    ("mixtral-8x7b", {"num_hidden_layers": 2}, "lora", 1, 2048, False),
    ("bert-base-uncased", {}, "full", 8, 512, False),
)


def _state_bytes(opt: Any) -> int:
    import torch

    return sum(
        t.untyped_storage().nbytes()
        for st in opt.state.values()
        for t in st.values()
        if isinstance(t, torch.Tensor)
    )


def _formula(model: str, overrides: dict[str, Any], method: str, batch: int, seq: int,
             ckpt: bool) -> int | None:  # fmt: skip
    try:
        from oomkit.estimate.training import estimate_training  # type: ignore[import-not-found]
        from oomkit.spec.settings import TrainingSettings  # type: ignore[attr-defined]
    except ImportError:
        return None
    from oomkit.inprocess.probe_model import load_config_dict
    from oomkit.loaders.hf_config import parse_config
    from oomkit.spec.hardware import Hardware

    spec = parse_config({**load_config_dict(model), **overrides}, name=model)
    settings = TrainingSettings(
        method=method, micro_batch=batch, seq=seq, grad_checkpointing="full" if ckpt else "none"
    )
    return int(
        estimate_training(spec, settings, Hardware()).runtime_details["peak_allocated_bytes"]
    )


def run_case(
    model: str,
    overrides: dict[str, Any],
    method: str,
    batch: int,
    seq: int,
    ckpt: bool,
    device: str = "cuda",
) -> dict[str, Any]:
    """One real training step on ``device`` next to the probe (and formula) for it."""
    import torch

    import oomkit
    from oomkit.inprocess import probe_model as pm

    cfg = {**pm.load_config_dict(model), **overrides}
    cuda = device == "cuda"
    full = method == "full"
    with torch.device(device):
        m = pm.build_from_config(cfg, dtype=torch.float32 if full else torch.bfloat16)
        if not full:
            targets = pm.lora_target_names(str(cfg.get("model_type", "")), None)
            pm.apply_lora(m, targets, rank=16, alpha=32.0, adapter_dtype=torch.float32)
    m.train()
    if ckpt:
        m.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    trainable = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    ids = torch.randint(0, int(cfg["vocab_size"]), (batch, seq), device=device)
    param_bytes = sum(
        p.numel() * p.element_size() for p in {id(p): p for p in m.parameters()}.values()
    )
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        loss = m(input_ids=ids, labels=ids, use_cache=False).loss
    loss.backward()
    grad_bytes = sum(p.grad.untyped_storage().nbytes() for p in trainable if p.grad is not None)
    opt.step()
    state_bytes = _state_bytes(opt)
    opt.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    measured = {
        "max_memory_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "max_memory_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else None,
        "parameter_bytes": param_bytes,
        "gradient_bytes": grad_bytes,
        "optimizer_state_bytes": state_bytes,
    }
    del m, opt, loss
    if cuda:
        torch.cuda.empty_cache()
    r = oomkit.probe(
        cfg, train=method, seq=seq, batch=batch, grad_checkpointing=ckpt, round_to_cuda_blocks=cuda
    )
    formula = _formula(model, overrides, method, batch, seq, ckpt)
    peak = measured["max_memory_allocated_bytes"]
    return {
        "model": model,
        "overrides": overrides,
        "method": method,
        "batch": batch,
        "seq": seq,
        "grad_checkpointing": ckpt,
        "elapsed_s": round(elapsed, 2),
        "measured": measured,
        "probe": {
            "peak_bytes": r.peak_bytes,
            "peak_phase": r.peak_phase,
            "parameters_bytes": r.parameters_bytes,
            "gradients_bytes": r.gradients_bytes,
            "optimizer_state_bytes": r.optimizer_state_bytes,
        },
        "formula_peak_allocated_bytes": formula,
        "probe_error": round(r.peak_bytes / peak - 1, 4) if peak else None,
        "formula_error": round(formula / peak - 1, 4) if peak and formula else None,
    }


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _suite import run_suite

    return run_suite(
        __doc__.splitlines()[0], "benchmarks/gpu/results_training.json", CASES, run_case
    )


if __name__ == "__main__":
    sys.exit(main())
