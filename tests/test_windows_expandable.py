"""Windows and ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``: PyTorch's Windows builds
ignore it (c10/cuda/CMakeLists.txt defines ``PYTORCH_C10_DRIVER_API_SUPPORTED`` only
``if(NOT WIN32)``; without it ``CUDAAllocatorConfig::expandable_segments()`` warns
"expandable_segments not supported on this platform" and returns false; the warning from a
Windows wheel: ladaapp/lada#51). So on ``--os windows`` oomkit never offers it, prices
``--expandable-segments`` with the default allocator (one note line), and its launch lines
carry no bash ``VAR=... cmd`` prefix (a syntax error in PowerShell)."""

from __future__ import annotations

import json

import pytest

from oomkit.cli import main

TRAIN = ("estimate", "llama-3.1-8b", "--train", "lora", "--grad-checkpointing",
         "--gpu", "rtx-4090", "--offline")  # fmt: skip
NOTE = "--expandable-segments ignored on Windows"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(list(args))
    return code, json.loads(capsys.readouterr().out)


def test_windows_prices_expandable_segments_as_the_default_allocator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the review's command: "Fits ... ±1.88 GiB band" and a bash-prefixed torchrun line before
    code = main([*TRAIN, "--expandable-segments", "--os", "windows", "--emit", "torchrun"])
    out = capsys.readouterr().out
    assert code == 4  # tight, as the default allocator's band makes it
    assert f"Note: {NOTE}" in out
    assert "PYTORCH_CUDA_ALLOC_CONF" not in out
    assert "expandable_segments=False" in out  # the settings line says what was priced
    assert "torchrun --standalone --nproc_per_node=1 train.py" in out
    code, win = _json(capsys, *TRAIN, "--expandable-segments", "--os", "windows", "--json")
    _, plain = _json(capsys, *TRAIN, "--os", "windows", "--json")
    assert win["devices"] == plain["devices"]
    assert win["verdict_details"]["notes"][0].startswith(NOTE)  # type: ignore[index]
    # on Linux the flag keeps its measured (smaller) allocator band
    _, linux = _json(capsys, *TRAIN, "--expandable-segments", "--os", "linux", "--json")
    assert linux["settings"]["expandable_segments"] is True  # type: ignore[index]
    assert linux["verdict"] == "fits"


def test_windows_never_offers_expandable_segments(capsys: pytest.CaptureFixture[str]) -> None:
    _, lin = _json(capsys, *TRAIN, "--os", "linux", "--json")
    assert "expandable" in str(lin["verdict_details"]["safe_change"])  # type: ignore[index]
    _, win = _json(capsys, *TRAIN, "--os", "windows", "--json")
    assert win["verdict"] == "tight"
    change = str(win["verdict_details"]["safe_change"])  # type: ignore[index]
    assert "expandable" not in change
    assert "--fused-loss" in change  # the HF Trainer's own loss lever (Liger), revfix19b
    # plan --train on Windows: no expandable plan, the OS's capacity, --os in the check line
    plan = ["plan", "llama-3.1-8b", "--train", "lora", "--grad-checkpointing", "--gpu",
            "rtx-4090", "--offline"]  # fmt: skip
    assert main([*plan, "--os", "windows"]) == 0
    out = capsys.readouterr().out
    assert "PYTORCH_CUDA_ALLOC_CONF" not in out
    assert "of 23.99 GiB" in out
    assert "--os windows" in out
    assert main([*plan, "--expandable-segments", "--os", "windows"]) == 0
    assert f"Note: {NOTE}" in capsys.readouterr().out
    assert main([*plan, "--os", "linux"]) == 0
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in capsys.readouterr().out


def test_windows_transformers_safe_change_is_not_expandable_segments(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["estimate", "olmo-2-7b", "-r", "transformers", "--ctx", "10k", "--gpu", "rtx-4090",
            "--offline", "--json"]  # fmt: skip
    for os_name in ("windows", "linux"):
        code, doc = _json(capsys, *args, "--os", os_name)
        assert code == 4
        change = str(doc["verdict_details"]["safe_change"])  # type: ignore[index]
        assert "expandable" not in change
        assert "a prompt of at most" in change


def test_the_table_free_figure_is_the_verdicts_on_windows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the table read "fits (5.05 GiB free)" above "Fits. 4.55 GiB free": the verdict takes
    # Windows' WDDM reservation off; the table now does too and names it
    assert main([*TRAIN, "--os", "windows"]) == 4
    out = capsys.readouterr().out
    table = next(x for x in out.splitlines() if x.strip().startswith("total"))
    verdict = next(x for x in out.splitlines() if x.startswith("Tight: "))
    free = verdict.split("Tight: ")[1].split(" free")[0]
    assert f"({free} free after Windows WDDM video memory manager reservation 512.00 MiB)" in table
