"""GGUF header reader: files written by gguf-py's GGUFWriter, compared with gguf-py's GGUFReader,
plus hand-built malformed headers (each case one check of ggml's gguf.cpp or our limits)."""

from __future__ import annotations

import importlib.util
import io
import struct
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from oomkit.errors import GgufFormatError, SourceNotFoundError
from oomkit.loaders.gguf import GgufArray, load_gguf, read_gguf
from oomkit.loaders.gguf_spec import gguf_to_spec
from oomkit.spec.model import LAYER_FULL, LAYER_LINEAR, LAYER_MAMBA, LAYER_SLIDING
from oomkit.units import align_up

FIXTURES = Path(__file__).parent / "fixtures"
GGUF_DIR = FIXTURES / "gguf"
ALL_FIXTURES = sorted(GGUF_DIR.glob("*.gguf"))


def _load_make_fixtures():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = mod
    spec.loader.exec_module(mod)
    return mod


mf = _load_make_fixtures()


def _assert_same_as_gguf_py(path: Path) -> None:
    """Our header equals gguf-py GGUFReader's on the same file (names, types, sizes, offsets)."""
    ours = load_gguf(path)
    ref = gguf.GGUFReader(path)
    assert ours.data_offset == ref.data_offset
    assert ours.alignment == ref.alignment
    assert [t.name for t in ours.tensors] == [t.name for t in ref.tensors]
    for a, b in zip(ours.tensors, ref.tensors, strict=True):
        assert a.ggml_type == b.tensor_type.name
        assert a.type_id == int(b.tensor_type)
        assert a.dims == tuple(int(d) for d in b.shape)
        assert a.n_bytes == int(b.n_bytes)
        assert a.n_elements == int(b.n_elements)
        assert ours.data_offset + a.offset == int(b.data_offset)
    ref_keys = [k for k in ref.fields if not k.startswith("GGUF.")]
    assert list(ours.metadata) == ref_keys
    for key in ref_keys:
        field = ref.fields[key]
        value = ours.metadata[key]
        if isinstance(value, GgufArray) and value.item_type == "ARRAY":
            # gguf-py flattens nested arrays in ReaderField.data; compare the first level
            assert field.types[:2] == [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.ARRAY]
        elif isinstance(value, GgufArray):
            assert value.length == len(field.data)
            if value.values is not None:
                assert list(value.values) == pytest.approx(field.contents())
        elif isinstance(value, float):
            assert value == pytest.approx(field.contents())
        else:
            assert value == field.contents()


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures_match_gguf_py_reader(path: Path) -> None:
    # Every committed fixture, written by GGUFWriter, reads the same as with GGUFReader.
    _assert_same_as_gguf_py(path)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_exact_bytes_fill_the_data_region(path: Path) -> None:
    # GGUFWriter pads every tensor to the alignment: the padded sizes fill the file exactly.
    g = load_gguf(path)
    padded = sum(align_up(t.n_bytes, g.alignment) for t in g.tensors)
    assert g.data_offset + padded == path.stat().st_size == g.file_bytes
    assert g.tensor_bytes <= g.data_bytes <= padded


def test_mixed_quant_types_and_metadata() -> None:
    # F32/F16/Q4_K/Q6_K/Q8_0 sizes come from the block table: Q4_K 256 weights in 144 bytes.
    g = load_gguf(GGUF_DIR / "tiny-llama-mixed.gguf")
    by = {t.name: t for t in g.tensors}
    assert by["blk.0.attn_q.weight"].ggml_type == "Q4_K"
    assert by["blk.0.attn_q.weight"].n_bytes == 256 * 256 // 256 * 144
    assert by["blk.0.attn_v.weight"].n_bytes == 128 * 256 // 256 * 210  # Q6_K
    assert by["output.weight"].n_bytes == 64 * 256 // 32 * 34  # Q8_0
    assert by["token_embd.weight"].n_bytes == 64 * 256 * 2  # F16
    assert by["token_embd.weight"].shape == (64, 256)
    assert g.version == 3
    assert g.byte_order == "<"
    assert g.architecture == "llama"
    assert g.metadata["llama.block_count"] == 1
    assert g.metadata["llama.test.flag"] is True
    tokens = g.metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, GgufArray)
    assert tokens.values is not None
    assert tokens.values[3] == "t3"
    nested = g.metadata["llama.test.nested"]
    assert isinstance(nested, GgufArray)
    assert nested.item_type == "ARRAY"
    assert nested.values == (
        GgufArray(item_type="INT32", length=2, values=(1, 2)),
        GgufArray(item_type="INT32", length=1, values=(3,)),
    )


