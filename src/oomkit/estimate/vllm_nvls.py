"""NCCL 2.20's NVLink SHARP (NVLS) buffers: vLLM 0.5.0-0.6.3 with TP > 2 on an NVSwitch node.

NCCL sets NVLS up for every communicator whose GPUs sit on one NVSwitch (Hopper SXM) node with
more than two GPUs (``ncclNvlsInit``: ``if (!ncclParamNvlsEnable() || gpuCount <= 2 ...)
return``; ``NCCL_NVLS_ENABLE`` defaults to 2, "on where multicast is supported"). In NCCL
2.20.x ``ncclNvlsSetup`` (src/transport/nvls.cc of tag v2.20.5-1) binds one physical buffer of

    nvlsTotalSize = comm->nChannels x 2 x (buffSize + NVLS_MEM_ALIGN_SIZE) x nHeads

per GPU: ``buffSize`` is the SIMPLE protocol buffer (``DEFAULT_BUFFSIZE`` 4 MiB, src/init.cc),
``NVLS_MEM_ALIGN_SIZE`` 2 MiB, ``nHeads`` the GPUs of the node ("NVLS search must have ngpus
heads at most", src/graph/search.cc) and ``nChannels`` the communicator's channel count (all of
them: 2.18/2.19 used the 16 NVLS channels, 2.21 cut ``buffSize`` to 8 x 128 KiB and 2.22 went
back to the NVLS channels). NVLS memory is bound with ``cuMemCreate``, outside PyTorch, after
vLLM's ``init_gpu_memory`` snapshot (``Worker.init_device`` takes it before
``init_worker_distributed_environment``), so the KV sizing charges it.

vLLM 0.5.0-0.6.3 pins torch 2.3.x / 2.4.0, whose wheels require ``nvidia-nccl-cu12==2.20.5``,
and loads that same library for its own communicator (``find_nccl_library``: "the library file
brought by PyTorch"; 0.4.x loaded ``vllm-nccl-cu12`` 2.18 instead). Each tensor-parallel group
holds two NCCL communicators by the end of the profile run (vllm/distributed/parallel_state.py
``GroupCoordinator``): the ``PyNcclCommunicator`` created with the group, and the torch
``device_group`` one that ``tensor_model_parallel_gather`` creates when the profile run gathers
the logits (``LogitsProcessor._get_logits``).

``comm->nChannels`` on a Hopper NVSwitch node follows its 18 NVLinks, not the GPU count (NCCL
maintainers, NVIDIA/nccl#1429); 8-GPU H100 logs show channel indices past 20 (NVIDIA/nccl#1259).
oomkit takes 24, the low end of 24-32, so the term does not overstate: 2 x 24 x 2 x 6 MiB x 8
= 4.5 GiB per GPU at TP 8. vllm#6746 (Meta's Llama 3.1 405B FP8, 8x H100, vLLM of 2024-07-24)
logged 79392 KV tokens (4.8 GiB per GPU); without this term oomkit's pool is 11.8 GiB (196K
tokens), with it 7.3 GiB (121K tokens, below the default 131072, so vLLM refuses to start). The
rest of the gap (~2.5 GiB) is not explained here: ~1 GiB of weights (57.75 GiB logged, 56.76
modelled) and whatever of the 24-32 channel spread or NCCL's ring buffers is above oomkit's
NVSwitch term.
"""

from __future__ import annotations

from oomkit.estimate.vllm_engines import on_nvswitch
from oomkit.spec.hardware import DeviceTarget
from oomkit.units import MiB

__all__ = ["NVLS_NCCL_VERSIONS", "nvls_buffer_bytes"]

#: the NCCL releases whose NVLS buffer rule is modelled
NVLS_NCCL_VERSIONS = ("2.20",)
_BUFFSIZE = 4 * MiB  # DEFAULT_BUFFSIZE (1 << 22), NCCL 2.20 src/init.cc
_MEM_ALIGN = 2 * MiB  # NVLS_MEM_ALIGN_SIZE (1 << 21), src/transport/nvls.cc
_HOPPER_CHANNELS = 24  # comm->nChannels on a Hopper NVSwitch node (24-32 seen)
_COMMS_PER_TP_GROUP = 2  # vLLM's PyNcclCommunicator + torch's device_group (logits gather)


def nvls_buffer_bytes(device: DeviceTarget, tp: int, nccl: str | None) -> int:
    """NVLS buffers per GPU for a ``tp``-way group on ``device`` with NCCL ``nccl`` (0 when the
    NCCL release is not modelled, with two GPUs or fewer, or off an NVSwitch node)."""
    if nccl not in NVLS_NCCL_VERSIONS or tp <= 2:
        return 0
    if not on_nvswitch(device):
        return 0
    per_comm = _HOPPER_CHANNELS * 2 * (_BUFFSIZE + _MEM_ALIGN) * tp
    return _COMMS_PER_TP_GROUP * per_comm
