"""Review 19, training plans: ``plan --train`` refuses the GPU count ``estimate --train``
refuses; it searches the levers the estimator models in the trainer's vocabulary (Liger's
fused cross-entropy for the HF Trainer, not a chunked loss it lacks); "more GPUs" only where
sharding lowers the per-GPU peak; the text bar shows the optimizer's step temporaries on a line
of their own, as ``--json`` does."""

from __future__ import annotations

import pytest

from conftest import run_cli


@pytest.mark.parametrize("command", ["plan", "estimate"])
def test_gpus_that_disagree_with_the_named_gpus_are_refused_by_both(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = (command, "llama-3.1-8b", "--train", "full", "--gpu", "4xa100-80gb", "--gpus", "8")
    code, out, err = run_cli(capsys, *argv, "--offline")
    assert code == 2
    assert "--gpus 8 disagrees with --gpu '4xa100-80gb' (4 GPUs)" in err
    assert "deepspeed" not in out


def test_text_shows_the_foreach_temporaries_apart_from_the_optimizer_states(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    argv = ("estimate", "llama-3.1-8b", "--train", "full", "--gpu", "a100-80gb-sxm", "--offline")
    _, doc, _ = run_cli(capsys, *argv, "--json")
    comps = json.loads(doc)["devices"][0]["components"]
    temps = sum(c["bytes"] for c in comps if c["label"] == "step temporaries (foreach)")
    states = sum(c["bytes"] for c in comps if c["category"] == "optimizer") - temps
    assert temps > 0
    from oomkit.units import format_bytes

    for extra in ((), ("--explain",)):
        _, out, _ = run_cli(capsys, *argv, *extra)
        lines = [x.split() for x in out.splitlines()]
        assert ["optimizer", "state", *format_bytes(states).split()] in lines
        assert ["step", "temporaries", *format_bytes(temps).split()] in lines
