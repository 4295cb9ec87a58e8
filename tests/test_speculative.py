"""vLLM and SGLang speculative decoding (oomkit.estimate.speculative, cli.speculative_options).

The figures are the runtimes' own formulas: vLLM's draft layers join the KV block pool
(get_kv_cache_spec), its CUDA graphs are sized for ``1 + num_speculative_tokens`` tokens per
sequence (``VllmConfig._set_cudagraph_sizes``), its profile runs the rejection sampler over
``2 x num_reqs`` fp32 logit rows; SGLang scales its cell size by ``1 + draft_layers /
target_layers`` (pool_configurator.py) and reserves 2 GiB (EAGLE family) / 6 GiB (STANDALONE)
more outside ``mem_fraction_static``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from oomkit.api import estimate, load_model
from oomkit.cli.gpu_choice import choose_hardware
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.sglang import default_mem_fraction_static
from oomkit.estimate.vllm_cudagraph import capture_sizes, cudagraph_bytes
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import count_params, mtp_params
from oomkit.units import MiB

H100 = "H100-SXM5-80GB"
TARGET = "llama-3.1-8b"  # 32 layers, 8 KV heads x 128, bf16: 131072 B/token
DRAFT = "llama-3.2-1b"  # 16 layers, 8 KV heads x 64: 32768 B/token


def _est(model: str, gpu: str = H100, **kw: Any) -> Estimate:
    hw = choose_hardware(gpu).hardware
    return estimate(model, InferenceSettings(**kw), hw, offline=True)


def _comp(est: Estimate, prefix: str) -> int:
    return sum(c.n_bytes for c in est.devices[0].components if c.label.startswith(prefix))


# --- vLLM -------------------------------------------------------------------------------------


def test_vllm_draft_layers_join_the_block_pool() -> None:
    base = _est(TARGET, runtime="vllm")
    spec = _est(
        TARGET,
        runtime="vllm",
        speculative_method="draft_model",
        speculative_model=DRAFT,
        num_speculative_tokens=3,
    )
    assert base.runtime_details["kv_bytes_per_token_per_rank"] == 131072
    # the draft's 16 layers x 2 (K, V) x 8 heads x 64 x 2 bytes per token, in the same blocks
    assert spec.runtime_details["kv_bytes_per_token_per_rank"] == 131072 + 32768
    draft_kv = _comp(spec, "draft KV cache")
    target_kv = _comp(spec, "KV cache pool")
    assert draft_kv > 0
    assert draft_kv * 163840 // (draft_kv + target_kv) in range(32768 - 1, 32768 + 2)
    # the draft checkpoint's weights are loaded with the target (before the profile)
    draft_w = _comp(spec, "draft model weights")
    one_b = load_model(DRAFT, offline=True)
    assert draft_w == pytest.approx(count_params(one_b) * 2, rel=0.01)
    assert int(str(spec.runtime_details["kv_cache_tokens"])) < int(
        str(base.runtime_details["kv_cache_tokens"])
    )


def test_vllm_eagle_shares_embed_and_head_eagle3_keeps_its_head() -> None:
    one_b = load_model(DRAFT, offline=True)
    table = one_b.vocab_size * one_b.hidden_size * 2
    full = _comp(
        _est(
            TARGET,
            runtime="vllm",
            speculative_method="draft_model",
            speculative_model=DRAFT,
            num_speculative_tokens=2,
        ),
        "draft model weights",
    )
    eagle = _comp(
        _est(
            TARGET,
            runtime="vllm",
            speculative_method="eagle",
            speculative_model=DRAFT,
            num_speculative_tokens=2,
        ),
        "draft model weights",
    )
    eagle3 = _comp(
        _est(
            TARGET,
            runtime="vllm",
            speculative_method="eagle3",
            speculative_model=DRAFT,
            num_speculative_tokens=2,
        ),
        "draft model weights",
    )
    # Llama-3.2-1B ties its head to the embedding: one table either way for EAGLE
    shared = 1 if one_b.tie_word_embeddings else 2
    assert full - eagle == shared * table
    assert full - eagle3 == table


def test_vllm_mtp_prices_the_checkpoints_own_layers() -> None:
    est = _est(
        "deepseek-v3",
        "8xH200",
        runtime="vllm",
        tp=8,
        speculative_method="mtp",
        num_speculative_tokens=1,
    )
    spec = load_model("deepseek-v3", offline=True)
    assert spec.num_nextn_predict_layers == 1
    # one MTP block without its embed_tokens / shared_head.head copies (shared with the target),
    # at the checkpoint's mean bytes per parameter, / tp 8
    weights = _comp(est, "weights")  # the target's line
    params = mtp_params(spec) - 2 * spec.vocab_size * spec.hidden_size
    expect = params * (weights * 8 / count_params(spec)) / 8
    assert _comp(est, "draft model weights") == pytest.approx(expect, rel=1e-6)
    # MLA: the MTP layer caches one 576-element latent per token like the target's layers
    per_layer = 576 * 2
    assert est.runtime_details["kv_bytes_per_token_per_rank"] == (61 + 1) * per_layer


def test_vllm_graphs_are_sized_for_one_plus_k_tokens_per_sequence() -> None:
    k, seqs = 3, 8
    est = _est(
        TARGET,
        runtime="vllm",
        max_num_seqs=seqs,
        speculative_method="ngram",
        num_speculative_tokens=k,
    )
    spec = load_model(TARGET, offline=True)
    engine = str(est.runtime_details["engine"])
    batched = int(str(est.runtime_details["max_num_batched_tokens"]))
    # max_cudagraph_capture_size = min(max_num_seqs x (1 + k) x 2, 512)
    assert capture_sizes(engine, max_num_seqs=seqs * (1 + k), max_num_batched_tokens=batched)[
        -1
    ] == min(seqs * (1 + k) * 2, 512)
    expect, _ = cudagraph_bytes(
        spec,
        engine,
        layers=32,
        max_num_seqs=seqs * (1 + k),
        max_num_batched_tokens=batched,
        elem_bytes=2,
        tp=1,
    )
    assert est.runtime_details["cudagraph_bytes"] == expect
    plain = _est(TARGET, runtime="vllm", max_num_seqs=seqs)
    assert int(str(est.runtime_details["cudagraph_bytes"])) > int(
        str(plain.runtime_details["cudagraph_bytes"])
    )
    # ngram: no draft weights, no draft KV
    assert _comp(est, "speculative decoding: ngram") == 0
    assert est.runtime_details["kv_bytes_per_token_per_rank"] == 131072


def test_vllm_profile_runs_the_rejection_sampler() -> None:
    est = _est(
        TARGET,
        runtime="vllm",
        max_num_seqs=256,
        speculative_method="ngram",
        num_speculative_tokens=2,
    )
    peak = next(c for c in est.devices[0].components if c.label == "profile-run peak")
    # _dummy_sampler_run: num_tokens + num_reqs rows (one dummy draft token per request)
    assert peak.inputs["rejection_sampler_bytes"] == 2 * 256 * 128256 * 4


# --- SGLang -----------------------------------------------------------------------------------


def test_sglang_eagle_scales_the_cell_and_reserves_2gib() -> None:
    base = _est(TARGET, runtime="sglang")
    eagle = _est(
        TARGET,
        runtime="sglang",
        speculative_method="eagle",
        speculative_model=DRAFT,
        num_speculative_tokens=3,
    )
    assert base.runtime_details["cell_size_bytes"] == 131072
    # cell_size x (1 + 16 draft layers / 32 target layers)
    assert eagle.runtime_details["cell_size_bytes"] == int(131072 * (1 + 16 / 32))
    mib = 81559  # the H100 SXM5's nvidia-smi memory.total in MiB
    frac0 = default_mem_fraction_static(1, mib * MiB)
    assert base.settings["mem_fraction_static"] == frac0
    # reserved = 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024 = 13440 MiB, floor 10 GiB, + 2048
    assert frac0 == round((mib - 13440) / mib, 3)
    assert eagle.settings["mem_fraction_static"] == round((mib - 13440 - 2048) / mib, 3)
    # the draft weights come out of the reserved rest (loaded after the pool)
    assert _comp(eagle, "draft model weights") > 0
    assert _comp(eagle, "draft KV token pool") > 0


def test_sglang_standalone_reserves_6gib_and_ngram_nothing() -> None:
    standalone = _est(
        TARGET,
        runtime="sglang",
        speculative_method="draft_model",
        speculative_model=DRAFT,
        num_speculative_tokens=3,
    )
    ngram = _est(TARGET, runtime="sglang", speculative_method="ngram")
    base = _est(TARGET, runtime="sglang")
    f0 = float(str(base.settings["mem_fraction_static"]))
    assert f0 == round((81559 - 13440) / 81559, 3)
    assert standalone.settings["mem_fraction_static"] == round((81559 - 13440 - 6144) / 81559, 3)
    assert ngram.settings["mem_fraction_static"] == f0
    assert ngram.runtime_details["cell_size_bytes"] == 131072


def test_sglang_nextn_uses_the_targets_mtp_layers() -> None:
    est = _est("deepseek-v3", "8xH200", runtime="sglang", tp=8, speculative_method="mtp")
    sp = est.runtime_details["speculative"]
    assert isinstance(sp, dict)
    assert (sp["algorithm"], sp["draft_layers"], sp["num_steps"]) == ("NEXTN", 1, 3)
    assert est.runtime_details["cell_size_bytes"] == int(576 * 2 * 61 * (1 + 1 / 61))


# --- refusals in the API ----------------------------------------------------------------------


def test_mtp_without_mtp_layers_is_refused() -> None:
    with pytest.raises(InvalidSettingError, match="no MTP/NextN layers"):
        _est(TARGET, runtime="vllm", speculative_method="mtp", num_speculative_tokens=1)


def test_eagle_without_a_draft_is_refused() -> None:
    with pytest.raises(InvalidSettingError, match="needs its draft model"):
        _est(TARGET, runtime="vllm", speculative_method="eagle", num_speculative_tokens=1)


def test_settings_refuse_an_unknown_method_and_zero_tokens() -> None:
    with pytest.raises(InvalidSettingError, match="speculative_method"):
        InferenceSettings(runtime="vllm", speculative_method="medusa")
    with pytest.raises(InvalidSettingError, match="num_speculative_tokens"):
        InferenceSettings(runtime="vllm", speculative_method="ngram", num_speculative_tokens=0)


# --- property ---------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(
    k=st.integers(1, 8),
    more=st.integers(1, 8),
    seqs=st.sampled_from([1, 4, 16, 64, 256]),
    runtime=st.sampled_from(["vllm", "sglang"]),
)
def test_more_speculative_tokens_never_need_less_memory(
    k: int, more: int, seqs: int, runtime: str
) -> None:
    def run(n: int) -> Estimate:
        return _est(
            TARGET,
            runtime=runtime,
            max_num_seqs=seqs,
            speculative_method="ngram",
            num_speculative_tokens=n,
        )

    a, b = run(k), run(k + more)
    # what the runtime holds outside the KV pool never shrinks, so the pool never grows
    for est_a, est_b in ((a, b),):
        outside_a = sum(c.n_bytes for c in est_a.devices[0].components if c.category != "kv_cache")
        outside_b = sum(c.n_bytes for c in est_b.devices[0].components if c.category != "kv_cache")
        assert outside_b >= outside_a
    key = "kv_cache_tokens" if runtime == "vllm" else "max_total_num_tokens"
    assert int(str(b.runtime_details[key])) <= int(str(a.runtime_details[key]))


# --- the CLI, each runtime's spelling ---------------------------------------------------------


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "estimate", *argv, "--offline", "--json")
    assert code in (0, 4), err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _labels(doc: dict[str, Any]) -> list[str]:
    return [c["label"] for c in doc["devices"][0]["components"]]


def test_cli_vllm_speculative_config(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = json.dumps({"method": "eagle3", "model": DRAFT, "num_speculative_tokens": 3})
    doc = _json(capsys, TARGET, "--runtime", "vllm", "--gpu", H100, "--speculative-config", cfg)
    assert any(lbl.startswith("draft model weights (eagle3") for lbl in _labels(doc))
    assert any(lbl.startswith("draft KV cache") for lbl in _labels(doc))


def test_cli_vllm_old_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys,
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        H100,
        "--speculative-model",
        DRAFT,
        "--num-speculative-tokens",
        "4",
    )
    assert any(lbl.startswith("draft model weights (draft_model") for lbl in _labels(doc))
    ngram = _json(
        capsys,
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        H100,
        "--speculative-model",
        "[ngram]",
        "--num-speculative-tokens",
        "4",
    )
    assert "speculative decoding: ngram (no draft weights)" in _labels(ngram)


def test_cli_sglang_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(
        capsys,
        TARGET,
        "--runtime",
        "sglang",
        "--gpu",
        H100,
        "--speculative-algo",
        "EAGLE",
        "--speculative-draft",
        DRAFT,
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "4",
    )
    assert any(lbl.startswith("draft model weights (EAGLE") for lbl in _labels(doc))
    assert any(lbl.startswith("draft KV token pool") for lbl in _labels(doc))


def test_cli_llamacpp_draft_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, TARGET, "--gpu", H100, "-md", DRAFT, "-ngld", "99", "-cd", "4096")
    assert "draft model weights" in _labels(doc)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--runtime", "vllm", "--speculative-config", "{bad"], "not valid JSON"),
        (["--runtime", "vllm", "--speculative-config", "[1, 2]"], "must be a JSON object"),
        (["--runtime", "vllm", "--speculative-config", '{"method": "bogus"}'], "not a vLLM"),
        (["--runtime", "vllm", "--speculative-config", '{"method": "medusa"}'], "not modelled"),
        (
            [
                "--runtime",
                "vllm",
                "--speculative-config",
                '{"method": "ngram", "num_speculative_tokens": 0}',
            ],
            "at least 1",
        ),
        (
            [
                "--runtime",
                "vllm",
                "--speculative-config",
                '{"method": "ngram"}',
                "--num-speculative-tokens",
                "-2",
            ],
            "at least 1",
        ),
        (
            [
                "--runtime",
                "vllm",
                "--speculative-config",
                '{"model": "no-such-draft-xyz", "num_speculative_tokens": 2}',
            ],
            "speculative draft model 'no-such-draft-xyz'",
        ),
        (
            [
                "--runtime",
                "sglang",
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-draft-model-path",
                "no-such-draft-xyz",
            ],
            "speculative draft model",
        ),
        (["--runtime", "sglang", "--speculative-algorithm", "MEDUSA"], "not one of SGLang's"),
        (["--runtime", "sglang", "--speculative-num-steps", "3"], "needs --speculative-algorithm"),
        (["--runtime", "sglang", "--speculative-config", '{"method": "ngram"}'], "vLLM's"),
        (["--speculative-algorithm", "EAGLE"], "SGLang's"),
        (["--runtime", "vllm", "--num-speculative-tokens", "3"], "needs a speculative method"),
    ],
)
def test_cli_refusals_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = run_cli(capsys, "estimate", TARGET, "--gpu", H100, "--offline", *argv)
    assert code == 2, (out, err)
    assert needle in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_plan_keeps_the_draft_and_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = json.dumps({"method": "ngram", "num_speculative_tokens": 4})
    code, out, err = run_cli(
        capsys,
        "plan",
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        "RTX-4090",
        "--offline",
        "--speculative-config",
        cfg,
    )
    assert code == 0, err
    assert """--speculative-config '{"method":"ngram","num_speculative_tokens":4}'""" in out
    code, out, err = run_cli(
        capsys,
        "plan",
        TARGET,
        "--runtime",
        "sglang",
        "--gpu",
        "RTX-4090",
        "--offline",
        "--speculative-algorithm",
        "NEXTN",
    )
    assert code == 2
    assert "no MTP/NextN layers" in err


def test_help_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "estimate", "--help")
    assert code == 0
    for flag in ("--speculative-config", "--speculative-algorithm", "--num-speculative-tokens"):
        assert flag in out


def test_plan_offers_dropping_the_draft(capsys: pytest.CaptureFixture[str]) -> None:
    # an 8B bf16 draft beside an 8B target on a 24 GiB card: the plan keeps the draft (pinned)
    # at a shorter context; without it the context is longer: the lever says so, with its line
    cfg = json.dumps({"method": "draft_model", "model": TARGET, "num_speculative_tokens": 4})
    code, out, err = run_cli(
        capsys,
        "plan",
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        "RTX-4090",
        "--offline",
        "--speculative-config",
        cfg,
    )
    assert code == 0, err
    run_line = next(line for line in out.splitlines() if line.strip().startswith("vllm serve"))
    assert "--speculative-config" in run_line  # the plan itself keeps the pinned draft
    lever = next(line for line in out.splitlines() if "lever: drop the draft model" in line)
    assert "not quality" in lever
    assert "--speculative-config" not in lever.split("run:", 1)[1]


def test_plan_ngram_has_no_draft_to_drop(capsys: pytest.CaptureFixture[str]) -> None:
    cfg = json.dumps({"method": "ngram", "num_speculative_tokens": 4})
    code, out, _ = run_cli(
        capsys,
        "plan",
        TARGET,
        "--runtime",
        "vllm",
        "--gpu",
        "RTX-4090",
        "--offline",
        "--speculative-config",
        cfg,
    )
    assert code == 0
    assert "lever: drop the draft model" not in out


def test_qwen35_mtp_layer_is_read_and_priced() -> None:
    # config.json mtp_num_hidden_layers 1: one block of the last (full-attention) layer's kind,
    # fc [H, 2H] and 3 norms, embed/head shared: with the text model it reproduces the published
    # parameter count exactly (data/models/qwen.json params_note)
    spec = load_model("qwen3.5-27b", offline=True)
    assert spec.num_nextn_predict_layers == 1
    mtp = mtp_params(spec) - 2 * spec.vocab_size * spec.hidden_size
    est = _est("qwen3.5-27b", runtime="vllm", speculative_method="mtp", num_speculative_tokens=2)
    weights = _comp(est, "weights")
    expect = mtp * weights / (count_params(spec) - spec.multimodal_params)
    assert _comp(est, "draft model weights (mtp") == pytest.approx(expect, rel=1e-6)
    base = _est("qwen3.5-27b", runtime="vllm")
    per_tok = int(str(base.runtime_details["kv_bytes_per_token_per_rank"]))
    n_full = sum(1 for k in spec.layer_types or () if k == "full_attention")
    # the MTP layer caches like one more full-attention layer
    assert est.runtime_details["kv_bytes_per_token_per_rank"] == per_tok + per_tok // n_full


def test_sglang_nextn_on_a_hybrid_counts_attention_layers() -> None:
    # SGLang's mambaish configs budget the draft against the full-attention layers only
    # (DefaultPoolConfigurator: num_layers = len(full_attention_layer_ids))
    spec = load_model("qwen3.5-27b", offline=True)
    n_full = sum(1 for k in spec.layer_types or () if k == "full_attention")
    base = _est("qwen3.5-27b", runtime="sglang")
    est = _est("qwen3.5-27b", runtime="sglang", speculative_method="mtp")
    cell = int(str(base.runtime_details["cell_size_bytes"]))
    assert est.runtime_details["cell_size_bytes"] == int(cell * (1 + 1 / n_full))


def test_flag_eras_date_the_llama_server_draft_flags() -> None:
    from datetime import date

    from oomkit.estimate.flag_eras import flag_available, flag_era
    from oomkit.estimate.llamacpp_draft import DRAFT_CACHE_TYPES_SINCE, SPEC_SERVER_SINCE

    assert flag_era("llama.cpp", "draft_model").since == date.fromisoformat(SPEC_SERVER_SINCE)
    assert flag_era("llama.cpp", "draft_cache_type").since == date.fromisoformat(
        DRAFT_CACHE_TYPES_SINCE
    )
    assert not flag_available("llama.cpp", "draft_model", "2024-11-01")
    assert flag_available("llama.cpp", "draft_model", "2024-12-01")
    assert not flag_available("llama.cpp", "draft_cache_type", "2025-06-01")


def test_sglang_eagle_without_a_path_uses_the_native_mtp_layer() -> None:
    nextn = _est("qwen3.5-27b", runtime="sglang", speculative_method="mtp")
    eagle = _est("qwen3.5-27b", runtime="sglang", speculative_method="eagle")
    assert eagle.runtime_details["cell_size_bytes"] == nextn.runtime_details["cell_size_bytes"]
    assert _comp(eagle, "draft model weights") == _comp(nextn, "draft model weights") > 0
    with pytest.raises(InvalidSettingError, match="needs its draft model"):
        _est(TARGET, runtime="sglang", speculative_method="eagle")
