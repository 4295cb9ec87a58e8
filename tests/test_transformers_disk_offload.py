"""``from_pretrained(device_map="auto", offload_folder=...)``: accelerate's CPU budget, then disk.

The real runs: huggingface/accelerate benchmarks/README.md at ea0d536 (heldout26), "two Titan
RTXs (24GB of RAM) and 32GB of RAM", ``big_model_inference.py --torch_dtype float32
--disk_offload`` for GPT-NeoX-20B and OPT-30B: both served, the table's CPU column 24.4 GB and
23.5 GB. Without the folder the same placement is an overflowing host (transformers refuses a
map with "disk" entries); with it, what the RAM cannot hold is memory-mapped from disk.
"""

from __future__ import annotations

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.transformers_placement import split_cpu_disk
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

RAM_32GB = 32 * 10**9


def test_split_walks_cpu_then_disk_and_never_back() -> None:
    groups = [((0, 0), 1), ((1, 0), 4), ((1, 1), 6), ((1, 2), 3), ((3, 0), 1)]
    where = {(0, 0): 0, (1, 0): -1, (1, 1): -1, (1, 2): -1, (3, 0): -1}
    # 4 fits a budget of 9, 6 does not: the walk moves on to disk, so 3 and 1 go there too
    assert split_cpu_disk(groups, where, 9) == (4, 10)
    assert split_cpu_disk(groups, where, None) == (14, 0)
    assert split_cpu_disk(groups, where, 100) == (14, 0)


def _run(model: str, folder: bool | None) -> tuple[Estimate, str]:
    settings = InferenceSettings(
        runtime="transformers",
        quant="fp32",
        ctx=20,
        runtime_version="2022-07-12",
        device_map="auto",
        offload_folder=folder,
    )
    hw = hardware_for(parse_gpu_list("2xtitan-rtx"), host_ram_bytes=RAM_32GB, n_devices=1)
    est = estimate(model, settings, hw, offline=True)
    return est, verdict(est, Platform()).level


def test_accelerate_benchmark_fp32_disk_offload_runs() -> None:
    for model in ("gpt-neox-20b", "opt-30b"):
        plain, plain_level = _run(model, None)
        disk, level = _run(model, True)
        over = plain.runtime_details["offloaded_to_cpu_bytes"]
        cpu = disk.runtime_details["offloaded_to_cpu_bytes"]
        on_disk = disk.runtime_details["offloaded_to_disk_bytes"]
        assert isinstance(over, int)
        assert isinstance(cpu, int)
        assert isinstance(on_disk, int)
        assert over > RAM_32GB  # fp32 beyond both GPUs and the RAM: no folder, no load
        assert plain.host.fits is False
        assert plain_level == "does_not_fit"
        assert 0 < cpu <= RAM_32GB
        assert on_disk > 0
        assert cpu + on_disk == over
        assert disk.host.fits is True
        assert level != "does_not_fit"  # the GPUs hold the same modules either way
