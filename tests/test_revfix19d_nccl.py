"""revfix19d: NCCL's "Cuda failure 2 'out of memory'" (CUDACHECK, src/include/checks.h) and its
"Failed to CUDA calloc N bytes" (src/include/alloc.h) are recognised, with NCCL's own levers and
the deciding question (another process on the card); other CUDA failures are not memory."""

from __future__ import annotations

import pytest

from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text

# NVIDIA/nccl#1235 (a rank's lines), pytorch's wrapper of the same error
CALLOC = (
    "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
    "ng30903:3063028:3066152 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 "
    "bytes\n"
    "ng30903:3063028:3066152 [3] NCCL INFO transport/p2p.cc:204 -> 1\n"
)
TORCH = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.19.3\n"
    "ncclUnhandledCudaError: Call to CUDA function failed.\n"
    "Last error:\n"
    "Cuda failure 2 'out of memory'\n"
)


@pytest.mark.parametrize("text", [CALLOC, TORCH])
def test_nccl_oom_gets_nccl_levers(text: str) -> None:
    d = diagnose_text(text)
    assert d.primary is not None
    assert d.primary.format == "nccl_cuda_oom"
    assert "No parser knows" not in d.explanation
    cmds = " ".join(c for f in d.fixes for c in f.commands)
    assert "NCCL_NVLS_ENABLE=0" in cmds
    assert "NCCL_BUFFSIZE=" in cmds
    assert not any("Halve the batch" in f.title for f in d.fixes)
    assert d.question is not None
    assert d.question.id == "other_process"
    assert not contradictions(d)
    assert not hardware_top_fix(d)


def test_the_calloc_size_is_read() -> None:
    d = diagnose_text(CALLOC)
    assert any(e.requested_bytes == 6291456 for e in d.events)


@pytest.mark.parametrize(
    "text",
    [
        "n1:1:2 [0] include/alloc.h:102 NCCL WARN Cuda failure 700 'an illegal memory access was "
        "encountered'",
        "n1:1:2 [0] include/alloc.h:102 NCCL WARN Cuda failure 1 'invalid argument'",
    ],
)
def test_other_cuda_failures_are_not_memory(text: str) -> None:
    assert not diagnose_text(text).oom_found
