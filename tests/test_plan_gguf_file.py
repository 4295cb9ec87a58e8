"""Planning a local .gguf file: the file runs with the tensor types its header holds.

Before, ``plan FILE.gguf`` labelled the plan with a quant of its ladder ("weights Q8_0", with
Q8_0's published quality) and offered "alternatives" at other quants whose memory was the same
file's, and ``--quant`` was echoed in ``estimate`` while the header's types were used.
The file is a real GGUF (``tests/fixtures/gguf``, written with gguf-py) mixing F32, F16, Q4_K,
Q6_K and Q8_0 tensors: no single quant names it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GGUF = str(Path(__file__).parent / "fixtures" / "gguf" / "tiny-llama-mixed.gguf")


def _oomkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _one_error(res: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1, res.stderr
    return errors[0]


def test_plan_of_a_gguf_file_runs_the_file_as_it_is() -> None:
    res = _oomkit("plan", GGUF, "--gpu", "rtx-3060", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    for p in doc["plans"]:
        assert p["settings"].get("quant") is None
        assert p["quality"] is None  # no published quant quality describes a mixed file
        assert f"-m {GGUF} " in p["command"]
        assert "weights as in the .gguf file" in p["changes"]
    text = _oomkit("plan", GGUF, "--gpu", "rtx-3060").stdout
    assert "weights as in the .gguf file" in text
    assert "Q8_0" not in text


def test_plan_of_a_gguf_file_refuses_a_quant() -> None:
    res = _oomkit("plan", GGUF, "--gpu", "rtx-3060", "--quant", "Q4_K_M")
    assert res.returncode == 2
    assert "--quant Q4_K_M does not apply to a .gguf file" in _one_error(res)


def test_estimate_of_a_gguf_file_says_the_quant_is_ignored() -> None:
    res = _oomkit("estimate", GGUF, "--quant", "Q2_K", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    plain = json.loads(_oomkit("estimate", GGUF, "--json").stdout)
    assert doc["devices"][0]["weights_bytes"] == plain["devices"][0]["weights_bytes"]
    assert any("quant Q2_K ignored" in a for a in doc["assumptions"])
    assert not any("ignored" in a for a in plain["assumptions"])


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        ((GGUF, "--quant", "Q4_K_M"), 2, "does not apply to a .gguf file"),
        (("llama-3.1-8b", "--quant", "Q9"), 1, "Unknown llama.cpp file type 'Q9'"),
        (("llama-3.1-8b", "-r", "vllm", "--quant", "zz"), 1, "Unknown HF weight format 'zz'"),
    ],
)
def test_gpus_for_refuses_a_bad_quant_instead_of_no_gpu(
    args: tuple[str, ...], code: int, needle: str
) -> None:
    """An unknown quant used to answer "0 GPU model(s) run it" (exit 3)."""
    res = _oomkit("gpus", "--for", *args)
    assert res.returncode == code, res.stderr
    assert needle in _one_error(res)
    assert "0 GPU model(s)" not in res.stdout


def test_estimate_of_a_gguf_that_does_not_fit_keeps_its_answer_with_a_quant() -> None:
    """The suggestions step planned with the ignored --quant and died with a usage error
    after printing the estimate (exit 2)."""
    res = _oomkit("estimate", GGUF, "--vram", "100MiB", "--quant", "Q4_K_M")
    assert res.returncode == 3, res.stderr
    assert "Error" not in res.stderr
    assert "quant Q4_K_M ignored" in res.stdout
