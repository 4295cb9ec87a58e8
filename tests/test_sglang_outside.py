"""SGLang's memory outside --mem-fraction-static (oomkit.estimate.sglang_outside)."""

from __future__ import annotations

import json
from pathlib import Path

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.sglang_outside import dated_chunked_prefill_size, outside_pool
from oomkit.estimate.verdict import verdict
from oomkit.estimate.verdict_runtime import SGLANG_OUTSIDE_WHAT
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

RUNS = Path(__file__).parent / "fixtures" / "verdict_runs"


def test_chunk_defaults_by_release() -> None:
    # v0.4.4.post3 / v0.4.5 / v0.4.6.post5 server_args.py: 2048 below 25000 MiB, else 8192
    assert dated_chunked_prefill_size("tp_table", 24564 * MiB, 0) == 2048
    assert dated_chunked_prefill_size("tp_table_96g", 40960 * MiB, 0) == 8192
    # v0.4.7: 16384 above 180000 MiB
    assert dated_chunked_prefill_size("tp_table_180g", 183359 * MiB, 0) == 16384
    # v0.4.8 - v0.5.2: < 35 GiB 2048, < 160 GiB 8192, else 16384, unknown 4096
    assert dated_chunked_prefill_size("reserved_tier", 32607 * MiB, 0) == 2048
    assert dated_chunked_prefill_size("reserved_tier", 143771 * MiB, 0) == 8192
    assert dated_chunked_prefill_size("reserved_tier", None, 0) == 4096
    assert dated_chunked_prefill_size("gpu_memory", 81559 * MiB, 8192) == 8192


def test_graph_logits_buffer_is_max_bs_by_vocab_fp32() -> None:
    gemma = find_model("gemma-3-12b").spec()
    out = outside_pool(gemma, chunk=8192, tokens=None, graph_bs=256, elem=2, tp=2)
    assert out.graph_logits_bytes == 256 * gemma.vocab_size * 4
    eager = outside_pool(gemma, chunk=8192, tokens=None, graph_bs=None, elem=2, tp=2)
    assert eager.graph_logits_bytes == 0
    assert eager.prefill_chunk_bytes > 0
    # a chunk never exceeds the token pool
    assert (
        outside_pool(gemma, chunk=8192, tokens=100, graph_bs=None, elem=2, tp=2).chunk_tokens == 100
    )


def _sglang(model: str, gpu: str, **kw: object):  # type: ignore[no-untyped-def]
    s = InferenceSettings(runtime="sglang", **kw)  # type: ignore[arg-type]
    hw = hardware_for(parse_gpu_list(gpu), n_devices=(s.tp or 1))
    return estimate(model, s, hw, offline=True)


def test_a_static_fraction_that_leaves_no_room_is_tight() -> None:
    # 0.99 of a 4090 leaves ~0.24 GiB: an 8192-token chunk of Qwen2.5-7B (~1 GiB) cannot run
    est = _sglang(
        "qwen2.5-7b",
        "rtx-4090",
        ctx=4096,
        mem_fraction_static=0.99,
        max_num_batched_tokens=8192,
        runtime_version="0.5.5",
    )
    info = est.runtime_details["outside_pool"]
    assert info["need_bytes"] > info["rest_bytes"]
    v = verdict(est)
    assert v.level == "tight"
    assert any(m.what == SGLANG_OUTSIDE_WHAT for m in v.margins)
    assert v.safe_change is not None
    assert "--mem-fraction-static" in v.safe_change
    # at SGLang's own default fraction the same chunk fits what is left
    ok = _sglang(
        "qwen2.5-7b", "rtx-4090", ctx=4096, max_num_batched_tokens=8192, runtime_version="0.5.5"
    )
    assert (
        ok.runtime_details["outside_pool"]["need_bytes"]
        < ok.runtime_details["outside_pool"]["rest_bytes"]
    )


def test_real_records_ome_gemma3_pair_outside_terms() -> None:
    # the OME pair (heldout20, no --context-length: SGLang's 1048576, test_sglang_default_context):
    # the text path's chunk + graph logits are < 1 GiB of the 3.7 GiB left at 0.85 after the
    # 8 GiB req_to_token pool, so this check alone does not separate 0.85 (died) from 0.75
    recs = {
        r["id"]: r
        for r in map(json.loads, (RUNS / "heldout20.jsonl").read_text().splitlines())
        if r["id"].startswith("sglang-ome-gemma3-12b")
    }
    for rid, rec in recs.items():
        est = _sglang(
            rec["model"],
            rec["gpu"],
            ctx=rec["ctx"],
            quant=rec["quant"],
            runtime_version=rec["runtime_version"],
            **rec["settings"],
        )
        info = est.runtime_details["outside_pool"]
        assert info["chunk_tokens"] == 8192, rid
        assert info["need_bytes"] < 1 * GiB < info["rest_bytes"], rid
