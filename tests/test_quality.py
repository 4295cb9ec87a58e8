"""Quality cost per weight format: the published table, its coverage, and the rank order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.errors import UnknownNameError
from oomkit.planner.quality import RANK_BASES, quality_rank_key, quality_table, quant_quality
from oomkit.quant.formats import quant_format
from oomkit.quant.hf_formats import HF_FORMATS
from oomkit.quant.llamacpp_ftypes import LLAMACPP_FTYPES

DATA = Path(__file__).resolve().parents[1] / "src" / "oomkit" / "data" / "quant_quality.json"


def test_every_gguf_file_type_gets_a_rank() -> None:
    # the planner ranks every llama-quantize type oomkit knows, published or not
    for name in LLAMACPP_FTYPES:
        q = quant_quality(name)
        assert q.name == name
        assert q.rank_basis in RANK_BASES
        assert q.rank_key > 0
        assert q.bits_per_weight == quant_format(name, family="ggml_mix").bits


def test_every_hf_format_gets_a_rank() -> None:
    for name in HF_FORMATS:
        assert quality_rank_key(name) > 0


def test_published_order_of_common_types() -> None:
    # llama.cpp's own KLD scoreboard: Q8_0 < Q6_K < Q5_K_M < Q4_K_M < Q3_K_M < Q2_K < IQ1_S
    order = ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K", "IQ1_S"]
    keys = [quality_rank_key(n) for n in order]
    assert keys == sorted(keys)
    assert quality_rank_key("Q8_0") < quality_rank_key("Q4_K_M") < quality_rank_key("Q2_K")
    # the _M mix beats the _S mix of the same base type (more bits on attn_v / ffn_down)
    assert quality_rank_key("Q4_K_M") < quality_rank_key("Q4_K_S")
    assert quality_rank_key("Q3_K_L") < quality_rank_key("Q3_K_M") < quality_rank_key("Q3_K_S")


def test_every_published_row_has_a_source_and_a_figure() -> None:
    rows = json.loads(DATA.read_text("utf-8"))["rows"]
    assert len(rows) >= 25
    for r in rows:
        assert r["source"].startswith("https://"), r["name"]
        assert r["model_measured_on"]
        assert r["kld"] is not None or r["ppl_increase_pct"] is not None
        # every row names a format oomkit knows, in the family it is stored under
        assert quant_format(r["name"], family=r["family"]).name == r["name"]
    assert len({(r["family"], r["name"]) for r in rows}) == len(rows) == len(quality_table())


def test_published_values_match_the_scoreboard() -> None:
    # llama.cpp tools/perplexity/README.md, LLaMA 3 8b Scoreboard, q4_K_M without imatrix:
    # dPPL 0.175482 on an F16 PPL of 6.231636, KLD 0.031273
    q = quant_quality("q4_k_m")
    assert q.kld == pytest.approx(0.031273)
    assert q.ppl_increase_pct == pytest.approx(0.175482 / 6.231636 * 100, abs=1e-3)
    assert q.published
    assert "perplexity" in q.source


def test_ppl_only_rows_rank_on_the_kld_scale() -> None:
    # AWQ INT4 (Llama-2-7B +2.4% PPL) lands next to Q4_K_M (+2.8%), and GPTQ INT3 after it
    awq = quant_quality("awq")
    assert awq.rank_basis == "ppl"
    assert awq.kld is None
    assert quality_rank_key("Q5_K_M") < awq.rank_key < quality_rank_key("Q4_K_S")
    assert awq.rank_key < quality_rank_key("gptq") < quality_rank_key("gptq-int3")


def test_bits_fallback_is_flagged_and_monotone() -> None:
    # formats without a published figure rank by bits per weight, and say so
    for name in ("fp8", "nf4", "TQ1_0", "MXFP4_MOE", "bf16", "int8"):
        q = quant_quality(name)
        assert q.rank_basis == "bits"
        assert not q.published
        assert q.source == ""
    assert quality_rank_key("fp32") < quality_rank_key("bf16") < quality_rank_key("fp8")
    assert quality_rank_key("fp8") < quality_rank_key("nf4") < quality_rank_key("gptq-int2")
    keys = [quant_quality(n) for n in ("TQ1_0", "TQ2_0")]
    assert keys[0].rank_key > keys[1].rank_key  # 1.69 bpw costs more than 2.06 bpw


def test_to_dict_is_json_ready() -> None:
    d = quant_quality("IQ4_XS").to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["published"] is True


def test_unknown_format_is_one_clear_error() -> None:
    with pytest.raises(UnknownNameError, match="Q4_K_M"):
        quant_quality("Q4KM")
