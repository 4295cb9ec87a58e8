"""The doctor's unsized --mem-fraction-static step keeps SGLang's activation floor on the card the
log shows (diagnose/rules_sglang.py card_total, docfix22): SGLang's tuning guide keeps 5-8 GB
outside the fraction (estimate/sglang_activation_floor.py), so on a 22 GiB card no step goes
past 0.77 (total x (1 - fraction) >= 5 GiB)."""

from __future__ import annotations

import re

from oomkit.diagnose.doctor import diagnose_text

# nvidia-smi's table (550 driver) and SGLang's own message (model_runner.py, v0.4.x; the
# development record h7-gpustack-3831 quotes it)
_SMI = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 2080 Ti     Off |   00000000:01:00.0 Off |                  N/A |
| 30%   35C    P8             20W /  250W |       1MiB /  {mib}MiB |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""
_MSG = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: self.server_args.mem_fraction_static={mfs}"
)


def _raised(mib: int, mfs: float) -> list[float]:
    d = diagnose_text(_SMI.format(mib=mib) + _MSG.format(mfs=mfs))
    out = []
    for f in d.fixes:
        m = re.match(r"Raise --mem-fraction-static to (0\.\d+)", f.title)
        if m:
            out.append(float(m.group(1)))
    return out


def test_step_past_the_floor_on_a_22gb_card_is_not_suggested() -> None:
    # 0.80 + 0.05 = 0.85 would leave 3.3 GiB of 22 GiB outside the pool, under the 5 GiB floor;
    # the largest fraction that keeps it (0.77) is not above the run's own
    assert _raised(22528, 0.8) == []


def test_step_the_floor_allows_is_kept() -> None:
    # near-miss: 0.70 -> 0.75 leaves 5.5 GiB of 22 GiB outside the pool
    assert _raised(22528, 0.7) == [0.75]


def test_step_is_capped_at_the_floor_on_a_smaller_card() -> None:
    # 12 GiB: the floor allows at most 0.58, below the run's 0.6 + 0.05
    assert _raised(12288, 0.6) == []
    assert _raised(12288, 0.5) == [0.55]


def test_no_card_in_the_log_keeps_the_plain_step() -> None:
    d = diagnose_text(_MSG.format(mfs=0.8))
    assert any(f.title == "Raise --mem-fraction-static to 0.85" for f in d.fixes)
