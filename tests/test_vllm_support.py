"""vLLM releases that cannot load a model, and Mllama's V0 fallback (oomkit.estimate.vllm_support).

Real catalog configs (gpt-oss-20b, Llama 3.2 11B Vision) parsed as any config.json is; the CLI
runs in a subprocess as a user runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

ROOT = Path(__file__).resolve().parent.parent
VISION = "llama-3.2-11b-vision"


def _vllm(model: str, gpu: str, version: str | None, **kw: int) -> Estimate:
    settings = InferenceSettings(runtime="vllm", runtime_version=version, **kw)
    return estimate(model, settings, hardware_for(parse_gpu_list(gpu)), offline=True)


@pytest.mark.parametrize(
    ("model", "version", "fix"),
    [
        ("gpt-oss-20b", "0.2.5", "0.10.1 or later"),
        ("gpt-oss-20b", "0.9.0", "0.10.1 or later"),
        ("gpt-oss-20b", "2025-07", "0.10.1 or later"),
        (VISION, "0.6.1", "0.6.2 or later"),
        (VISION, "0.11.0", "0.10.2 or earlier"),
        (VISION, "2026-01", "0.10.2 or earlier"),
    ],
)
def test_release_that_cannot_load_the_model_is_refused(model: str, version: str, fix: str) -> None:
    with pytest.raises(InvalidSettingError, match=fix) as err:
        _vllm(model, "h100-sxm", version, ctx=4096)
    assert err.value.setting == "runtime_version"


def test_refusal_is_one_line_exit_2() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "oomkit", "estimate", "gpt-oss-20b", "-r", "vllm"]
    cmd += ["--gpu", "h100-sxm", "--runtime-version", "0.2.5", "--offline"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 2
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert len(lines) == 1
    assert "cannot load gpt-oss-20b" in lines[0]


def test_supported_releases_still_estimate() -> None:
    assert _vllm("gpt-oss-20b", "h100-sxm", "0.10.1", ctx=4096).devices
    assert _vllm(VISION, "a100-80gb-sxm", "0.6.2", ctx=4096, max_num_seqs=32).devices
    assert _vllm(VISION, "a100-80gb-sxm", "0.10.2", ctx=4096, max_num_seqs=32).devices


def test_mllama_on_v1_releases_runs_on_v0() -> None:
    """0.8-0.10: V1 had no encoder-decoder support, so the V0 profile (one image per sequence)
    applies: 256 sequences need ~110 GiB as on 0.6.3 (vllm#9445)."""
    for version in ("0.8.0", "0.10.1"):
        est = _vllm(VISION, "a100-80gb-sxm", version, ctx=1024, max_num_seqs=256)
        assert est.runtime_details["engine"] == "v0-2025"
        assert est.runtime_details["activation_peak_bytes"] > 100 * GiB  # type: ignore[operator]
        assert est.blockers
        assert any("V0 engine" in n for n in est.assumptions)
    # a text model on the same release keeps V1
    assert _vllm("llama-3.1-8b", "h100-sxm", "0.10.1", ctx=1024).runtime_details["engine"] == (
        "v1-2025"
    )


def test_mllama_without_version_models_the_last_release_that_loads_it() -> None:
    est = _vllm(VISION, "a100-80gb-sxm", None, ctx=1024, max_num_seqs=32)
    assert est.runtime_details["engine"] == "v0-2025"
    assert any("no longer loads" in n and "0.10.2" in n for n in est.assumptions)
    gen = est.runtime_details["generation"]
    assert isinstance(gen, dict)
    assert gen["requested"] == "0.10.2"


def test_v0_fallback_does_not_chunk_a_multimodal_prefill() -> None:
    """_set_default_args_v0: no chunked prefill for a multimodal model even above 32K."""
    est = _vllm(VISION, "a100-80gb-sxm", "0.10.1", ctx=65536, max_num_seqs=8)
    assert est.runtime_details["max_num_batched_tokens"] == 65536


def test_plan_refuses_the_same_release_in_one_line() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "oomkit", "plan", "gpt-oss-20b", "-r", "vllm"]
    cmd += ["--gpu", "h100-sxm", "--runtime-version", "0.9.0", "--offline"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 2
    assert "cannot load gpt-oss-20b" in run.stderr + run.stdout
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("model", "version", "fix"),
    [
        # vllm#16199's Gemma 3 27B on the 0.7.x that its records once stood in with: 0.7.3's
        # registry.py has no Gemma3ForConditionalGeneration and its Transformers fallback calls
        # AutoModel.from_config, which transformers maps for gemma3_text only (vllm#14723)
        ("gemma-3-27b", "0.7.3", "0.8.0 or later"),
        ("gemma-3-4b", "2025-03-01", "0.8.0 or later"),
        # before the Transformers fallback (0.7.2) nothing loads Qwen3
        ("qwen3-8b", "0.7.1", "0.8.4 or later"),
        ("qwen3-30b-a3b", "0.6.6", "0.8.4 or later"),
        ("gemma-3-1b", "0.7.1", "0.8.0 or later"),
    ],
)
def test_gemma3_and_qwen3_before_their_release_are_refused(
    model: str, version: str, fix: str
) -> None:
    with pytest.raises(InvalidSettingError, match=fix):
        _vllm(model, "a100-80gb-sxm", version, ctx=4096)


