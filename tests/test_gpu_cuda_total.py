"""The capacity a runtime budgets against: the total CUDA reports, not NVML's ``memory.total``.

On Linux the driver keeps part of the framebuffer that ``cudaMemGetInfo`` never reports as
total (an RTX 3090: 23.54-23.70 GiB of NVML's 24 GiB), and every runtime oomkit models budgets
against CUDA's figure (PyTorch's allocator, vLLM ``util x torch.cuda.mem_get_info()[1]``,
SGLang's static fraction, llama.cpp and Ollama's free/total). The catalog's ``cuda_total_bytes``
holds the smallest such figure a public message shows for the card, each tied to the records it
comes from; Windows/WSL (WDDM) report NVML's total and keep the verdict's WDDM reservation.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.catalog import GpuModel, all_gpus, find_gpu, runtime_capacity_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.units import GiB, MiB, format_bytes

ROOT = Path(__file__).parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
ROWS_WITH_CUDA = [g for g in all_gpus() if g.cuda_total_bytes is not None]
_ID = re.compile(r"\b(?:h\d+|tc|sv|vllm|sglang|tf|lcpp|ollama|log|hf)-[\w.+-]*\w")
#: a public thread outside the development data, its message quoted in the source
_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|discussions)/\d+")
_FIGURE = re.compile(
    r"(?:([\d.]+) GiB total capacity|total capac\w* of ([\d.]+) GiB"
    r"|total_gpu_memory[ =(]*([\d.]+) ?GiB"
    r"|Free memory on device[^(]{0,12}\([\d.]+/([\d.]+) GiB\))"  # vLLM's startup check
)


def _development_records() -> dict[str, str]:
    """id -> the record's text, over the development parts (the doctor corpus's development
    parts and the verdict runs); never a fresh held-out part."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("dc", ROOT / "benchmarks" / "doctor_corpus.py")
    assert spec is not None
    assert spec.loader is not None
    dc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dc)
    files = [
        f for p in dc.DEVELOPMENT_PARTS for f in (FIXTURES / "oom_corpus").glob(f"{p}_*.jsonl")
    ]
    files += sorted((FIXTURES / "verdict_runs").glob("*.jsonl"))
    out: dict[str, str] = {}
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = json.dumps(rec, ensure_ascii=False).replace('\\"', '"')
    return out


RECORDS = _development_records()


@pytest.mark.parametrize("gpu", ROWS_WITH_CUDA, ids=lambda g: g.key)
def test_every_cuda_total_is_a_logged_figure_of_its_cited_records(gpu: GpuModel) -> None:
    """No figure is guessed: every record the row cites is development data, the row's figure
    is one that a cited record's message prints (PyTorch's 'total capacity' or vLLM's
    total_gpu_memory, 2 decimals of GiB), and no cited record prints a smaller one."""
    assert gpu.vendor == "nvidia"
    assert gpu.cuda_total_source
    ids = _ID.findall(gpu.cuda_total_source)
    urls = _URL.findall(gpu.cuda_total_source)
    assert ids or urls, gpu.cuda_total_source
    missing = [i for i in ids if i not in RECORDS]
    assert not missing
    texts = [RECORDS[i] for i in ids] + ([gpu.cuda_total_source] if urls else [])
    figures = {float(next(g for g in m.groups() if g)) for t in texts for m in _FIGURE.finditer(t)}
    figure = round(gpu.cuda_total_bytes / GiB, 2) if gpu.cuda_total_bytes else None
    assert figure in figures, (figure, sorted(figures))
    # the smallest figure near the card (other cards of a multi-GPU record print their own);
    # a unified-memory SoC's total is the OS's MemTotal, up to a tenth below the nominal size
    slack = 0.1 * gpu.memory_bytes / GiB if gpu.unified_memory else 1.0
    near = {f for f in figures if gpu.memory_bytes / GiB - slack <= f}
    assert figure == min(near), sorted(near)


@pytest.mark.parametrize("gpu", ROWS_WITH_CUDA, ids=lambda g: g.key)
def test_the_cuda_total_is_below_the_nvml_total_by_the_driver_reserve(gpu: GpuModel) -> None:
    """The driver reserve is 0-0.9 GiB on every card with a figure (Volta about nothing, A100
    80GB 0.9 GiB); a larger gap would be another card or a vGPU profile, not this one."""
    assert gpu.cuda_total_bytes is not None
    gap = gpu.memory_bytes - gpu.cuda_total_bytes
    if gpu.unified_memory:  # no framebuffer: CUDA's total is the OS's MemTotal (GB10)
        assert 0 < gap <= 0.1 * gpu.memory_bytes, format_bytes(gap)
    else:
        assert 0 < gap <= 0.95 * GiB, format_bytes(gap)
    assert gpu.cuda_total_bytes % MiB == 0


