"""vLLM releases whose get_rope lacks a model's rope_scaling type are refused (vllm_rope).

Real catalog configs (Llama 3.1's ``llama3``, Gemma 3's ``linear``, InternLM 2.5's ``dynamic``,
Phi-3.5's ``longrope``, gpt-oss's ``yarn``) and a real Qwen2-VL-style config.json (``mrope``)
parsed as any config.json is; the CLI runs as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.api import load_model
from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.estimate.vllm_rope import VLLM_ROPE_SUPPORT, check_vllm_rope


@pytest.mark.parametrize(
    ("model", "kind", "too_old", "first_ok"),
    [
        ("llama-3.1-8b", "llama3", "0.5.3", "0.5.3.post1"),
        ("llama-3.1-8b", "llama3", "0.1.0", "0.6.3"),
        ("llama-3.1-8b", "llama3", "2024-07", "2024-08"),
        ("gemma-3-4b", "linear", "0.1.2", "0.1.3"),
        ("internlm2.5-7b", "dynamic", "0.1.0", "0.1.3"),
        ("gpt-oss-20b", "yarn", "0.2.0", "0.2.1"),
        ("phi-3.5-mini", "longrope", "0.4.0", "0.4.1"),
        ("phi-3.5-mini", "longrope", "2024-04-01", "2024-05"),
    ],
)
def test_release_without_the_rope_type_is_refused(
    model: str, kind: str, too_old: str, first_ok: str
) -> None:
    spec = load_model(model, offline=True)
    assert spec.rope_scaling_type == kind
    with pytest.raises(InvalidSettingError) as err:
        check_vllm_rope(spec, too_old)
    assert err.value.setting == "runtime_version"
    msg = str(err.value)
    assert f"vLLM {too_old}" in msg
    assert f"'{kind}'" in msg
    assert VLLM_ROPE_SUPPORT[kind].first in msg
    assert "\n" not in msg
    check_vllm_rope(spec, first_ok)  # the first release that has it: no error
    check_vllm_rope(spec, None)  # no --runtime-version: the newest release is modelled


def test_mrope_config(tmp_path: Path) -> None:
    cfg = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "num_hidden_layers": 28,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    spec = load_model(str(path), offline=True)
    with pytest.raises(InvalidSettingError, match=r"'mrope' is first supported in vLLM 0\.6\.1"):
        check_vllm_rope(spec, "0.6.0")
    check_vllm_rope(spec, "0.6.1")


def test_models_without_rope_scaling_are_never_refused() -> None:
    spec = load_model("llama-3-8b", offline=True)
    assert spec.rope_scaling_type is None
    check_vllm_rope(spec, "0.1.0")


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_cli_refuses_in_one_line_exit_2(capsys: pytest.CaptureFixture[str], command: str) -> None:
    argv = [command, "llama-3.1-8b", "-r", "vllm", "--gpu", "a100-80gb-sxm4", "--offline"]
    capsys.readouterr()
    assert main([*argv, "--runtime-version", "0.1.0"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    errors = [ln for ln in cap.err.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1
    assert "vLLM 0.1.0 cannot run llama-3.1-8b" in errors[0]
    assert "'llama3'" in errors[0]
    assert "--runtime-version 0.5.3.post1 or later" in errors[0]
    assert main([*argv, "--runtime-version", "0.5.3.post1", "--ctx", "8192"]) in (0, 3, 4)
    assert "Error:" not in capsys.readouterr().err


def test_doctor_keeps_the_post_release_it_reads() -> None:
    """vllm#6689's own banner: 0.5.3.post1 runs Llama 3.1, so a doctor reading that log must
    not model (and refuse) 0.5.3."""
    from oomkit.diagnose.version import runtime_version_from_log

    log = "INFO 07-25 18:00:10 api_server.py:219] vLLM API server version 0.5.3.post1\n"
    found = runtime_version_from_log(log)
    assert found == ("vllm", "0.5.3.post1")
    check_vllm_rope(load_model("llama-3.1-8b", offline=True), found[1])
