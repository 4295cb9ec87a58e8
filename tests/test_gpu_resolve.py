"""How ``--gpu`` text becomes catalog rows: counts, ambiguous names, ``auto``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from oomkit.api import estimate_model
from oomkit.cli.gpus import use_backend
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import HardwareError, UnknownNameError
from oomkit.hardware import smi
from oomkit.hardware.catalog import AmbiguousGpuError, find_gpu, gpu_alternatives
from oomkit.hardware.procinfo import ProcFs
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("4090x2", ["rtx-4090", "rtx-4090"]),
        ("4090 x 2", ["rtx-4090", "rtx-4090"]),
        ("2x3090", ["rtx-3090", "rtx-3090"]),
        ("2xrtx-3090", ["rtx-3090", "rtx-3090"]),
        ("2×A100-80GB", ["a100-80gb-sxm", "a100-80gb-sxm"]),
        ("rtx-4090*3", ["rtx-4090"] * 3),
        ("7900xtx", ["rx-7900-xtx"]),
        ("mi300x", ["mi300x"]),  # ends in "x", not a count
        ("rx 7900 xtx,p40", ["rx-7900-xtx", "p40"]),
        ("2x p40, titan rtx", ["p40", "p40", "titan-rtx"]),
    ],
)
def test_counts_before_or_after_the_name(text: str, keys: list[str]) -> None:
    assert [g.key for g in parse_gpu_list(text)] == keys


@pytest.mark.parametrize("text", ["0x4090", "4090x0", "2000x4090"])
def test_count_out_of_range(text: str) -> None:
    with pytest.raises(ValueError, match="between 1 and 1024"):
        parse_gpu_list(text)


def test_unknown_name_after_a_count_names_the_card() -> None:
    with pytest.raises(UnknownNameError) as info:
        parse_gpu_list("2xrtx-4900")
    assert info.value.name == "rtx-4900"


# --- the CLI says which card it chose --------------------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia_smi"
EST = ["estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--ctx", "4096"]


def test_ambiguous_default_is_printed_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *EST, "--gpu", "a100")
    assert code == 0
    (line,) = [ln for ln in err.splitlines() if ln.startswith("GPU:")]
    assert line.startswith("GPU: NVIDIA A100 80GB SXM4 (79.10 GiB, CUDA-reported total (Linux))")
    assert "'a100' also matches a100-40gb-pcie, a100-40gb-sxm, a100-80gb-pcie" in line
    assert "pass the full name to choose" in line
    assert "GPU:" not in out  # stdout stays the breakdown only


def test_exact_name_prints_the_card_without_alternatives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(capsys, *EST, "--gpu", "4090x2")
    assert code == 0
    assert "GPU: 2 x NVIDIA GeForce RTX 4090 (23.52 GiB, CUDA-reported total (Linux))" in err
    assert "also matches" not in err


def test_json_has_a_hardware_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *EST, "--gpu", "rtx-4060-ti", "--json")
    assert code == 0
    assert err == ""
    doc = json.loads(out)
    hw = doc["hardware"]
    assert hw["source"] == "catalog"
    (g,) = hw["gpus"]
    assert (g["query"], g["key"], g["count"]) == ("rtx-4060-ti", "rtx-4060-ti-8gb", 1)
    assert g["capacity_bytes"] == 8188 * MiB
    assert [a["key"] for a in g["ambiguous_alternatives"]] == ["rtx-4060-ti-16gb"]
    assert hw["devices"] == [
        {
            "device": "cuda:0",
            "name": "NVIDIA GeForce RTX 4060 Ti 8GB",
            "key": "rtx-4060-ti-8gb",
            "capacity_bytes": 8188 * MiB,
        }
    ]
    # The contract's keys are all still there, in their order, before the additive one.
    assert list(doc)[:3] == ["schema_version", "model", "runtime"]
    assert list(doc)[-1] == "hardware"


def test_truly_ambiguous_name_lists_the_candidates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, *EST, "--gpu", "a100 sxm4")
    assert code == 2  # an ambiguous --gpu is a usage error, like an unknown one
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("Error: GPU 'a100 sxm4' is ambiguous: it matches a100-40gb-sxm")
    assert "a100-80gb-sxm (80.00 GiB)" in err


def test_ambiguous_error_is_an_unknown_name_with_candidates() -> None:
    with pytest.raises(AmbiguousGpuError) as info:
        find_gpu("nvidia a100 sxm4")
    assert isinstance(info.value, UnknownNameError)
    assert {g.key for g in info.value.candidates} == {"a100-40gb-sxm", "a100-80gb-sxm"}


@pytest.mark.parametrize(
    ("name", "alternatives"),
    [
        ("a100", {"a100-40gb-pcie", "a100-40gb-sxm", "a100-80gb-pcie"}),
        ("rtx-4060-ti", {"rtx-4060-ti-16gb"}),
        ("H100", {"h100-pcie", "h100-nvl"}),
        ("3080", {"rtx-3080-12gb"}),  # not the 3080 Ti: another card
        ("jetson agx orin", {"jetson-agx-orin-32gb"}),
        ("a100-40gb-sxm", set()),
        ("rtx 4090", set()),
    ],
)
def test_alternatives(name: str, alternatives: set[str]) -> None:
    assert {g.key for g in gpu_alternatives(name)} == alternatives


# --- --gpu auto: the GPUs in this machine, replayed from real driver captures ----------------


@pytest.fixture
def no_procs() -> ProcFs:
    return ProcFs(Path("/nonexistent"))


def test_auto_uses_free_memory_of_each_device(
    capsys: pytest.CaptureFixture[str], no_procs: ProcFs
) -> None:
    uuid = "GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39"
    replies = {
        smi.NVIDIA_SMI_GPU_QUERY: f"0, NVIDIA A100 80GB PCIe, {uuid}, 81920, 40000, 41920, 3\n",
        smi.NVIDIA_SMI_APPS_QUERY: f"12, {uuid}, 39000, python\n",
        ("nvidia-smi", "-L"): f"GPU 0: NVIDIA A100 80GB PCIe (UUID: {uuid})\n",
    }
    use_backend(lambda: smi.NvidiaSmiBackend(runner=lambda argv: replies[tuple(argv)]), no_procs)
    try:
        code, out, err = run_cli(capsys, *EST, "--gpu", "auto", "--json")
    finally:
        use_backend(None)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["hardware"]["source"] == "auto"
    (g,) = doc["hardware"]["gpus"]
    assert g["capacity_basis"] == "free memory now"
    assert g["capacity_bytes"] == 41920 * MiB
    assert g["key"] == "a100-80gb-pcie"  # matched to the catalog by name and total
    assert doc["devices"][0]["capacity_bytes"] == 41920 * MiB


def test_auto_on_amd_is_rocm(capsys: pytest.CaptureFixture[str], no_procs: ProcFs) -> None:
    # marimo#9237: a real `rocm-smi --json` capture of an RX 7900 XT.
    text = (FIXTURES / "rocm_smi_json_marimo_9237.json").read_text(encoding="utf-8")
    use_backend(lambda: smi.RocmSmiBackend(runner=lambda argv: text), no_procs)
    try:
        code, out, err = run_cli(capsys, *EST, "--gpu", "auto")
    finally:
        use_backend(None)
    assert code == 0, err
    assert "GPU: rocm:0 Radeon RX 7900 XT (19.96 GiB, free memory now)" in err
    assert "rocm:0" in out
    assert "cuda:0" not in out


def test_auto_without_a_gpu_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    def none_here() -> smi.NvidiaSmiBackend:
        raise HardwareError("no driver")

    use_backend(none_here)
    try:
        code, out, err = run_cli(capsys, *EST, "--gpu", "auto")
    finally:
        use_backend(None)
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("Error: --gpu auto: no GPU is visible on this machine")


# --- device ids by vendor ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime", "gpu", "prefix"),
    [
        ("llama.cpp", "2xmi300x", "rocm"),
        ("vllm", "2xmi300x", "rocm"),
        ("sglang", "2xmi300x", "rocm"),
        ("transformers", "2xmi300x", "rocm"),
        ("llama.cpp", "arc-b580", "xpu"),
        ("llama.cpp", "m3-max-64gb", "mps"),
        ("vllm", "2xh100", "cuda"),
    ],
)
def test_device_ids_name_the_vendor_backend(runtime: str, gpu: str, prefix: str) -> None:
    gpus = parse_gpu_list(gpu)
    hw = hardware_for(gpus)
    tp = len(gpus) if runtime in ("vllm", "sglang") else None
    est = estimate_model(
        "qwen2.5-7b", InferenceSettings(runtime=runtime, tp=tp, ctx=4096), hw, offline=True
    )
    assert [d.device for d in est.devices] == [f"{prefix}:{i}" for i in range(len(gpus))]


def test_cpu_only_says_so_in_the_hardware_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, *EST, "--gpu", "cpu", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["hardware"] == {"source": "cpu", "gpus": [], "devices": []}
    assert doc["devices"] == []


@pytest.mark.parametrize(
    ("gpu", "basis"),
    [
        ("rtx-4090", "CUDA-reported total (Linux)"),  # cudaMemGetInfo: below NVML's total
        ("a100-80gb-pcie", "driver-reported total"),  # = 80 GiB, what the driver reports
        # no message gives its CUDA total: NVML's less the smallest reserve measured on its
        # class (Hopper over 48 GiB: H100 SXM, H100 NVL, H200)
        (
            "h100-pcie",
            "modelled CUDA total (Linux): driver total less the smallest measured reserve",
        ),
        ("rx-6800-xt", "nominal; driver figure not known"),
        ("strix halo", "nominal, shared with the CPU; driver figure not known"),
        ("m3-max-64gb", "Metal working-set limit"),
    ],
)
def test_the_printed_capacity_says_what_it_is(
    capsys: pytest.CaptureFixture[str], gpu: str, basis: str
) -> None:
    code, _, err = run_cli(capsys, *EST, "--gpu", gpu)
    assert code in (0, 3)
    (line,) = [ln for ln in err.splitlines() if ln.startswith("GPU:")]
    assert f", {basis})" in line