def test_linux_and_unknown_os_budget_the_cuda_total_wddm_the_nvml_total() -> None:
    """RTX 3090: PyTorch prints '23.54 GiB total capacity' on Linux (vllm-buccaneer, 2026),
    '24.00 GiB total capacity' on Windows (h12-dain-app-33), '23.99 GiB' for a 4090 under WSL
    (h18-chatglm3_finetuning-13): WDDM reports NVML's total, and the verdict then reserves
    the WDDM share of it (its own term)."""
    g = find_gpu("rtx-3090")
    assert format_bytes(runtime_capacity_bytes(g)) == "23.54 GiB"
    assert runtime_capacity_bytes(g, os="linux") == g.cuda_total_bytes
    assert runtime_capacity_bytes(g, os="windows") == g.memory_bytes == 24576 * MiB
    assert runtime_capacity_bytes(find_gpu("rtx-4090"), os="WSL") == 24564 * MiB
    # a card no message gives and no class models keeps NVML's figure; Apple its working set
    assert runtime_capacity_bytes(find_gpu("p40")) == find_gpu("p40").memory_bytes
    mac = find_gpu("m3-max-64gb")
    assert runtime_capacity_bytes(mac) == mac.usable_memory_bytes
    hw = hardware_for((g,), os="windows")
    assert hw.devices[0].capacity_bytes == g.memory_bytes


def test_an_explicit_vram_is_the_users_figure() -> None:
    hw = hardware_for((find_gpu("rtx-3090"),), vram_bytes=24 * GiB)
    assert hw.devices[0].capacity_bytes == 24 * GiB


@pytest.mark.parametrize(
    ("gpu", "util", "logged"),
    [
        # 'the current vLLM instance can use total_gpu_memory (21.99GiB) x
        # gpu_memory_utilization (0.90) = 19.79GiB' (vllm-15360-qwen25-7b-a10g-6600)
        ("a10g", 0.90, "19.79 GiB"),
        # 'total_gpu_memory (139.72GiB) x gpu_memory_utilization (0.90) = 125.75GiB'
        # (vllm-15394-opt125m-h200)
        ("h200", 0.90, "125.75 GiB"),
        # 'total_gpu_memory (39.38GiB) x gpu_memory_utilization (0.90) = 35.44GiB'
        # (vllm-16378-gemma3-27b-4xa100-40gb-tp4-64k)
        ("a100-40gb-pcie", 0.90, "35.44 GiB"),
    ],
)
def test_vllm_budget_is_util_times_the_cuda_total(gpu: str, util: float, logged: str) -> None:
    """vLLM's budget line, reproduced from the catalog card alone."""
    cap = hardware_for((find_gpu(gpu),)).devices[0].capacity_bytes
    assert cap is not None
    assert format_bytes(int(cap * util)) == logged


def test_vllm_kv_pool_shrinks_by_util_times_the_driver_reserve() -> None:
    """The KV pool of a vLLM run is computed against the CUDA total: on an RTX 3090 at util
    0.86 (vllm-buccaneer-qwen25-7b-3090-u086-ok, vLLM 0.17.1) the pool is 0.86 x the driver
    reserve smaller than against NVML's 24 GiB, and within 0.15 GiB of the log's 'Available
    KV cache memory: 5.35 GiB'."""
    from oomkit.api import estimate
    from oomkit.spec.settings import InferenceSettings

    st = InferenceSettings(
        runtime="vllm", quant="bf16", ctx=8192, gpu_memory_utilization=0.86,
        runtime_version="0.17.1",
    )  # fmt: skip
    g = find_gpu("rtx-3090")
    cuda = estimate("qwen2.5-7b", st, hardware_for((g,)), offline=True)
    nvml = estimate("qwen2.5-7b", st, hardware_for((g,), os="windows"), offline=True)
    a = cuda.runtime_details["available_kv_cache_bytes"]
    b = nvml.runtime_details["available_kv_cache_bytes"]
    assert isinstance(a, int)
    assert isinstance(b, int)
    assert abs((b - a) - 0.86 * (g.memory_bytes - (g.cuda_total_bytes or 0))) < 2 * MiB
    assert abs(a - 5.35 * GiB) < 0.15 * GiB


def test_a_death_at_the_cuda_total_is_not_called_fits() -> None:
    """vllm-buccaneer-llama31-8b-3090-u070-oom: Llama-3.1-8B bf16 at util 0.70 on the RTX 3090
    that reports 23.54 GiB was refused ('1.0 GiB KV cache is needed ... available KV cache
    memory (0.95 GiB)'); against NVML's 24 GiB oomkit had put the pool above the 1.0 GiB."""
    from oomkit.api import estimate
    from oomkit.spec.settings import InferenceSettings

    st = InferenceSettings(
        runtime="vllm", quant="bf16", ctx=8192, gpu_memory_utilization=0.70,
        runtime_version="0.17.1",
    )  # fmt: skip
    est = estimate("llama-3.1-8b", st, hardware_for((find_gpu("rtx-3090"),)), offline=True)
    assert verdict(est, Platform(os="linux")).level == "does_not_fit"