@pytest.mark.parametrize(
    ("model", "version", "transformers"),
    [("qwen3-8b", "0.7.3", "4.51.0"), ("qwen3-30b-a3b", "0.8.3", "4.51.0"),
     ("gemma-3-1b", "0.7.2", "4.50.0")],
)  # fmt: skip
def test_transformers_fallback_releases_estimate_with_a_note(
    model: str, version: str, transformers: str
) -> None:
    """0.7.2-0.8.3 load Qwen3 (and 0.7.2-0.7.3 the text-only Gemma 3) through the Transformers
    backend when the installed transformers defines the class: an estimate, with a note."""
    est = _vllm(model, "a100-80gb-sxm", version, ctx=4096)
    note = [n for n in est.assumptions if "Transformers backend" in n]
    assert len(note) == 1  # said once: the run check and the estimator both find it
    assert f"transformers >= {transformers}" in note[0]
    # from the release that registers it, no note
    first = "0.8.4" if "qwen3" in model else "0.8.0"
    assert not any("Transformers backend" in n for n in _vllm(model, "a100-80gb-sxm", first,
                                                               ctx=4096).assumptions)  # fmt: skip


def test_vllm_use_v1_0_selects_v0_on_0_8_to_0_10_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """vllm#17431 ('same setup with VLLM_USE_V1=0' on 0.8.5) and vllm#16199 (0.8.3 with
    VLLM_USE_V1=0): vllm/envs.py reads bool(int(VLLM_USE_V1)); V0 is gone from 0.11.0."""
    monkeypatch.delenv("VLLM_USE_V1", raising=False)
    kw = {"ctx": 40960, "gpu_memory_utilization": 0.4}  # vllm#17431's Qwen3-8B on an A800
    assert _vllm("qwen3-8b", "a100-80gb-pcie", "0.8.5", **kw).runtime_details["engine"] == (
        "v1-2025-global"
    )
    monkeypatch.setenv("VLLM_USE_V1", "0")
    v0 = _vllm("qwen3-8b", "a100-80gb-pcie", "0.8.5", **kw)
    assert v0.runtime_details["engine"] == "v0-2025"
    assert any("VLLM_USE_V1=0" in n for n in v0.assumptions)
    assert _vllm("llama-3.1-8b", "h100-sxm", "0.10.1", ctx=1024).runtime_details["engine"] == (
        "v0-2025"
    )
    # V0 was removed in 0.11.0; before 0.8.0 V0 is the default already
    assert _vllm("llama-3.1-8b", "h100-sxm", "0.11.0", ctx=1024).runtime_details["engine"] == (
        "v1-0.11"
    )
    assert _vllm("llama-3.1-8b", "h100-sxm", "0.7.3", ctx=1024).runtime_details["engine"] == (
        "v0-2025"
    )
    monkeypatch.setenv("VLLM_USE_V1", "1")
    assert _vllm("qwen3-8b", "a100-80gb-pcie", "0.8.5", **kw).runtime_details["engine"] == (
        "v1-2025-global"
    )


def test_modelled_line_names_the_engine_the_run_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With VLLM_USE_V1=0 (or Mllama's V0 fallback) the estimate is V0's, but the generation
    label echoed as 'modelled:' read only 'vLLM V1 (0.8.0-0.9.0)', contradicting the note."""
    monkeypatch.setenv("VLLM_USE_V1", "0")
    v0 = _vllm("llama-3.1-8b", "h100-sxm", "0.8.5", ctx=1024)
    label = v0.runtime_details["generation"]["label"]  # type: ignore[index]
    assert "V0 engine (VLLM_USE_V1=0)" in label
    monkeypatch.delenv("VLLM_USE_V1")
    v1 = _vllm("llama-3.1-8b", "h100-sxm", "0.8.5", ctx=1024)
    assert "V0" not in v1.runtime_details["generation"]["label"]  # type: ignore[index]
    mllama = _vllm(VISION, "a100-80gb-sxm", "0.9.0", ctx=4096)
    assert "V0 engine" in mllama.runtime_details["generation"]["label"]  # type: ignore[index]


def test_vllm_use_v1_0_without_a_v0_engine_says_it_is_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0.11.0 removed V0: the variable selects nothing there, said instead of dropped silently."""
    monkeypatch.setenv("VLLM_USE_V1", "0")
    for version in ("0.11.0", None):
        est = _vllm("llama-3.1-8b", "h100-sxm", version, ctx=1024)
        assert any(n.startswith("VLLM_USE_V1=0 ignored") for n in est.assumptions), version
    on_v0 = _vllm("llama-3.1-8b", "h100-sxm", "0.8.5", ctx=1024)
    assert not any(n.startswith("VLLM_USE_V1=0 ignored") for n in on_v0.assumptions)
