"""Golden tests on the H200 training runs: where real training steps died, and their allocator.

``benchmarks/gpu/results/training_boundary_h200.json`` holds, per training step (two steps:
AdamW's states made, then the steady state), the largest emulated card it died on and the
smallest it survived on (``benchmarks/gpu/training_boundary.py``: a raw ``cudaMalloc`` ballast
takes the rest of an H200). ``training_traces_h200.json.gz`` holds the CUDA caching allocator's
own history of the same eight steps (``--trace``), each with a boundary measured in the same
process right after. oomkit's side is recomputed here from today's code, so a change that would
let the training verdict say "fits" on a card a real step died on fails this file.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from gpu_results import RESULTS, load_script, replay_events
from oomkit.inprocess.probe_allocator import replay

GB = 10**9


def _script() -> Any:
    return load_script("training_boundary")


def _boundaries() -> list[dict[str, Any]]:
    doc = json.loads((RESULTS / "training_boundary_h200.json").read_text())
    assert "H200" in doc["environment"]["gpu"]
    rows: list[dict[str, Any]] = doc["results"]
    return rows


def _traces() -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress((RESULTS / "training_traces_h200.json.gz").read_bytes()))
    assert "H200" in doc["environment"]["gpu"]
    cases: list[dict[str, Any]] = doc["cases"]
    return cases


def _events(case: dict[str, Any]) -> list[tuple[int, int]]:
    return replay_events(case)


def _name(r: dict[str, Any]) -> str:
    layers = r["overrides"].get("num_hidden_layers")
    return f"{r['model']}{f' L{layers}' if layers else ''} {r['method']} b{r['batch']}"


@pytest.fixture(scope="module")
def sides() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    mod = _script()
    return [(r, mod.oomkit_side(r)) for r in _boundaries()]


def test_every_step_has_a_measured_boundary() -> None:
    rows = _boundaries()
    assert len(rows) == 10
    for r in rows:
        assert r["largest_died_bytes"] < r["smallest_survived_bytes"], _name(r)
        assert r["smallest_survived_bytes"] - r["largest_died_bytes"] <= 32 * (1 << 20)
        assert "CUDA out of memory" in r["oom"]


def test_boundaries_repeat_in_a_second_process() -> None:
    """The ``--trace`` run (another process, another day's allocator state at each case's
    start) found every boundary again to the 32 MiB step."""
    for r, t in zip(_boundaries(), _traces(), strict=True):
        assert (r["model"], r["method"], r["batch"]) == (t["model"], t["method"], t["batch"])
        b = t["boundary_run"]
        assert b["largest_died_bytes"] == r["largest_died_bytes"], _name(r)
        assert b["smallest_survived_bytes"] == r["smallest_survived_bytes"], _name(r)


def test_a_step_needs_more_than_its_allocated_peak() -> None:
    """The H200 steps died on cards 1.5-17% (of ``max_memory_allocated``) above their allocated
    peak plus one CUDA context: the caching allocator's split segments, which is what the
    training verdict's band must cover (a flat 5% did not)."""
    from oomkit.estimate.overhead import cuda_context_bytes
    from oomkit.hardware.catalog import find_gpu

    context, _ = cuda_context_bytes("transformers", find_gpu("h200").to_device_target())
    extra = [
        (r["largest_died_bytes"] - context) / r["full_card_max_allocated_bytes"] - 1
        for r in _boundaries()
    ]
    assert min(extra) > 0.0
    assert max(extra) > 0.15  # more than three times the old flat 5%
    assert max(extra) < 0.20


