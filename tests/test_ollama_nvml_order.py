"""Ollama 0.1.45-0.3.x on Windows: free memory through NVML by CUDA index
(oomkit.estimate.ollama_nvml_order).

ollama#5239 (0.1.45, Windows, RTX 2080 Ti + RTX 4090, Codestral-22B Q6_K): the runner lists the
2080 Ti as device 0 and allocates "11597" MiB on it; 0.1.43 loaded the same model.
"""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.generations import generation_effect, resolve_generation
from oomkit.estimate.llamacpp import estimate_llamacpp_breakdown
from oomkit.estimate.ollama_nvml_order import (
    crossed_gpu_order,
    cuda_fastest_first,
    llama_graph_partial,
    nvml_by_index,
)
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

_GPUS = "rtx-2080-ti,rtx-4090"  # bus order, as the 0.1.45 runner's log lists them


def _ollama(version: str, os: str | None) -> tuple[dict[str, object], list[int], str]:
    hw = hardware_for(parse_gpu_list(_GPUS), os=os)
    s = InferenceSettings(runtime="ollama", quant="Q6_K", ctx=2048, runtime_version=version)
    est = estimate("codestral-22b", s, hw, offline=True)
    return est.settings, [d.weights_bytes for d in est.devices], verdict(est, Platform(os=os)).level


def test_release_range_and_os() -> None:
    """v0.1.45 (commit 434dfe30c) to v0.4.0 (PR #7473, UUID lookup), Windows only (NVML was
    not wired on Linux)."""
    assert nvml_by_index((0, 1, 45), "windows")
    assert nvml_by_index((0, 3, 14), "Windows")
    assert not nvml_by_index((0, 1, 44), "windows")
    assert not nvml_by_index((0, 4, 0), "windows")
    assert not nvml_by_index((0, 2, 0), "linux")
    assert not nvml_by_index((0, 2, 0), None)
    effects = {
        v: generation_effect(resolve_generation("ollama", v), "nvml_by_index", False)
        for v in ("0.1.43", "0.1.45", "0.3.14", "0.4.0", "0.5.7")
    }
    assert effects == {
        "0.1.43": False,
        "0.1.45": True,
        "0.3.14": True,
        "0.4.0": False,
        "0.5.7": False,
    }


def test_fastest_first_crosses_the_free_memory() -> None:
    hw = hardware_for(parse_gpu_list(_GPUS), os="windows")
    devs = hw.devices
    assert cuda_fastest_first(devs) == (1, 0)  # CUDA: the 4090 (8.9) before the 2080 Ti (7.5)
    crossed = crossed_gpu_order(devs, [10 * GiB, 23 * GiB])
    # the 2080 Ti (CUDA 1) reads NVML 1 (the 4090's 23 GiB) and is sorted first
    assert crossed == ((0, 1), (23 * GiB, 10 * GiB))
    # bus order already fastest first, or one compute capability: nothing crossed
    rev = hardware_for(parse_gpu_list("rtx-4090,rtx-2080-ti"), os="windows").devices
    assert crossed_gpu_order(rev, [23 * GiB, 10 * GiB]) is None
    same = hardware_for(parse_gpu_list("2xrtx-2070"), os="windows").devices
    assert crossed_gpu_order(same, [7 * GiB, 7 * GiB]) is None


def test_llama_graph_case_dense_only() -> None:
    """v0.1.45 GraphSize 'llama' partial for Codestral (E 6144, C 2048, b 512, H 48, Hkv 8,
    Dh 128, V 32768): 4 b E + the attention term 256,116,736."""
    g = llama_graph_partial(find_model("codestral-22b").spec(), 2048, 512)
    assert g == 4 * 512 * 6144 + 256_116_736
    assert llama_graph_partial(find_model("mixtral-8x7b").spec(), 2048, 512) is None


def test_ollama_5239_split_crossed_on_0_1_45_not_on_0_1_43() -> None:
    """0.1.45: the 2080 Ti, believed to have the 4090's free memory, is listed first and gets 29
    blocks (split 29,28): tight on its 11 GiB. 0.1.43 passes no split (llama.cpp's default by
    total memory puts 18 blocks there) and fits; Linux 0.1.45 reads no NVML."""
    spec = find_model("codestral-22b").spec()
    hw = hardware_for(parse_gpu_list(_GPUS), os="windows")
    _, bd = estimate_llamacpp_breakdown(
        spec, InferenceSettings(runtime="llama.cpp", quant="Q6_K", ctx=2048), hw
    )
    block = sum(t.n_bytes for t in bd.placement.tensors if t.layer == 0)
    # the log's 'allocating 11597' MiB is 38 of these blocks (no output layer): device 0 got
    # the first share of a split in Ollama's crossed order
    assert int(38 * block / MiB) == 11597

    settings, weights, level = _ollama("0.1.45", "windows")
    assert settings["tensor_split"] == "29,28"
    assert weights[0] == 29 * block
    assert level == "tight"

    old_settings, old_weights, old_level = _ollama("0.1.43", "windows")
    assert old_settings.get("tensor_split") in (None, "")
    assert old_weights[0] == 18 * block
    assert old_level == "fits"

    linux_settings, _, _ = _ollama("0.1.45", "linux")
    assert linux_settings.get("tensor_split") in (None, "")