def test_spec_from_tiny_llama() -> None:
    spec = gguf_to_spec(load_gguf(GGUF_DIR / "tiny-llama-mixed.gguf"))
    assert spec.source == "gguf"
    assert (spec.architecture, spec.model_type, spec.name) == (
        "LlamaForCausalLM",
        "llama",
        "tiny-llama-mixed",
    )
    assert (spec.num_hidden_layers, spec.hidden_size, spec.intermediate_size) == (1, 256, 256)
    assert (spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim) == (4, 2, 64)
    assert spec.vocab_size == 64
    assert spec.max_position_embeddings == 2048
    assert not spec.tie_word_embeddings
    assert spec.mlp_gated
    assert spec.norm_type == "rms"
    assert spec.tensors is not None
    q = next(t for t in spec.tensors if t.name == "blk.0.attn_q.weight")
    assert (q.role, q.layer, q.dtype, q.n_bytes) == ("attn_q.weight", 0, "Q4_K", 36864)
    glob = next(t for t in spec.tensors if t.name == "output_norm.weight")
    assert (glob.role, glob.layer) == ("output_norm.weight", None)


def test_spec_deepseek2_mla_moe() -> None:
    # Absorbed-MLA GGUF: key_length 72 (= kv_lora_rank 56 + rope 16) but the per-head dims
    # come from key_length_mla 48 (32 nope + 16 rope) and value_length_mla 32.
    spec = gguf_to_spec(load_gguf(GGUF_DIR / "tiny-deepseek2-moe.gguf"))
    assert spec.mla is not None
    assert spec.moe is not None
    assert (spec.mla.kv_lora_rank, spec.mla.q_lora_rank) == (56, 96)
    assert (spec.mla.qk_nope_head_dim, spec.mla.qk_rope_head_dim, spec.mla.v_head_dim) == (
        32,
        16,
        32,
    )
    assert (spec.head_dim, spec.v_head_dim) == (48, 32)
    assert (spec.moe.num_experts, spec.moe.num_experts_per_tok) == (8, 2)
    assert spec.moe.num_shared_experts == 1
    assert spec.moe.shared_expert_intermediate_size == 32
    assert spec.moe.dense_layers == (0,)
    assert spec.moe.expert_intermediate_size == 32
    assert spec.architecture == "DeepseekV3ForCausalLM"


def test_spec_gemma3_sliding_window_pattern() -> None:
    # llama.cpp set_swa_pattern(6) for gemma3: layers 5 and 11 are full attention, tied output.
    spec = gguf_to_spec(load_gguf(GGUF_DIR / "tiny-gemma3-swa.gguf"))
    full = [i for i, t in enumerate(spec.layer_types) if t == LAYER_FULL]
    assert full == [5, 11]
    assert spec.layer_types.count(LAYER_SLIDING) == 10
    assert spec.sliding_window == 1024
    assert spec.tie_word_embeddings
    assert spec.qk_norm
    assert spec.assumptions
    assert "every 6th layer" in spec.assumptions[0]


