"""``--expandable-segments``: the allocator family measured with PYTORCH_CUDA_ALLOC_CONF=
expandable_segments:True (benchmarks/gpu/results/training_boundary_h200_expandable.json)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from oomkit.cli import main

ARGS = ("estimate", "llama-3.1-8b", "--train", "lora", "--gpu", "rtx-3090", "--headless",
        "--grad-checkpointing", "--json")  # fmt: skip


def _allocator_bytes(doc: dict[str, object]) -> int:
    dev = doc["devices"][0]  # type: ignore[index]
    comps = [c for c in dev["components"] if "fragmentation" in c["label"]]
    return int(comps[0]["bytes"])


def test_the_flag_needs_train(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "llama-3.1-8b", "--expandable-segments"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--expandable-segments needs --train" in err[0]


def test_the_flag_on_an_inference_run_says_why_it_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # no inference band is measured with expandable segments, so a transformers "tight"
    # verdict no longer offers them as its safe change (it offered a change the flag then
    # refused and --emit did not set); the refusal says why
    args = ["estimate", "llama-3.1-8b", "--runtime", "transformers", "--gpu", "rtx-4090"]
    assert main([*args, "--ctx", "24064", "--json"]) == 4
    assert (
        "expandable_segments"
        not in json.loads(capsys.readouterr().out)["verdict_details"]["safe_change"]
    )
    assert main([*args, "--expandable-segments"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--expandable-segments needs --train" in err[0]
    assert "for inference (generate()) no band with them is measured" in err[0]


def test_expandable_segments_charge_less_and_clear_a_tight_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a card where the default allocator's band makes the step tight, the safe margin is
    the expandable segments; with them the charged margin is smaller and the step fits."""
    code, out, _ = run_cli(capsys, *ARGS, "--vram", "21GiB")
    plain = json.loads(out)
    assert code == 4
    assert plain["verdict"] == "tight"
    assert "--expandable-segments" in str(plain["verdict_details"]["safe_change"])  # type: ignore[index]
    code, out, _ = run_cli(capsys, *ARGS, "--vram", "21GiB", "--expandable-segments")
    exp = json.loads(out)
    assert code == 0
    assert exp["verdict"] == "fits"
    assert exp["settings"]["expandable_segments"] is True  # type: ignore[index]
    assert _allocator_bytes(exp) < _allocator_bytes(plain)


def test_the_help_states_the_measured_range_of_the_band_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The help read "0.7-4.8%% ... against 1.9-17.8%% without": click prints help as written
    (no %-formatting), and the figures were those of an older band file."""
    import json
    import re
    from importlib import resources

    from oomkit.cli import main as cli_main

    doc = json.loads(resources.files("oomkit").joinpath("data/training_band.json").read_text())
    fam = doc["allocator"]

    def pct(x: float) -> str:
        return f"{100 * x:.2f}".rstrip("0").rstrip(".")

    want = (
        f"{pct(fam['expandable']['fraction'])}-{pct(fam['expandable']['max'])}% of the allocated"
        f" peak on an H200, against {pct(fam['dense']['fraction'])}-"
        f"{pct(max(f['max'] for k, f in fam.items() if k != 'expandable'))}% without"
    )
    for cmd in ("estimate", "plan"):
        capsys.readouterr()
        cli_main([cmd, "--help"])
        text = re.sub(r"-\s+", "-", re.sub(r"\s+", " ", capsys.readouterr().out))
        assert "%%" not in text
        assert want in text, cmd
