"""Gemma 4 31B in the catalog: per-layer attention geometry (sliding layers 16 KV heads x 256,
full layers 4 KV heads x 512 with V = K and no v_proj), its parameters, the KV bytes per token
each runtime caches, and an estimate per runtime.

The config is the catalog's copy of ``google/gemma-4-31B-it``'s (a transformers printout of
the full ``Gemma4Config``, code-search id 62810419502; PROVENANCE.md). The module tree printed
beside it fixes the shapes checked here: sliding layers ``q_proj`` [8192, 5376], ``k_proj`` and
``v_proj`` [4096, 5376]; full layers ``q_proj`` [16384, 5376], ``k_proj`` [2048, 5376], no
``v_proj``, ``o_proj`` [5376, 16384].
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from oomkit.catalog.models import _thaw, find_model
from oomkit.errors import UnsupportedModelError
from oomkit.estimate.hf_kv import kv_bytes, kv_bytes_per_token, kv_layers
from oomkit.estimate.llamacpp_kv import plan_kv
from oomkit.estimate.llamacpp_params import resolve_llamacpp_params
from oomkit.loaders.hf_config import parse_config
from oomkit.spec.model import LAYER_FULL, ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import derive_tensors

#: the text stack derived from the config: 30.7B as the model card states it ("30.7B dense +
#: ~550M vision encoder"); transformers also keeps one ``layer_scalar`` buffer per layer (+60)
TEXT_PARAMS = 30_697_345_280
#: vision tower (27 layers of 1152, no biases) + patch embedder + position table + std
#: bias/scale + the embedder's projection [5376, 1152]
VISION_PARAMS = 575_743_536
#: bf16 bytes per token, every layer at full length: 50 x 2 x 16 x 256 x 2 + 10 x 2 x 4 x 512 x 2
KV_PER_TOKEN = 50 * 2 * 16 * 256 * 2 + 10 * 2 * 4 * 512 * 2


def _spec() -> ModelSpec:
    entry = find_model("gemma-4-31b")
    assert entry is not None
    return entry.spec()


def test_full_layers_have_the_global_head_and_no_v_proj() -> None:
    spec = _spec()
    full = [i for i, t in enumerate(spec.layer_types) if t == LAYER_FULL]
    assert full == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    assert spec.sliding_window == 1024
    assert spec.k_eq_v_layers == tuple(full)
    shapes = {t.name: t.shape for t in derive_tensors(spec)}
    assert shapes["blk.0.attn_q.weight"] == (8192, 5376)
    assert shapes["blk.0.attn_k.weight"] == (4096, 5376)
    assert shapes["blk.0.attn_v.weight"] == (4096, 5376)
    assert shapes["blk.0.attn_output.weight"] == (5376, 8192)
    assert shapes["blk.0.attn_q_norm.weight"] == (256,)
    assert shapes["blk.5.attn_q.weight"] == (16384, 5376)
    assert shapes["blk.5.attn_k.weight"] == (2048, 5376)
    assert "blk.5.attn_v.weight" not in shapes
    assert shapes["blk.5.attn_output.weight"] == (5376, 16384)
    assert shapes["blk.5.attn_k_norm.weight"] == (512,)
    assert "output.weight" not in shapes  # tied


def test_parameters_match_the_published_figure() -> None:
    spec = _spec()
    text = sum(t.n_params for t in derive_tensors(spec))
    assert text == TEXT_PARAMS
    assert round(text / 1e9, 1) == 30.7  # the model card's "30.7B"
    assert spec.multimodal_params == VISION_PARAMS  # the card's "~550M vision encoder"


def test_kv_bytes_per_token_vllm_sglang_transformers() -> None:
    """hf_kv (vLLM's Attention per layer, SGLang's pools, transformers' DynamicCache): K and V
    of each layer's own head size, V stored on the K = V layers too."""
    layers = kv_layers(_spec(), kv_elem_bytes=2, state_elem_bytes=2)
    assert kv_bytes_per_token(layers) == KV_PER_TOKEN == 901_120
    full = [lay for lay in layers if lay.kind == "full"]
    sliding = [lay for lay in layers if lay.kind == "sliding"]
    assert {lay.bytes_per_token for lay in full} == {2 * 4 * 512 * 2}
    assert {lay.bytes_per_token for lay in sliding} == {2 * 16 * 256 * 2}
    assert {lay.window for lay in sliding} == {1024}


def test_kv_bytes_llamacpp() -> None:
    """llama_kv_cache_iswa: full layers n_ctx cells of n_embd_k_gqa(il) = 4 x 512 (+ V, stored
    as Vcur = Kcur), sliding layers GGML_PAD(n_swa + n_ubatch, 256) cells of 16 x 256."""
    spec = _spec()
    p = resolve_llamacpp_params(
        InferenceSettings(ctx=32768, parallel=1), n_layer=spec.num_hidden_layers, has_gpu=True
    )
    plan = plan_kv(spec, p)
    full = 10 * 2 * 4 * 512 * 2 * 32768
    sliding = 50 * 2 * 16 * 256 * 2 * 1536  # 1024 + 512 -> padded to 256: 1536 cells
    assert plan.swa_cells == 1536
    assert plan.kv_bytes == full + sliding == 3_942_645_760


@pytest.mark.parametrize(
    ("runtime", "quant"),
    [
        ("llama.cpp", "Q4_K_M"),
        ("ollama", "Q4_K_M"),
        ("vllm", "bf16"),
        ("sglang", "bf16"),
        ("transformers", "bf16"),
    ],
)
def test_estimate_end_to_end(capsys: pytest.CaptureFixture[str], runtime: str, quant: str) -> None:
    code, out, err = run_cli(
        capsys, "estimate", "gemma-4-31b", "-r", runtime, "-q", quant, "-c", "8192",
        "--gpu", "h200", "--json",
    )  # fmt: skip
    assert code in (0, 3, 4), err
    doc = json.loads(out)
    assert doc["total_bytes"] > 15 * 2**30
    if runtime == "vllm":
        assert doc["runtime_details"]["kv_bytes_per_token_per_rank"] == KV_PER_TOKEN


def test_per_layer_sizes_leave_other_models_alone() -> None:
    """A model without per-layer head sizes reads ``head_dim``/``v_head_dim`` at every layer."""
    entry = find_model("gemma-3-27b")
    assert entry is not None
    spec = entry.spec()
    assert spec.head_dim_per_layer is None
    assert spec.k_eq_v_layers == ()
    assert {spec.layer_head_dim(i) for i in range(spec.num_hidden_layers)} == {spec.head_dim}
    assert {spec.layer_v_head_dim(i) for i in range(spec.num_hidden_layers)} == {spec.v_head_dim}


def test_unmodelled_gemma4_features_are_refused_in_one_line() -> None:
    entry = find_model("gemma-4-31b")
    assert entry is not None
    cfg = json.loads(json.dumps(_thaw(entry.config)))
    cfg["text_config"]["hidden_size_per_layer_input"] = 256  # E2B/E4B per-layer embeddings
    with pytest.raises(UnsupportedModelError, match="hidden_size_per_layer_input") as e:
        parse_config(cfg, name="gemma-4-e2b-like")
    assert "\n" not in str(e.value)


@settings(max_examples=60, deadline=None)
@given(
    ctx=st.integers(min_value=1, max_value=300_000),
    more=st.integers(min_value=0, max_value=100_000),
    held=st.integers(min_value=0, max_value=4096),
)
def test_more_context_never_needs_less_kv(ctx: int, more: int, held: int) -> None:
    layers = kv_layers(_spec(), kv_elem_bytes=2, state_elem_bytes=2)
    a = kv_bytes(layers, seq_len=ctx, held_tokens=held)
    b = kv_bytes(layers, seq_len=ctx + more, held_tokens=held)
    assert b >= a


@settings(max_examples=25, deadline=None)
@given(ctx=st.integers(min_value=256, max_value=262_144), more=st.integers(0, 65_536))
def test_more_context_never_needs_less_llamacpp_kv(ctx: int, more: int) -> None:
    spec = _spec()

    def kv(n: int) -> int:
        p = resolve_llamacpp_params(
            InferenceSettings(ctx=n, parallel=1), n_layer=spec.num_hidden_layers, has_gpu=True
        )
        return plan_kv(spec, p).kv_bytes

    assert kv(ctx + more) >= kv(ctx)


def test_vllm_unifies_the_two_page_sizes() -> None:
    """vLLM ``unify_kv_cache_spec_page_size``: the full layers' page (4 x 512) is half the
    sliding layers' (16 x 256), so their block size doubles (32 tokens); then 10 full + 50
    sliding layers make 6 groups of 10 sharing 10 pools of 16 x 16384-byte pages per block."""
    from oomkit.estimate.vllm_blocks import kv_blocks, max_len_that_fits
    from oomkit.estimate.vllm_engines import vllm_engine

    layers = kv_layers(_spec(), kv_elem_bytes=2, state_elem_bytes=2)
    eng = vllm_engine("current")
    pool = 10 * 2**30
    b = kv_blocks(layers, pool, block=16, max_len=32768, batched=8192, eng=eng)
    assert b is not None
    page = 16 * (2 * 16 * 256 * 2)  # one sliding layer's block of 16 tokens
    assert b.groups == 6
    assert b.num_blocks == pool // (page * 10)
    # _report_kv_cache_config logs, from vLLM 0.21, max concurrency x max_model_len (the blocks
    # over one request's blocks; vllm#43308's "10x more" Gemma 4 tokens); before 0.21 the
    # blocks over the groups x the min block size
    assert b.tokens == int(b.num_blocks / b.blocks_per_request * 32768)
    old = kv_blocks(layers, pool, block=16, max_len=32768, batched=8192, eng=vllm_engine("v1-0.20"))
    assert old is not None
    assert old.num_blocks == b.num_blocks
    assert old.tokens == b.num_blocks // 6 * 16
    full_blocks = -(-32768 // 32)
    sliding_blocks = (-(-(1024 - 1 + 8192) // 16) + 1) * 5
    assert b.blocks_per_request == full_blocks + sliding_blocks
    # sliding layers not counted at full length: more than the 11,915 tokens that 10 GiB
    # holds at 901,120 bytes per token, but each sliding group keeps cdiv(1023 + 8192, 16) + 1
    # blocks of the 4,096 (_max_memory_usage_bytes_from_groups), the full group the rest
    fits = max_len_that_fits(layers, pool, 262144, 16, eng, 8192)
    assert fits == 32 * (b.num_blocks - sliding_blocks) == 38752


def test_activation_sites_read_the_widest_layer() -> None:
    """One-layer activation peaks (transformers prefill, SDPA math, vLLM profile, AWQ split-K)
    take the widest attention layer: Gemma 4's full layers (32 x 512 queries, 4 x 512 K and V),
    not the global ``head_dim`` 256; a model without per-layer sizes keeps its globals."""
    from oomkit.estimate.hf_attention_bytes import sdpa_math_extra_bytes

    spec = _spec()
    assert spec.widest_attention() == (4, 512, 512)
    entry = find_model("gemma-3-27b")
    assert entry is not None
    g3 = entry.spec()
    assert g3.widest_attention() == (g3.num_key_value_heads, g3.head_dim, g3.v_head_dim)
    one = sdpa_math_extra_bytes(spec, batch=1, q_len=1, kv_len=1, elem=2)
    # 32 heads x 9 B of scores, fp32 copies of q (2 x 32 x 512) and K/V (2 x 4 x 512), masks
    assert one == 32 * 9 + 2 * 32 * 512 * 4 + 2 * 4 * 512 * 4 + 3


def test_gguf_reads_the_sliding_head_size(tmp_path: Path) -> None:
    """A gemma4 GGUF states the full layers' head size in ``key_length`` and the sliding
    layers' in ``key_length_swa`` (llama_hparams n_embd_head_k_swa); llama.cpp's cache then holds
    n_head_kv(il) x n_embd_head_k(il) per layer."""
    import gguf
    import numpy as np

    from oomkit.loaders.gguf import load_gguf
    from oomkit.loaders.gguf_spec import gguf_to_spec

    w = gguf.GGUFWriter(str(tmp_path / "g4.gguf"), "gemma4")
    for key, val in {
        "block_count": 3,
        "embedding_length": 8,
        "attention.head_count": 4,
        "attention.key_length": 16,
        "attention.value_length": 16,
        "attention.key_length_swa": 8,
        "attention.value_length_swa": 8,
        "attention.sliding_window": 512,
    }.items():
        w.add_uint32(f"gemma4.{key}", val)
    w.add_array("gemma4.attention.head_count_kv", [2, 2, 1])  # 1 x 16 on the full layer
    w.add_array("gemma4.attention.sliding_window_pattern", [True, True, False])
    w.add_tensor("token_embd.weight", np.zeros((10, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    spec = gguf_to_spec(load_gguf(tmp_path / "g4.gguf"))
    assert spec.head_dim == 8
    assert spec.head_dim_per_layer == (8, 8, 16)
    assert spec.kv_heads_per_layer == (2, 2, 1)
    p = resolve_llamacpp_params(InferenceSettings(ctx=4096, parallel=1), n_layer=3, has_gpu=True)
    dims = [(r.k_elems_per_cell, r.cache) for r in plan_kv(spec, p).layers]
    assert dims == [(2 * 8, "kv_swa"), (2 * 8, "kv_swa"), (1 * 16, "kv")]
    assert [spec.layer_head_dim(i) * spec.kv_heads(i) for i in range(3)] == [16, 16, 16]
    assert spec.widest_attention() == (1, 16, 16)
