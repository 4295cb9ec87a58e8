"""FakeTensor probe on small real transformers configs, and the formula held within 15% of it."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from oomkit.cli import main  # noqa: E402
from oomkit.errors import UnsupportedModelError  # noqa: E402
from oomkit.estimate.training import estimate_training  # noqa: E402
from oomkit.inprocess.fake_probe import probe, probe_hf  # noqa: E402
from oomkit.loaders.hf_config import parse_config  # noqa: E402
from oomkit.spec.hardware import Hardware  # noqa: E402
from oomkit.spec.settings import TrainingSettings  # noqa: E402
from oomkit.spec.tensors import count_params  # noqa: E402

# Real architectures at toy width so a trace takes a second: activations dominate at seq 512.
LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128,
    "intermediate_size": 352, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "vocab_size": 1024, "max_position_embeddings": 4096,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-5,
}  # fmt: skip
MIXTRAL = {
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 128,
    "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "vocab_size": 1024, "max_position_embeddings": 4096,
    "num_local_experts": 4, "num_experts_per_tok": 2, "tie_word_embeddings": False,
}  # fmt: skip


def _formula(cfg: dict[str, object], **kw: object) -> int:
    spec = parse_config(cfg, name="probe-test")
    s = TrainingSettings(master_weights=False, micro_batch=1, seq=512, **kw)  # type: ignore[arg-type]
    peak = estimate_training(spec, s, Hardware()).runtime_details["peak_allocated_bytes"]
    assert isinstance(peak, int)
    return peak


def test_inference_probe_counts_every_parameter() -> None:
    report = probe_hf(LLAMA, seq=64, rounded_for_gpu=False)
    spec = parse_config(LLAMA, name="t")
    assert report.categories["parameters"] == 2 * count_params(spec)
    assert report.peak_bytes >= report.categories["parameters"]
    assert report.details["model_type"] == "llama"
    assert report.top_modules


def test_gpu_rounding_rounds_each_allocation_to_512_bytes() -> None:
    plain = probe_hf(LLAMA, seq=64, rounded_for_gpu=False)
    rounded = probe_hf(LLAMA, seq=64, rounded_for_gpu=True)
    assert rounded.categories["parameters"] > plain.categories["parameters"]
    assert rounded.categories["parameters"] % 512 == 0


@pytest.mark.parametrize("cfg", [LLAMA, MIXTRAL], ids=["llama", "mixtral"])
@pytest.mark.parametrize("ckpt", [False, True], ids=["no-ckpt", "ckpt"])
def test_formula_within_15_percent_of_probe(cfg: dict[str, object], ckpt: bool) -> None:
    report = probe_hf(cfg, seq=512, train=True, grad_checkpointing=ckpt, rounded_for_gpu=False)
    formula = _formula(cfg, grad_checkpointing="full" if ckpt else "none")
    assert abs(formula - report.peak_bytes) / report.peak_bytes <= 0.15, (formula, report)
    assert report.categories["optimizer"] > 0
    assert report.train


def test_probe_accepts_a_plain_module_factory() -> None:
    def factory() -> object:
        return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                                   torch.nn.Linear(1024, 256))  # fmt: skip

    report = probe(factory, lambda: (torch.randn(64, 256),), train=True, rounded_for_gpu=False)
    params = 4 * (256 * 1024 + 1024 + 1024 * 256 + 256)
    assert report.categories["parameters"] == params
    assert report.categories["gradients"] <= params
    assert report.categories["optimizer"] >= 2 * params  # AdamW m and v (+ foreach temporary)


def test_remote_code_is_refused() -> None:
    cfg = dict(LLAMA, auto_map={"AutoModelForCausalLM": "x.Model"})
    with pytest.raises(UnsupportedModelError, match="remote code"):
        probe_hf(cfg, seq=8)


def test_probe_cli_json(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "config.json"
    path.write_text(json.dumps(LLAMA))
    code = main(["probe", str(path), "--seq", "64", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["peak_bytes"] > 0
    assert doc["categories"]["parameters"] > 0