def test_spec_hybrid_mamba2() -> None:
    # granitehybrid: head_count_kv [0, 0, 0, 2] -> three Mamba2 layers and one attention layer;
    # recurrent state sizes are llama.cpp's n_embd_r/n_embd_s.
    spec = gguf_to_spec(load_gguf(GGUF_DIR / "tiny-granitehybrid.gguf"))
    assert spec.layer_types == (LAYER_MAMBA, LAYER_MAMBA, LAYER_MAMBA, LAYER_FULL)
    assert spec.kv_heads_per_layer == (0, 0, 0, 2)
    assert spec.recurrent is not None
    assert spec.recurrent.kind == "mamba2"
    assert spec.recurrent.conv_state_elements == 3 * (128 + 2 * 1 * 16)
    assert spec.recurrent.ssm_state_elements == 16 * 128
    assert spec.recurrent.n_heads == 8
    assert spec.recurrent.head_dim == 16


def test_sparse_llama_32_1b_full_size(tmp_path: Path) -> None:
    # A full-size Llama-3.2-1B header whose 0.8 GB data region is a hole: exact tensor bytes
    # from the block table must add up to the file's data size, and gguf-py agrees.
    path = tmp_path / "llama-3.2-1b.gguf"
    data_bytes = mf.make_gguf_sparse_llama32_1b(path)
    g = load_gguf(path)
    assert len(g.tensors) == 2 + 16 * 9 + 1
    assert sum(align_up(t.n_bytes, 32) for t in g.tensors) == data_bytes
    assert g.data_offset + data_bytes == path.stat().st_size
    tokens = g.metadata["tokenizer.ggml.tokens"]
    assert isinstance(tokens, GgufArray)
    assert tokens.length == 128256
    assert tokens.values is None
    _assert_same_as_gguf_py(path)
    spec = gguf_to_spec(g)
    assert spec.vocab_size == 128256
    assert spec.tie_word_embeddings
    assert (spec.num_hidden_layers, spec.num_key_value_heads, spec.head_dim) == (16, 8, 64)
    assert spec.tensors is not None
    # rope_freqs (32) is not a weight; the rest is the published 1,235,814,400 parameters
    assert sum(t.n_params for t in spec.tensors) == 1_235_814_400 + 32
    # rope_freqs marks llama3 rope scaling; the layout derived from the header's facts alone
    # names exactly the tensors in the file
    assert spec.rope_scaling_type == "llama3"
    from dataclasses import replace

    from oomkit.spec.tensors import derive_tensors

    derived = derive_tensors(replace(spec, tensors=None))
    assert sorted((t.name, t.shape) for t in derived) == sorted(
        (t.name, t.shape) for t in spec.tensors
    )
    q6 = [t for t in spec.tensors if t.dtype == "Q6_K"]
    assert sum(t.n_bytes or 0 for t in q6) == sum(t.n_params // 256 * 210 for t in q6)


def test_big_endian_file(tmp_path: Path) -> None:
    # gguf-py writes big-endian GGUFs (s390x); the version field looks byte-swapped.
    path = tmp_path / "be.gguf"
    w = gguf.GGUFWriter(str(path), "llama", endianess=gguf.GGUFEndian.BIG)
    w.add_block_count(2)
    w.add_embedding_length(32)
    w.add_head_count(4)
    w.add_array("llama.attention.head_count_kv", [2, 1])
    w.add_tensor("token_embd.weight", np.zeros((10, 32), np.float32))
    w.add_tensor("output_norm.weight", np.zeros((32,), np.float32))
    for il in range(2):  # what llama.cpp requires of a llama GGUF (loaders/gguf_required)
        for tail in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                     "ffn_gate", "ffn_down", "ffn_up"):  # fmt: skip
            w.add_tensor(f"blk.{il}.{tail}.weight", np.zeros((32,), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    g = load_gguf(path)
    assert g.byte_order == ">"
    assert g.version == 3
    assert g.tensors[0].dims == (32, 10)
    spec = gguf_to_spec(g)
    assert spec.kv_heads_per_layer == (2, 1)
    assert spec.num_key_value_heads == 2


def _write(path: Path, arch: str, kv: dict[str, object], *, tensors: bool = True) -> Path:
    w = gguf.GGUFWriter(str(path), arch)
    for key, value in kv.items():
        if isinstance(value, list):
            w.add_array(key, value)
        elif isinstance(value, str):
            w.add_string(key, value)
        else:
            w.add_uint32(key, int(value))  # type: ignore[call-overload]
    if tensors:
        w.add_tensor("token_embd.weight", np.zeros((10, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_spec_qwen3next_linear_attention_and_explicit_swa_array(tmp_path: Path) -> None:
    # qwen3next: every 4th layer is full attention, the rest gated delta-net; state sizes from
    # the ssm keys. A bool sliding_window_pattern array (gemma4-style) marks sliding layers.
    path = _write(
        tmp_path / "q.gguf",
        "qwen3next",
        {
            "qwen3next.block_count": 4,
            "qwen3next.embedding_length": 8,
            "qwen3next.attention.head_count": 2,
            "qwen3next.full_attention_interval": 4,
            "qwen3next.ssm.conv_kernel": 4,
            "qwen3next.ssm.inner_size": 64,
            "qwen3next.ssm.state_size": 16,
            "qwen3next.ssm.group_count": 2,
            "qwen3next.ssm.time_step_rank": 4,
            "qwen3next.expert_count": 4,
            "qwen3next.expert_used_count": 2,
            "qwen3next.expert_shared_feed_forward_length": 24,
        },
    )
    spec = gguf_to_spec(load_gguf(path))
    assert spec.layer_types == (LAYER_LINEAR,) * 3 + (LAYER_FULL,)
    assert spec.recurrent is not None
    assert spec.recurrent.kind == "gated_delta_net"
    assert (spec.recurrent.n_k_heads, spec.recurrent.k_head_dim) == (2, 16)
    assert spec.moe is not None
    assert spec.moe.num_shared_experts == 1
    assert spec.moe.shared_expert_intermediate_size == 24
    assert spec.head_dim == 4
    assert spec.intermediate_size == 0

    w = gguf.GGUFWriter(str(tmp_path / "s.gguf"), "gemma4")
    for key, val in {"block_count": 3, "embedding_length": 8, "attention.head_count": 2}.items():
        w.add_uint32(f"gemma4.{key}", val)
    w.add_uint32("gemma4.attention.sliding_window", 512)
    w.add_array("gemma4.attention.sliding_window_pattern", [True, False, True])
    w.add_tensor("token_embd.weight", np.zeros((10, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    spec = gguf_to_spec(load_gguf(tmp_path / "s.gguf"))
    assert spec.layer_types == (LAYER_SLIDING, LAYER_FULL, LAYER_SLIDING)
    assert spec.architecture == "gemma4"
    assert spec.assumptions == ()


def test_spec_mamba_and_scalar_swa_period(tmp_path: Path) -> None:
    # Pure Mamba: every layer is an SSM layer, mamba1 conv state (d_conv-1)*d_inner. A scalar
    # sliding_window_pattern 2 alternates; unknown archs with a window and no pattern: all SWA.
    path = _write(
        tmp_path / "m.gguf",
        "mamba",
        {
            "mamba.block_count": 2,
            "mamba.embedding_length": 8,
            "mamba.ssm.conv_kernel": 4,
            "mamba.ssm.inner_size": 16,
            "mamba.ssm.state_size": 16,
            "mamba.ssm.time_step_rank": 1,
        },
    )
    spec = gguf_to_spec(load_gguf(path))
    assert spec.layer_types == (LAYER_MAMBA, LAYER_MAMBA)
    assert spec.recurrent is not None
    assert spec.recurrent.kind == "mamba"
    assert spec.recurrent.conv_state_elements == 3 * 16
    assert spec.num_attention_heads == 0
    assert spec.head_dim == 0

    base = {"x.block_count": 3, "x.embedding_length": 8, "x.attention.head_count": 2}
    p2 = _write(
        tmp_path / "p.gguf",
        "x",
        {**base, "x.attention.sliding_window": 64, "x.attention.sliding_window_pattern": 2},
    )
    assert gguf_to_spec(load_gguf(p2)).layer_types == (LAYER_SLIDING, LAYER_FULL, LAYER_SLIDING)
    p3 = _write(tmp_path / "a.gguf", "x", {**base, "x.attention.sliding_window": 64})
    spec3 = gguf_to_spec(load_gguf(p3))
    assert spec3.layer_types == (LAYER_SLIDING,) * 3
    assert "all layers" in spec3.assumptions[0]
    # vocab from {arch}.vocab_size, then from the tokenizer, when there is no token_embd
    p4 = _write(tmp_path / "v.gguf", "x", {**base, "x.vocab_size": 77}, tensors=False)
    assert gguf_to_spec(load_gguf(p4)).vocab_size == 77
    p5 = _write(
        tmp_path / "t.gguf", "x", {**base, "tokenizer.ggml.tokens": ["a", "b"]}, tensors=False
    )
    assert gguf_to_spec(load_gguf(p5)).vocab_size == 2


@pytest.mark.parametrize(
    ("arch", "kv", "needle"),
    [
        ("x", {"x.embedding_length": 8}, "'x.block_count'"),
        ("x", {"x.block_count": "two", "x.embedding_length": 8}, "expected an integer"),
        (
            "x",
            {"x.block_count": 2, "x.embedding_length": 8, "x.attention.head_count_kv": [1, 2, 3]},
            "3 entries for 2 layers",
        ),
        (
            "x",
            {
                "x.block_count": 2,
                "x.embedding_length": 8,
                "x.attention.sliding_window": 8,
                "x.attention.sliding_window_pattern": [True],
            },
            "1 entries for 2 layers",
        ),
        (
            "deepseek2",
            {
                "deepseek2.block_count": 1,
                "deepseek2.embedding_length": 8,
                "deepseek2.attention.kv_lora_rank": 4,
                "deepseek2.rope.dimension_count": 2,
            },
            "MLA needs key_length",
        ),
    ],
)
def test_spec_errors_name_the_key(
    tmp_path: Path, arch: str, kv: dict[str, object], needle: str
) -> None:
    path = _write(tmp_path / "e.gguf", arch, kv)
    with pytest.raises(GgufFormatError, match=needle) as e:
        gguf_to_spec(load_gguf(path))
    assert str(path) in str(e.value)
    assert e.value.key is not None


def test_spec_needs_architecture_and_vocab(tmp_path: Path) -> None:
    path = tmp_path / "noarch.gguf"
    path.write_bytes(_gguf_bytes([], []))
    with pytest.raises(GgufFormatError, match=r"general\.architecture"):
        gguf_to_spec(load_gguf(path))
    p = _write(
        tmp_path / "nv.gguf", "x", {"x.block_count": 1, "x.embedding_length": 8}, tensors=False
    )
    with pytest.raises(GgufFormatError, match="vocab"):
        gguf_to_spec(load_gguf(p))


# --- hand-built malformed headers ----------------------------------------------------------


def _s(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv_u32(key: str, value: int) -> bytes:
    return _s(key) + struct.pack("<II", 4, value)


def _ti(name: str, dims: list[int], type_id: int, offset: int) -> bytes:
    return (
        _s(name)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<Q", d) for d in dims)
        + struct.pack("<IQ", type_id, offset)
    )


def _gguf_bytes(
    kvs: list[bytes],
    tis: list[bytes],
    *,
    version: int = 3,
    n_tensors: int | None = None,
    n_kv: int | None = None,
    data: int = 0,
) -> bytes:
    head = b"GGUF" + struct.pack(
        "<IQQ",
        version,
        len(tis) if n_tensors is None else n_tensors,
        len(kvs) if n_kv is None else n_kv,
    )
    body = head + b"".join(kvs) + b"".join(tis)
    return body + bytes(-len(body) % 32) + bytes(data)


@pytest.mark.parametrize(
    ("content", "needle", "offset"),
    [
        (b"GGML" + bytes(20), "not a GGUF file", 0),
        (_gguf_bytes([], [], version=1), "version 1", 4),
        (_gguf_bytes([], [], version=7), "unsupported GGUF version 7", 4),
        (_gguf_bytes([], [], n_tensors=2_000_000), "tensor count 2000000", 8),
        (_gguf_bytes([], [], n_kv=10**7), "metadata count 10000000", 16),
        # a key claiming a 1 GiB string is refused before allocating it
        (b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 30), "over the 67108864-byte limit", 24),
        (_gguf_bytes([_s("k") + struct.pack("<IIQ", 9, 4, 10**9)], []), "array length", 41),
        (_gguf_bytes([_s("k") + struct.pack("<I", 13)], []), "value type 13", 33),
        # arrays of arrays of ... nine levels deep: refused before recursing further
        (
            _gguf_bytes([_s("k") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 9], []),
            "nested deeper than 8",
            133,
        ),
        # a string inside a long (skipped) array is still length-checked before skipping
        (
            _gguf_bytes([_s("k") + struct.pack("<IIQQ", 9, 8, 5000, 1 << 30)], []),
            "over the 67108864-byte limit",
            49,
        ),
        (_gguf_bytes([_s("k") + struct.pack("<IIQ", 9, 42, 1)], []), "array item type 42", 37),
        (_gguf_bytes([_kv_u32("a", 1), _kv_u32("a", 2)], []), "duplicate metadata key 'a'", 41),
        (_gguf_bytes([_s(b"\xff") + struct.pack("<II", 4, 1)], []), "not valid UTF-8", 32),
        (_gguf_bytes([_kv_u32("general.alignment", 24)], []), "power of two", 24),
        (_gguf_bytes([], [_ti("t", [1, 1, 1, 1, 1], 0, 0)]), "5 dimensions", 24),
        (_gguf_bytes([], [_ti("t", [1 << 40, 1 << 40], 0, 0)]), "overflow int64", 24),
        (_gguf_bytes([], [_ti("t", [4], 99, 0)], data=16), "unknown ggml type 99", 45),
        (
            _gguf_bytes([], [_ti("t", [4], 0, 0), _ti("t", [4], 0, 32)], data=64),
            "duplicate tensor",
            78,
        ),
        (
            _gguf_bytes([], [_ti("t", [100], 12, 0)], data=1024),
            "not a multiple of the block size",
            45,
        ),
        (_gguf_bytes([], [_ti("t", [4], 0, 32)], data=64), "expected 0", 49),
        (_gguf_bytes([], [_ti("t", [64], 0, 0)], data=16), "the tensors end at byte", 80),
    ],
)
def test_malformed_headers(tmp_path: Path, content: bytes, needle: str, offset: int) -> None:
    # Each case is one refusal with the byte offset where the problem is.
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(GgufFormatError, match=needle) as e:
        load_gguf(path)
    assert e.value.offset == offset
    assert str(path) in str(e.value)
    assert f"byte offset {offset}" in str(e.value)


def test_truncated_everywhere() -> None:
    # Cutting a real file anywhere inside its header gives "truncated at offset N", never a
    # struct.error or a MemoryError.
    raw = (GGUF_DIR / "tiny-llama-mixed.gguf").read_bytes()
    header_end = load_gguf(GGUF_DIR / "tiny-llama-mixed.gguf").data_offset
    for cut in range(0, header_end, 7):
        with pytest.raises(GgufFormatError, match=r"truncated at offset \d+"):
            read_gguf(io.BytesIO(raw[:cut]), path="cut.gguf", file_bytes=cut)


def test_skipped_large_arrays(tmp_path: Path) -> None:
    # Arrays over 4096 items keep only type and length: strings, numbers and nested arrays.
    path = tmp_path / "big.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_array("a.strings", [f"s{i}" for i in range(5000)])
    w.add_array("a.floats", [0.5] * 5000)
    w.add_array("a.nested", [[1]] * 5000)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    g = load_gguf(path)
    for key, item in (("a.strings", "STRING"), ("a.floats", "FLOAT32"), ("a.nested", "ARRAY")):
        v = g.metadata[key]
        assert v == GgufArray(item_type=item, length=5000, values=None)
    assert len(g.tensors) == 0
    assert g.data_bytes == 0


class _ShrinkingFile(io.BytesIO):
    """A stream whose read returns fewer bytes than its size promised (file shrank)."""


class _FailingFile(io.BytesIO):
    def read(self, n: int | None = -1) -> bytes:
        raise OSError(5, "Input/output error")


def test_io_errors_are_wrapped() -> None:
    with pytest.raises(GgufFormatError, match="Input/output error"):
        read_gguf(_FailingFile(b""), path="x.gguf", file_bytes=100)
    with pytest.raises(GgufFormatError, match="truncated at offset 2"):
        read_gguf(_ShrinkingFile(b"GG"), path="x.gguf", file_bytes=100)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="no such file"):
        load_gguf(tmp_path / "nope.gguf")
    with pytest.raises(GgufFormatError, match="Opening GGUF file failed"):
        load_gguf(tmp_path)


def test_spec_mtp_layers_and_moe_flags(tmp_path: Path) -> None:
    # GLM-4.5-style: block_count 3 includes 1 multi-token-prediction layer; per-layer arrays
    # have 3 entries. Router score-correction bias and a shared-expert gate come from tensors.
    path = tmp_path / "glm.gguf"
    w = gguf.GGUFWriter(str(path), "glm4moe")
    for key, val in {
        "block_count": 3,
        "embedding_length": 8,
        "attention.head_count": 2,
        "nextn_predict_layers": 1,
        "expert_count": 4,
        "expert_used_count": 2,
        "rope.scaling.type": "yarn",
    }.items():
        if isinstance(val, str):
            w.add_string(f"glm4moe.{key}", val)
        else:
            w.add_uint32(f"glm4moe.{key}", val)
    w.add_array("glm4moe.attention.head_count_kv", [1, 2, 2])
    w.add_tensor("token_embd.weight", np.zeros((10, 8), np.float32))
    w.add_tensor("blk.0.exp_probs_b.bias", np.zeros((4,), np.float32))
    w.add_tensor("blk.0.ffn_gate_inp_shexp.weight", np.zeros((8,), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    spec = gguf_to_spec(load_gguf(path))
    assert (spec.num_hidden_layers, spec.num_nextn_predict_layers) == (2, 1)
    assert spec.kv_heads_per_layer == (1, 2)
    assert len(spec.layer_types) == 2
    assert spec.moe is not None
    assert spec.moe.score_correction_bias
    assert spec.moe.shared_expert_gate
    assert not spec.moe.router_bias
    assert spec.rope_scaling_type == "yarn"
    assert spec.final_norm is False  # no output_norm.weight in this header

    bad = _write(
        tmp_path / "bad.gguf",
        "x",
        {"x.block_count": 2, "x.embedding_length": 8, "x.nextn_predict_layers": 2},
    )
    with pytest.raises(GgufFormatError, match="2 MTP layers of 2 blocks"):
        gguf_to_spec(load_gguf(bad))


def test_block_count_zero_names_block_count(tmp_path: Path) -> None:
    """A GGUF with block_count 0 is reported against the key it has, not against
    nextn_predict_layers (absent from the file)."""
    kv: dict[str, object] = {
        "llama.block_count": 0,
        "llama.embedding_length": 8,
        "llama.attention.head_count": 2,
        "llama.vocab_size": 10,
    }
    path = _write(tmp_path / "noblocks.gguf", "llama", kv)
    with pytest.raises(GgufFormatError, match=r"'llama\.block_count'\): 0 blocks") as e:
        gguf_to_spec(load_gguf(path))
    assert e.value.key == "llama.block_count"
    assert "nextn_predict_layers" not in str(e.value)