def test_catalog_json_adds_the_fields() -> None:
    doc = find_gpu("h100").to_dict()
    assert doc["memory_bytes"] == 81559 * MiB  # NVML's total, unchanged
    assert doc["cuda_total_bytes"] == 80998 * MiB
    assert doc["runtime_capacity_bytes"] == 80998 * MiB
    assert "transformers_h100.json" in doc["cuda_total_source"]


def test_sglang_defaults_read_nvidia_smi_its_pool_the_cuda_total() -> None:
    """SGLang sizes its default ``--mem-fraction-static`` from ``nvidia-smi --query-gpu=
    memory.total`` (``get_nvgpu_memory_capacity``): NVML's 24564 MiB on an RTX 4090, while
    its pool is that fraction of CUDA's memory (sglang-12496-gemma3-12b-bf16-2x4090-defaults:
    'GPU 0 has a total capacity of 23.52 GiB'). A ``--vram`` is the user's figure for both."""
    from oomkit.api import estimate
    from oomkit.estimate.sglang import default_mem_fraction_static
    from oomkit.spec.settings import InferenceSettings

    st = InferenceSettings(runtime="sglang", tp=2)
    g = find_gpu("rtx-4090")
    est = estimate("gemma-3-12b", st, hardware_for((g, g)), offline=True)
    assert est.devices[0].capacity_bytes == g.cuda_total_bytes
    assert est.runtime_details["mem_fraction_static"] == default_mem_fraction_static(2, 24564 * MiB)
    own = estimate("gemma-3-12b", st, hardware_for((g, g), vram_bytes=23 * GiB), offline=True)
    assert own.runtime_details["mem_fraction_static"] == default_mem_fraction_static(2, 23 * GiB)


# -- the modelled CUDA total of a card no message gives (oomkit.hardware.reserve) ------------


def test_a_measured_card_prints_its_measured_total() -> None:
    """RTX A4000: 'GPU 0 has a total capacity of 15.61 GiB' on Linux (DengKaiCQ/VGGT-Long#6),
    not NVML's 15.99 GiB nor a modelled figure; no modelled fields on a measured row."""
    from oomkit.cli.gpu_choice import _basis

    g = find_gpu("rtx-a4000")
    assert format_bytes(runtime_capacity_bytes(g)) == "15.61 GiB"
    assert _basis(g) == "CUDA-reported total (Linux)"
    doc = g.to_dict()
    assert doc["modelled_cuda_total_bytes"] is None
    assert doc["modelled_cuda_total_source"] is None
    assert "VGGT-Long/issues/6" in doc["cuda_total_source"]


def test_a_modelled_card_is_labelled_modelled() -> None:
    """RTX 4070 Ti SUPER (16 GB Ada, no public Linux message): NVML's 16376 MiB less the
    smallest reserve measured on the 12-16 GiB Ada cards (RTX 4080's 15.69 GiB: 309 MiB), and
    the printed capacity and the JSON say modelled."""
    from oomkit.cli.gpu_choice import _basis
    from oomkit.hardware.catalog import modelled_cuda_total_bytes

    g = find_gpu("rtx-4070-ti-super")
    assert g.cuda_total_bytes is None
    assert modelled_cuda_total_bytes(g) == 16376 * MiB - (
        find_gpu("rtx-4080").memory_bytes - (find_gpu("rtx-4080").cuda_total_bytes or 0)
    )
    assert runtime_capacity_bytes(g) == modelled_cuda_total_bytes(g)
    assert runtime_capacity_bytes(g, os="windows") == g.memory_bytes  # WDDM: NVML's total
    assert _basis(g).startswith("modelled CUDA total (Linux)")
    doc = g.to_dict()
    assert doc["cuda_total_bytes"] is None  # the field stays what a message printed
    assert doc["modelled_cuda_total_bytes"] == doc["runtime_capacity_bytes"]
    assert doc["modelled_cuda_total_source"].startswith("modelled: NVML total less 309 MiB")
    assert "rtx-4080" in doc["modelled_cuda_total_source"]


def test_the_a6000_reserve_nvidia_smi_shows_is_the_gap_pytorch_prints() -> None:
    """The mechanism: nvidia-smi -q on an RTX A6000 shows 'Total 49140 MiB, Reserved 569 MiB,
    Free 48571 MiB' (ObrienlabsDev/machine-learning), and PyTorch prints 47.43 GiB total
    capacity for the card on Linux (h17-GeoTransformer-119): Total - Reserved, to the 0.01 GiB
    of the message."""
    g = find_gpu("rtx-a6000")
    assert g.memory_bytes == 49140 * MiB
    assert g.cuda_total_bytes is not None
    assert abs((49140 - 569) * MiB - g.cuda_total_bytes) <= 0.005 * GiB


