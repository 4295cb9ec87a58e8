"""benchmarks/doctor_calibration.py: diagnoses binned by stated confidence, agreement per bin."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _module() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "doctor_calibration", ROOT / "benchmarks" / "doctor_calibration.py"
    )
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_confidence_falls_in_the_bin_whose_edge_it_reaches() -> None:
    cal = _module()
    assert cal._bin(0.0) == 0.0
    assert cal._bin(0.35) == 0.3
    assert cal._bin(0.45) == 0.45  # the base rate's ceiling opens its own bin
    assert cal._bin(0.449) == 0.4
    assert cal._bin(0.9) == 0.8


def test_the_table_counts_agreement_per_bin() -> None:
    cal = _module()
    lines = cal.table([(0.35, True), (0.33, False), (0.85, True), (0.9, True)])
    by_bin = {line.split()[0]: line.split() for line in lines[1:]}
    assert by_bin["0.30-0.40"][1:4] == ["2", "1", "50%"]
    assert by_bin["0.80-1.00"][1:4] == ["2", "2", "100%"]
    assert by_bin["all"][1:4] == ["4", "3", "75%"]
    assert "0.40-0.45" not in by_bin  # empty bins are not printed
