"""docfix15: a training log whose card is below oomkit's LoRA + checkpointing phase figure is
not taken as ruling that run out on that check alone.

oomkit's LoRA/QLoRA + gradient-checkpointing estimates are 0.5-1.6% below measured H200 steps
(benchmarks/training_lora_phases_results.txt), so a completed forward that oomkit sizes above
the card means the loss never held the B x S x V logits (Liger / Unsloth fused cross-entropy) or
the sequences were padded shorter: the run is kept, with that said. Synthetic text in PyTorch's
(2.3+) message format and HF Trainer's traceback; the tokens are stated, the request is not the
logits.
"""

from __future__ import annotations

from test_doctor_training_observed import (
    TRAINER_TRACEBACK,
    doctor_json,
    estimated,
    torch_oom,
)

STATED = "per_device_train_batch_size=4,\nmax_seq_length=2048,\n"


def _log(request: str) -> str:
    return (
        STATED
        + TRAINER_TRACEBACK
        + torch_oom(request, "23.52 GiB", "1.21 GiB", "22.30 GiB", "20.11 GiB", "1.73 GiB")
    )


def test_lower_card_keeps_lora_with_checkpointing_and_says_why() -> None:
    fixes = estimated(doctor_json("--model", "llama-3.1-8b", _log("1.00 GiB")))
    assert fixes
    for f in fixes:
        assert "LoRA + gradient checkpointing (inferred, not stated in the log)" in f["why"]
        assert "QLoRA" not in f["why"].split("sized for the least different run")[1]
        assert "fused cross-entropy (Liger / Unsloth)" in f["why"]
        assert "sequences padded shorter than assumed" in f["why"]


def test_a_request_that_is_the_logits_rules_fused_cross_entropy_out() -> None:
    # 4 x 2048 x 128256 x 4 bytes: the loss held the logits, so no fused loss explains the card
    fixes = estimated(doctor_json("--model", "llama-3.1-8b", _log("3.91 GiB")))
    assert fixes
    assert not any("fused cross-entropy (Liger / Unsloth)" in f["why"] for f in fixes)
