"""Storage math of HF / PyTorch weight formats (oomkit.quant.hf_formats).

Each case is computed by hand from the upstream tensor shapes named in the module docstring
(bitsandbytes quantize_4bit / Int8Params, AutoGPTQ QuantLinear, AutoAWQ WQLinear_GEMM,
DeepSeek-V3 weight_scale_inv, gpt-oss *_blocks/*_scales, ModelOpt NVFP4).
"""

from __future__ import annotations

import pytest

from oomkit.errors import InvalidSettingError, UnknownNameError
from oomkit.quant.hf_formats import (
    BNB_DYNAMIC_MAP_BYTES,
    HF_FORMATS,
    hf_format,
    hf_tensor_bytes,
    hf_weights_bytes,
    is_quantizable_linear,
)
from oomkit.spec.model import TensorInfo

Q = TensorInfo(name="blk.0.attn_q.weight", shape=(4096, 4096), role="attn_q", layer=0)
N = 4096 * 4096


def _t(name: str, shape: tuple[int, ...]) -> TensorInfo:
    return TensorInfo(name=name, shape=shape, role=name, layer=None)


def _llama_8b() -> list[TensorInfo]:
    """Llama-3.1-8B tensors (HF parameter count 8,030,261,248)."""
    h, inter, kv, vocab = 4096, 14336, 1024, 128256
    ts = [_t("token_embd.weight", (vocab, h)), _t("output.weight", (vocab, h))]
    ts += [_t("output_norm.weight", (h,)), _t("rope_freqs.weight", (64,))]
    for i in range(32):
        p = f"blk.{i}."
        ts += [
            _t(p + "attn_norm.weight", (h,)),
            _t(p + "attn_q.weight", (h, h)),
            _t(p + "attn_k.weight", (kv, h)),
            _t(p + "attn_v.weight", (kv, h)),
            _t(p + "attn_output.weight", (h, h)),
            _t(p + "ffn_norm.weight", (h,)),
            _t(p + "ffn_gate.weight", (inter, h)),
            _t(p + "ffn_up.weight", (inter, h)),
            _t(p + "ffn_down.weight", (h, inter)),
        ]
    return ts


def test_bf16_llama_8b_is_two_bytes_per_parameter() -> None:
    # rope_freqs is a GGUF-only tensor: no storage in an HF checkpoint
    assert hf_weights_bytes("bf16", _llama_8b()) == 2 * 8_030_261_248
    assert hf_weights_bytes("fp32", _llama_8b()) == 4 * 8_030_261_248


def test_nf4_blocks_of_64_without_double_quant() -> None:
    # packed n/2 + fp32 absmax per 64 + 16-entry fp32 code
    assert hf_tensor_bytes("nf4", Q, double_quant=False) == N // 2 + 4 * (N // 64) + 64


def test_nf4_double_quant() -> None:
    # uint8 absmax per 64 + fp32 absmax per 256 blocks + fp32 offset + code
    blocks = N // 64
    expected = N // 2 + blocks + 4 * (blocks // 256) + 4 + 64
    assert hf_tensor_bytes("nf4", Q, double_quant=True) == expected
    # QLoRA paper: 4 + 8/64 + 32/(64*256) = 4.127 bits per parameter
    assert hf_tensor_bytes("fp4", Q) * 8 / N == pytest.approx(4.127, abs=0.001)


def test_nf4_shared_dynamic_map_counted_once() -> None:
    ts = [Q, _t("blk.0.attn_k.weight", (1024, 4096))]
    per_tensor = sum(hf_tensor_bytes("nf4", t) for t in ts)
    assert hf_weights_bytes("nf4", ts) == per_tensor + BNB_DYNAMIC_MAP_BYTES
    assert hf_weights_bytes("nf4", ts, double_quant=False) == sum(
        hf_tensor_bytes("nf4", t, double_quant=False) for t in ts
    )


def test_int8_row_scales_and_lm_head_kept() -> None:
    # Int8Params: int8 CB + fp32 SCB per output row
    assert hf_tensor_bytes("int8", Q) == N + 4 * 4096
    # get_keys_to_not_convert keeps lm_head; embeddings and norms are not Linear
    out = _t("output.weight", (128256, 4096))
    assert hf_tensor_bytes("int8", out, dtype="fp16") == 128256 * 4096 * 2
    assert hf_tensor_bytes("int8", _t("blk.0.attn_norm.weight", (4096,))) == 8192
    # MoE router is an nn.Linear: quantized by bitsandbytes
    assert hf_tensor_bytes("int8", _t("blk.0.ffn_gate_inp.weight", (8, 4096))) == 8 * 4096 + 32


