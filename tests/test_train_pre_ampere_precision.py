"""Training precision on GPUs without native bf16, and pure fp16.

* Pre-Ampere cards (T4, V100, RTX 20xx: compute capability below 8.0) have no bf16 tensor
  cores (``torch.cuda.is_bf16_supported(including_emulation=False)`` is False there): training
  defaulted to bf16, printed ``bf16=True`` and offered "pure bf16". The default is now fp16
  mixed precision there (the HF Trainer's ``fp16=True``) and pure bf16 is never offered.
* ``--mixed-precision fp16 --no-master-weights`` was estimated as a run: the HF Trainer's
  GradScaler raises "Attempting to unscale FP16 gradients" on fp16 parameters and torchtune
  refuses fp16. It is refused (exit 2, one line), and an fp16 run's settings line no longer
  says ``dtype=bf16``."""

from __future__ import annotations

import pytest

from conftest import run_cli

T4 = ("llama-3.2-1b", "--train", "full", "--gpu", "t4", "--offline")


def _settings_line(out: str) -> str:
    return next(x for x in out.splitlines() if x.startswith("settings: "))


@pytest.mark.parametrize("gpu", ["t4", "v100", "rtx-2080-ti"])
def test_pre_ampere_training_defaults_to_fp16(capsys: pytest.CaptureFixture[str], gpu: str) -> None:
    _, out, err = run_cli(capsys, "estimate", "llama-3.2-1b", "--train", "full", "--gpu", gpu,
                          "--offline")  # fmt: skip
    line = _settings_line(out)
    assert "mixed_precision=fp16" in line, err
    assert "dtype=fp16" in line
    assert "fp16 mixed precision (the default on this GPU)" in out
    assert "bf16=True" not in out
    assert "fp16=True" in out
    assert "pure bf16" not in out


def test_pre_ampere_plan_never_offers_pure_bf16(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "plan", *T4)
    assert "fp16 mixed precision (the default on this GPU)" in out
    assert "bf16=True" not in out
    # bf16 asked for on a T4: priced as asked, but no pure bf16 offered either
    _, out, _ = run_cli(capsys, "estimate", *T4, "--mixed-precision", "bf16")
    assert "mixed_precision=bf16" in _settings_line(out)
    assert "--no-master-weights" not in out


def test_ampere_keeps_bf16(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "estimate", "llama-3.2-1b", "--train", "full", "--gpu", "a100",
                        "--offline")  # fmt: skip
    assert "mixed_precision=bf16" in _settings_line(out)
    assert "the default on this GPU" not in out


def test_pure_fp16_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "estimate", "llama-3.2-1b", "--train", "full", "--gpu",
                             "rtx-4090", "--mixed-precision", "fp16", "--no-master-weights",
                             "--offline")  # fmt: skip
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Attempting to unscale FP16 gradients" in err


def test_fp16_settings_line_says_fp16(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "estimate", "llama-3.2-1b", "--train", "lora", "--gpu",
                        "rtx-4090", "--mixed-precision", "fp16", "--offline")  # fmt: skip
    line = _settings_line(out)
    assert "mixed_precision=fp16" in line
    assert "dtype=fp16" in line
