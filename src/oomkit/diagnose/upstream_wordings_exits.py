"""Upstream wordings of deaths and verdicts that report an OOM without the usual words (issue 9,
docrec26; the grammar is ``parse_wordings_exits``, the DataLoader and accelerate forms are read by
``parse_other`` and ``parse_families``)."""

from __future__ import annotations

from oomkit.diagnose.upstream_wordings_base import Wording
from oomkit.diagnose.upstream_wordings_base import w as _w

__all__ = ["EXITS"]

EXITS: tuple[Wording, ...] = (
    _w(
        "ollama",
        "ollama/ollama:llm/server.go (getServerStatus; ExitCode() is -1 when a signal ended it)",
        "llama runner process no longer running: %d %s",
        'level=ERROR source=sched.go:441 msg="error loading llama server" '
        'error="llama runner process no longer running: -1 "',
    ),
    _w(
        "mlc-llm",
        "mlc-ai/mlc-llm:python/mlc_llm/serve/engine.py (_estimate_max_total_sequence_length)",
        "Cannot estimate KV cache capacity. The model weight size {params_bytes} may be larger "
        "than GPU memory size {gpu_size_bytes}",
        "AssertionError: Cannot estimate KV cache capacity. The model weight size 7516192768 may "
        "be larger than GPU memory size 8589934592",
    ),
    _w(
        "accelerate",
        "huggingface/accelerate:src/accelerate/utils/modeling.py (load_checkpoint_in_model)",
        "At least one of the model submodule will be offloaded to disk, please pass along an "
        "`offload_folder`.",
        "ValueError: At least one of the model submodule will be offloaded to disk, please pass "
        "along an `offload_folder`.",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:torch/csrc/DataLoader.cpp (_error_if_any_worker_fails, strsignal)",
        "DataLoader worker (pid %d) is killed by signal: %s. ",
        "RuntimeError: DataLoader worker (pid 48213) is killed by signal: Terminated. ",
    ),
    # docrec27: the sentences PyTorch adds to a worker's SIGBUS, quoted without their line
    _w(
        "pytorch",
        "pytorch/pytorch:torch/csrc/DataLoader.cpp (handler_SIGBUS, the worker's stderr)",
        "ERROR: Unexpected bus error encountered in worker. This might be caused by "
        "insufficient shared memory (shm).",
        "This might be caused by insufficient shared memory (shm).",
    ),
    _w(
        "pytorch",
        "pytorch/pytorch:torch/csrc/DataLoader.cpp (THPModule_errorIfAnyWorkerFails, SIGBUS)",
        "It is possible that dataloader's workers are out of shared memory. Please try to raise "
        "your shared memory limit.",
        "It is possible that dataloader's workers are out of shared memory. Please try to raise "
        "your shared memory limit.",
    ),
    # docrec27: a notebook kernel that died without a traceback (host_ram, low: see
    # parse_wordings_exits._KERNEL_DIED)
    _w(
        "notebook",
        "Jupyter Notebook's 'Kernel Restarting' dialog (IPython notification area)",
        "The kernel appears to have died. It will restart automatically.",
        "The kernel appears to have died. It will restart automatically.",
    ),
    _w(
        "notebook",
        "microsoft/vscode-jupyter:src/platform/common/utils/localize.ts "
        "(kernelCrashedDueToCodeInCurrentOrPreviousCell)",
        "The Kernel crashed while executing code in the the current cell or a previous cell. "
        "Please review the code in the cell(s) to identify a possible cause of the failure.",
        "The Kernel crashed while executing code in the the current cell or a previous cell. "
        "Please review the code in the cell(s) to identify a possible cause of the failure. "
        "Click here for more info. View Jupyter log for further details.",
    ),
    # docrec27: "No enough memory" as a runtime prints it
    _w(
        "plaidml",
        "plaidml/plaidml: vertexai::tile::local_machine scheduler (std::runtime_error)",
        "No enough memory for the current schedule: required %1%, available %2%",
        "RuntimeError: No enough memory for the current schedule: required 4294967296, "
        "available 2147483648",
    ),
    _w(
        "windows",
        "winerror.h E_OUTOFMEMORY 0x8007000E (printed without its 0x by some DirectML callers)",
        "failed with error %08X",
        "DML device creation failed with error 8007000E",
    ),
)
