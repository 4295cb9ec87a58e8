"""revfix19d: a "saves" figure is what the fix frees (or the room it adds), never the shortfall,
and a swapfile suggested for a host OOM is large enough for what it is meant to hold."""

from __future__ import annotations

import re

from oomkit.diagnose.doctor import diagnose_text

TORCH = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.64 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 22.57 GiB memory in use. Of the allocated memory 21.90 GiB is allocated by PyTorch, and "
    "200.00 MiB is reserved by PyTorch but unallocated."
)
KILL = (
    "[12345.678] Out of memory: Killed process 4321 (python) total-vm:80000000kB, "
    "anon-rss:62914560kB, file-rss:0kB, shmem-rss:0kB"
)


def test_the_batch_cut_saves_what_it_frees_not_the_shortfall() -> None:
    d = diagnose_text(TORCH)
    cut = next(f for f in d.fixes if f.title.startswith("Cut the batch size"))
    shortfall = 2 * 2**30 - int(1.06 * 2**30)
    assert cut.expected_saving_bytes is not None
    assert cut.expected_saving_bytes != shortfall
    assert cut.expected_saving_bytes == 2**30  # 2x smaller: the 2 GiB tensor becomes 1 GiB
    assert "more" in cut.why  # the shortfall is said as what it needs


def test_the_swapfile_covers_what_the_killed_process_held() -> None:
    d = diagnose_text(KILL)
    fix = next(f for f in d.fixes if f.title.startswith("Give the job more RAM"))
    gib = int(re.search(r"fallocate -l (\d+)G", " ".join(fix.commands)).group(1))  # type: ignore[union-attr]
    assert gib * 2**30 >= 62914560 * 1024
    assert fix.expected_saving_bytes is not None
    assert fix.expected_saving_bytes <= gib * 2**30
