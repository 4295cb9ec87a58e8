"""llama.cpp ``--device`` vs ``-ts`` with ``-sm row``: layers by list position, rows by ordinal.

ggml-org/llama.cpp at c392e50 (the code of b5172): ``llama_model::load_tensors`` reads
``tensor_split[0 .. n_devices())`` for the layers (k-th entry, k-th ``--device``), while
``ggml_backend_cuda_split_buffer_type`` normalises ``tensor_split`` over every CUDA device by
ordinal. llama.cpp#13085: ``--device CUDA2,CUDA1 -ts 0,1,1 -sm row`` puts every layer (and so
the whole KV cache) on CUDA1 while each matrix's rows split evenly over CUDA1 and CUDA2.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from conftest import run_cli
from oomkit.catalog.models import find_model
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.estimate.llamacpp_placement import row_shares
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

GPU = DeviceTarget(name="RTX 3090", capacity_bytes=24 * GiB)
TWO = Hardware(devices=(GPU, GPU))  # the --device list, in its order


@cache
def _spec(key: str) -> ModelSpec:
    return find_model(key).spec()


def _est(**kw: object) -> Estimate:
    base: dict[str, object] = {
        "quant": "Q8_0",
        "ctx": 16384,
        "split_mode": "row",
        "runtime_version": "b5172",
    }
    base.update(kw)
    return estimate_llamacpp(_spec("llama-3.1-8b"), InferenceSettings(**base), TWO)  # type: ignore[arg-type]


def _buffers(est: Estimate) -> dict[str, dict[str, int]]:
    b = est.runtime_details["buffers"]
    assert isinstance(b, dict)
    return b


def test_row_shares_reads_tensor_split_by_ordinal() -> None:
    assert row_shares((0, 1, 1), (2, 1), 2) == (0.5, 0.5)
    assert row_shares((1, 0, 3), (2, 0), 2) == (0.75, 0.25)
    # an ordinal past the -ts entries gets no rows; the rows of unlisted devices leave ours
    assert row_shares((1, 1), (0, 2), 2) == (0.5, 0.0)
    assert row_shares((1, 1, 2), (0, 1), 2) == (0.25, 0.25)
    # nothing to tell apart: no --device list, or -ts unset / all zero (ggml's default split)
    assert row_shares((0, 1, 1), None, 2) is None
    assert row_shares(None, (2, 1), 2) is None
    assert row_shares((0, 0), (1, 0), 2) is None


def test_device_list_moves_rows_not_layers() -> None:
    """``--device CUDA2,CUDA1 -ts 0,1,1``: KV on the second listed GPU either way; the rows
    split half/half by ordinal instead of all on that GPU by position."""
    by_position = _buffers(_est(tensor_split=(0, 1, 1)))
    by_ordinal = _buffers(_est(tensor_split=(0, 1, 1), device_ordinals=(2, 1)))
    # the layers (and their KV) follow the first two entries by list position: all on GPU 1
    assert set(by_position["kv"]) == set(by_ordinal["kv"]) == {"CUDA1"}
    # the rows: read by position (0, 1) they all land on GPU 1; by ordinal (1, 1) they split
    assert by_position["model"].get("CUDA_Split:0", 0) == 0
    half0, half1 = by_ordinal["model"]["CUDA_Split:0"], by_ordinal["model"]["CUDA_Split:1"]
    assert half0 == half1 > 0
    assert half0 + half1 == pytest.approx(by_position["model"]["CUDA_Split:1"], rel=1e-6)


def test_identity_ordinals_change_nothing() -> None:
    plain = _est(tensor_split=(3, 1))
    same = _est(tensor_split=(3, 1), device_ordinals=(0, 1))
    assert _buffers(plain) == _buffers(same)
    assert [d.total_bytes for d in plain.devices] == [d.total_bytes for d in same.devices]
    # -sm layer has no split buffer: the list order decides everything
    layer = _est(tensor_split=(1, 1), split_mode="layer")
    layer_dev = _est(tensor_split=(1, 1), split_mode="layer", device_ordinals=(1, 0))
    assert _buffers(layer) == _buffers(layer_dev)


@pytest.mark.parametrize("bad", [(1, 1), (-1,), (0, 4096), (True,), ()])
def test_bad_device_ordinals_are_refused(bad: tuple[object, ...]) -> None:
    with pytest.raises(InvalidSettingError, match="device_ordinals"):
        InferenceSettings(device_ordinals=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["device_ordinals", "draft_devices", "max_memory_bytes"])
def test_nested_lists_in_device_fields_are_refused_not_raised(field: str) -> None:
    # a nested list is unhashable: the distinct-values check once ran set() on it first
    # and the Python API raised a bare TypeError instead of the one-line settings error
    with pytest.raises(InvalidSettingError, match=field):
        InferenceSettings(**{field: [[1]]})


def test_cli_device_flag_reaches_the_row_split(capsys: pytest.CaptureFixture[str]) -> None:
    common = ("estimate", "llama-3.1-8b", "-q", "Q8_0", "-c", "16384", "-g", "2xrtx-3090")
    row = ("-sm", "row", "-ts", "0,1,1", "--runtime-version", "b5172", "--json", "--offline")
    code, out, err = run_cli(capsys, *common, *row, "--device", "CUDA2,CUDA1")
    assert code in (0, 4), err
    doc = json.loads(out)
    assert doc["settings"]["device_ordinals"] == "2,1"
    model = doc["runtime_details"]["buffers"]["model"]
    assert model["CUDA_Split:0"] == model["CUDA_Split:1"] > 0
    code, out, err = run_cli(capsys, *common, *row)
    assert json.loads(out)["runtime_details"]["buffers"]["model"].get("CUDA_Split:0", 0) == 0


@pytest.mark.parametrize("bad", ["1,1", "CUDA", "x"])
def test_cli_bad_device_is_a_usage_error(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code, _out, err = run_cli(capsys, "estimate", "llama-3.2-1b", "--device", bad, "--offline")
    assert code == 2, err
    assert err.startswith("Error: --device must be"), err
    assert "Traceback" not in err


def test_emit_names_the_draft_device_by_backend_index() -> None:
    from oomkit.planner.commands import emit_command

    s = InferenceSettings(
        quant="Q8_0",
        ctx=4096,
        draft_model="qwen2.5-0.5b",
        draft_devices=(1,),
        device_ordinals=(2, 1),
    )
    line = emit_command("llama.cpp", s, _spec("llama-3.1-8b"), "llama-3.1-8b")
    assert "-devd CUDA1" in line  # target GPU 1 is CUDA1
    s0 = InferenceSettings(
        quant="Q8_0",
        ctx=4096,
        draft_model="qwen2.5-0.5b",
        draft_devices=(0,),
        device_ordinals=(2, 1),
    )
    assert "-devd CUDA2" in emit_command("llama.cpp", s0, _spec("llama-3.1-8b"), "llama-3.1-8b")
