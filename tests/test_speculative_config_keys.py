"""vLLM ``--speculative-config`` keys beyond method/model/num_speculative_tokens are carried into
the printed ``vllm serve`` line as given (review22 finding 4: ``prompt_lookup_max`` vanished, so
vLLM would have used its default n-gram window), and the ones that change the draft's memory
(vllm/config/speculative.py ``SpeculativeConfig``) are named in a note, as not priced."""

from __future__ import annotations

import json
import shlex

import pytest

from conftest import run_cli
from oomkit.errors import InvalidSettingError
from oomkit.estimate.speculative_keys import unpriced_keys
from oomkit.spec.settings import InferenceSettings

TARGET = "llama-3.1-8b"
GPU = "H100-SXM5-80GB"


def _config_in_run_line(out: str) -> dict[str, object]:
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("vllm serve"))
    words = shlex.split(line)  # as the shell reads it
    parsed = json.loads(words[words.index("--speculative-config") + 1])
    assert isinstance(parsed, dict)
    return parsed


def _plan(capsys: pytest.CaptureFixture[str], cfg: dict[str, object]) -> tuple[int, str]:
    code, out, err = run_cli(
        capsys,
        "plan",
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        GPU,
        "--offline",
        "--speculative-config",
        json.dumps(cfg),
    )
    assert code == 0, err
    return code, out


def test_ngram_window_reaches_the_command_without_a_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}
    _, out = _plan(capsys, cfg)
    assert _config_in_run_line(out) == cfg
    assert "not priced" not in out  # the n-gram window changes no memory


def test_memory_keys_are_carried_and_named_as_not_priced(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = {
        "method": "draft_model",
        "model": "llama-3.2-1b",
        "num_speculative_tokens": 4,
        "kv_cache_dtype": "fp8",
        "prompt_lookup_min": 2,
        "quantization": "fp8",
    }
    _, out = _plan(capsys, cfg)
    got = _config_in_run_line(out)
    assert got["model"] == "meta-llama/Llama-3.2-1B-Instruct"  # the catalog name's repo
    assert {k: v for k, v in got.items() if k != "model"} == {
        k: v for k, v in cfg.items() if k != "model"
    }
    note = next(ln for ln in out.splitlines() if "not priced" in ln)
    assert "kv_cache_dtype, quantization" in note
    assert "prompt_lookup_min" not in note
    code, est_out, err = run_cli(
        capsys,
        "estimate",
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        GPU,
        "--offline",
        "--speculative-config",
        json.dumps(cfg),
    )
    assert code == 0, err
    assert "--speculative-config kv_cache_dtype, quantization: passed to vLLM" in est_out


def test_method_spelling_priced_under_another_name_is_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = {"method": "ngram_gpu", "num_speculative_tokens": 4}
    _, out = _plan(capsys, cfg)
    assert _config_in_run_line(out) == cfg  # not rewritten to "ngram"


def test_quotes_in_a_value_survive_the_shell(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = {"method": "ngram", "num_speculative_tokens": 4, "revision": "it's"}
    _, out = _plan(capsys, cfg)
    assert _config_in_run_line(out) == cfg


def test_unpriced_keys_and_the_settings_field() -> None:
    assert unpriced_keys('{"prompt_lookup_max":4,"enforce_eager":true,"moe_backend":"x"}') == (
        "enforce_eager",
        "moe_backend",
    )
    with pytest.raises(InvalidSettingError, match="speculative_extra"):
        InferenceSettings(runtime="vllm", speculative_method="ngram", speculative_extra="[1]")
    with pytest.raises(InvalidSettingError, match="needs speculative_method"):
        InferenceSettings(runtime="vllm", speculative_extra='{"prompt_lookup_max":4}')


def test_a_bad_value_of_an_unpriced_key_is_passed_through_as_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """oomkit checks only that the extra keys form a JSON object (spec/settings_checks.py
    ``_check_speculative_extra``); their values are vLLM's to validate (``SpeculativeConfig``),
    so a string where vLLM wants a number, or a nested object, reaches the command unchanged,
    priced as without them, and an unpriced key is still named in the note."""
    cfg = {
        "method": "ngram",
        "num_speculative_tokens": 4,
        "prompt_lookup_max": "four",  # vLLM wants an int: its own error, not oomkit's
        "kv_cache_dtype": {"nested": [1, {"deeper": None}]},
    }
    _, out = _plan(capsys, cfg)
    assert _config_in_run_line(out) == cfg

    def estimate_json(config: dict[str, object]) -> dict[str, object]:
        code, est_out, err = run_cli(
            capsys, "estimate", TARGET, "-r", "vllm", "-g", GPU, "--offline", "--json",
            "--speculative-config", json.dumps(config),
        )  # fmt: skip
        assert code == 0, err
        doc = json.loads(est_out)
        assert isinstance(doc, dict)
        return doc

    doc = estimate_json(cfg)
    settings = doc["settings"]
    assert isinstance(settings, dict)
    extra = json.loads(settings["speculative_extra"])
    assert extra == {k: v for k, v in cfg.items() if k not in ("method", "num_speculative_tokens")}
    assumptions = doc["assumptions"]
    assert isinstance(assumptions, list)
    assert any("kv_cache_dtype: passed to vLLM as given" in a for a in assumptions)
    plain = estimate_json({"method": "ngram", "num_speculative_tokens": 4})
    assert doc["total_bytes"] == plain["total_bytes"]  # not priced: the same memory
    # the settings field takes the same text directly (the Python API)
    s = InferenceSettings(
        runtime="vllm", speculative_method="ngram", speculative_extra=json.dumps(extra)
    )
    assert s.speculative_extra == json.dumps(extra)


def test_a_priced_key_of_the_wrong_type_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The keys oomkit reads are checked: a non-number ``num_speculative_tokens`` or
    ``draft_tensor_parallel_size`` and a non-string ``model`` are refused in one line."""
    for cfg, words in (
        ({"method": "ngram", "num_speculative_tokens": "four"}, "num_speculative_tokens"),
        ({"method": "ngram", "num_speculative_tokens": {"n": 4}}, "num_speculative_tokens"),
        ({"method": "draft_model", "model": {"name": "x"}}, "'model' must be a string"),
        (
            {"method": "ngram", "num_speculative_tokens": 2, "draft_tensor_parallel_size": "2"},
            "draft_tensor_parallel_size",
        ),
    ):
        code, out, err = run_cli(
            capsys, "estimate", TARGET, "-r", "vllm", "-g", GPU, "--offline",
            "--speculative-config", json.dumps(cfg),
        )  # fmt: skip
        assert code == 2, (cfg, out, err)
        assert words in err
        assert len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
