"""SGLang's fa3 CUDA-graph attention tables (sglang_graph_tables) on real runs' settings."""

from __future__ import annotations

from typing import Any

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.sglang_graph_tables import fa3_graph_tables, graph_max_bs
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB


def _est(model: str, gpus: str, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="sglang", **kw)
    n = (s.tp or 1) * (s.pp or 1)
    return estimate(model, s, hardware_for(parse_gpu_list(gpus), n_devices=n), offline=True)


def _level(est: Estimate) -> str:
    return verdict(est, Platform()).level


def test_pr_6273_maverick_512k_local_block_table_is_20_gib_before_the_fix() -> None:
    # sgl-project/sglang PR #6273: "with a context length of 512K and attention chunk size of
    # 8192 ... Llama4-Maverick-FP8 on 8*H100 will OOM as it tries to allocate 20.00 GiB"
    old = _est("llama-4-maverick", "8xh100-sxm", tp=8, ctx=524288, quant="fp8",
               runtime_version="0.4.6")  # fmt: skip
    t = old.runtime_details["cuda_graph_tables"]
    assert t["max_bs"] == 160
    assert t["local_block_table_bytes"] == 20 * GiB
    new = _est("llama-4-maverick", "8xh100-sxm", tp=8, ctx=524288, quant="fp8",
               runtime_version="0.4.7")  # fmt: skip
    # after the PR: [max_bs x 64, 8192] int32, 64 times smaller
    assert new.runtime_details["cuda_graph_tables"]["local_block_table_bytes"] == 320 * MiB


def test_scout_2m_on_8xh200_runs_only_without_cuda_graphs() -> None:
    # verdict run sglang-fuhengwu: v0.5.6.post2, tp 8, --context-length 2097152,
    # --mem-fraction-static 0.8, "CUDA Graph: Disabled (to avoid OOM with 2M context)"
    kw: dict[str, Any] = {"tp": 8, "ctx": 2097152, "quant": "bf16",
                          "mem_fraction_static": 0.8, "runtime_version": "0.5.6.post2"}  # fmt: skip
    eager = _est("llama-4-scout", "8xh200", enforce_eager=True, **kw)
    assert "cuda_graph_tables" not in eager.runtime_details
    assert _level(eager) != "does_not_fit"
    graphs = _est("llama-4-scout", "8xh200", **kw)
    t = graphs.runtime_details["cuda_graph_tables"]
    # 512 x 2M int32 x 3 context tables + 512 x 256 x 8192 int32 local table = 16 GiB
    assert t["max_bs"] == 512
    assert t["context_tables_bytes"] + t["local_block_table_bytes"] == 16 * GiB
    assert _level(graphs) == "does_not_fit"


def test_scout_1m_local_table_is_per_seq_through_post4_and_per_chunk_from_post5() -> None:
    # sglang#6817's server: 8x H200, --tp 8 --context-length 1000000 --mem-fraction-static 0.8.
    # The PyPI wheels' flashattention_backend.py init_cuda_graph_state: sglang==0.4.6.post4
    # allocates local_block_table [max_virtual_batches, max_blocks_per_seq *
    # max_pages_per_block], sglang==0.4.6.post5 [max_virtual_batches, max_pages_per_block]
    # (PR #6273 shipped in post5). A post-release string resolves to its release (the v0.4.6
    # row, per_seq, right for post0-post4); the post5 row is reached by its date.
    kw: dict[str, Any] = {"tp": 8, "ctx": 1000000, "mem_fraction_static": 0.8}
    post4 = _est("llama-4-scout", "8xh200", runtime_version="0.4.6.post4", **kw)
    assert post4.runtime_details["cuda_graph_tables"]["local_block_table_bytes"] > 70 * GiB
    assert _level(post4) == "does_not_fit"
    eager = _est("llama-4-scout", "8xh200", runtime_version="0.4.6.post4", enforce_eager=True,
                 **kw)  # fmt: skip
    assert _level(eager) != "does_not_fit"
    post5 = _est("llama-4-scout", "8xh200", runtime_version="2025-05-24", **kw)
    t = post5.runtime_details["cuda_graph_tables"]
    # 256 (H200 > 80 GB, PR #5893) x ceil(1e6 / 8192) = 123 virtual batches x 8192 int32
    assert t["max_bs"] == 256
    assert t["local_block_table_bytes"] == 256 * 123 * 8192 * 4


def test_only_chunked_attention_models_and_dated_rows_get_tables() -> None:
    dense = _est("llama-3.1-8b", "h100-sxm", ctx=131072, runtime_version="0.4.6")
    assert "cuda_graph_tables" not in dense.runtime_details
    assert fa3_graph_tables(find_model("llama-3.1-8b").spec(), 131072, 160, "per_chunk") is None
    assert resolve_generation("sglang", "0.4.6").effects["fa3_local_table"] == "per_seq"
    assert resolve_generation("sglang", "0.4.7").effects["fa3_local_table"] == "per_chunk"
    assert "fa3_local_table" not in resolve_generation("sglang", "0.4.4").effects
    # PR #5893: 256 on GPUs above 80 GB from v0.4.6.post2; the H100's 80 GB stays at 160
    eff = resolve_generation("sglang", "2025-05-10").effects
    assert graph_max_bs(eff, 141 * GiB, 512) == 256
    assert graph_max_bs(eff, 81559 * MiB, 512) == 160
