"""GPU validation of training memory: a real training step vs the FakeTensor probe and the formula.

For each case, builds a real ``transformers`` model (random weights, from a catalog config, no
downloads) on the GPU, runs one training step the way the probe models it (bf16 autocast over
fp32 parameters for full fine-tuning, or a frozen bf16 base with fp32 LoRA adapters; the model's
own loss from ``labels``; ``loss.backward()``; ``AdamW.step()``; ``zero_grad(set_to_none)``)
and records ``torch.cuda.max_memory_allocated()`` over the step (the parameters included).
Two steps run: the first creates AdamW's states inside ``opt.step()``, so its forward and
backward run without them; the second is the steady state every later step repeats. The second
step's peak is compared with :func:`oomkit.probe`'s steady-state peak (CUDA-block rounded) and
``estimate_training``'s ``peak_allocated_bytes``; the first step's with the probe's
``steady_state=False`` trace.

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
    # BERT fine-tuned as a sequence classifier (labels of shape (batch,)): the head the
    # estimator models for encoders and the HF docs' measured runs used
    ("bert-base-uncased", {}, "full", 8, 512, False),
    ("gemma-2-2b", {}, "full", 1, 2048, False),
    ("deepseek-v2-lite", {"num_hidden_layers": 3}, "lora", 1, 2048, False),
    ("qwen3-30b-a3b", {"num_hidden_layers": 4}, "lora", 1, 2048, True),
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
    encoder = cfg.get("model_type") == "bert"
    if encoder:
        cfg = {**cfg, "architectures": ["BertForSequenceClassification"], "num_labels": 2}
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
    labels = torch.randint(0, 2, (batch,), device=device) if encoder else ids
    param_bytes = sum(
        p.numel() * p.element_size() for p in {id(p): p for p in m.parameters()}.values()
    )

    def step() -> int | None:
        """One step; the allocator's peak over it (None on the CPU)."""
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            kw = {} if encoder else {"use_cache": False}
            loss = m(input_ids=ids, labels=labels, **kw).loss
        loss.backward()
        del loss
        opt.step()
        if cuda:
            torch.cuda.synchronize()
            return int(torch.cuda.max_memory_allocated())
        return None

    t0 = time.perf_counter()
    # the first step creates AdamW's states inside ``opt.step()`` (they are absent during its
    # forward and backward); every later step runs with them: the probe's steady state
    first_peak = step()
    opt.zero_grad(set_to_none=True)
    steady_peak = step()
    steady_reserved = torch.cuda.max_memory_reserved() if cuda else None
    grad_bytes = sum(p.grad.untyped_storage().nbytes() for p in trainable if p.grad is not None)
    state_bytes = _state_bytes(opt)
    opt.zero_grad(set_to_none=True)
    elapsed = time.perf_counter() - t0
    measured = {
        "max_memory_allocated_bytes": steady_peak,
        "max_memory_reserved_bytes": steady_reserved,
        "first_step_max_memory_allocated_bytes": first_peak,
        "parameter_bytes": param_bytes,
        "gradient_bytes": grad_bytes,
        "optimizer_state_bytes": state_bytes,
    }
    m = opt = None  # free both before the probe runs (the step closure holds the names)
    if cuda:
        torch.cuda.empty_cache()
    vocab = int(cfg["vocab_size"])

    def cls_inputs() -> dict[str, Any]:
        return {
            "input_ids": torch.randint(0, vocab, (batch, seq)),
            "labels": torch.randint(0, 2, (batch,)),
        }

    inputs = cls_inputs if encoder else None
    r = oomkit.probe(
        cfg, inputs, train=method, seq=seq, batch=batch, grad_checkpointing=ckpt,
        round_to_cuda_blocks=cuda,
    )  # fmt: skip
    r1 = oomkit.probe(
        cfg, inputs, train=method, seq=seq, batch=batch, grad_checkpointing=ckpt,
        round_to_cuda_blocks=cuda, steady_state=False,
    )  # fmt: skip
    formula = _formula(model, overrides, method, batch, seq, ckpt)
    peak = measured["max_memory_allocated_bytes"]
    return {
        "model": model,
        "overrides": overrides,
        "catalog_dropout_keys": True,  # the catalog's config carries the dropout keys
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
            "first_step_peak_bytes": r1.peak_bytes,
            "first_step_peak_phase": r1.peak_phase,
        },
        "formula_peak_allocated_bytes": formula,
        "probe_error": round(r.peak_bytes / peak - 1, 4) if peak else None,
        "probe_first_step_error": (
            round(r1.peak_bytes / first_peak - 1, 4) if first_peak else None
        ),
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