def test_training_verdict_never_says_fits_on_a_card_the_step_died_on(
    sides: list[tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    for r, side in sides:
        assert side["smallest_fits_bytes"] > r["largest_died_bytes"], _name(r)


def test_training_verdict_never_says_does_not_fit_on_a_card_the_step_survived(
    sides: list[tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    """The estimate charges the smallest measured allocator need of the model's family, so a
    step that needed the least is never "does not fit" where it ran (the flat 5% it charged
    before said so on two of these steps, by 0.49 and 0.12 GiB)."""
    for r, side in sides:
        assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"], _name(r)


def test_expandable_segments_boundaries_and_verdict() -> None:
    """The same ten steps under ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` needed
    0.7-4.8% beyond their allocated peak (1.9-17.8% without), and with
    ``expandable_segments=True`` the verdict is never "fits" where such a step died nor "does
    not fit" where it survived."""
    mod = _script()
    doc = json.loads((RESULTS / "training_boundary_h200_expandable.json").read_text())
    assert doc["environment"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    rows = doc["results"]
    assert len(rows) == 10
    ctx = 734003200
    need = [(r["smallest_survived_bytes"] - ctx) / r["full_card_max_allocated_bytes"] - 1
            for r in rows]  # fmt: skip
    assert min(need) > 0.0
    assert max(need) < 0.05
    for r, default in zip(rows, _boundaries(), strict=True):
        assert r["expandable_segments"] is True
        assert r["smallest_survived_bytes"] <= default["smallest_survived_bytes"], _name(r)
        side = mod.oomkit_side(r)
        assert side["smallest_fits_bytes"] > r["largest_died_bytes"], _name(r)
        assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"], _name(r)


def test_training_estimate_matches_max_memory_allocated(
    sides: list[tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    """The formula's allocated peak within 5% of the real step's on the whole card (the ten
    are -3.4% to +4.3%: Gemma-2-2B full and Qwen2.5-0.5B b2 with checkpointing the widest)."""
    for r, side in sides:
        err = side["peak_allocated_bytes"] / r["full_card_max_allocated_bytes"] - 1
        assert abs(err) < 0.05, (_name(r), err)


def test_replay_of_the_real_trace_reproduces_the_reserved_peak() -> None:
    """The caching-allocator model fed each step's real request sequence: five of the ten
    steps' ``max_memory_reserved`` come out to the byte; the other five within 6% (DeepSeek-V2-
    Lite +0.2%, Mixtral +0.2%, Llama-3.2-1B full +0.2%, Gemma-2-2B full -0.8%, Qwen2.5-0.5B b2
    with checkpointing +5.9%: those runs made fewer, larger segments than the replay, a
    behaviour the model does not have yet)."""
    exact = 0
    for c in _traces():
        initial = [(s[0], s[1]) for s in c["initial_segments"] if len(s) == 2]
        assert len(initial) == len(c["initial_segments"])  # one live block per segment
        r = replay(_events(c), initial_blocks=initial)
        assert r.allocated_peak_bytes == pytest.approx(c["max_memory_allocated_bytes"], rel=0.003)
        real = c["max_memory_reserved_bytes"]
        exact += r.reserved_peak_bytes == real
        assert abs(r.reserved_peak_bytes / real - 1) < 0.06, _name(c)
    assert exact == 5


def _qlora() -> list[dict[str, Any]]:
    doc = json.loads((RESULTS / "training_boundary_qlora_h200.json").read_text())
    assert "H200" in doc["environment"]["gpu"]
    rows: list[dict[str, Any]] = doc["results"]
    return rows


def test_qlora_steps_ran_real_bitsandbytes_and_peft_and_died_measured() -> None:
    """Six QLoRA steps (session 9): the base's linears real bitsandbytes ``Linear4bit`` (NF4,
    double quant), the adapters PEFT's own 4-bit LoRA layer, each boundary to 32 MiB."""
    rows = _qlora()
    assert len(rows) == 6
    for r in rows:
        assert r["method"] == "qlora"
        assert r["lora_impl"].startswith("peft "), _name(r)
        assert "bitsandbytes" in r["lora_impl"]
        assert r["largest_died_bytes"] < r["smallest_survived_bytes"], _name(r)
        assert r["smallest_survived_bytes"] - r["largest_died_bytes"] <= 32 * (1 << 20)
        assert "CUDA out of memory" in r["oom"]
    assert sum(1 for r in rows if r.get("kbit_prep")) == 2


def test_qlora_verdict_and_allocated_peak_against_the_h200() -> None:
    """Never "fits" where a QLoRA step died, never "does not fit" where it survived, and the
    allocated peak within 5% (-1.5% to -0.3% on the six, kbit prep included)."""
    mod = _script()
    for r in _qlora():
        side = mod.oomkit_side(r)
        assert side["smallest_fits_bytes"] > r["largest_died_bytes"], _name(r)
        assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"], _name(r)
        err = side["peak_allocated_bytes"] / r["full_card_max_allocated_bytes"] - 1
        assert abs(err) < 0.05, (_name(r), err)


def test_kbit_prep_is_what_the_measured_difference_is() -> None:
    """``prepare_model_for_kbit_training`` made Llama-3.1-8B's step allocate 3.43 GiB more on the
    H200 (fp32 embeddings/head/norms, the fp32 stream's checkpoints, the head's 16-bit cast);
    without ``kbit_prep`` oomkit would miss it by more than 25%."""
    from dataclasses import replace

    from oomkit.estimate.training import estimate_training
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for

    mod = _script()
    plain, prepped = (
        r for r in _qlora() if r["model"] == "llama-3.1-8b" and r["method"] == "qlora"
    )
    assert not plain.get("kbit_prep")
    assert prepped.get("kbit_prep")
    measured = prepped["full_card_max_allocated_bytes"] - plain["full_card_max_allocated_bytes"]
    assert measured > 3 * (1 << 30)
    spec, st = mod._spec(prepped), mod._settings(prepped)
    hw = hardware_for((find_gpu("h200"),))

    def peak(settings: Any) -> int:
        return int(estimate_training(spec, settings, hw).runtime_details["peak_allocated_bytes"])

    modelled = peak(st) - peak(replace(st, kbit_prep=False))
    assert abs(modelled / measured - 1) < 0.05
    assert peak(replace(st, kbit_prep=False)) < 0.75 * prepped["full_card_max_allocated_bytes"]


def test_out_of_sample_steps_hold_after_folding_in() -> None:
    """Six steps scored once out of sample (0 false "fits", 1 false "does not fit" by 0.12 GiB:
    benchmarks/gpu/results/README.md), then folded into the band: all six hold now, and the
    allocated peak stays within 10% (-2.7% to +8.2%)."""
    mod = _script()
    doc = json.loads((RESULTS / "training_boundary_holdout_h200.json").read_text())
    rows = doc["results"]
    assert len(rows) == 6
    assert {r["method"] for r in rows} == {"full", "lora", "qlora"}
    for r in rows:
        assert r["smallest_survived_bytes"] - r["largest_died_bytes"] <= 32 * (1 << 20)
        side = mod.oomkit_side(r)
        assert side["smallest_fits_bytes"] > r["largest_died_bytes"], _name(r)
        assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"], _name(r)
        err = side["peak_allocated_bytes"] / r["full_card_max_allocated_bytes"] - 1
        assert abs(err) < 0.10, (_name(r), err)


def test_second_out_of_sample_set_holds_on_the_h100_after_folding_in() -> None:
    """Six steps on an H100 (session 17), scored once at 17f0642 (0 false "fits", 1 false "does
    not fit": SmolLM2 full b4 ckpt needed 0.4% beyond its allocated peak, less than the dense
    fraction charged then; OLMo 2 LoRA -10.4% and Gemma-3-1B full -8.9% allocated), then folded
    into the band: all six hold, priced on the H100's catalog entry, and the allocated peak is
    within 1.5% (the norms a block has: OLMo 2's post-norms and full-width q/k norms, Gemma's
    sandwich)."""
    mod = _script()
    doc = json.loads((RESULTS / "training_boundary_holdout2_h100.json").read_text())
    assert "H100" in doc["environment"]["gpu"]
    rows = doc["results"]
    assert len(rows) == len(range(mod.HOLDOUT2_FROM, mod.HOLDOUT3_FROM)) == 6
    for r in rows:
        assert r["gpu_catalog"] == "h100-sxm"
        assert r["smallest_survived_bytes"] - r["largest_died_bytes"] <= 32 * (1 << 20)
        side = mod.oomkit_side(r)
        assert side["smallest_fits_bytes"] > r["largest_died_bytes"], _name(r)
        assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"], _name(r)
        err = side["peak_allocated_bytes"] / r["full_card_max_allocated_bytes"] - 1
        assert abs(err) < 0.015, (_name(r), err)


def test_third_out_of_sample_set_after_folding_in() -> None:
    """Three H100 steps chosen before the second set's misses were modelled, scored once at
    c84e3a0 (1 false "fits": Phi-2 full needed 8.3% beyond its allocated peak), then folded in:
    Falcon-7B LoRA b2 s2048 died on the whole 79.18 GiB card (Falcon's multi-query SDPA runs the
    math backend and saves fp32 scores: oomkit "does not fit"), the other two hold."""
    mod = _script()
    doc = json.loads((RESULTS / "training_boundary_holdout3_h100.json").read_text())
    rows = {r["model"]: r for r in doc["results"]}
    assert set(rows) == {"falcon-7b", "olmo-2-13b", "phi-2"}
    falcon = rows.pop("falcon-7b")
    assert falcon["error"].startswith("dies on the whole card")
    card = doc["environment"]["gpu_total_bytes"]
    assert mod.oomkit_side(falcon)["smallest_not_dnf_bytes"] > card
    for r in rows.values():
        side = mod.oomkit_side(r)
        assert side["smallest_fits_bytes"] > r["largest_died_bytes"], _name(r)
        assert side["smallest_not_dnf_bytes"] <= r["smallest_survived_bytes"], _name(r)
        err = side["peak_allocated_bytes"] / r["full_card_max_allocated_bytes"] - 1
        assert abs(err) < 0.01, (_name(r), err)