def test_gptq_4bit_group_128() -> None:
    qweight = (4096 * 4 // 32) * 4096 * 4
    qzeros = 32 * (4096 * 4 // 32) * 4
    scales = 32 * 4096 * 2
    g_idx = 4096 * 4
    assert hf_tensor_bytes("gptq", Q) == qweight + qzeros + scales + g_idx
    # group_size -1: one group per row
    assert hf_tensor_bytes("gptq", Q, group_size=-1) == qweight + 512 * 4 + 4096 * 2 + g_idx
    # 8-bit packs 4 values per int32
    assert hf_tensor_bytes("gptq-int8", Q) > hf_tensor_bytes("gptq", Q)


def test_awq_has_no_g_idx_and_keeps_fp16_elsewhere() -> None:
    assert hf_tensor_bytes("awq", Q) == 8_388_608 + 65_536 + 262_144
    emb = _t("token_embd.weight", (32000, 4096))
    assert hf_tensor_bytes("awq", emb, dtype="fp32") == 32000 * 4096 * 2  # checkpoints are fp16


def test_fp8_scale_granularities() -> None:
    assert hf_tensor_bytes("fp8", Q) == N + 4  # per tensor
    assert hf_tensor_bytes("fp8", Q, group_size=0) == N + 4 * 4096  # per channel
    assert hf_tensor_bytes("fp8", Q, group_size=128) == N + 4 * 32 * 32  # DeepSeek-V3 blocks
    # DeepSeek-V3 router and embeddings stay bf16
    gate = _t("blk.3.ffn_gate_inp.weight", (256, 7168))
    assert hf_tensor_bytes("fp8", gate, group_size=128) == 256 * 7168 * 2


def test_mxfp4_gpt_oss_experts() -> None:
    # gpt-oss-20b gate_up_proj: blocks [32, 5760, 90, 16] + scales [32, 5760, 90]
    exps = _t("blk.0.ffn_gate_up_exps.weight", (32, 5760, 2880))
    assert hf_tensor_bytes("mxfp4", exps) == 32 * 5760 * 90 * 16 + 32 * 5760 * 90
    # attention stays bf16
    assert hf_tensor_bytes("mxfp4", _t("blk.0.attn_q.weight", (4096, 2880))) == 4096 * 2880 * 2


def test_nvfp4() -> None:
    # packed 4-bit + fp8 scale per 16 + fp32 weight_scale_2 and input_scale
    assert hf_tensor_bytes("nvfp4", Q) == N // 2 + N // 16 + 8


def test_more_bits_more_bytes_over_a_model() -> None:
    ts = _llama_8b()
    # int8 > fp8 (per-tensor scale): LLM.int8 adds an fp32 scale per output row
    order = ["nf4", "gptq", "fp8", "int8", "bf16", "fp32"]
    sizes = [hf_weights_bytes(f, ts) for f in order]
    assert sizes == sorted(sizes)
    assert hf_weights_bytes("nf4", ts) < hf_weights_bytes("nf4", ts, double_quant=False)


@pytest.mark.parametrize(
    ("name", "linear"),
    [
        ("blk.0.attn_q.weight", True),
        ("blk.0.ffn_down_exps.weight", True),
        ("token_embd.weight", False),
        ("output.weight", False),
        ("blk.0.attn_norm.weight", False),
        ("blk.0.ssm_conv1d.weight", False),
    ],
)
def test_is_quantizable_linear(name: str, linear: bool) -> None:
    assert is_quantizable_linear(_t(name, (64, 64))) is linear


def test_names_and_errors() -> None:
    assert hf_format("bitsandbytes_4bit").name == "nf4"
    assert hf_format("GPTQ-Int4").name == "gptq"
    assert set(HF_FORMATS) >= {"fp32", "fp16", "bf16", "fp8", "int8", "nf4", "fp4", "awq"}
    with pytest.raises(UnknownNameError, match="Did you mean 'nf4'"):
        hf_format("nf5")
    with pytest.raises(UnknownNameError):
        hf_tensor_bytes("int8", Q, dtype="fp12")
    with pytest.raises(InvalidSettingError, match="group_size"):
        hf_tensor_bytes("gptq", Q, group_size=0)


def test_fbgemm_fp8_quantizes_the_ffn_of_inner_layers_only() -> None:
    """Meta's Llama 3.1 FP8 (fbgemm_fp8): FFN weights e4m3 + one fp32 scale per output row;
    self-attention and the first and last layers' FFN stay bf16 (Llama 3 paper, sec. 6.2)."""
    ts = _llama_8b()
    h, inter, kv, vocab = 4096, 14336, 1024, 128256
    ffn = 3 * inter * h
    ffn_fp8 = 2 * (inter * h + 4 * inter) + (h * inter + 4 * h)  # gate, up [inter, h]; down
    attn = 2 * h * h + 2 * kv * h
    norms = h + 32 * 2 * h  # rope_freqs is GGUF-only: not in the HF checkpoint
    expected = 2 * (2 * vocab * h + norms + 32 * attn + 2 * ffn) + 30 * ffn_fp8
    assert hf_weights_bytes("fbgemm_fp8", ts, n_layers=32) == expected
    # without the layer count no layer is kept back
    assert hf_weights_bytes("fbgemm_fp8", ts) == expected - 2 * (2 * ffn - ffn_fp8)
    assert hf_format("fbgemm-fp8").name == "fbgemm_fp8"
