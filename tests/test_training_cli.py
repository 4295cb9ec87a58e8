"""``oomkit estimate MODEL --train ...``: exit codes, JSON contract, usage errors, --emit."""

from __future__ import annotations

import json

import pytest
import yaml

from oomkit.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_train_json_fills_training_categories(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "estimate", "llama-3.1-8b", "--train", "full", "--zero", "3", "--gpus", "8",
        "--gpu", "h100", "--micro-batch", "2", "--seq", "4096", "--grad-checkpointing", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["runtime"] == "training"
    assert len(doc["devices"]) == 8
    dev = doc["devices"][0]
    for key in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes"):
        assert key in dev
    assert dev["optimizer_bytes"] > 0
    assert doc["runtime_details"]["peak_phase"] in ("forward_end", "backward", "optimizer_step")
    assert doc["runtime_details"]["engine"] == "deepspeed"
    assert doc["settings"]["zero"] == 3
    assert doc["fits"] is True


def test_train_does_not_fit_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    # full AdamW fine-tuning of an 8B model needs > 100 GiB on one GPU
    code, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--train", "full", "--gpu", "rtx-4090")
    assert code == 3
    assert "DOES NOT FIT" in out
    assert "Peak in:" in out


def test_qlora_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "estimate", "llama-3.1-8b", "--train", "qlora", "--lora-rank", "16",
        "--lora-targets", "all-linear", "--gpu", "rtx-4090", "--grad-checkpointing=full",
        "--chunked-loss", "--explain",
    )  # fmt: skip
    assert code == 0, err
    assert "frozen base weights" in out
    assert "Fits." in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--train", "full", "--ctx", "4096"), "--ctx is an inference option"),
        (("--train", "lora", "--quant", "Q4_K_M"), "--quant is an inference option"),
        (("--zero", "2"), "--zero needs --train"),
        (("--train", "full", "--zero", "2", "--fsdp"), "Invalid zero/fsdp combination"),
        (("--train", "full", "--optimizer", "adam"), "Invalid value for '--optimizer'"),
        (("--train", "lora", "--lora-targets", "qproj"), "Invalid lora target 'qproj'"),
        (("--train", "full", "--offload-optimizer"), "Invalid offload"),
    ],
)
def test_usage_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, out, err = run(capsys, "estimate", "llama-3.1-8b", *args)
    assert code == 2
    assert out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[0].startswith("Error: ")
    assert message in lines[0]
    assert "Traceback" not in err


def _after(out: str, heading: str) -> str:
    """What --emit printed: the lines after its heading, which follows the estimate."""
    head, sep, tail = out.partition(f"\n{heading}\n")
    assert sep, out
    assert "Peak in: " in head  # the estimate comes first ("Also print", as inference's --emit)
    return tail


def test_emit_deepspeed_and_fsdp(capsys: pytest.CaptureFixture[str]) -> None:
    """--emit with --train printed only the config although its help says "Also print" and
    inference's --emit prints the estimate and the command: now the estimate, then the config."""
    code, out, _ = run(
        capsys, "estimate", "llama-3.1-8b", "--train", "full", "--zero", "2", "--gpus", "4",
        "--emit", "deepspeed",
    )  # fmt: skip
    assert code == 0
    assert out.startswith("llama-3.1-8b (LlamaForCausalLM")
    assert json.loads(_after(out, "ds_config.json:"))["zero_optimization"]["stage"] == 2
    code, out, _ = run(
        capsys, "estimate", "llama-3.1-8b", "--train", "full", "--fsdp", "SHARD_GRAD_OP",
        "--gpus", "4", "--emit", "fsdp",
    )  # fmt: skip
    assert code == 0
    doc = yaml.safe_load(_after(out, "fsdp_config.yaml:"))
    assert doc["fsdp_config"]["fsdp_sharding_strategy"] == "SHARD_GRAD_OP"
    code, out, _ = run(
        capsys, "estimate", "llama-3.1-8b", "--train", "lora", "--gpus", "2", "--nodes", "2",
        "--emit", "torchrun",
    )  # fmt: skip
    assert code == 0
    assert _after(out, "run:").startswith("torchrun --nnodes=2 --nproc_per_node=2")


def test_emit_keeps_the_verdict_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    """The config printed after a "does not fit" estimate: exit 3 as without --emit (it was
    0 whatever the estimate said), and the config still follows the suggestions."""
    argv = ("estimate", "llama-3.1-70b", "--train", "full", "--zero", "3", "--gpu", "2xh100")
    code, plain, _ = run(capsys, *argv)
    assert code == 3
    code, out, _ = run(capsys, *argv, "--emit", "deepspeed")
    assert code == 3
    assert out.startswith(plain)
    zero = json.loads(_after(out, "ds_config.json:"))["zero_optimization"]
    assert zero["stage"] == 3
    assert zero["sub_group_size"] == 1_000_000_000


def test_gpu_count_comes_from_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "llama-3.1-8b", "--train", "full", "--zero", "3", "--json"]
    assert main([*argv, "--gpu", "4xa100-80gb-sxm"]) in (0, 3)
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["gpus"] == 4
    assert len(doc["devices"]) == 4
    assert main([*argv, "--gpu", "4xa100-80gb-sxm", "--gpus", "2"]) == 2


def test_header_counts_the_gpus_one_card_name_stands_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--gpu rtx-4090 --gpus 2` printed "training on NVIDIA GeForce RTX 4090" above two
    device sections; the header now says what `--gpu 2xrtx-4090` says."""
    _, one, _ = run(capsys, "estimate", "llama-3.1-8b", "--train", "full", "--zero", "3",
                    "--gpu", "rtx-4090", "--gpus", "2")  # fmt: skip
    _, two, _ = run(capsys, "estimate", "llama-3.1-8b", "--train", "full", "--zero", "3",
                    "--gpu", "2xrtx-4090")  # fmt: skip
    assert one.splitlines()[0] == two.splitlines()[0]
    assert "training on 2 x NVIDIA GeForce RTX 4090" in one.splitlines()[0]
    assert one.count("\ncuda:") == 2


@pytest.mark.parametrize(("gpu", "device"), [("m2-max-96gb", "mps:0"), ("7900xtx", "rocm:0")])
def test_training_devices_are_named_as_inference_names_them(
    capsys: pytest.CaptureFixture[str], gpu: str, device: str
) -> None:
    """A training step on a Mac or an AMD card read "44.50 GiB free on cuda:0": the devices
    carry the backend's name, as inference's do (spec.hardware.device_label)."""
    _, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--train", "lora", "--gpu", gpu, "--json")
    doc = json.loads(out)
    assert [d["device"] for d in doc["devices"] if d["device"] != "cpu"] == [device]
    _, inf, _ = run(capsys, "estimate", "llama-3.1-8b", "--runtime", "transformers", "--gpu", gpu,
                    "--json")  # fmt: skip
    assert json.loads(inf)["devices"][0]["device"] == device
