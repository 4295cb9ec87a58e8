"""Problems benchmarks/fuzz_valid.py found, each replayed end to end through ``oomkit.cli.main``
with the command line it printed."""

from __future__ import annotations

import json
import shlex

import pytest

from oomkit.cli import main


def _run(line: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = shlex.split(line)
    assert args[0] == "oomkit"
    code = main(args[1:])
    out, err = capsys.readouterr()
    return code, out, err


def test_vllm_cpu_offload_above_the_weights_offloads_them_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # seed 1: 4 GiB per GPU offloaded from ~2.6 GiB of fp8 weights per rank (tp 4) gave
    # weights of -1.38 GiB per GPU; vLLM's maybe_offload_to_cpu stops when no parameter is left
    code, out, err = _run(
        "oomkit estimate deepseek-r1-0528-qwen3-8b --offline --runtime vllm --runtime-version "
        "2025-10-01 --context-length 4096 --quantization fbgemm_fp8 --kv-cache-dtype fp8 "
        "--headless --cpu-offload-gb 4 --gpu 4xh100-pcie --json",
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    weights = [d["weights_bytes"] for d in doc["devices"]]
    assert all(w >= 0 for w in weights)
    assert all(w < 64 << 20 for w in weights)  # the rotary cache only: the layers are on the CPU
    # the host holds what the GPUs do not: each rank's weights, not 4 x 4 GiB
    offloaded = doc["host"]["weights_bytes"]
    assert 8 << 30 < offloaded < 16 << 30


@pytest.mark.parametrize(
    ("line", "starts"),
    [
        (
            "oomkit estimate falcon3-7b --offline --train lora --attn-implementation eager "
            "--softmax-saves-input --fragmentation 0.1 --no-compile-loss --emit fsdp "
            "--gpu rtx-2060 --json",
            "compute_environment:",
        ),
        (
            "oomkit estimate roberta-base --offline --train full --zero 3 --compile "
            "--offload-params --fragmentation 0.1 --emit deepspeed --gpu arc-b580 --json",
            "{",
        ),
    ],
)
def test_training_emit_with_json_prints_one_json_document(
    line: str, starts: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # seeds 11, 12 and 20: --train --emit LAUNCHER --json printed the launcher's YAML/JSON
    # config alone, not the estimate; now the config is the document's "command", as for
    # inference's --emit
    code, out, _ = _run(line, capsys)
    doc = json.loads(out)
    assert doc["schema_version"] == 1
    assert doc["runtime"] == "training"
    assert doc["command"].startswith(starts)
    assert code == {"fits": 0, "tight": 4, "does_not_fit": 3}[doc["verdict"]]


def test_doctor_never_prints_a_negative_size_outside_pytorch(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # seeds 13 and 14: "this process has 1 GiB in use" with 1 GiB allocated and 20 MiB reserved
    # read "-20.00 MiB outside PyTorch"; the figures overlap, and the doctor says so
    import io

    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20 MiB. GPU 0 has a total "
        "capacity of 1 GiB of which 20 MiB is free. Including non-PyTorch memory, this process "
        "has 1 GiB memory in use. Of the allocated memory 1 GiB is allocated by PyTorch, and 20 "
        "MiB is reserved by PyTorch but unallocated."
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(log))
    code, out, _ = _run("oomkit doctor -", capsys)
    assert code == 0
    assert "-20.00 MiB" not in out
    assert "20.00 MiB more than it holds (the figures do not add up)" in out


@pytest.mark.parametrize(
    ("line", "compared", "left_out"),
    [
        (
            "oomkit plan llama-7b --offline --runtime any --quant IQ3_S --min-ctx 256 "
            "--gpu rtx-4000-ada --json",
            {"llama.cpp", "ollama"},
            "vllm left out: it reads no IQ3_S weights",
        ),
        (
            "oomkit plan llama-7b --offline --runtime any --min-quant awq --gpu rtx-4000-ada "
            "--json",
            {"vllm", "sglang", "transformers"},
            "llama.cpp left out: it reads no awq weights",
        ),
    ],
)
def test_plan_any_compares_the_runtimes_that_read_the_quant(
    line: str, compared: set[str], left_out: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # seed 31: `plan --runtime any --quant Q5_1` (any GGUF type, and any HF format the other
    # way) failed with "Unknown HF weight format 'q5_1'" from the vLLM search (exit 1)
    code, out, err = _run(line, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert {p["runtime"] for p in doc["plans"]} == compared
    assert left_out in doc["notes"]
