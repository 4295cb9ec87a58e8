"""NVIDIA Nemotron-H / Nemotron 3 Nano (``NemotronHForCausalLM``): the loader and the catalog entry.

Cited copy (see PROVENANCE.md): NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's config.json key by key in a
Rust MLX port's ``nemotron_nano_config()`` (code search id 55613091284). Published count:
llama.cpp's own ``model_n_params`` of the converted checkpoint, 31,577,940,288 (id 58091926432).
The block layout is vLLM ``vllm/model_executor/models/nemotron_h.py``: one RMSNorm and ONE
sublayer per block (``NemotronHMambaDecoderLayer``, ``NemotronHAttentionDecoderLayer``,
``NemotronHMLPDecoderLayer``, ``NemotronHMoEDecoderLayer``), chosen by ``hybrid_override_pattern``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.errors import UnsupportedModelError
from oomkit.estimate.hf_kv import kv_bytes_per_token, kv_layers
from oomkit.loaders.hf_config import SUPPORTED_ARCHITECTURES, parse_config
from oomkit.spec.model import LAYER_FFN, LAYER_FULL, LAYER_MAMBA
from oomkit.spec.tensors import active_params, count_params, derive_tensors

PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"

#: the cited copy of the config.json (architectures from the repo's NemotronHForCausalLM)
NANO_CONFIG: dict[str, Any] = {
    "architectures": ["NemotronHForCausalLM"],
    "attention_bias": False,
    "chunk_size": 128,
    "conv_kernel": 4,
    "eos_token_id": 2,
    "expand": 2,
    "head_dim": 128,
    "hidden_size": 2688,
    "hybrid_override_pattern": PATTERN,
    "intermediate_size": 1856,
    "layer_norm_epsilon": 1e-05,
    "mamba_head_dim": 64,
    "mamba_hidden_act": "silu",
    "mamba_num_heads": 64,
    "mamba_proj_bias": False,
    "max_position_embeddings": 262144,
    "mlp_bias": False,
    "mlp_hidden_act": "relu2",
    "model_type": "nemotron_h",
    "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712,
    "n_group": 1,
    "n_groups": 8,
    "n_routed_experts": 128,
    "n_shared_experts": 1,
    "norm_eps": 1e-05,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_experts_per_tok": 6,
    "num_hidden_layers": 52,
    "num_key_value_heads": 2,
    "rescale_prenorm_residual": True,
    "rope_theta": 10000,
    "routed_scaling_factor": 2.5,
    "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "time_step_floor": 0.0001,
    "time_step_max": 0.1,
    "time_step_min": 0.001,
    "topk_group": 1,
    "torch_dtype": "bfloat16",
    "use_bias": False,
    "use_conv_bias": True,
    "vocab_size": 131072,
}


def test_adapter_reads_the_block_pattern() -> None:
    assert "NemotronHForCausalLM" in SUPPORTED_ARCHITECTURES
    spec = parse_config(NANO_CONFIG, name="nano")
    kinds = spec.layer_types
    assert (kinds.count(LAYER_MAMBA), kinds.count(LAYER_FULL), kinds.count(LAYER_FFN)) == (
        23,
        6,
        23,
    )
    assert [i for i, k in enumerate(kinds) if k == LAYER_FULL] == [5, 12, 19, 26, 33, 42]
    # one sublayer per block: the mixers carry no MLP, the MoE blocks no mixer
    assert [spec.has_ffn(i) for i in (0, 1, 5, 51)] == [False, True, False, True]
    rec = spec.recurrent
    assert rec is not None
    assert (rec.kind, rec.d_inner, rec.n_heads, rec.head_dim) == ("mamba2", 4096, 64, 64)
    assert (rec.n_groups, rec.d_state, rec.d_conv) == (8, 128, 4)
    moe = spec.moe
    assert moe is not None
    assert (moe.num_experts, moe.num_experts_per_tok, moe.expert_intermediate_size) == (
        128,
        6,
        1856,
    )
    assert (moe.num_shared_experts, moe.shared_expert_intermediate_size) == (1, 3712)
    assert moe.score_correction_bias
    assert not moe.router_bias
    assert not spec.mlp_gated  # relu2 up/down experts
    assert not spec.tie_word_embeddings


def test_derived_count_is_llama_cpps_n_params() -> None:
    """Embedding + untied head 704,643,072; 23 Mamba-2 blocks of 38,744,896 (in_proj 2688 ->
    10304, conv 6144 x 4 + bias, dt_bias/A/D 64 each, gated norm 4096, out_proj 4096 -> 2688,
    norm); 6 attention blocks of 23,399,040; 23 MoE blocks of 1,297,468,160 (router 128 x 2688
    + 128 correction biases, 128 experts of up+down 2 x 1856 x 2688, shared up+down 2 x 3712 x
    2688, norm); final norm. llama.cpp prints 31,577,940,288 for the converted checkpoint."""
    spec = parse_config(NANO_CONFIG, name="nano")
    assert count_params(spec) == 31_577_940_288
    assert 704_643_072 + 23 * 38_744_896 + 6 * 23_399_040 + 23 * 1_297_468_160 + 2688 == (
        31_577_940_288
    )
    # "3.5B active" (NVIDIA's card / Megatron-Bridge page): 6 of 128 experts per token
    assert round(active_params(spec) / 1e9, 2) == 3.58


def test_tensor_layout_is_llama_cpp_nemotron_h() -> None:
    shapes = {t.name: t.shape for t in derive_tensors(parse_config(NANO_CONFIG, name="nano"))}
    assert shapes["blk.0.ssm_in.weight"] == (10304, 2688)  # mamba_in_proj_out_features
    assert shapes["blk.0.ssm_out.weight"] == (2688, 4096)
    assert shapes["blk.0.ssm_conv1d.weight"] == (6144, 4)
    assert shapes["blk.5.attn_k.weight"] == (256, 2688)
    assert shapes["blk.1.ffn_up_exps.weight"] == (128, 1856, 2688)
    assert shapes["blk.1.ffn_down_exps.weight"] == (128, 2688, 1856)
    assert shapes["blk.1.ffn_up_shexp.weight"] == (3712, 2688)
    assert shapes["blk.1.exp_probs_b.bias"] == (128,)
    for absent in (
        "blk.1.ffn_gate_exps.weight",  # relu2: no gate
        "blk.1.ffn_gate_shexp.weight",
        "blk.0.ffn_up_exps.weight",  # a Mamba block has no MLP
        "blk.5.ffn_up_exps.weight",  # nor an attention block
        "blk.1.attn_q.weight",  # a MoE block has no mixer
        "blk.1.ffn_norm.weight",  # one norm per block: attn_norm
    ):
        assert absent not in shapes, absent
    assert all(f"blk.{i}.attn_norm.weight" in shapes for i in range(52))


def test_kv_per_token_is_the_six_attention_layers() -> None:
    """vLLM's attention page (``FullAttentionSpec``): 2 x num_kv_heads x head_size x dtype bytes
    per token per attention layer: 6 x 2 x 2 x 128 x 2 = 6,144 bytes (bf16). The 23 Mamba-2
    layers hold per-sequence state instead (conv (4 - 1) x (4096 + 2 x 8 x 128) = 18,432 and
    SSM 64 x 64 x 128 = 524,288 elements each); the MoE blocks hold nothing."""
    spec = parse_config(NANO_CONFIG, name="nano")
    layers = kv_layers(spec, kv_elem_bytes=2, state_elem_bytes=2)
    assert kv_bytes_per_token(layers) == 6 * 2 * 2 * 128 * 2
    assert [x.layer for x in layers if x.kind == "full"] == [5, 12, 19, 26, 33, 42]
    rec = [x for x in layers if x.kind == "recurrent"]
    assert len(rec) == 23
    assert rec[0].state_bytes_per_seq == (18_432 + 524_288) * 2


def test_llamacpp_cache_has_kv_rows_only_on_attention_blocks() -> None:
    """llama.cpp (n_head_kv(il) = 0 off the attention blocks): 6 KV rows of 2 x 128 K and V
    elements per cell, 23 recurrent-state rows, nothing for the MoE blocks."""
    from oomkit.estimate.llamacpp_kv import plan_kv
    from oomkit.estimate.llamacpp_params import resolve_llamacpp_params
    from oomkit.spec.settings import InferenceSettings

    spec = parse_config(NANO_CONFIG, name="nano")
    p = resolve_llamacpp_params(
        InferenceSettings(ctx=4096, parallel=1), n_layer=spec.num_hidden_layers, has_gpu=False
    )
    plan = plan_kv(spec, p)
    caches = [r.cache for r in plan.layers]
    assert caches.count("kv") == 6
    assert caches.count("rs") == 23
    assert {r.k_elems_per_cell for r in plan.layers if r.cache == "kv"} == {256}


@pytest.mark.parametrize(
    ("key", "feature"),
    [("moe_latent_size", 1024), ("block_configs", [{}]), ("intermediate_size", [1856, 1856])],
)
def test_unmodelled_variants_are_refused_by_name(key: str, feature: object) -> None:
    config = {**NANO_CONFIG, key: feature}
    with pytest.raises(UnsupportedModelError, match=key):
        parse_config(config, name="variant")


def test_a_pattern_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(UnsupportedModelError, match="hybrid_override_pattern"):
        parse_config({**NANO_CONFIG, "hybrid_override_pattern": PATTERN[:-1]}, name="bad")


def test_catalog_entry_equals_the_verbatim_copy() -> None:
    entry = find_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert entry.key == "nemotron-3-nano-30b-a3b"
    assert find_model("nemotron-3-nano").key == entry.key
    config = json.loads(json.dumps(entry.config, default=dict))
    left_out = {"eos_token_id", "rescale_prenorm_residual"} | {
        k for k in NANO_CONFIG if k.startswith("time_step_")
    }
    assert config == {k: v for k, v in NANO_CONFIG.items() if k not in left_out}
    assert entry.params == count_params(entry.spec()) == 31_577_940_288


@pytest.mark.parametrize("runtime", ["vllm", "llamacpp", "sglang", "transformers", "ollama"])
def test_cli_estimate_on_a_dgx_spark(runtime: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["estimate", "nemotron-3-nano-30b-a3b", "--gpu", "dgx-spark", "-r", runtime])
    out, err = capsys.readouterr()
    assert code in (0, 3, 4), err  # 3: does not fit, 4: tight
    assert "nemotron-3-nano-30b-a3b (NemotronHForCausalLM, 31.58 B params)" in out


def test_vllm_bf16_fits_a_dgx_spark_with_its_kv_pool() -> None:
    """bf16 weights 58.8 GiB on the 119.70 GiB CUDA reports: the pool at util 0.9 is the rest."""
    from oomkit.api import estimate
    from oomkit.hardware.catalog import find_gpu
    from oomkit.hardware.targets import hardware_for
    from oomkit.spec.settings import InferenceSettings

    st = InferenceSettings(runtime="vllm", quant="bf16", ctx=32768, gpu_memory_utilization=0.9)
    est = estimate("nemotron-3-nano-30b-a3b", st, hardware_for((find_gpu("dgx-spark"),)))
    kv = est.runtime_details["available_kv_cache_bytes"]
    assert isinstance(kv, int)
    assert 40 * 2**30 < kv < 0.9 * 119.7 * 2**30 - 58 * 2**30


@pytest.mark.parametrize("arch", ["nemotron_h_moe", "nemotron_h"])
def test_gguf_blocks_follow_llama_cpps_recurrence_rule(arch: str, tmp_path: Any) -> None:
    """llama.cpp (``load_hparams``, nemotron_h and nemotron_h_moe): "A layer is recurrent IFF
    the n_head_kv value is set to 0 and the n_ff value is set to 0"; n_ff > 0 marks the MLP/MoE
    blocks. Before, every block without KV heads was read as Mamba (twice the RS state)."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    from oomkit.loaders.gguf import load_gguf
    from oomkit.loaders.gguf_spec import gguf_to_spec

    w = gguf.GGUFWriter(str(tmp_path / "n.gguf"), arch)
    for key, val in {
        "block_count": 4,
        "embedding_length": 8,
        "attention.head_count": 2,
        "ssm.conv_kernel": 4,
        "ssm.inner_size": 16,
        "ssm.state_size": 4,
        "ssm.group_count": 2,
        "ssm.time_step_rank": 2,
    }.items():
        w.add_uint32(f"{arch}.{key}", val)
    w.add_array(f"{arch}.attention.head_count_kv", [0, 0, 0, 1])  # "ME-*" / "MEM*"
    w.add_array(f"{arch}.feed_forward_length", [0, 12, 12, 0])
    w.add_tensor("token_embd.weight", np.zeros((10, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    spec = gguf_to_spec(load_gguf(tmp_path / "n.gguf"))
    assert spec.architecture == "NemotronHForCausalLM"
    assert spec.layer_types == (LAYER_MAMBA, LAYER_FFN, LAYER_FFN, LAYER_FULL)
    assert spec.recurrent_layers() == (0,)
    assert not spec.mlp_gated
