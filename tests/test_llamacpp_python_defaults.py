"""``-r llama-cpp-python``: llama.cpp's estimator with ``Llama(...)``'s own defaults, n_ctx 512
and n_batch 512 (llama_cpp/llama.py l.75-77 of v0.3.16-v0.3.35), not llama-cli's ``-c 4096``.

Real record: heldout31's ``nb-gemma-cookbook-llamacpp-gemma-2-2b-f32-t4-ngl-all-ok`` (the Gemma
cookbook's ``Llama(model_path=model_path, n_gpu_layers=-1)``, no n_ctx; the notebook's own
verbose load prints ``llama_new_context_with_model: n_ctx = 512``) on a T4."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

from oomkit.estimate.llamacpp_outputs import C_API_APPS, server_default
from oomkit.estimate.llamacpp_python import (
    N_BATCH,
    N_CTX,
    binding_version,
    llama_cpp_python_defaults,
)
from oomkit.estimate.llamacpp_python_versions import VENDORED_LLAMACPP, vendored_llamacpp
from oomkit.estimate.registry import normalize_runtime
from oomkit.spec.settings import InferenceSettings

RECORD_ID = "nb-gemma-cookbook-llamacpp-gemma-2-2b-f32-t4-ngl-all-ok"
RECORDS = Path(__file__).parent / "fixtures" / "verdict_runs" / "heldout31.jsonl"


def _record() -> dict[str, Any]:
    for line in RECORDS.read_text().splitlines():
        if line.strip() and json.loads(line)["id"] == RECORD_ID:
            rec: dict[str, Any] = json.loads(line)
            return rec
    raise AssertionError(RECORD_ID)


def _estimate(*args: str) -> dict[str, Any]:
    rec = _record()
    ask = [rec["model"], "-q", rec["quant"], "-g", rec["gpu"], "-ngl", "99"]
    cmd = [sys.executable, "-m", "oomkit", "estimate", *ask, *args, "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_record_is_the_bindings_default_context() -> None:
    rec = _record()
    assert rec["ctx"] == N_CTX
    assert "n_ctx not passed" in rec["evidence"]
    assert "n_ctx = 512" in rec["evidence"]


def test_llama_cpp_python_runs_the_c_api_with_llama_defaults() -> None:
    doc = _estimate("-r", "llama-cpp-python")
    assert doc["settings"]["ctx"] == N_CTX
    assert doc["settings"]["batch_size"] == N_BATCH
    assert not doc["settings"].get("llama_server")  # the C API's output rows, no --fit
    assert any("llama-cpp-python's Llama(...) defaults" in a for a in doc["assumptions"])
    same = _estimate("-r", "llama.cpp", "--no-llama-server", "-c", "512", "-b", "512")
    assert [d["total_bytes"] for d in doc["devices"]] == [d["total_bytes"] for d in same["devices"]]
    assert doc["verdict"] == "fits"  # the record's outcome: ok


def test_given_values_are_kept() -> None:
    doc = _estimate("-r", "llama-cpp-python", "-c", "4096", "-b", "2048")
    assert (doc["settings"]["ctx"], doc["settings"]["batch_size"]) == (4096, 2048)
    assert not any("Llama(...) defaults" in a for a in doc["assumptions"])


def test_library_names() -> None:
    for name in ("llama-cpp-python", "llama_cpp_python", "LLAMA-CPP-PYTHON"):
        assert normalize_runtime(name) == "llama.cpp"
        filled, notes = llama_cpp_python_defaults(InferenceSettings(runtime=name))
        assert (filled.ctx, filled.batch_size) == (N_CTX, N_BATCH)
        assert (filled.n_gpu_layers, filled.flash_attn) == (0, False)
        assert notes
        assert server_default(filled).llama_server is None
    assert "llama-cpp-python" in C_API_APPS
    plain, notes = llama_cpp_python_defaults(InferenceSettings(runtime="llama.cpp"))
    assert notes == ()
    assert plain == InferenceSettings(runtime="llama.cpp")


# -- Llama(...)'s other defaults: n_gpu_layers=0, flash_attn=False (llama_cpp/llama.py l.65, l.95)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "oomkit", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_default_llama_places_no_layer_on_the_gpu() -> None:
    ask = ["llama-3.1-8b", "--quant", "Q4_K_M", "--gpu", "rtx-3060", "--json"]
    res = _cli("estimate", *ask, "-r", "llama-cpp-python")
    doc = json.loads(res.stdout)
    assert doc["settings"]["n_gpu_layers"] == 0
    assert doc["settings"]["flash_attn"] is False
    gpu, cpu = doc["devices"][0], doc["host"]
    assert gpu["weights_bytes"] == 0  # every layer on the CPU
    assert gpu["kv_cache_bytes"] == 0
    assert gpu["activations_bytes"] > 0  # the compute buffer a CUDA build still allocates
    assert cpu["weights_bytes"] > 4 * 2**30
    notes = doc["assumptions"]
    assert any(a.startswith("n_gpu_layers not given: 0 (Llama's default)") for a in notes)
    assert any(a.startswith("flash_attn not given: False") for a in notes)
    assert not any("flash attention 'auto'" in a for a in notes)
    # the same run as llama.cpp's C API with -ngl 0 and flash attention off
    same = _cli(
        "estimate",
        *ask,
        "-ngl",
        "0",
        "--no-flash-attn",
        "-c",
        "512",
        "-b",
        "512",
        "--no-llama-server",
    )
    assert [d["total_bytes"] for d in doc["devices"]] == [
        d["total_bytes"] for d in json.loads(same.stdout)["devices"]
    ]


def test_given_layers_and_flash_are_kept() -> None:
    ask = ["llama-3.1-8b", "--quant", "Q4_K_M", "--gpu", "rtx-3060", "--json"]
    doc = json.loads(_cli("estimate", *ask, "-r", "llama-cpp-python", "-ngl", "99", "-fa").stdout)
    assert (doc["settings"]["n_gpu_layers"], doc["settings"]["flash_attn"]) == (99, True)
    assert doc["devices"][0]["weights_bytes"] > 4 * 2**30
    assert not any("not given: 0" in a or "flash_attn not given" in a for a in doc["assumptions"])


# -- --runtime-version takes the binding's release (vendor/llama.cpp at the tag)


def test_binding_version_names_the_vendored_llamacpp() -> None:
    res = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python", "--runtime-version", "0.3.16")
    assert res.returncode == 0, res.stderr
    assert "modelled: llama-cpp-python 0.3.16 (vendors llama.cpp 4227c9be4 of 2025-08-14)" in (
        res.stdout
    )
    doc = json.loads(
        _cli(
            "estimate",
            "llama-3.1-8b",
            "-r",
            "llama-cpp-python",
            "--runtime-version",
            "0.3.16",
            "--json",
        ).stdout
    )
    assert doc["settings"]["runtime_version"] == "0.3.16"
    assert doc["runtime_details"]["llama_cpp_python"]["llama_cpp_commit"] == "4227c9be4"
    assert doc["runtime_details"]["generation"]["since"] <= "2025-08-14"


def test_a_0_2_release_models_its_vendored_llamacpp() -> None:
    res = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python", "--runtime-version", "0.2.90")
    assert res.returncode == 0, res.stderr
    assert "modelled: llama-cpp-python 0.2.90 (vendors llama.cpp 1d1ccce67 of 2024-08-29)" in (
        res.stdout
    )


def test_no_version_models_the_newest_binding_not_a_newer_llamacpp() -> None:
    newest, commit, when = VENDORED_LLAMACPP[-1]
    res = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python")
    line = next(x for x in res.stdout.splitlines() if x.startswith("modelled:"))
    assert f"llama-cpp-python {'.'.join(map(str, newest))} (vendors llama.cpp {commit}" in line
    plain = _cli("estimate", "llama-3.1-8b", "-r", "llama.cpp").stdout
    assert next(x for x in plain.splitlines() if x.startswith("modelled:")) not in line
    assert when.isoformat() in line


def test_unlisted_binding_versions() -> None:
    # 0.2.29 defaults offload_kqv=False (llama_cpp/llama.py of v0.2.29): refused, not modelled
    old = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python", "--runtime-version", "0.2.29")
    assert old.returncode == 2
    assert "llama-cpp-python: releases 0.2.30 to" in old.stderr
    assert "offload_kqv=False" in old.stderr
    new = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python", "--runtime-version", "0.9.1")
    assert new.returncode == 0, new.stderr
    assert "newer than the releases listed" in new.stdout
    # any version-shaped value is the binding's release, never "llama.cpp has no release numbers"
    for text in ("1.0", "9.9"):
        res = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python", "--runtime-version", text)
        assert res.returncode == 0, res.stderr
        assert "modelled as the newest llama.cpp" in res.stdout
        assert "llama.cpp has no release numbers" not in res.stdout + res.stderr
    # a llama.cpp build still reads as one
    build = _cli("estimate", "llama-3.1-8b", "-r", "llama-cpp-python", "--runtime-version", "b6000")
    assert build.returncode == 0, build.stderr


def test_version_table_is_the_tags_submodule() -> None:
    assert binding_version("0.3.16") == (0, 3, 16)
    assert vendored_llamacpp((0, 3, 35)) == ("4df29be4f", date(2026, 8, 16))
    assert vendored_llamacpp((0, 3, 9)) == ("8733e0cf6", date(2025, 5, 8))
    # git ls-tree v0.2.90 vendor/llama.cpp; git log -1 --format=%cs v0.2.90 -- vendor/llama.cpp
    assert vendored_llamacpp((0, 2, 90)) == ("1d1ccce67", date(2024, 8, 29))
    assert vendored_llamacpp((0, 2, 30)) == ("57e2a7a52", date(2024, 1, 18))
    assert vendored_llamacpp((0, 2, 29)) is None
    assert binding_version("1.0") == (1, 0, 0)
    versions = [v for v, _, _ in VENDORED_LLAMACPP]
    assert versions == sorted(versions)
    dates = [d for _, _, d in VENDORED_LLAMACPP]
    assert dates == sorted(dates)
