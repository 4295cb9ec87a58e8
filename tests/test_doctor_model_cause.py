"""The model the user names decides between "model too large" and "batch" (model_cause.py).

Real messages from the development corpus; the models are catalog specs, their weights the
transformers estimate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus_records import corpus_text
from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.model_cause import model_facts
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

CORPUS = Path(__file__).parent / "fixtures" / "oom_corpus" / "dev_torch.jsonl"


def _text(record_id: str) -> str:
    return corpus_text(record_id)


# 95 GiB GPU, 85.75 GiB allocated by PyTorch, a 1.30 GiB request (rank 4 of a DiffSynth run)
H100_96 = "tc-diffsynth-studio-411"
# 4 GiB GPU, 2.58 GiB allocated, a 32 MiB request
SMALL_CARD = "tc-mygirlgpt-11"


def spec(name: str):  # type: ignore[no-untyped-def]
    return find_model(name).spec()


def test_weights_larger_than_the_device_are_the_cause() -> None:
    text = _text(SMALL_CARD)
    bare = diagnose_text(text)
    named = diagnose_text(text, model=spec("llama-3.1-8b"))
    assert bare.confidence <= 0.5  # the message alone does not decide
    assert named.cause == "model_too_large"
    assert named.confidence >= 0.8
    assert "larger than the whole device" in named.explanation
    assert "llama-3.1-8b" in named.explanation


def test_small_weights_and_a_large_holding_point_at_the_batch() -> None:
    text = _text(H100_96)
    named = diagnose_text(text, model=spec("llama-3.2-1b"))
    assert named.cause == "batch_or_activations"
    assert named.confidence == pytest.approx(0.6)
    assert "beyond the weights" in named.explanation
    assert named.fixes[0].title.startswith("Cut the batch size")


def test_a_batch_cause_is_not_led_by_quantizing_the_weights() -> None:
    # 2.30 GiB of weights under 10.27 GiB held on a 10.92 GiB card: the doctor says the batch is
    # the lever; the estimators' NF4/int8 fixes save more than the 49 MiB shortfall, so by
    # saving alone "quantize" led the diagnosis that says the weights are not the cause
    log = Path(__file__).parent / "fixtures" / "oom_logs" / "oom-torch-llama-82-7b-11gb.txt"
    d = diagnose_text(log.read_text(encoding="utf-8"), model=spec("llama-3.2-1b"))
    assert d.cause == "batch_or_activations"
    titles = [f.title for f in d.fixes]
    assert titles[0].startswith("Cut the batch size")
    quant = [i for i, t in enumerate(titles) if t.startswith(("Load in 8-bit", "Load in 4-bit"))]
    assert quant
    assert min(quant) > 0
    nf4 = next(f for f in d.fixes if f.title.startswith("Load in 4-bit"))
    # its arithmetic is the run's, not oomkit's default-batch estimate ("leaves 9.47 GiB")
    assert "The run held 10.27 GiB" in nf4.why
    assert "that leaves" not in nf4.why
    # the model already loads in bf16: "Run in bf16/fp16" would change nothing
    assert "Run in bf16/fp16" not in titles
    # too large: quantizing is the lever and leads
    big = diagnose_text(log.read_text(encoding="utf-8"), model=spec("llama-2-7b"))
    assert big.cause == "model_too_large"
    assert big.fixes[0].title.startswith("Load in 4-bit")
    assert "that leaves" in big.fixes[0].why


def test_a_70b_in_bf16_does_not_fit_a_95_gib_card() -> None:
    named = diagnose_text(_text(H100_96), model=spec("llama-3.1-70b"))
    assert named.cause == "model_too_large"


def test_in_between_leaves_the_cause_open_but_states_the_weights() -> None:
    # 2.30 GiB of weights on a 4 GiB card: more than half, so the weights may be the cause
    text = _text(SMALL_CARD)
    bare = diagnose_text(text)
    named = diagnose_text(text, model=spec("llama-3.2-1b"))
    assert (named.cause, named.confidence) == (bare.cause, bare.confidence)
    assert "llama-3.2-1b, weighs 2.30 GiB" in named.explanation
    # the deciding question no longer asks for the model the user just gave
    assert "--model MODEL here" in bare.explanation
    assert "--model MODEL here" not in named.explanation
    assert "does the model alone fit (`oomkit estimate MODEL`)?" in named.explanation


def test_training_keeps_the_weights_from_deciding_batch() -> None:
    # in a training step gradients and optimizer states sit beyond the weights
    text = (
        '  File "train.py", line 80, in train\n    loss.backward()\n'
        + _text(H100_96).split("]: ", 1)[1]
    )
    bare = diagnose_text(text)
    named = diagnose_text(text, model=spec("llama-3.2-1b"))
    assert (named.cause, named.confidence) == (bare.cause, bare.confidence)
    assert "beyond the weights" not in named.explanation


def test_a_quantized_load_in_the_log_keeps_bf16_weights_from_deciding() -> None:
    text = "model = AutoModelForCausalLM.from_pretrained(name, load_in_4bit=True)\n" + _text(
        SMALL_CARD
    )
    bare = diagnose_text(text)
    named = diagnose_text(text, model=spec("llama-3.1-8b"))
    assert (named.cause, named.confidence) == (bare.cause, bare.confidence)
    assert "larger than the whole device" not in named.explanation


def test_the_users_quant_sets_the_dtype() -> None:
    # 8B at 4-bit is ~5 GiB: still more than the 4 GiB card
    nf4 = InferenceSettings(runtime="transformers", quant="nf4")
    named = diagnose_text(_text(SMALL_CARD), model=spec("llama-3.1-8b"), settings=nf4)
    assert named.cause == "model_too_large"
    assert "at nf4" in named.explanation


def test_the_users_gpu_capacity_wins_over_nothing() -> None:
    facts = model_facts(
        spec("llama-3.2-1b"),
        None,
        Hardware(devices=(DeviceTarget(name="x", capacity_bytes=80 * GiB),)),
        named_by="--model",
    )
    assert facts is not None
    assert facts.capacity_bytes == 80 * GiB
    assert 2 * GiB < facts.weights_bytes < 3 * GiB


def test_a_settled_cause_is_not_overridden() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 3.06 MiB is free. Process 1234 has 20.00 GiB "
        "memory in use. Including non-PyTorch memory, this process has 3.55 GiB memory in use. "
        "Of the allocated memory 3.10 GiB is allocated by PyTorch, and 7.25 MiB is reserved by "
        "PyTorch but unallocated."
    )
    bare = diagnose_text(text)
    named = diagnose_text(text, model=spec("llama-3.2-1b"))
    assert bare.cause == "other_process_holding_memory"
    assert named.cause == bare.cause


def test_cli_doctor_with_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", _text(SMALL_CARD), "--model", "llama-3.1-8b", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cause"] == "model_too_large"
    assert doc["confidence"] >= 0.8


def test_the_messages_total_decides_not_another_gpu_given() -> None:
    # the message says 10.92 GiB total; --gpu rtx-4090 (24 GiB) is not the card that failed:
    # 14.96 GiB of llama-3.1-8b weights on it was "in between" (0.35) and the explanation
    # said "on a 23.99 GiB device" right after the message's "10.92 GiB total"
    log = Path(__file__).parent / "fixtures" / "oom_logs" / "oom-torch-llama-82-7b-11gb.txt"
    rtx4090 = Hardware(devices=(DeviceTarget(name="RTX 4090", capacity_bytes=24 * GiB),))
    d = diagnose_text(log.read_text(encoding="utf-8"), model=spec("llama-3.1-8b"), hardware=rtx4090)
    assert d.cause == "model_too_large"
    assert d.confidence >= 0.8
    assert "on a 10.92 GiB device (the message's; not the 24.00 GiB GPU" in d.explanation
    same = Hardware(devices=(DeviceTarget(name="x", capacity_bytes=11 * GiB),))
    d = diagnose_text(log.read_text(encoding="utf-8"), model=spec("llama-3.1-8b"), hardware=same)
    assert "on a 10.92 GiB device." in d.explanation


# heldout8 h8-colossalai-4962: llama2-7B fine-tuned with colossalai_zero2 on one 24 GB 4090;
# PyTorch asks for 25.10 GiB = 6.74B parameters x 4 bytes (the fp32 master copy)
ZERO2_FLAT = "h8-colossalai-4962"


def test_a_request_the_size_of_the_whole_model_is_the_model() -> None:
    text = _text(ZERO2_FLAT)
    bare = diagnose_text(text)
    assert bare.cause == "batch_or_activations"  # larger than the card: read as one tensor
    named = diagnose_text(text, model=spec("llama-2-7b"))
    assert named.cause == "model_too_large"
    assert named.confidence == pytest.approx(0.75)
    assert "6.74B parameters x 4 = 25.10 GiB" in named.explanation
    assert named.fixes[0].title.startswith("Offload the optimizer state")
    assert not any(f.title.startswith("Cut the batch") for f in named.fixes)


def test_a_whole_model_buffer_at_an_inference_load_is_not_fixed_by_optimizer_offload() -> None:
    """model.to("cuda") asking for every parameter x 2 bytes with nothing in the log training:
    there is no optimizer state, so ZeRO offload/sharding do not lead; the sized quantized
    load does. (The ZeRO-2 record above keeps its offload fix first.)"""
    text = (
        '  File "run.py", line 40, in <module>\n    model.to("cuda")\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.96 GiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 8.10 GiB is free. Including non-PyTorch memory, "
        "this process has 15.53 GiB memory in use. Of the allocated memory 15.00 GiB is "
        "allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated."
    )
    named = diagnose_text(text, model=spec("llama-3.1-8b"))
    assert named.cause == "model_too_large"
    assert "every parameter of" in named.explanation
    titles = [f.title for f in named.fixes]
    assert not any("optimizer" in t or "ZeRO" in t for t in titles), titles
    assert named.fixes[0].expected_saving_bytes


def test_a_request_of_another_models_size_is_not_read_as_the_model() -> None:
    text = _text(ZERO2_FLAT)
    # 1.24B x 4 = 4.6 GiB and 13.0B x 2 = 24.2 GiB (3.5% off): neither is this buffer
    for name in ("llama-3.2-1b", "llama-2-13b"):
        named = diagnose_text(text, model=spec(name))
        assert named.cause == "batch_or_activations", name
