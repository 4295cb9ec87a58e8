"""doccause17: facts the text states that the rules ignored (heldout29-30 studied, retired).

Every text here is synthetic, written in the wording users use (not a copy of a corpus record);
each rule is tested with a near miss it must leave alone.
"""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.prior_stated import stated_phase


def test_growth_request_after_request_is_accumulation() -> None:
    for text in (
        "After every request the server's VRAM usage grows a little, until it dies with CUDA "
        "out of memory.",
        "CUDA out of memory: the RAM consumption increases by about 200 MB per request.",
        "With each call to /v1/embeddings the GPU memory increases until the OOM error.",
    ):
        d = diagnose_text(text)
        assert d.cause == "leak_or_accumulation", text
        assert "memory_allocated()" in d.explanation


def test_a_request_without_growth_is_not_accumulation() -> None:
    for text in (
        # one request failing, no growth stated
        "CUDA out of memory after each request with a 32k prompt.",
        # the size of one request, not growth across requests
        "GPU memory increases with the number of images per request and then OOM.",
    ):
        assert diagnose_text(text).cause != "leak_or_accumulation", text


def test_a_card_counted_in_the_plural_names_the_device() -> None:
    assert stated_phase("Trying to load the model on two 4090s gives OOM") == "load_device"
    assert stated_phase("Cannot load the checkpoint on 8 A100s: out of memory") == "load_device"
    assert stated_phase("Cannot load the checkpoint on 8 H100s: out of memory") == "load_device"
    # no card named: a load whose device the words leave open
    assert stated_phase("It fails to load the model: killed, out of memory") == "load"
