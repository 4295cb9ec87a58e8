"""llama.cpp b4069-b4126 on SYCL: KQ on the CPU, held twice by the GPU (llamacpp_sycl).

The runs of llama.cpp#10421 (Arc A770 16 GB, Windows, Qwen2.5-3B Q4_1, ``-ngl 99 -np 48``): at
``--ctx-size 112000`` build 4069 fails ``ggml_gallocr_reserve_n: failed to allocate SYCL0 buffer
of size 7573604352``, builds before it load, and b4069 loads at 60000. Real catalog model and
GPU; the compute graph is oomkit's ggml-alloc simulation, not a fixture.
"""

from __future__ import annotations

import dataclasses

from oomkit.api import estimate
from oomkit.catalog.models import search_models
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.llamacpp_compute import GraphShape
from oomkit.estimate.llamacpp_maxalloc import SYCL_MAX_ALLOCATION_BYTES, max_allocation_bytes
from oomkit.estimate.llamacpp_sycl import sycl_kq_on_cpu_compute
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

MODEL = "qwen2.5-3b"  # 16 query heads
LOGGED_B4069 = 7573604352  # 'failed to allocate SYCL0 buffer of size 7573604352'


def _hw(backend: str = "xpu") -> Hardware:
    hw = hardware_for([find_gpu("arc-a770-16gb")])
    dev = dataclasses.replace(hw.devices[0], backend=backend)
    return dataclasses.replace(hw, devices=(dev,))


def _est(ctx: int, build: str, backend: str = "xpu", fa: bool | None = None) -> Estimate:
    s = InferenceSettings(
        runtime="llama.cpp",
        quant="Q4_1",
        ctx=ctx,
        parallel=48,
        n_gpu_layers=99,
        runtime_version=build,
        flash_attn=fa,
    )
    return estimate(MODEL, s, _hw(backend), offline=True)


def _compute(est: Estimate, name: str) -> int:
    buffers = est.runtime_details["buffers"]
    assert isinstance(buffers, dict)
    return int(buffers["compute"][name])


def _gpu_compute(est: Estimate) -> int:
    buffers = est.runtime_details["buffers"]
    assert isinstance(buffers, dict)
    names = [n for n in buffers["compute"] if not n.endswith("_Host") and n != "CPU"]
    assert len(names) == 1
    return int(buffers["compute"][names[0]])


def test_builds_resolve_to_the_pr_and_its_revert() -> None:
    assert resolve_generation("llama.cpp", "b4068").key == "2024-10-loader"
    assert resolve_generation("llama.cpp", "b4069").key == "2024-11-sycl-kq-cpu"
    assert resolve_generation("llama.cpp", "b4126").key == "2024-11-sycl-kq-cpu"
    assert resolve_generation("llama.cpp", "b4127").key == "2024-11-sycl-revert"


def test_b4069_holds_kq_twice_and_passes_the_4_gib_limit() -> None:
    before, b4069, after = (_est(112000, b) for b in ("b4068", "b4069", "b4127"))
    kq = 112000 * 512 * 16 * 4  # n_kv x n_ubatch x n_head f32
    assert _gpu_compute(b4069) == _gpu_compute(before) + kq
    assert _gpu_compute(after) == _gpu_compute(before)
    # the logged buffer of build 4069, within 1%
    assert abs(_gpu_compute(b4069) - LOGGED_B4069) < LOGGED_B4069 // 100
    # the 7 GiB buffer fits the 16 GiB card; it is one allocation above Level Zero's 4 GiB
    assert b4069.devices[0].total_bytes < b4069.devices[0].capacity_bytes  # type: ignore[operator]
    assert any("4294967296 bytes" in b and "PR #15815" in b for b in b4069.blockers)
    assert not before.blockers
    assert not after.blockers
    assert _gpu_compute(before) < SYCL_MAX_ALLOCATION_BYTES
    # 'i have to lower context all the way to 60k with b4069'
    at_60k = _est(60000, "b4069")
    assert not at_60k.blockers
    assert _gpu_compute(at_60k) < SYCL_MAX_ALLOCATION_BYTES


def test_only_sycl_without_flash_attention() -> None:
    cuda = _est(112000, "b4069", backend="cuda")
    cuda_before = _est(112000, "b4068", backend="cuda")
    assert _gpu_compute(cuda) == _gpu_compute(cuda_before)
    sh = GraphShape(
        n_tokens=512, n_outputs=512, n_stream=1, n_kv=112000, n_kv_swa=None, flash_attn=True
    )
    spec = next(e for e in search_models(MODEL) if e.key == MODEL).spec()
    gpus = (DeviceTarget(name="Arc A770", backend="xpu"),)
    out, notes = sycl_kq_on_cpu_compute(
        spec,
        sh,
        ["xpu:0"],
        gpus,
        ["SYCL0"],
        {"SYCL0": 1, "SYCL_Host": 2},
        {"SYCL0": "xpu:0", "SYCL_Host": "cpu"},
    )
    assert out == {"SYCL0": 1, "SYCL_Host": 2}
    assert notes == []
    sh_nofa = dataclasses.replace(sh, flash_attn=False)
    out, notes = sycl_kq_on_cpu_compute(
        spec,
        sh_nofa,
        ["xpu:0"],
        gpus,
        ["SYCL0"],
        {"SYCL0": 1, "SYCL_Host": 2},
        {"SYCL0": "xpu:0", "SYCL_Host": "cpu"},
    )
    kq = 112000 * 512 * 16 * 4
    assert out == {"SYCL0": 1 + kq, "SYCL_Host": 2 + kq}
    assert notes
    assert "PR #10257" in notes[0]
    # a SYCL device with no layer on it holds no KQ
    out, _ = sycl_kq_on_cpu_compute(
        spec, sh_nofa, ["cpu"], gpus, ["SYCL0"], {"SYCL0": 1}, {"SYCL0": "xpu:0"}
    )
    assert out == {"SYCL0": 1}


def test_sycl_default_limit_and_a_device_value() -> None:
    assert max_allocation_bytes(DeviceTarget(name="Arc A770", backend="xpu")) == 4 * 2**30
    own = DeviceTarget(name="Arc A770", backend="xpu", max_allocation_bytes=4294959104)
    assert max_allocation_bytes(own) == 4294959104
    assert max_allocation_bytes(DeviceTarget(name="RTX 3090", backend="cuda")) is None
