"""NCCL 2.20's NVLS buffers in vLLM 0.5.0-0.6.3 (oomkit.estimate.vllm_nvls).

Sources: NVIDIA/nccl v2.20.5-1 src/transport/nvls.cc ``ncclNvlsSetup`` (``nvlsTotalSize =
nChannels x 2 x (buffSize + 2 MiB) x nHeads``, no NVLS with two GPUs or fewer); vLLM 0.5.3.post1
``GroupCoordinator`` (a ``PyNcclCommunicator`` plus the torch ``device_group`` communicator the
logits gather creates). The record: vllm#6746, Meta's Llama 3.1 405B FP8 (fbgemm_fp8) on 8x H100
at the default max_model_len 131072 (2024-07-24): "Loading model weights took 57.7520 GB", then
"The model's max seq len (131072) is larger than the maximum number of tokens that can be stored
in KV cache (79392)".
"""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.vllm_nvls import nvls_buffer_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB


def _target(gpu: str) -> DeviceTarget:
    return hardware_for(parse_gpu_list(gpu)).devices[0]


def test_nvls_buffers_need_more_than_two_gpus_on_an_nvswitch_node() -> None:
    h100 = _target("h100-sxm")
    assert nvls_buffer_bytes(h100, 8, "2.20") == 2 * 24 * 2 * (4 + 2) * MiB * 8  # 4.5 GiB
    assert nvls_buffer_bytes(h100, 4, "2.20") == 2 * 24 * 2 * 6 * MiB * 4
    assert nvls_buffer_bytes(h100, 2, "2.20") == 0  # ncclNvlsInit: gpuCount <= 2
    assert nvls_buffer_bytes(h100, 8, None) == 0  # NCCL release not modelled
    assert nvls_buffer_bytes(_target("a100-80gb-sxm"), 8, "2.20") == 0  # no NVLS before Hopper
    assert nvls_buffer_bytes(_target("h100-pcie"), 4, "2.20") == 0  # no NVSwitch


def _est(model: str, version: str, gpu: str = "8xh100-sxm", **kw: object) -> Estimate:
    s = InferenceSettings(runtime="vllm", tp=8, runtime_version=version, **kw)  # type: ignore[arg-type]
    return estimate(model, s, hardware_for(parse_gpu_list(gpu)), offline=True)


def test_only_the_nccl_2_20_releases_charge_nvls() -> None:
    """vLLM 0.4.3 (vllm-nccl-cu12 2.18 for its own communicator) and 0.6.4 (torch 2.5.1, NCCL
    2.21) are outside the modelled rule; 0.5.0-0.6.3 charge 4.5 GiB more at TP 8."""
    nt = {
        v: _est("llama-2-70b", v, ctx=4096).runtime_details["non_torch_bytes"]
        for v in ("0.4.3", "0.5.0", "0.6.3")
    }
    assert isinstance(nt["0.4.3"], int)
    assert isinstance(nt["0.5.0"], int)
    assert nt["0.5.0"] - nt["0.4.3"] == 4608 * MiB
    assert nt["0.6.3"] == nt["0.5.0"]
    a100 = {
        v: _est("llama-2-70b", v, "8xa100-80gb-sxm", ctx=4096).runtime_details["non_torch_bytes"]
        for v in ("0.4.3", "0.5.0")
    }
    assert a100["0.5.0"] == a100["0.4.3"]  # no NVLS before Hopper


def test_vllm6746_405b_fp8_8xh100_default_length_refused() -> None:
    kw = {"quant": "fbgemm_fp8", "ctx": 131072}
    est = _est("llama-3.1-405b", "2024-07-24", **kw)
    rd = est.runtime_details
    weights = rd["weights_bytes_per_rank"]
    assert isinstance(weights, int)
    # Meta's fbgemm_fp8 layout (attention and the first/last FFN in bf16) within 2% of the log
    assert abs(weights - 57.7520 * GiB) < 0.02 * 57.7520 * GiB
    tokens = rd["kv_cache_tokens"]
    assert isinstance(tokens, int)
    assert tokens < 131072
    assert any("max_model_len 131072" in b for b in est.blockers)
    # 0.6.4 (NCCL 2.21, its NVLS buffers not modelled) keeps the default length
    assert _est("llama-3.1-405b", "0.6.4", **kw).blockers == ()
