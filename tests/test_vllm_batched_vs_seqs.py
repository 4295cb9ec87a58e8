"""vLLM refuses ``--max-num-batched-tokens`` below ``--max-num-seqs``
(``SchedulerConfig._verify_args``): oomkit must refuse it too rather than size a KV pool for
an engine that never starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oomkit.api import estimate_model
from oomkit.catalog.models import find_model
from oomkit.errors import InvalidSettingError
from oomkit.hardware.catalog import find_gpu
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings


def test_cli_refuses_fewer_batched_tokens_than_sequences() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "estimate", "llama-3.1-8b", "-r", "vllm", "--gpu",
         "h100-sxm5", "--max-num-seqs", "512", "--max-num-batched-tokens", "100"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith(
        "Error: --max-num-batched-tokens 100 is below --max-num-seqs (512): vLLM refuses it"
    )


@pytest.mark.parametrize(("seqs", "batched"), [(64, 100), (100, 100)])
def test_batched_tokens_at_least_the_sequences_are_estimated(seqs: int, batched: int) -> None:
    hw = Hardware(devices=(find_gpu("h100-sxm5").to_device_target(),))
    s = InferenceSettings(runtime="vllm", max_num_seqs=seqs, max_num_batched_tokens=batched)
    est = estimate_model(find_model("llama-3.1-8b").name, s, hw)
    assert est.devices[0].total_bytes > 0
    bad = InferenceSettings(
        runtime="vllm", max_num_seqs=batched + 1, max_num_batched_tokens=batched
    )
    with pytest.raises(InvalidSettingError, match="is below 'max_num_seqs'"):
        estimate_model("llama-3.1-8b", bad, hw)
