"""The GPU validation scripts run their real code paths on the CPU (smoke), so a session that
has a GPU can trust them; the measurements themselves need CUDA."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _load(path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validate_transformers_cpu_smoke() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    mod = _load(ROOT / "benchmarks" / "gpu" / "validate_transformers.py")
    # a real Qwen2.5 architecture (2 layers) built from the catalog config, generate() on CPU
    out = mod.run_case("qwen2.5-0.5b", {"num_hidden_layers": 2}, 1, 16, 2, "sdpa", device="cpu")
    assert out["measured"]["max_memory_allocated_bytes"] is None
    pred = out["predicted"]
    # oomkit's weights equal the bytes of the real transformers model's parameters (tied
    # embedding counted once), and the KV cache is 2 layers x (K+V) x 2 heads x 64 x 2 bytes
    # per token for the 16 + 2 tokens generate() holds
    assert pred["weights_bytes"] == out["measured"]["parameter_bytes"]
    assert pred["kv_cache_bytes"] == 2 * 2 * 2 * 64 * 2 * 18


def test_validate_training_cpu_smoke() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    mod = _load(ROOT / "benchmarks" / "gpu" / "validate_training.py")
    # the real SmolLM2 architecture shrunk to 2 layers and a 2048-token vocabulary; one real
    # training step on CPU tensors (bf16 autocast, fp32 parameters, AdamW), next to the probe
    out = mod.run_case(
        "smollm2-135m", {"num_hidden_layers": 2, "vocab_size": 2048}, "full", 1, 32, False,
        device="cpu",
    )  # fmt: skip
    measured, probe = out["measured"], out["probe"]
    assert measured["max_memory_allocated_bytes"] is None
    assert probe["parameters_bytes"] == measured["parameter_bytes"]
    assert probe["gradients_bytes"] == measured["gradient_bytes"]
    assert probe["optimizer_state_bytes"] == measured["optimizer_state_bytes"]
    lora = mod.run_case(
        "smollm2-135m", {"num_hidden_layers": 2, "vocab_size": 2048}, "lora", 1, 32, True,
        device="cpu",
    )  # fmt: skip
    assert lora["probe"]["gradients_bytes"] == lora["measured"]["gradient_bytes"]
    assert lora["probe"]["optimizer_state_bytes"] == lora["measured"]["optimizer_state_bytes"]
    assert lora["probe"]["gradients_bytes"] < probe["gradients_bytes"]


#: a Llama-3.2 shrunk to one tiny layer (the real architecture, built from the catalog config)
SMALL = {"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128,
         "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
         "vocab_size": 512}  # fmt: skip


def test_validate_transformers_reads_nested_catalog_configs() -> None:
    """Llama 3.x configs carry a nested ``rope_scaling`` mapping; transformers >= 5 refuses the
    catalog's read-only view of it (seen on the H100 run), so the script passes plain dicts."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    mod = _load(ROOT / "benchmarks" / "gpu" / "validate_transformers.py")
    out = mod.run_case("llama-3.2-1b", SMALL, 1, 8, 2, "sdpa", device="cpu")
    assert out["predicted"]["weights_bytes"] == pytest.approx(
        out["measured"]["parameter_bytes"], rel=1e-3
    )


def test_reproduce_torchtune_cpu_smoke() -> None:
    """The torchtune reproduction's eager cases run their real code (chunked loss, activation
    checkpointing, foreach and fused AdamW) on a shrunk Llama-3.2 on the CPU."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    mod = _load(ROOT / "benchmarks" / "gpu" / "reproduce_torchtune.py")
    seen = set()
    for case_id, row, case in mod.CASES:
        if case_id.startswith("eager"):
            out = mod.run_case(case_id, row, case, device="cpu", overrides=SMALL)
            assert out["parameter_bytes"] > 0
            seen.add(out["settings"]["optimizer_impl"])
    assert seen == {"foreach", "fused"}


@pytest.mark.parametrize(
    "script",
    [
        "validate_transformers.py",
        "provoke_oom.py",
        "validate_training.py",
        "reproduce_torchtune.py",
    ],
)
def test_gpu_scripts_skip_cleanly_without_cuda(script: str) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():  # pragma: no cover - only on a GPU machine
        pytest.skip("CUDA present: the script would really run")
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu" / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert "skip" in r.stdout.lower()


@pytest.mark.parametrize("script", ["reproduce_torchtune.py", "llamacpp_cuda_oracle.py"])
@pytest.mark.parametrize("content", [None, "", "{not json", "[]", "{}"])
def test_score_refuses_a_bad_results_file_in_one_line(
    script: str, content: str | None, tmp_path: Path
) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu" / script), "--score", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stdout + r.stderr
    assert r.stdout.strip().startswith("error:")
    assert len(r.stdout.strip().splitlines()) == 1
