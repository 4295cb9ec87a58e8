"""What this process holds, read first: an inferred gap beside a process that holds most of the
card (rules_torch_allocator._minor_gap), a layer-sized request on a small card."""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


def test_minor_gap_beside_a_training_process_reads_the_process() -> None:
    # h5-lambdalabs-48: 20.57 GiB allocated of 23.68 GiB, about 2.8 GiB unaccounted (12%): the
    # poster's model did not fit the card, not another job
    d = diagnose_text(corpus_text("h5-lambdalabs-48"))
    assert d.cause == "model_too_large"
    assert "minor share" in d.explanation
    assert "oomkit gpus" in d.explanation
    assert any("other process" in f.title.lower() or "gpu" in f.title.lower() for f in d.fixes)


def test_minor_gap_beside_an_inference_process_reads_the_process() -> None:
    # h8-ipexllm-12080: 11.09 GiB allocated of 15.11 GiB, the rest unaccounted
    d = diagnose_text(corpus_text("h8-ipexllm-12080"))
    assert d.cause == "batch_or_activations"
    assert "minor share" in d.explanation


def test_a_gap_over_a_quarter_of_the_card_stays_another_process() -> None:
    # h3-vllm-783: 27.93 GiB reserved of 44.56 GiB and 16 GiB unaccounted (36%): the poster's
    # nvidia-smi showed other processes holding about 15 GiB
    d = diagnose_text(corpus_text("h3-vllm-783"))
    assert d.cause == "other_process_holding_memory"


def test_a_gap_beside_a_light_process_stays_another_process() -> None:
    # h3-residualmasking-15: this process holds about 1 GiB of 10.76 GiB
    d = diagnose_text(corpus_text("h3-residualmasking-15"))
    assert d.cause == "other_process_holding_memory"


def test_a_request_the_size_of_a_layer_on_a_small_card_is_not_read_as_an_activation() -> None:
    # h5-localmmchat-24: 512 MiB (a quarter of a 1.96 GiB card) is no larger than one layer's
    # weight matrix: the card share alone does not make it an activation
    d = diagnose_text(corpus_text("h5-localmmchat-24"))
    assert d.cause == "model_too_large"


def test_a_request_above_a_layer_on_a_small_card_is_the_activation() -> None:
    # h8-mmaction2-365: 766 MiB on a 2 GiB card, a video batch (the maintainer points to
    # batch_size)
    d = diagnose_text(corpus_text("h8-mmaction2-365"))
    assert d.cause == "batch_or_activations"
