"""llama-server's draft model (-md): settings, per-device draft components, CLI (no network).

The draft is ``tests/fixtures/gguf/tiny-llama-mixed.gguf``, a real GGUF written with the
``gguf`` package (1 layer, n_embd 256, 4 heads, 2 KV heads of 64: n_embd_k_gqa = n_embd_v_gqa =
128), so one draft KV cell costs (128 + 128) x 2 bytes = 512 bytes in f16.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from conftest import run_cli
from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.estimate.llamacpp_draft import plan_draft
from oomkit.estimate.llamacpp_params import LlamaCppOptions, resolve_llamacpp_params
from oomkit.hardware.targets import hardware_for
from oomkit.loaders.source import resolve_model
from oomkit.spec.hardware import Hardware
from oomkit.spec.settings import InferenceSettings

DRAFT = str(Path(__file__).parent / "fixtures" / "gguf" / "tiny-llama-mixed.gguf")
F16_CELL = (128 + 128) * 2  # one layer: K and V rows of 128 f16 values
MAIN = "llama-3.1-8b"


def _hw(text: str = "rtx-4090") -> Hardware:
    return hardware_for(parse_gpu_list(text))


def _est(hw: Hardware | None = None, **kw: object) -> Estimate:
    base: dict[str, object] = {"quant": "Q4_K_M", "ctx": 8192}
    base.update(kw)
    return estimate(MAIN, InferenceSettings(**base), hw or _hw(), offline=True)  # type: ignore[arg-type]


def _comp(est: Estimate, device: str, label: str) -> int:
    devs = {d.device: d for d in (*est.devices, est.host)}
    return sum(c.n_bytes for c in devs[device].components if c.label.startswith(label))


def test_no_draft_is_the_plain_llamacpp_estimate() -> None:
    hw = _hw()
    s = InferenceSettings(quant="Q4_K_M", ctx=8192)
    plain = estimate_llamacpp(resolve_model(MAIN), s, hw)
    via_api = estimate(MAIN, s, hw, offline=True)
    assert [d.total_bytes for d in via_api.devices] == [d.total_bytes for d in plain.devices]
    assert "draft" not in via_api.runtime_details
    assert not any(c.label.startswith("draft") for _, c in via_api.components())


def test_draft_kv_is_one_f16_context_of_the_slot_context() -> None:
    base = _est()
    est = _est(draft_model=DRAFT, draft_n_gpu_layers=99)
    assert _comp(est, "cuda:0", "draft KV cache (K f16, V f16)") == F16_CELL * 8192
    # the main model's own components are untouched; the device total grows by the draft's
    main0 = [c for c in est.devices[0].components if not c.label.startswith("draft")]
    assert tuple(main0) == base.devices[0].components
    extra = sum(c.n_bytes for c in est.devices[0].components if c.label.startswith("draft"))
    assert est.devices[0].total_bytes == base.devices[0].total_bytes + extra
    rd = est.runtime_details["draft"]
    assert isinstance(rd, dict)
    assert (rd["n_slots"], rd["n_ctx"], rd["type_k"], rd["n_batch"]) == (1, 8192, "f16", 8192)
    assert est.settings["draft_ctx"] == 8192


def test_draft_weights_and_compute_are_the_draft_run_alone() -> None:
    """Weights once, the compute buffer of one context with n_batch = n_ctx_dft: the same
    numbers as estimating the draft GGUF itself with the derived settings."""
    hw = _hw()
    est = _est(hw, draft_model=DRAFT, draft_n_gpu_layers=99, flash_attn=True, ubatch=256)
    alone = estimate_llamacpp(
        resolve_model(DRAFT),
        InferenceSettings(
            ctx=8192,
            parallel=1,
            batch_size=8192,
            ubatch=256,
            flash_attn=True,
            n_gpu_layers=99,
            cache_type_k="f16",
            cache_type_v="f16",
        ),
        hw,
    )
    assert _comp(est, "cuda:0", "draft model weights") == _comp(alone, "cuda:0", "model buffers")
    assert _comp(est, "cuda:0", "draft compute buffer") == _comp(alone, "cuda:0", "compute buffer")
    assert _comp(est, "cpu", "draft output buffer") == _comp(alone, "cpu", "output buffer")
    assert _comp(est, "cuda:0", "draft model weights") > 0


@pytest.mark.parametrize(
    ("kw", "n_slots", "cells"),
    [
        ({"parallel": 2}, 2, 4096),  # per-sequence streams: n_ctx_seq = 8192 / 2
        ({"parallel": 2, "kv_unified": True}, 2, 8192),  # unified: n_ctx_seq = n_ctx
        ({"parallel": 2, "runtime_version": "b5172"}, 2, 4096),  # PR #10586: n_ctx / n_parallel
        ({"parallel": 3, "draft_ctx": 1000}, 3, 1024),  # -cd 1000, padded to 256
    ],
)
def test_one_draft_context_per_slot(kw: dict[str, object], n_slots: int, cells: int) -> None:
    est = _est(draft_model=DRAFT, draft_n_gpu_layers=99, **kw)  # type: ignore[arg-type]
    assert _comp(est, "cuda:0", "draft KV cache") == n_slots * cells * F16_CELL
    rd = est.runtime_details["draft"]
    assert isinstance(rd, dict)
    assert (rd["n_slots"], rd["n_ctx"]) == (n_slots, cells)


def test_draft_cache_types_from_pr_13782_only() -> None:
    q8_k = 128 // 32 * 34  # one Q8_0 row of 128 values: 4 blocks of 34 bytes
    est = _est(draft_model=DRAFT, draft_n_gpu_layers=99, draft_cache_type_k="q8_0")
    assert _comp(est, "cuda:0", "draft KV cache (K q8_0, V f16)") == (q8_k + 256) * 8192
    old = _est(
        draft_model=DRAFT,
        draft_n_gpu_layers=99,
        draft_cache_type_k="q8_0",
        runtime_version="b5172",
    )
    assert _comp(old, "cuda:0", "draft KV cache (K f16, V f16)") == F16_CELL * 8192
    assert any("PR #13782" in a for a in old.assumptions)
    # the main model's -ctk never reaches the draft (f16 forced, PR #10586)
    main_q8 = _est(draft_model=DRAFT, draft_n_gpu_layers=99, cache_type_k="q8_0")
    assert _comp(main_q8, "cuda:0", "draft KV cache (K f16, V f16)") == F16_CELL * 8192


def test_ngld_default_follows_pr_15434() -> None:
    new = _est(draft_model=DRAFT)  # today: all layers on the GPU
    assert _comp(new, "cuda:0", "draft model weights") > 0
    old = _est(draft_model=DRAFT, runtime_version="b5172")  # 0 layers before PR #15434
    assert _comp(old, "cuda:0", "draft model weights") == 0
    assert _comp(old, "cpu", "draft KV cache") == F16_CELL * 8192
    assert any("PR #15434" in a for a in old.assumptions)


def test_device_draft_puts_the_draft_on_that_gpu_only() -> None:
    hw = _hw("2xrtx-3090")
    est = _est(hw, draft_model=DRAFT, draft_n_gpu_layers=99, draft_devices=(1,))
    assert not any(c.label.startswith("draft") for c in est.devices[0].components)
    assert _comp(est, "cuda:1", "draft KV cache") == F16_CELL * 8192
    assert _comp(est, "cuda:1", "draft model weights") > 0
    with pytest.raises(InvalidSettingError, match="-devd 2: the target has 2 GPU"):
        _est(hw, draft_model=DRAFT, draft_devices=(2,))


def test_ollama_ignores_the_draft_with_a_note() -> None:
    est = _est(runtime="ollama", draft_model=DRAFT)
    assert not any(c.label.startswith("draft") for _, c in est.components())
    assert any("ignored by ollama: draft_model" in a for a in est.assumptions)


def test_build_before_server_speculative_is_refused() -> None:
    with pytest.raises(InvalidSettingError, match="PR #10455"):
        _est(draft_model=DRAFT, runtime_version="b4000")


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"draft_quant": "Q8_0"}, "draft_quant"),
        ({"draft_model": DRAFT, "draft_ctx": 0}, "draft_ctx"),
        ({"draft_model": DRAFT, "draft_n_gpu_layers": -2}, "draft_n_gpu_layers"),
        ({"draft_model": DRAFT, "draft_devices": (1, 1)}, "draft_devices"),
        ({"draft_model": DRAFT, "draft_devices": ("a",)}, "draft_devices"),
        ({"draft_model": ""}, "draft_model"),
        ({"draft_model": DRAFT, "draft_cache_type_k": 8}, "draft_cache_type_k"),
    ],
)
def test_settings_validation(kw: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidSettingError) as e:
        InferenceSettings(**kw)  # type: ignore[arg-type]
    assert e.value.setting == field
    assert field in str(e.value)
    assert "\n" not in str(e.value)


def test_draft_devices_list_becomes_tuple() -> None:
    s = InferenceSettings(draft_model=DRAFT, draft_devices=[0, 1])  # type: ignore[arg-type]
    assert s.draft_devices == (0, 1)


def test_plan_draft_is_a_copy_of_the_main_params() -> None:
    s = InferenceSettings(
        ctx=8192, parallel=4, kv_unified=True, flash_attn=True, split_mode="row",
        tensor_split=(3.0, 1.0), ubatch=128, n_cpu_moe=2, cache_type_k="q4_0",
        cache_type_v="q4_0", draft_model=DRAFT, mmap=False,
    )  # fmt: skip
    params = resolve_llamacpp_params(s, n_layer=32, has_gpu=True, options=LlamaCppOptions())
    plan = plan_draft(s, params, 2)
    d = plan.settings
    assert (plan.n_slots, plan.n_ctx) == (4, 8192)
    assert (d.parallel, d.ctx, d.batch_size, d.ubatch) == (1, 8192, 8192, 128)
    assert (d.split_mode, d.tensor_split, d.flash_attn, d.mmap) == ("row", (3.0, 1.0), True, False)
    assert (d.cache_type_k, d.cache_type_v, d.n_cpu_moe, d.draft_model) == (
        "f16",
        "f16",
        None,
        None,
    )
    # -devd 1 of two GPUs: the draft's own device list takes -ts entry 0 (3.0)
    one = plan_draft(dataclasses.replace(s, draft_devices=(1,)), params, 2)
    assert one.settings.tensor_split == (0.0, 3.0)


# --- CLI ----------------------------------------------------------------------------------


def test_cli_json_adds_the_draft(capsys: pytest.CaptureFixture[str]) -> None:
    common = ("estimate", MAIN, "-q", "Q4_K_M", "-c", "8192", "--gpu", "rtx-4090", "--json")
    code0, out0, _ = run_cli(capsys, *common, "--offline")
    code, out, err = run_cli(capsys, *common, "-md", DRAFT, "-ngld", "99", "-np", "2", "--offline")
    assert (code0, code) == (0, 0), err
    before, after = json.loads(out0), json.loads(out)
    kv0, kv1 = before["devices"][0]["kv_cache_bytes"], after["devices"][0]["kv_cache_bytes"]
    # -np 2 splits the main KV into two streams of 4096 (same bytes) and gives the draft
    # two contexts of 4096 cells
    assert kv1 - kv0 == 2 * 4096 * F16_CELL
    assert after["runtime_details"]["draft"]["n_slots"] == 2
    assert after["settings"]["draft_model"] == DRAFT
    assert set(before) == set(after)  # fields added inside, none renamed or dropped


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--draft-ctx", "1024"), "--draft-ctx needs --draft-model"),
        (("-md", DRAFT, "-devd", "x"), "--device-draft must be"),
        (("-md", DRAFT, "-ngld", "-5"), "--draft-ngl"),
        (("-md", DRAFT, "-cd", "max"), "cannot read count 'max'"),
        (("-md", DRAFT, "-devd", "1", "--gpu", "rtx-4090"), "-devd 1"),
    ],
)
def test_cli_usage_errors(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str
) -> None:
    code, _out, err = run_cli(capsys, "estimate", MAIN, *args, "--offline")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert lines[0].startswith("Error: "), lines
    assert needle in lines[0], lines
    assert "Traceback" not in err


def test_cli_warns_other_runtimes(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(capsys, "estimate", MAIN, "-r", "vllm", "-md", DRAFT, "--offline")
    assert code in (0, 3, 4)
    assert "vllm does not use --draft-model" in err


def test_cli_emit_carries_the_draft_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "estimate", MAIN, "-c", "16k", "--gpu", "rtx-4090", "-md", "qwen2.5-0.5b",
        "--draft-quant", "Q8_0", "-cd", "4096", "-ctkd", "q8_0", "--emit", "--offline",
    )  # fmt: skip
    assert code == 0, err
    run_line = out.strip().splitlines()[-1]
    assert run_line.startswith("llama-server ")
    # -ngld only when given: unset, the build's own default is what the estimate modelled
    assert "-md qwen2.5-0.5b-Q8_0.gguf -cd 4096 -ctkd q8_0" in run_line
    assert "-ngld" not in run_line
    code, out, err = run_cli(
        capsys, "estimate", MAIN, "-g", "2xrx-7900-xtx", "-md", "qwen2.5-0.5b", "-ngld", "12",
        "-devd", "1", "--emit", "--offline",
    )  # fmt: skip
    assert code == 0, err
    run_line = out.strip().splitlines()[-1]
    assert "-ngld 12" in run_line
    assert "-devd ROCm1" in run_line  # ggml's device name on ROCm, not CUDA1


def test_cli_offline_hub_draft_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_cli(capsys, "estimate", MAIN, "-md", "someorg/no-such-draft", "--offline")
    assert code == 1
    assert err.startswith("Error: ")
    assert "someorg/no-such-draft" in err.splitlines()[0]
    assert "Traceback" not in err


def test_cli_draft_ctx_zero_is_llamacpps_default(capsys: pytest.CaptureFixture[str]) -> None:
    """llama.cpp's ``-cd 0`` means "the default" (not an error): the same estimate as no -cd."""
    base = ("estimate", MAIN, "-md", "qwen2.5-0.5b", "--json", "--offline")
    code0, out0, err0 = run_cli(capsys, *base, "-cd", "0")
    code1, out1, _ = run_cli(capsys, *base)
    assert code0 == 0, err0
    assert code1 == 0
    assert out0 == out1
