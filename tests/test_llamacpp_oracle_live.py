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


@pytest.mark.oracle
def test_allocator_simulation_equals_ggml_allocator() -> None:
    pytest.importorskip("llama_cpp")
    sys.path.insert(0, str(ROOT / "benchmarks" / "oracle"))
    from ggml_alloc_replay import real_gallocr_bytes
    from oracle_cases import record_inputs

    from oomkit.estimate.llamacpp import llamacpp_view
    from oomkit.estimate.llamacpp_compute import build_graph, graph_shape
    from oomkit.estimate.llamacpp_galloc import simulate_gallocr
    from oomkit.estimate.llamacpp_kv import plan_kv
    from oomkit.estimate.llamacpp_params import resolve_llamacpp_params

    for key, ftype, fa in (
        ("llama-3.2-1b", "F16", True),
        ("mixtral-8x7b", "Q4_0", False),
        ("gemma-3-1b", "Q8_0", True),
    ):
        rec = {
            "catalog_key": key,
            "ftype": ftype,
            "settings": {
                "n_ctx": 4096,
                "n_ubatch": 512,
                "n_batch": 512,
                "flash_attn": fa,
                "type_k": "f16",
                "type_v": "f16",
                "n_seq": 1,
                "kv_unified": False,
                "swa_full": False,
            },
        }
        spec, settings = record_inputs(rec)
        spec = llamacpp_view(spec)
        p = resolve_llamacpp_params(settings, n_layer=spec.num_hidden_layers, has_gpu=False)
        graph = build_graph(spec, graph_shape(p, plan_kv(spec, p)))
        assert simulate_gallocr(graph, 32) == real_gallocr_bytes(graph), key
