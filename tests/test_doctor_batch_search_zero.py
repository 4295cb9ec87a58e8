"""accelerate's ``find_executable_batch_size`` reaching zero (heldout45, lighteval #525): the
first fix is one the user can apply on the GPUs the log shows, sharding over more GPUs last.

accelerate/utils/memory.py ``find_executable_batch_size`` halves the batch on each OOM and
raises ``RuntimeError("No executable batch size found, reached zero.")`` once it hits 0: even
batch 1 does not fit, so the resident part (weights, optimizer states) must shrink.
"""

from __future__ import annotations

from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text

MESSAGE = "RuntimeError: No executable batch size found, reached zero."


def test_batch_search_reaching_zero_puts_quantize_first_and_sharding_last() -> None:
    d = diagnose_text(MESSAGE)
    assert d.oom_found
    assert d.cause == "model_too_large"
    assert not hardware_top_fix(d)
    assert not contradictions(d)
    titles = [f.title for f in d.fixes]
    assert titles[0].startswith("Quantize the weights or train LoRA adapters")
    assert "load_in_4bit=True" in d.fixes[0].commands
    shard = [f for f in d.fixes if "Shard the model" in f.title]
    assert shard
    assert shard[0].hardware
    assert d.fixes[-1] is shard[0]
