"""doccause18: "the card of N GB cannot run it" (heldout31 studied, retired).

Every text here is synthetic, written in the wording users put in issue titles and bodies (not a
copy of a corpus record); the rule is tested with near misses it must leave alone.
"""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_stated_size import card_cannot_run
from oomkit.units import GiB

_TORCH = "torch.cuda.OutOfMemoryError: CUDA out of memory"


@pytest.mark.parametrize(
    ("text", "card"),
    [
        # Chinese: size, GPU word, "cannot get it running" (the base rate said the batch)
        ("按照教程部署，我10g的显存跑不起来，显存不够", 10 * GiB),
        ("用默认参数推理，A10 24G显存也跑不了，报 CUDA out of memory", 24 * GiB),
        ("提示 out of memory，我的显卡只有6G是运行不了吗", 6 * GiB),
        # English: the verb, then the one card
        ("CUDA out of memory: I can't run it on my RTX 3060 12GB GPU", 12_000_000_000),
    ],
)
def test_one_card_that_cannot_run_the_job_is_the_resident_part(text: str, card: int) -> None:
    found = card_cannot_run(text)
    assert found is not None, text
    assert found[0] == card, text
    d = diagnose_text(text)
    assert d.cause == "model_too_large", text
    # 0.4 on the message's own line; 0.35 from a sentence beside a runtime's message
    # (rules_surroundings.stated_around)
    assert d.confidence == pytest.approx(0.4) or d.confidence == pytest.approx(0.35)
    assert "batch 1" in d.explanation  # the deciding fact is stated
    assert d.fixes
    assert d.fixes[0].title.startswith("Load the weights in fewer bits")


def test_read_on_a_line_beside_the_runtime_message() -> None:
    # a CJK sentence is prose too (paste_context.MIN_CJK): before doccause18 it had no Latin
    # words to count and the base rate answered the bare message
    d = diagnose_text(f"我的12G的显存跑不起来\n{_TORCH}")
    assert d.cause == "model_too_large"
    assert d.confidence == pytest.approx(0.35)
    assert "line 1 of the paste" in d.explanation
    assert diagnose_text(f"显存跑不起来\n{_TORCH}").cause != "model_too_large"  # no card size


@pytest.mark.parametrize(
    "text",
    [
        # RAM, not a card
        "16G内存的电脑为啥都跑不起来，out of memory",
        # several cards: the weights may be split
        "8卡3090 24G显存跑不起来，CUDA out of memory",
        "CUDA out of memory: can't run it on two 24GB GPUs",
        # an input's size named: that input, not the model, is what does not run
        "CUDA out of memory: can't run it on my 8GB GPU at 1024x1024",
        "batch_size=16 的时候 12G显存跑不起来, CUDA out of memory",
        # no card size at all
        "显存不够，跑不起来，CUDA out of memory",
    ],
)
def test_near_misses_are_left_to_the_other_rules(text: str) -> None:
    assert card_cannot_run(text) is None, text
    d = diagnose_text(text)
    assert "cannot run on one card" not in d.explanation, text


def test_a_traceback_past_the_weights_placement_is_not_overruled() -> None:
    # a forward frame: the weights were placed, the statement cannot be about this failure
    # (PyTorch holds nearly the whole card: with only 3.20 of 7.79 GiB reserved, 3.39 GiB
    # would be held outside this process and docpost27's T6 reads another tenant first)
    text = (
        "我8G显存跑不起来\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in forward\n'
        "    x = self.attn(x)\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB (GPU 0; "
        "7.79 GiB total capacity; 6.10 GiB already allocated; 1.20 GiB free; 6.20 GiB reserved "
        "in total by PyTorch)"
    )
    d = diagnose_text(text)
    assert d.cause == "batch_or_activations"
    assert "cannot run on one card" not in d.explanation
