"""benchmarks/fuzz_valid.py: a short seeded run, and its contradiction check on real estimates."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate, ModelInfo
from oomkit.estimate.verdict import verdict
from oomkit.serialize import estimate_to_dict

GIB = 1 << 30


def _fuzz() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "fuzz_valid.py"
    spec = importlib.util.spec_from_file_location("fuzz_valid", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_valid_combinations_answer_cleanly() -> None:
    mod = _fuzz()
    mod.CODES.clear()
    assert mod.fuzz(20, seed=5, commands=["estimate", "estimate", "plan", "doctor"]) == {}
    # the point of drawing valid values: most runs get past validation to an answer
    answered = sum(n for code, n in mod.CODES.items() if code in (0, 3, 4))
    assert answered >= 10, mod.CODES


def _doc(weights_gib: int, capacity_gib: int, blockers: tuple[str, ...] = ()) -> dict[str, Any]:
    """``estimate --json`` of one device, as the CLI writes it (with the real verdict)."""
    device = DeviceUsage(
        device="cuda:0",
        components=(
            Component(category="weights", label="w", n_bytes=weights_gib * GIB, formula=""),
        ),
        capacity_bytes=capacity_gib * GIB,
    )
    est = Estimate(
        model=ModelInfo(name="m", architecture="LlamaForCausalLM", params=1, source="catalog"),
        runtime="llama.cpp",
        settings={},
        devices=(device,),
        host=DeviceUsage(device="cpu"),
        blockers=blockers,
    )
    doc = estimate_to_dict(est)
    v = verdict(est)
    doc["verdict"] = v.level
    doc["verdict_details"] = v.to_dict()
    return doc


def test_the_checker_catches_a_fit_over_capacity() -> None:
    mod = _fuzz()
    over = _doc(30, 24)
    assert mod.check_estimate(over, 3) is None  # the CLI's own answer: does not fit
    problem = mod.check_estimate(over, 0)  # planted: exit 0 "fits" with 30 GiB on 24
    assert problem is not None
    assert "exit 0" in problem
    assert "cuda:0" in problem


def test_the_checker_catches_a_refusal_without_a_reason() -> None:
    mod = _fuzz()
    roomy = _doc(4, 24)
    assert mod.check_estimate(roomy, 0) is None
    problem = mod.check_estimate(roomy, 3)  # planted: "does not fit" with 20 GiB free
    assert problem is not None
    assert "no blocker" in problem
    # a stated blocker is a reason
    assert mod.check_estimate(_doc(4, 24, blockers=("vLLM refuses it",)), 3) is None


def test_the_checker_catches_totals_that_do_not_add_up() -> None:
    mod = _fuzz()
    doc = _doc(4, 24)
    doc["total_bytes"] += 1
    assert mod.check_estimate(doc, 0) is not None
    doc = _doc(4, 24)
    del doc["runtime_details"]
    assert mod.check_estimate(doc, 0) == "estimate JSON lacks 'runtime_details'"