def test_modelled_only_where_a_class_has_three_measured_cards() -> None:
    """A class is one architecture and size band with three measured cards: Pascal and Volta
    keep almost nothing (no class), Turing has no band with three measured cards (Titan RTX),
    Ampere over 48 GiB only the A100 80GB SXM, Ada 10-12 GiB only the 4070 Ti; nominal and
    unified-memory rows are not modelled."""
    from oomkit.hardware.catalog import memory_is_nominal, modelled_cuda_total_bytes
    from oomkit.hardware.reserve import MIN_MEASURED, reserve_floor

    for key in (
        "p40", "p100-16gb-pcie", "v100-16gb-pcie", "rtx-2060", "dgx-spark", "titan-rtx",
        "a100-80gb-pcie", "rtx-4070",
    ):  # fmt: skip
        assert modelled_cuda_total_bytes(find_gpu(key)) is None, key
    measured = [
        (g.key, g.architecture, g.memory_bytes, g.cuda_total_bytes)
        for g in all_gpus()
        if g.cuda_total_bytes is not None
    ]
    modelled = [g for g in all_gpus() if modelled_cuda_total_bytes(g) is not None]
    assert len(modelled) >= 10
    for g in modelled:
        floor = reserve_floor(g.architecture, g.vendor, g.memory_bytes, measured)
        assert floor is not None
        assert len(floor.measured) >= MIN_MEASURED
        assert all(find_gpu(k).architecture == g.architecture for k in floor.measured)
        assert not memory_is_nominal(g)
        assert not g.unified_memory
        assert 0 < g.memory_bytes - (modelled_cuda_total_bytes(g) or 0) <= 0.95 * GiB


def test_leave_one_out_the_model_never_undershoots_by_a_quarter_gib() -> None:
    """Each measured card, modelled from the other cards of its class: the
    modelled total is what the card would be budgeted at with no message. It overshoots (the
    floor is the class's smallest reserve) and undershoots only where the card holds its
    class's smallest reserve; by how much is the figure the report gives."""
    from oomkit.hardware.reserve import reserve_floor

    rows = [g for g in all_gpus() if g.cuda_total_bytes is not None]
    errors = []
    for g in rows:
        others = [
            (o.key, o.architecture, o.memory_bytes, o.cuda_total_bytes or 0)
            for o in rows
            if o.key != g.key
        ]
        floor = reserve_floor(g.architecture, g.vendor, g.memory_bytes, others)
        if floor is not None:
            errors.append((g.memory_bytes - floor.reserve_bytes) - (g.cuda_total_bytes or 0))
    assert len(errors) >= 9
    assert min(errors) > -0.25 * GiB  # never budgets far below what a card really reports


def test_dgx_spark_budgets_the_memtotal_cuda_reports_not_the_nominal_128_gib() -> None:
    """GB10 has no framebuffer: ``torch.cuda.mem_get_info()[1]`` is /proc/meminfo MemTotal
    byte for byte (unsloth#10486), what firmware and kernel keep of the 128 GiB never counts.
    vLLM's startup check prints it: 'Free memory on device cuda:0 (110.52/119.7 GiB) ... (0.93,
    111.32 GiB)' and '(0.52, 62.24 GiB)' on GB10s; kernel 6.17.0-1031 boxes print 121.69 GiB
    (h27-GLM-5.3-Flash-EXL3-2x-DGX-Sparks-47). The catalog keeps the smallest, so vLLM's ask at
    util 0.93 is the logged 111.32 GiB, not 0.93 x 128 GiB."""
    from oomkit.cli.gpu_choice import _basis

    g = find_gpu("GB10")
    assert g.unified_memory
    assert g.memory_bytes == 128 * GiB  # the nominal size stays the row's memory
    assert format_bytes(runtime_capacity_bytes(g)) == "119.70 GiB"
    cap = hardware_for((g,)).devices[0].capacity_bytes
    assert cap == g.cuda_total_bytes
    for util, logged in ((0.93, "111.32 GiB"), (0.52, "62.24 GiB"), (0.9435, "112.93 GiB")):
        assert format_bytes(int(cap * util)) == logged
    assert _basis(g) == "CUDA-reported total (Linux)"
    # the other unified SoCs keep their nominal size: no public log gives their CUDA total
    for key in ("jetson-agx-orin-64gb", "ryzen-ai-max-395-128gb"):
        assert find_gpu(key).cuda_total_bytes is None
