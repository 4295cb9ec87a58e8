"""The probe's compiled decoder layers (AOTAutograd min-cut partition on fake tensors).

The compiled trace must keep less for backward than the eager one, by what the partitioner
recomputes: per token and layer, RMSNorm's fp32 input copy and weight-gradient copy and the
SiLU output (:mod:`oomkit.estimate.training_compile`).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from oomkit.estimate.training_activations import layer_activations
from oomkit.inprocess.probe import probe
from oomkit.inprocess.probe_step import StepOptions
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import TrainingSettings

H, INTER, LAYERS, BATCH, SEQ = 256, 512, 2, 2, 128
LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": H,
    "intermediate_size": INTER,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": LAYERS,
    "vocab_size": 4096,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
}
SPEC = ModelSpec(
    name="tiny",
    architecture="LlamaForCausalLM",
    model_type="llama",
    num_hidden_layers=LAYERS,
    hidden_size=H,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    v_head_dim=64,
    intermediate_size=INTER,
    vocab_size=4096,
)


def _run(train: str, compiled: bool) -> Any:
    return probe(
        LLAMA, train=train, seq=SEQ, batch=BATCH, round_to_cuda_blocks=False,
        mixed_precision=False, dtype="bf16",
        step=StepOptions(loss="chunked", compiled_layers=compiled),
    )  # fmt: skip


def test_compiled_layers_keep_what_the_partitioner_keeps() -> None:
    eager, comp = _run("full", False), _run("full", True)
    assert any("decoder layers compiled" in n for n in comp.notes)
    assert comp.peak_bytes < eager.peak_bytes
    traced = eager.saved_activations_bytes - comp.saved_activations_bytes
    s = TrainingSettings(micro_batch=BATCH, seq=SEQ, master_weights=False)
    formula = sum(a.saved_bytes for a in layer_activations(SPEC, s, trainable_roles=None))
    s_c = TrainingSettings(micro_batch=BATCH, seq=SEQ, master_weights=False, compiled=True)
    formula -= sum(a.saved_bytes for a in layer_activations(SPEC, s_c, trainable_roles=None))
    # the traced saving is the formula's (RMSNorm copies + SiLU output), within 5%
    assert formula > 0
    assert abs(traced - formula) <= 0.05 * formula, (traced, formula)


def test_compiled_lora_layers_keep_less() -> None:
    eager, comp = _run("lora", False), _run("lora", True)
    assert comp.saved_activations_bytes < eager.saved_activations_bytes
    # same adapters, same model states
    assert comp.trainable_parameter_count == eager.trainable_parameter_count
    assert comp.gradients_bytes == eager.gradients_bytes
    assert comp.optimizer_state_bytes == eager.optimizer_state_bytes


def test_checkpointed_layers_fall_back_to_the_eager_trace() -> None:
    kw: dict[str, Any] = {
        "train": "full", "seq": SEQ, "batch": BATCH, "round_to_cuda_blocks": False,
        "mixed_precision": False, "dtype": "bf16", "grad_checkpointing": True,
    }  # fmt: skip
    eager = probe(LLAMA, **kw, step=StepOptions(loss="chunked"))
    comp = probe(LLAMA, **kw, step=StepOptions(loss="chunked", compiled_layers=True))
    assert any("not traced with activation checkpointing" in n for n in comp.notes)
    assert comp.peak_bytes == eager.peak_bytes


def test_probe_cli_compile_flag(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from oomkit.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA))
    args = ["probe", str(cfg), "--train", "full", "--seq", str(SEQ), "--batch", str(BATCH),
            "--no-mixed-precision", "--chunked-loss", "--exact-bytes", "--json"]  # fmt: skip
    peaks = []
    for extra in ([], ["--compile"]):
        assert main([*args, *extra]) == 0
        doc = json.loads(capsys.readouterr().out)
        peaks.append(doc["peak_bytes"])
    assert peaks[1] < peaks[0]
    assert any("decoder layers compiled" in n for n in doc["notes"])


def test_cli_compile_without_train_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    assert main(["probe", "qwen2.5-0.5b", "--compile"]) == 2
    assert "--compile needs --train" in capsys.readouterr().err
