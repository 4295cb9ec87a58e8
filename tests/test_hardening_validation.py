"""Issue 10 item 1: every boundary value is validated (one-line typed errors, exit 2).

Each row is a case from the issue: CLI flags through ``main`` and public dataclasses directly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from oomkit import DeviceTarget, Hardware, InferenceSettings
from oomkit.api import estimate_model, load_model
from oomkit.errors import InvalidModelSpecError, InvalidSettingError, OomkitError
from oomkit.spec.model import ModelSpec, MoESpec
from oomkit.spec.settings import TrainingSettings

CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines, err
    assert lines[0].startswith("Error: "), err
    assert "Traceback" not in err
    assert len(lines) <= 2, lines
    return lines[0]


# (argv after "estimate llama-3.1-8b", words the one-line error must contain)
CLI_REFUSED: list[tuple[list[str], tuple[str, ...]]] = [
    (["--runtime", "vllm", "--max-num-batched-tokens", "-5"], ("--max-num-batched-tokens", "-5")),
    (["--runtime", "vllm", "--max-num-seqs", "-1"], ("--max-num-seqs", "[1,")),
    (["-ngl", "-5"], ("-ngl", "[-1,")),
    (["--tp", "1000000"], ("--tp", "1024")),
    (["--tp", "0"], ("--tp",)),
    (["--runtime", "vllm", "--ctx", "0"], ("--ctx",)),  # llama.cpp's -c 0: trained context
    (["--runtime", "vllm", "--tp", "3"], ("attention heads (32)", "1, 2, 4, 8")),
    (["--runtime", "vllm", "--tp", "4", "--gpu", "rtx-4090"], ("needs 4 GPUs", "has 1")),
    (["--runtime", "sglang", "--tp", "3"], ("attention heads",)),
    (["--runtime", "vllm", "--gpu", "m2-max"], ("Apple",)),
    (["--runtime", "vllm", "--gpu", "cpu"], ("CPU-only",)),
    (["--runtime", "sglang", "--gpu", "cpu"], ("CPU-only",)),
    (["--runtime", "vllm", "--ctx", "1M"], ("max_position_embeddings", "131072")),
    (["--runtime", "vllm", "--gpu-memory-utilization", "nan"], ("--gpu-memory-utilization",)),
    (["--runtime", "vllm", "--gpu-memory-utilization", "1.5"], ("(0, 1]",)),
    (["--runtime", "sglang", "--mem-fraction-static", "0"], ("--mem-fraction-static",)),
    (["--runtime", "vllm", "--block-size", "48"], ("--block-size", "16")),
    (["--runtime", "vllm", "--cpu-offload-gb", "inf"], ("--cpu-offload-gb",)),
    (["--tensor-split", "3,x"], ("--tensor-split",)),
    (["--tensor-split", "0,0"], ("--tensor-split",)),
    (["-ot", "attn=CPU"], ("override-tensor",)),
    (["--pp", "0"], ("--pp",)),
    (["--n-cpu-moe", "-1"], ("--n-cpu-moe",)),
]


@pytest.mark.parametrize(
    ("argv", "words"), CLI_REFUSED, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_cli_refuses(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: tuple[str, ...]
) -> None:
    code, out, err = run_cli(capsys, "estimate", "llama-3.1-8b", "--offline", *argv)
    line = _one_line(err)
    assert code == 2, err
    assert out == ""
    for w in words:
        assert w in line, (w, line)


def test_vllm_long_ctx_allowed_by_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    code, out, err = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--runtime", "vllm", "--ctx", "256k", "--json"
    )
    assert code in (0, 3), err
    doc = json.loads(out)
    assert doc["settings"]["ctx"] == 262144
    assert any("VLLM_ALLOW_LONG_MAX_MODEL_LEN" in a for a in doc["assumptions"])


def test_ngl_minus_one_is_all_layers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "estimate", "llama-3.1-8b", "-ngl", "-1", "--gpu", "rtx-4090", "--json"
    )
    all_code, all_out, _ = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--json"
    )
    assert code == all_code == 0
    assert json.loads(out)["devices"] == json.loads(all_out)["devices"]
    assert json.loads(out)["settings"]["n_gpu_layers"] == 33  # 32 blocks + output layer


def test_two_gpus_on_vllm_without_tp_uses_both(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--runtime", "vllm", "--gpu", "2xa100-80gb", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["tp"] == 2
    assert len(doc["devices"]) == 2
    assert any("assumed --tp 2" in a for a in doc["assumptions"])


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--tp", "2"], "--tp"),
        (["--runtime", "vllm", "-ngl", "10"], "-ngl"),
        (["--runtime", "transformers", "--kv-dtype", "q8_0"], "--kv-dtype"),
        (["--runtime", "sglang", "--block-size", "16"], "--block-size"),
    ],
)
def test_ignored_flags_warn(capsys: pytest.CaptureFixture[str], argv: list[str], flag: str) -> None:
    code, out, err = run_cli(capsys, "estimate", "llama-3.1-8b", *argv, "--json")
    assert code in (0, 3), err
    assert err.startswith("Warning: ")
    assert flag in err
    assert "ignored" in err
    assert any("ignored by" in a for a in json.loads(out)["assumptions"])


def test_new_flags_reach_settings_echo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--gpu", "2xrtx-4090", "-ts", "3,1", "-sm", "row",
        "--no-mmap", "--json",
    )  # fmt: skip
    assert code == 0, err
    s = json.loads(out)["settings"]
    assert (s["tensor_split"], s["split_mode"], s["mmap"]) == ("3,1", "row", False)
    code, out, err = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--runtime", "vllm", "--gpu", "rtx-4090",
        "--cpu-offload-gb", "4", "--block-size", "32", "--ctx", "8k", "--json",
    )  # fmt: skip
    s = json.loads(out)["settings"]
    assert (s["cpu_offload_bytes"], s["block_size"]) == (4 << 30, 32)
    code, out, err = run_cli(
        capsys, "estimate", "llama-3.1-8b", "--runtime", "sglang", "--gpu", "a100-80gb",
        "--mem-fraction-static", "0.5", "--json",
    )  # fmt: skip
    assert json.loads(out)["settings"]["mem_fraction_static"] == 0.5


def test_override_tensor_exps_cpu_is_n_cpu_moe(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["estimate", "qwen3-30b-a3b", "--gpu", "rtx-4090", "--json"]
    _, ot_out, _ = run_cli(capsys, *base, "-ot", "exps=CPU")
    _, moe_out, _ = run_cli(capsys, *base, "--n-cpu-moe", "48")
    ot, moe = json.loads(ot_out), json.loads(moe_out)
    assert ot["settings"]["n_cpu_moe"] == 48
    assert ot["devices"] == moe["devices"]
    _, first3, _ = run_cli(capsys, *base, "-ot", r"blk\.(0|1|2)\.ffn_.*_exps=CPU")
    assert json.loads(first3)["settings"]["n_cpu_moe"] == 3


def test_transformers_cpu_only_uses_host_ram(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["estimate", "llama-3.1-8b", "--runtime", "transformers", "--gpu", "cpu", "--json"]
    code, out, _ = run_cli(capsys, *base, "--ram", "15GiB")
    doc = json.loads(out)
    assert code == 3
    assert doc["fits"] is False
    assert doc["devices"] == []
    assert doc["host"]["total_bytes"] > 15 * 2**30
    code, out, _ = run_cli(capsys, *base, "--ram", "32GiB")
    assert code == 0
    assert json.loads(out)["fits"] is True


# --- Python API dataclasses ------------------------------------------------------------------

BAD_SETTINGS: list[dict[str, Any]] = [
    {"ctx": float("nan")},
    {"ctx": 8192.0},
    {"ctx": "8192"},
    {"ctx": True},
    {"ctx": -1},
    {"gpu_memory_utilization": float("nan")},
    {"gpu_memory_utilization": "0.9"},
    {"gpu_memory_utilization": math.inf},
    {"gpu_memory_utilization": 0},
    {"max_num_seqs": -1},
    {"max_num_batched_tokens": -8},
    {"n_gpu_layers": -2},
    {"tp": 0},
    {"tp": 1_000_000},
    {"runtime": 3},
    {"flash_attn": "yes"},
    {"split_mode": "diagonal"},
    {"tensor_split": (1.0, math.nan)},
    {"block_size": 24},
    {"overhead_bytes": -1},
    {"cpu_offload_bytes": 2.5},
]


@pytest.mark.parametrize("kw", BAD_SETTINGS, ids=lambda kw: repr(kw))
def test_inference_settings_refuse(kw: dict[str, Any]) -> None:
    field = next(iter(kw))
    with pytest.raises(InvalidSettingError) as ei:
        InferenceSettings(**kw)
    msg = str(ei.value)
    assert "\n" not in msg
    assert field in msg


@pytest.mark.parametrize(
    "kw",
    [{"micro_batch": 0}, {"zero": 4}, {"gpus": 1.5}, {"method": "dora"}, {"seq": math.nan}],
    ids=repr,
)
def test_training_settings_refuse(kw: dict[str, Any]) -> None:
    with pytest.raises(InvalidSettingError, match=next(iter(kw))):
        TrainingSettings(**kw)


@pytest.mark.parametrize(
    "kw",
    [
        {"capacity_bytes": -1},
        {"capacity_bytes": 24.0 * 2**30},
        {"capacity_bytes": math.nan},
        {"backend": "cuda:0"},
        {"name": ""},
        {"unified_memory": 1},
    ],
    ids=repr,
)
def test_device_target_refuse(kw: dict[str, Any]) -> None:
    args: dict[str, Any] = {"name": "GPU", **kw}
    with pytest.raises(InvalidSettingError):
        DeviceTarget(**args)


def test_hardware_refuse() -> None:
    with pytest.raises(InvalidSettingError, match="host_ram_bytes"):
        Hardware(host_ram_bytes=-5)
    with pytest.raises(InvalidSettingError, match="devices"):
        Hardware(devices=("rtx-4090",))  # type: ignore[arg-type]
    with pytest.raises(InvalidSettingError, match="at most 1024"):
        Hardware(devices=(DeviceTarget(name="g"),) * 1025)


_LLAMA: dict[str, Any] = dict(
    name="m", architecture="LlamaForCausalLM", model_type="llama", num_hidden_layers=2,
    hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16, v_head_dim=16,
    intermediate_size=128, vocab_size=100,
)  # fmt: skip


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"num_hidden_layers": 2**63}, "num_hidden_layers"),
        ({"num_attention_heads": 0}, "num_attention_heads"),
        ({"num_key_value_heads": 8}, "num_key_value_heads"),
        ({"hidden_size": -64}, "hidden_size"),
        ({"hidden_size": 64.0}, "hidden_size"),
        ({"vocab_size": math.inf}, "vocab_size"),
        ({"head_dim": 0}, "head_dim"),
    ],
    ids=repr,
)
def test_model_spec_refuse(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidModelSpecError, match=field):
        ModelSpec(**{**_LLAMA, **kw})


@pytest.mark.parametrize(
    "kw", [{"num_experts_per_tok": 0}, {"num_experts_per_tok": 10**7}, {"num_experts": 0}], ids=repr
)
def test_moe_spec_refuse(kw: dict[str, Any]) -> None:
    args: dict[str, Any] = {
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "expert_intermediate_size": 64,
    }
    with pytest.raises(InvalidModelSpecError, match=next(iter(kw))):
        MoESpec(**{**args, **kw})


def test_estimate_wrong_types_are_typed_errors() -> None:
    with pytest.raises(InvalidSettingError, match="settings must be InferenceSettings"):
        estimate_model("llama-3.1-8b", {"ctx": 4096})  # type: ignore[arg-type]
    with pytest.raises(InvalidSettingError, match="hardware must be Hardware"):
        estimate_model("llama-3.1-8b", None, "rtx-4090")  # type: ignore[arg-type]
    with pytest.raises(OomkitError):
        load_model(42)  # type: ignore[arg-type]


def test_load_model_accepts_path() -> None:
    spec = load_model(CONFIGS / "llama-3.1-8b.json")
    assert spec.num_hidden_layers == 32
    est = estimate_model(CONFIGS / "llama-3.2-1b.json")
    assert est.model.name
