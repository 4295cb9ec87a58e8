"""Cross-check the training formula against the FakeTensor probe on real configs (shrunk depth).

    python benchmarks/training_vs_probe.py [--json benchmarks/training_vs_probe.json]

Each case takes a catalog model's real ``config.json`` with ``num_hidden_layers`` cut to a few
layers (widths, heads, vocabulary, experts, MLA ranks and sliding windows unchanged), builds the
``transformers`` model under FakeTensorMode and traces two training steps with PyTorch's
MemTracker (:mod:`oomkit.inprocess.fake_probe`), and compares the peak with oomkit's formula
(``runtime_details.peak_allocated_bytes``) for the same setup: pure bf16 training (parameters,
gradients and AdamW states in bf16, foreach AdamW), SDPA attention, HF's own loss.

Setups: full fine-tuning, full + gradient checkpointing, and a frozen base (only the attention
``q_proj``/``v_proj`` weights train; the optimizer and gradients cover just them), which has the
activation pattern of LoRA on q/v without PEFT's adapter tensors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: (catalog model, what it covers, layers kept, attention implementation)
CASES: tuple[tuple[str, str, int, str], ...] = (
    ("llama-3.2-1b", "dense GQA, tied embeddings", 2, "sdpa"),
    ("qwen2.5-0.5b", "dense GQA, tied, qkv bias", 2, "sdpa"),
    ("gemma-2-2b", "sliding window, soft-capping, tied (eager: no SDPA in HF)", 2, "eager"),
    ("mistral-7b", "dense GQA, untied", 2, "sdpa"),
    ("qwen1.5-moe-a2.7b", "MoE 60 experts + shared expert", 2, "sdpa"),
    ("deepseek-v2-lite", "MLA + MoE (first layer dense)", 2, "sdpa"),
)
SETUPS: tuple[str, ...] = ("full", "full+ckpt", "frozen-base-qv")
BATCH, SEQ = 1, 512


def _config(name: str, layers: int) -> dict[str, Any]:
    from oomkit.catalog.models import find_model

    cfg = json.loads(json.dumps(find_model(name).config, default=dict))
    cfg["num_hidden_layers"] = layers
    for key in ("layer_types",):
        if isinstance(cfg.get(key), list):
            cfg[key] = cfg[key][:layers]
    return cfg


def _probe(cfg: dict[str, Any], setup: str, attn: str) -> int:
    from oomkit.inprocess.fake_probe import probe, probe_hf

    if setup != "frozen-base-qv":
        return probe_hf(
            cfg,
            batch=BATCH,
            seq=SEQ,
            train=True,
            grad_checkpointing=setup == "full+ckpt",
            attn_implementation=attn,
        ).peak_bytes
    import torch
    import transformers

    c = dict(cfg)
    model_type = c.pop("model_type")
    hf = transformers.AutoConfig.for_model(model_type, **c)

    def factory() -> Any:
        m = transformers.AutoModelForCausalLM.from_config(
            hf, dtype=torch.bfloat16, attn_implementation=attn
        )
        # MemTracker hooks every parameter's gradient, so frozen weights become buffers (same
        # storage, no gradient): the probe's "buffers" are the frozen base
        for mod_name, mod in m.named_modules():
            for n, p in list(mod.named_parameters(recurse=False)):
                if not f"{mod_name}.{n}".endswith(("q_proj.weight", "v_proj.weight")):
                    del mod._parameters[n]
                    mod.register_buffer(n, p.detach(), persistent=False)
        return m

    def inputs() -> dict[str, Any]:
        ids = torch.randint(0, hf.vocab_size, (BATCH, SEQ))
        return {"input_ids": ids, "labels": ids, "use_cache": False}

    return probe(factory, inputs, train=True).peak_bytes


def _formula(name: str, cfg: dict[str, Any], setup: str, attn: str) -> int:
    from oomkit.estimate.training import estimate_training
    from oomkit.loaders.hf_config import parse_config
    from oomkit.spec.hardware import Hardware
    from oomkit.spec.settings import TrainingSettings

    spec = parse_config(cfg, name=name)
    base: dict[str, Any] = {
        "master_weights": False,
        "micro_batch": BATCH,
        "seq": SEQ,
        "attn_implementation": attn,
    }
    if setup == "full+ckpt":
        base["grad_checkpointing"] = "full"
    if setup == "frozen-base-qv":
        s = TrainingSettings(**base)
        return _frozen_qv(spec, s)
    est = estimate_training(spec, TrainingSettings(**base), Hardware())
    peak = est.runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    return peak


def _frozen_qv(spec: Any, s: Any) -> int:
    """The formula with only q/v weights trainable: LoRA's activation pattern, dense updates."""
    import dataclasses

    from oomkit.estimate import training_states
    from oomkit.estimate.training import estimate_training
    from oomkit.spec.hardware import Hardware

    qv = [
        t
        for t in training_states._parameter_tensors(spec)
        if training_states._stem(t) in ("attn_q", "attn_v")
    ]
    original = training_states.trainable_tensors

    def only_qv(spec_: Any, settings: Any) -> tuple[Any, ...]:
        return tuple(qv) if settings.method == "lora" else original(spec_, settings)

    lora = dataclasses.replace(s, method="lora", lora_targets=("q_proj", "v_proj"))
    training_states.trainable_tensors = only_qv  # type: ignore[assignment]
    import oomkit.estimate.training as tr

    tr_orig = tr.trainable_tensors
    tr.trainable_tensors = only_qv  # type: ignore[assignment]
    try:
        est = estimate_training(spec, lora, Hardware())
    finally:
        training_states.trainable_tensors = original  # type: ignore[assignment]
        tr.trainable_tensors = tr_orig  # type: ignore[assignment]
    peak = est.runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    return peak


def run(cases: tuple[tuple[str, str, int, str], ...] = CASES) -> list[dict[str, Any]]:
    rows = []
    for name, covers, layers, attn in cases:
        cfg = _config(name, layers)
        for setup in SETUPS:
            probe_b = _probe(cfg, setup, attn)
            formula_b = _formula(name, cfg, setup, attn)
            rows.append(
                {
                    "model": name,
                    "covers": covers,
                    "layers": layers,
                    "setup": setup,
                    "attn_implementation": attn,
                    "batch": BATCH,
                    "seq": SEQ,
                    "probe_bytes": probe_b,
                    "formula_bytes": formula_b,
                    "error": (formula_b - probe_b) / probe_b,
                }
            )
            print(
                f"{name:<20}{setup:<16}probe {probe_b / 2**30:7.3f} GiB  formula "
                f"{formula_b / 2**30:7.3f} GiB  {100 * rows[-1]['error']:+6.1f}%",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = run()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
