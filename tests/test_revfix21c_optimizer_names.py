"""review21 finding 16: the HF Trainer / TRL ``optim`` names oomkit plan prints
(``adamw_bnb_8bit``, ``paged_adamw_8bit``, ...) are accepted by ``--optimizer`` as aliases."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from oomkit.cli.train_options import resolve_optimizer
from oomkit.planner.trainer_names import HF_OPTIM

_BASE = ("estimate", "llama-3.1-8b", "--train", "lora", "--gpu", "a100-80gb", "--offline")


def _doc(capsys: pytest.CaptureFixture[str], optimizer: str) -> dict:
    code, out, err = run_cli(capsys, *_BASE, "--optimizer", optimizer, "--json")
    assert code in (0, 3, 4), err
    return json.loads(out)


@pytest.mark.parametrize(("hf", "ours"), sorted({v: k for k, v in HF_OPTIM.items()}.items()))
def test_every_printed_optim_name_is_accepted(
    capsys: pytest.CaptureFixture[str], hf: str, ours: str
) -> None:
    assert resolve_optimizer(hf, "foreach")[0] == ours  # the name plan prints maps back
    assert _doc(capsys, hf)["devices"] == _doc(capsys, ours)["devices"]


def test_fused_alias_sets_the_implementation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, *_BASE, "--optimizer", "adamw", "--optimizer-impl", "fused", "--json"
    )
    assert code in (0, 3), err
    assert _doc(capsys, "adamw_torch_fused")["devices"] == json.loads(out)["devices"]


def test_paged_alias_keeps_states_off_the_gpu_peak(capsys: pytest.CaptureFixture[str]) -> None:
    paged = _doc(capsys, "paged_adamw_8bit")
    plain = _doc(capsys, "adamw_bnb_8bit")
    assert paged["devices"][0]["optimizer_bytes"] == 0 < plain["devices"][0]["optimizer_bytes"]
    assert any("paged optimizer states" in a for a in paged["assumptions"])


def test_unknown_name_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, *_BASE, "--optimizer", "paged_lion_32bit")
    assert code == 2
    assert "Invalid value for '--optimizer'" in err
