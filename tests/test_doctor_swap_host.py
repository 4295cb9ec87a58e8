"""Swap is host virtual memory (docrec28's lead): a report that swap ran out names host RAM,
not the GPU's batch; a GPU word on the line still places the failure on the device."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: 交换空间不够，程序退出",
        "the job died: out of swap space",
        "fatal error: swap file full, cannot allocate memory for the batch",
    ],
)
def test_short_swap_is_host_ram(text: str) -> None:
    assert diagnose_text(text).cause == "host_ram"


def test_a_gpu_oom_that_mentions_swap_space_stays_on_the_device() -> None:
    d = diagnose_text("torch.OutOfMemoryError: CUDA out of memory; swap space 4 GiB")
    assert d.cause != "host_ram"
