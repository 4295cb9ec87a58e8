"""HIP messages from AMD APUs: free above the total is the runtime's own output (rules_apu)."""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.rules_apu import APU_CONFIDENCE

_HIP = (
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total "
    "capacity of 15.49 GiB of which 84.98 GiB is free. Of the allocated memory 1.67 GiB is "
    "allocated by PyTorch, and 8.08 GiB is reserved by PyTorch but unallocated."
)


def test_the_corpus_apu_message_is_read_not_refused() -> None:
    """ROCm/TheRock#4598 (gfx1151): the old reading called it edited ("no runtime prints that")
    and gave no cause and no deciding fact."""
    d = diagnose_text(corpus_text("h15-TheRock-4598"))
    assert d.oom_found
    assert d.cause != "unknown"
    assert d.confidence <= APU_CONFIDENCE
    assert "What would decide" in d.explanation
    assert "VRAM aperture" in d.explanation
    assert any("mem_info_gtt_total" in c for f in d.fixes for c in f.commands)
    assert "edited or corrupted" not in d.explanation


def test_hip_free_above_total_is_an_apu_not_an_edit() -> None:
    d = diagnose_text(_HIP)
    assert "edited or corrupted" not in d.explanation
    assert d.confidence <= APU_CONFIDENCE


def test_cuda_free_above_total_is_still_refused() -> None:
    """cudaMemGetInfo never reports more free than total: the same numbers on CUDA are an edit."""
    d = diagnose_text(_HIP.replace("HIP out of memory", "CUDA out of memory"))
    assert d.cause == "unknown"
    assert d.confidence == 0.0
    assert "edited or corrupted" in d.explanation


def test_hip_within_its_total_gets_no_apu_note() -> None:
    d = diagnose_text(_HIP.replace("84.98 GiB is free", "1.20 GiB is free"))
    assert "VRAM aperture" not in d.explanation
    assert not any("carve-out" in f.title for f in d.fixes)
