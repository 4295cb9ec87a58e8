"""Problems benchmarks/fuzz_valid.py found, each replayed end to end through ``oomkit.cli.main``
with the command line it printed."""

from __future__ import annotations

import json
import shlex

import pytest

from oomkit.cli import main


def _run(line: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = shlex.split(line)
    assert args[0] == "oomkit"
    code = main(args[1:])
    out, err = capsys.readouterr()
    return code, out, err


def test_vllm_cpu_offload_above_the_weights_offloads_them_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # seed 1: 4 GiB per GPU offloaded from ~2.6 GiB of fp8 weights per rank (tp 4) gave
    # weights of -1.38 GiB per GPU; vLLM's maybe_offload_to_cpu stops when no parameter is left
    code, out, err = _run(
        "oomkit estimate deepseek-r1-0528-qwen3-8b --offline --runtime vllm --runtime-version "
        "2025-10-01 --context-length 4096 --quantization fbgemm_fp8 --kv-cache-dtype fp8 "
        "--headless --cpu-offload-gb 4 --gpu 4xh100-pcie --json",
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    weights = [d["weights_bytes"] for d in doc["devices"]]
    assert all(w >= 0 for w in weights)
    assert all(w < 64 << 20 for w in weights)  # the rotary cache only: the layers are on the CPU
    # the host holds what the GPUs do not: each rank's weights, not 4 x 4 GiB
    offloaded = doc["host"]["weights_bytes"]
    assert 8 << 30 < offloaded < 16 << 30
