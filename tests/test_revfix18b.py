"""Review 18b: one TP rule behind every --tp message, plan --pooling, settings.quant names the
type priced, --ctx max keeps "modelled:" (CLI end to end and the web API, real catalog models).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from conftest import run_cli
from oomkit.catalog.models import find_model
from oomkit.estimate.checks import tp_refusal, valid_tp_sizes


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert out, err
    return code, json.loads(out)


# -- 1. the valid sizes the --tp error lists are sizes the tool accepts -----------------------


def _valid_listed(err: str) -> list[int]:
    m = re.search(r"valid sizes: ([\d, ]+)", err)
    assert m, err
    return [int(x) for x in m.group(1).split(",")]


def test_tp_error_lists_only_sizes_every_check_accepts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # qwen2.5-14b: 40 attention heads, 8 KV heads: 5, 10, 20 divide the heads but neither
    # divide 8 nor are multiples of it (QKVParallelLinear's divide() fails)
    argv = ["estimate", "qwen2.5-14b", "-r", "vllm", "--offline"]
    # --vram: one GPU per rank, no count named, so every size the model allows is listed
    # (--gpu 3xa100-40gb caps the list at the 3 GPUs: planner23)
    code, _, err = run_cli(capsys, *argv, "--tp", "3", "--vram", "40GiB")
    assert code == 2
    listed = _valid_listed(err)
    assert listed == [1, 2, 4, 8]
    for tp in listed:
        code, _, err = run_cli(capsys, *argv, "--tp", str(tp), "--gpu", f"{tp}xa100-40gb")
        assert code in (0, 3), err  # accepted: an estimate, fitting or not
    code, _, err = run_cli(capsys, *argv, "--tp", "5", "--vram", "40GiB")
    assert code == 2
    assert "8 KV heads" in err
    assert _valid_listed(err) == listed  # one rule, one list in every message


@pytest.mark.parametrize(
    ("model", "tp", "why"),
    [
        ("qwen2.5-1.5b", 6, "intermediate size (8960)"),  # 12 heads, 2 KV heads: 6 passes them
        ("glm-4-32b-0414", 6, "vocabulary padded to 151552"),  # 48 heads, 2 KV heads
    ],
)
def test_tp_rule_has_the_mlp_and_vocab_divides(model: str, tp: int, why: str) -> None:
    spec = find_model(model).spec()
    refusal = tp_refusal(spec, tp)
    assert refusal is not None
    assert why in refusal
    assert tp not in valid_tp_sizes(spec)


def test_planner_picks_a_tp_the_rule_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    # 6 GPUs for qwen2.5-1.5b: 6 divides the heads and replicates the KV heads, but not the
    # MLP (8960 % 6); 5 not the heads (12 % 5); 4 divides the heads (12), replicates the 2 KV
    # heads (4 % 2) and the MLP (8960 % 4): the plan shards over 4 of the 6 (review 22: a tp
    # need not divide the GPUs, vLLM runs --tensor-parallel-size 4 on four of six)
    _code, doc = _json(
        capsys, ["plan", "qwen2.5-1.5b", "-r", "vllm", "--gpu", "6xrtx-4090", "--offline"]
    )
    assert doc["plans"], doc
    tp = doc["plans"][0]["settings"].get("tp") or 1
    assert tp_refusal(find_model("qwen2.5-1.5b").spec(), tp) is None
    assert tp == 4


# -- 2. plan --pooling, and the assumption estimate --pooling prints ---------------------------


def test_plan_takes_pooling_as_estimate_does(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["plan", "qwen3-8b", "-r", "vllm", "--gpu", "l4", "--offline"]
    _, with_pool = _json(capsys, [*base, "--pooling"])
    _, without = _json(capsys, base)
    # the pooler's profile run holds no logits: a larger KV pool, a longer context at bf16
    assert with_pool["plans"][0]["settings"].get("pooling") is True
    assert with_pool != without
    code, _, err = run_cli(capsys, "plan", "qwen3-8b", "--gpu", "l4", "--pooling", "--offline")
    assert code == 2
    assert "--pooling is a vLLM option" in err


def test_plan_pooling_command_runs_the_pooling_runner(capsys: pytest.CaptureFixture[str]) -> None:
    """The emitted ``vllm serve`` line must start the runner the estimate priced (vLLM PR #21470:
    ``--runner pooling`` replaced ``--task embed``); a generative plan never carries it."""
    from oomkit.planner.commands import parse_command

    base = ["plan", "qwen3-8b", "-r", "vllm", "--gpu", "l4", "--offline"]
    _, with_pool = _json(capsys, [*base, "--pooling"])
    _, without = _json(capsys, base)
    cmd = with_pool["plans"][0]["command"]
    assert parse_command("vllm", cmd)["--runner"] == ["pooling"]
    assert "--runner" not in parse_command("vllm", without["plans"][0]["command"])


def test_estimate_pooling_says_what_changed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "qwen3-8b", "-r", "vllm", "--gpu", "l4", "--pooling", "--offline"
    )
    assert code in (0, 3), err
    note = next(ln for ln in out.splitlines() if ln.strip().startswith("- --pooling:"))
    assert "pools hidden states" in note
    assert "instead of sampling" in note


# -- 3. settings.quant is the type priced ------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "quant"),
    [
        (["llama-3.1-8b", "--gpu", "rtx-3060"], "Q4_K_M"),  # llama.cpp's assumed file type
        (["gpt-oss-20b", "--gpu", "rtx-3060"], "MXFP4_MOE"),  # an MXFP4 checkpoint
        (["llama-3.1-8b", "-r", "ollama", "--gpu", "rtx-3060"], "Q4_K_M"),
        (["llama-3.1-8b", "-r", "vllm", "--gpu", "a100-40gb-pcie"], "bf16"),  # config dtype
        (["llama-3.1-8b", "-r", "sglang", "--gpu", "a100-40gb-pcie"], "bf16"),
        (["llama-3.1-8b", "-r", "transformers", "--gpu", "a100-40gb-pcie"], "bf16"),
        (["llama-3.1-8b", "-r", "vllm", "-q", "fp8", "--gpu", "a100-40gb-pcie"], "fp8"),
    ],
)
def test_settings_quant_is_the_type_priced_in_json_and_text(
    capsys: pytest.CaptureFixture[str], argv: list[str], quant: str
) -> None:
    _, doc = _json(capsys, ["estimate", *argv, "--offline"])
    assert doc["settings"]["quant"] == quant
    _, out, _ = run_cli(capsys, "estimate", *argv, "--offline")
    line = next(ln for ln in out.splitlines() if ln.startswith("settings:"))
    assert f"quant={quant}," in line


# -- 4. --ctx max keeps "modelled:" ----------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["llama-3.1-8b", "--gpu", "rtx-3060"],
        ["qwen3-8b", "-r", "vllm", "--gpu", "l4"],
    ],
)
def test_ctx_max_keeps_the_modelled_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    _, out_max, _ = run_cli(capsys, "estimate", *argv, "--ctx", "max", "--offline")
    _, out_n, _ = run_cli(capsys, "estimate", *argv, "--ctx", "4096", "--offline")
    modelled = [ln for ln in out_n.splitlines() if ln.startswith("modelled:")]
    assert modelled
    assert [ln for ln in out_max.splitlines() if ln.startswith("modelled:")] == modelled
    _, doc_max = _json(capsys, ["estimate", *argv, "--ctx", "max", "--offline"])
    _, doc_n = _json(capsys, ["estimate", *argv, "--ctx", "4096", "--offline"])
    gen = doc_n["runtime_details"]["generation"]
    assert doc_max["runtime_details"]["generation"] == gen


# -- the web API: the same rule and the same options --------------------------------------------


def test_web_api_plan_pooling_and_tp_sizes() -> None:
    pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    with TestClient(create_app()) as client:
        body = {"model": "qwen3-8b", "runtime": "vllm", "gpu": "l4", "pooling": True}
        r = client.post("/api/plan", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["plans"][0]["settings"].get("pooling") is True
        bad = {"model": "qwen2.5-14b", "runtime": "vllm", "gpu": "3xa100-40gb", "tp": 3}
        r = client.post("/api/estimate", json=bad)
        assert r.status_code in (400, 422), r.text
        assert "valid sizes on the 3 GPUs given: 1, 2" in r.text  # capped at the GPUs
        r = client.post("/api/estimate", json={"model": "llama-3.1-8b", "gpu": "rtx-3060"})
        assert r.json()["settings"]["quant"] == "Q4_K_M"
