"""Live oracle: load a sparse GGUF with the real llama.cpp (marker ``oracle``; not in the default
run). Needs ``pip install llama-cpp-python gguf``. Full run:
``python benchmarks/oracle/run_oracle.py --out benchmarks/oracle/results.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.oracle
def test_live_llamacpp_matches_estimate(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    out = tmp_path / "r.json"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "oracle" / "run_oracle.py"),
            "--out",
            str(out),
            "--only",
            "llama-3.2-1b",
        ],
        check=True,
        timeout=600,
    )
    records = [r for r in json.loads(out.read_text())["records"] if r["rc"] == 0]
    assert records
    for r in records:
        measured = r["measured_MiB"]
        predicted = r["oomkit_bytes"]
        for kind in ("model", "kv", "output"):
            got = sum(measured[kind].values())
            mine = sum(predicted[kind].values()) / (1 << 20)
            assert abs(got - mine) <= 0.006, (r["id"], kind)
        got_c = sum(measured["compute"].values())
        mine_c = sum(predicted["compute"].values()) / (1 << 20)
        assert -0.15 <= (mine_c - got_c) / got_c <= 0.15, r["id"]
