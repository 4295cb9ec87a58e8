"""doccause19: a model name's hyphen before its size ("vicuna-7b", "Qwen-7B", "llama-2-13b").

The stated-size rules (:mod:`oomkit.diagnose.rules_stated_size`) read a model's parameter count
beside the card's memory; a hyphen before the count was refused, so the commonest way model names
are written ("Qwen-7B", which the module's own comment lists as read) was not. Texts are
synthetic, in the wording of issue titles; each with a near miss the rule must leave alone.
"""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_stated_size import _PARAMS, training_state_over_card, weights_over_card


def test_a_model_names_hyphen_before_its_size_is_read() -> None:
    for name, billions in (("vicuna-7b", "7"), ("Qwen-7B", "7"), ("llama-2-13b", "13")):
        m = _PARAMS.search(f"loading {name} now")
        assert m is not None, name
        assert m["p"] == billions, name
    # a range, a mixture-of-experts name and a file name are still not a model's size
    for other in ("7-13B models", "Qwen3-235B-A22B", "wan21_14b_24gb.yaml", "v1-7b"):
        assert _PARAMS.search(other) is None, other


def test_hyphenated_model_and_one_card_decide_by_arithmetic() -> None:
    # 34B x 2 bytes = 68 GB of 16-bit weights on a 48 GB card
    text = "Loading yi-34b on my 48GB GPU gives CUDA out of memory."
    assert weights_over_card(text) is not None
    d = diagnose_text(text)
    assert d.cause == "model_too_large"
    # full training of a hyphenated 7B on one 80 GB card: 112 GB of training state
    train = "Full fine-tuning of mistral-7b on a single 80GB H100 runs out of memory."
    assert training_state_over_card(train) is not None
    assert diagnose_text(train).cause == "model_too_large"
    # the same model that fits in 16 bit, or trained with LoRA, is not read
    assert weights_over_card("Loading phi-2b on my 24GB GPU gives CUDA out of memory.") is None
    lora = "LoRA fine-tuning of mistral-7b on a single 80GB H100 runs out of memory."
    assert training_state_over_card(lora) is None
