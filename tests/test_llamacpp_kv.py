"""llama.cpp KV / RS buffers: exact against real llama.cpp logs (shared oracle dev set)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from oomkit.errors import InvalidSettingError
from oomkit.estimate.llamacpp import llamacpp_view
from oomkit.estimate.llamacpp_kv import plan_kv, swa_cells
from oomkit.estimate.llamacpp_params import resolve_llamacpp_params
from oomkit.spec.model import (
    LAYER_FULL,
    LAYER_MAMBA,
    LAYER_SLIDING,
    MlaSpec,
    ModelSpec,
    RecurrentSpec,
)
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "oracle"))
from oracle_archs import spec_from_config  # noqa: E402

DEV = Path("/work/shared/validation/llamacpp_cpu_oracle_dev.jsonl")
FIXTURE = ROOT / "benchmarks" / "oracle" / "results.json"


def _records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if DEV.exists():
        out += [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]
    if FIXTURE.exists():
        out += [r for r in json.loads(FIXTURE.read_text())["records"] if r.get("rc") == 0]
    return out


def _settings(s: dict[str, Any]) -> InferenceSettings:
    return InferenceSettings(
        ctx=s["n_ctx"],
        parallel=s["n_seq"],
        batch_size=s["n_batch"],
        ubatch=s["n_ubatch"],
        flash_attn=s["flash_attn"],
        cache_type_k=s["type_k"],
        cache_type_v=s["type_v"],
        kv_unified=s["kv_unified"],
        swa_full=s["swa_full"],
        n_gpu_layers=0,
    )


RECORDS = _records()


@pytest.mark.parametrize("rec", RECORDS, ids=[r["id"] for r in RECORDS])
def test_kv_buffer_matches_real_llamacpp(rec: dict[str, Any]) -> None:
    if "arch_spec" in rec:  # shared dev set
        spec = spec_from_config(rec["arch_spec"])
        m = rec["measured"]
    else:  # this repository's oracle results
        from oracle_cases import record_inputs

        spec = llamacpp_view(record_inputs(rec)[0])
        got = rec["measured_MiB"]
        m = {
            "kv_MiB": sum(got["kv"].values()) or None,
            "rs_MiB": sum(got["rs"].values()) or None,
            "kv_caches": got["caches"],
        }
    p = resolve_llamacpp_params(
        _settings(rec["settings"]), n_layer=spec.num_hidden_layers, has_gpu=False
    )
    plan = plan_kv(spec, p)
    if m.get("kv_MiB") is not None:
        # llama.cpp prints MiB with 2 decimals
        assert plan.kv_bytes / MiB == pytest.approx(m["kv_MiB"], abs=0.006)
    if m.get("rs_MiB") is not None:
        assert plan.rs_bytes / MiB == pytest.approx(m["rs_MiB"], abs=0.006)
    mine = [(c.cells, len(c.layers)) for c in plan.caches]
    for cache in m.get("kv_caches") or []:
        assert (cache["cells"], cache["layers"]) in mine


def _spec(**kw: Any) -> ModelSpec:
    base: dict[str, Any] = dict(
        name="t",
        architecture="X",
        model_type="x",
        num_hidden_layers=4,
        hidden_size=512,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=64,
        v_head_dim=64,
        intermediate_size=1024,
        vocab_size=1000,
    )
    base.update(kw)
    return ModelSpec(**base)


def test_swa_cells_follow_llamacpp_iswa_formula() -> None:
    spec = _spec(layer_types=(LAYER_SLIDING, LAYER_FULL) * 2, sliding_window=1000)
    p = resolve_llamacpp_params(
        InferenceSettings(ctx=32768, ubatch=512, parallel=2), n_layer=4, has_gpu=True
    )
    # GGML_PAD(min(n_ctx_seq, n_swa * 1 + n_ubatch), 256) per stream, 2 streams
    assert swa_cells(spec, p) == 1536
    plan = plan_kv(spec, p)
    swa = {c.label: c for c in plan.caches}["kv_swa"]
    assert swa.k_bytes == 2 * 1536 * 2 * 128 * 2  # layers x cells x streams x (2 heads*64) x f16
    full = resolve_llamacpp_params(
        InferenceSettings(ctx=32768, parallel=2, swa_full=True), n_layer=4, has_gpu=True
    )
    assert swa_cells(spec, full) == 16384


def test_mla_caches_latent_only() -> None:
    mla = MlaSpec(
        q_lora_rank=None,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        v_head_dim=128,
    )
    spec = _spec(mla=mla, head_dim=192, v_head_dim=128)
    p = resolve_llamacpp_params(InferenceSettings(ctx=4096), n_layer=4, has_gpu=True)
    plan = plan_kv(spec, p)
    assert plan.kv_bytes == 4 * 4096 * 576 * 2


def test_recurrent_state_is_f32_per_sequence() -> None:
    rec = RecurrentSpec(
        kind="mamba2",
        d_inner=1024,
        d_state=128,
        d_conv=4,
        n_groups=1,
        conv_state_elements=3 * (1024 + 256),
        ssm_state_elements=128 * 1024,
    )
    spec = _spec(layer_types=(LAYER_MAMBA, LAYER_MAMBA, LAYER_MAMBA, LAYER_FULL), recurrent=rec)
    p = resolve_llamacpp_params(InferenceSettings(ctx=4096, parallel=3), n_layer=4, has_gpu=True)
    plan = plan_kv(spec, p)
    assert plan.rs_bytes == 3 * 3 * 4 * (3 * 1280 + 128 * 1024)
    assert plan.kv_bytes == 1536 * 3 * 128 * 2 * 2  # 3 streams of pad256(1365) cells, K, V


def test_quantized_v_needs_flash_attention() -> None:
    with pytest.raises(InvalidSettingError, match="flash"):
        resolve_llamacpp_params(
            InferenceSettings(cache_type_v="q8_0", flash_attn=False), n_layer=4, has_gpu=True
        )


def test_ctx_padding_and_stream_split() -> None:
    p = resolve_llamacpp_params(InferenceSettings(ctx=5000, parallel=3), n_layer=4, has_gpu=True)
    # 5000 -> 5120 (pad 256), / 3 streams = 1706 -> 1792 cells per stream (pad 256 again)
    assert p.n_ctx_seq == 1792
    assert p.n_ctx == 3 * 1792


def test_encoder_models_have_no_kv_cache() -> None:
    spec = _spec(is_encoder=True)
    p = resolve_llamacpp_params(InferenceSettings(ctx=512), n_layer=4, has_gpu=True)
    assert plan_kv(spec, p).kv_bytes == 0
