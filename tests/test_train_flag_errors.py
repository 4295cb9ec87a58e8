"""``--train`` with an inference option: the error names the flag as the user typed it and the
training option that means what they wanted (``--batch 4`` named only ``--parallel``)."""

from __future__ import annotations

import pytest

from oomkit.cli import main


@pytest.mark.parametrize(
    ("args", "names", "instead"),
    [
        (("--batch", "4"), "--batch", "--micro-batch"),
        (("-np", "4"), "-np", "--micro-batch"),
        (("-b", "512"), "-b", "--micro-batch"),
        (("--ctx", "4096"), "--ctx", "--seq"),
        (("--quant", "Q4_K_M"), "--quant", "--train qlora"),
        (("--kv-dtype", "q8_0"), "--kv-dtype", "no KV cache"),
    ],
)
def test_inference_flag_with_train_names_alias_and_counterpart(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], names: str, instead: str
) -> None:
    code = main(["estimate", "llama-3.1-8b", "--train", "lora", *args])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: ")
    assert f"Error: {names} is an inference option" in lines[0]  # the flag as typed
    assert instead in lines[0]


@pytest.mark.parametrize("flag", ["-c", "--ctx", "--max-model-len"])
def test_plan_train_with_ctx_points_at_seq(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "llama-3.1-8b", "--train", "lora", "--gpu", "rtx-4090", flag, "8192"])
    err = capsys.readouterr().err
    assert code == 2
    # the error names the flag as the user typed it (revfix16d: plan keeps the raw arguments)
    assert f"Error: {flag} is an inference option" in err
    assert "--seq" in err


@pytest.mark.parametrize(
    ("args", "instead"),
    [
        (("--headroom", "20GiB"), "--vram"),
        (("--min-ctx", "4k"), "--seq"),
        (("--min-quant", "Q4_K_S"), "--train qlora"),
        (("--no-offload",), ""),
        (("--prefer", "speed"), ""),
    ],
)
def test_plan_train_refuses_the_inference_search_options(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], instead: str
) -> None:
    """The training planner reads none of these: `--headroom 20GiB` was answered as if the
    default 1 GiB were kept free (a plan of 8.24 GiB on a 24 GiB card, exit 0)."""
    code = main(["plan", "llama-3.2-1b", "--train", "lora", "--gpu", "rtx-4090", *args])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"Error: {args[0]} is an inference option"), err
    assert instead in line


def test_plan_train_takes_the_search_options_at_their_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The web API sends plan's defaults (`prefer: quality`) with every body: asking for the
    default changes nothing, so a training plan still answers."""
    argv = ["plan", "llama-3.2-1b", "--train", "lora", "--gpu", "rtx-4090", "--prefer=quality",
            "--headroom=1GiB"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err


def test_tp_over_one_gpu_says_how_to_give_the_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", "llama-3.1-8b", "--train", "qlora", "--tp", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--tp 2" in err
    assert "--gpus 2" in err
    assert main(["estimate", "llama-3.1-8b", "--train", "qlora", "--tp", "2", "--gpus", "2"]) == 0


@pytest.mark.parametrize("flag", ["--offload-params", "--offload-optimizer"])
def test_offload_without_an_engine_names_the_flag_given(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    code = main(["estimate", "llama-3.1-8b", "--train", "full", flag])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"Error: {flag}: Invalid offload"), err


def test_estimate_train_takes_gpu_auto_as_inference_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`estimate --train --gpu auto` read "Unknown GPU 'auto'" (exit 2) while the README and
    inference take auto as this machine's GPUs: without a visible GPU both give detection's
    one-line error; with one, the training step is estimated on it."""
    capsys.readouterr()
    code_inf = main(["estimate", "llama-3.2-1b", "--gpu", "auto"])
    err_inf = capsys.readouterr().err.strip().splitlines()
    code = main(["estimate", "llama-3.2-1b", "--train", "lora", "--gpu", "auto"])
    out, err = capsys.readouterr()
    assert "Unknown GPU" not in err
    if any("no GPU is visible" in line for line in err_inf):
        assert code == code_inf
        assert err.strip().splitlines()[-1] == err_inf[-1]
    else:
        assert code in (0, 3, 4), err
        assert "training on" in out
