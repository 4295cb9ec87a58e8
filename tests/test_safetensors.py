"""Safetensors header reader: real files from tests/fixtures/make_fixtures.py, malformed headers."""

from __future__ import annotations

import importlib.util
import json
import struct
import sys
from pathlib import Path

import pytest
from safetensors import safe_open

from oomkit.errors import SafetensorsFormatError, SourceNotFoundError
from oomkit.loaders.safetensors import (
    MAX_HEADER_BYTES,
    dtype_bits,
    load_safetensors_header,
    load_safetensors_tensors,
    parse_safetensors_header,
    parse_safetensors_index,
)
from oomkit.loaders.tensor_roles import classify_tensor_name, is_quant_sidecar, logical_shape

FIXTURES = Path(__file__).parent / "fixtures"
TINY = FIXTURES / "safetensors" / "tiny-llama-sharded"
QUANT = FIXTURES / "safetensors" / "quantized"


def _load_make_fixtures():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = mod
    spec.loader.exec_module(mod)
    return mod


mf = _load_make_fixtures()


def _raw_file(path: Path, header: bytes, data: bytes = b"") -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def _json_file(path: Path, header: dict[str, object], data_bytes: int = 0) -> Path:
    return _raw_file(path, json.dumps(header).encode(), bytes(data_bytes))


# --- real files -------------------------------------------------------------------------------


def test_sharded_index_matches_safetensors_library_and_config() -> None:
    # The tiny Llama written by safetensors.numpy.save_file: every name, dtype and shape our
    # reader reports must equal what the Rust library reports, and the bytes must add up to
    # the index's total_size.
    tensors = load_safetensors_tensors(TINY / "model.safetensors.index.json")
    index = json.loads((TINY / "model.safetensors.index.json").read_text())
    assert {t.name for t in tensors} == set(index["weight_map"])
    for t in tensors:
        with safe_open(str(TINY / index["weight_map"][t.name]), framework="numpy") as f:
            sl = f.get_slice(t.name)
            assert tuple(sl.get_shape()) == t.shape
            assert sl.get_dtype() == t.dtype
    assert sum(t.n_bytes or 0 for t in tensors) == index["metadata"]["total_size"]
    cfg = mf.TINY_LLAMA_CONFIG
    assert sum(t.n_params for t in tensors) == sum(
        __import__("math").prod(s) for s in mf.tiny_llama_shapes(cfg).values()
    )


def test_roles_and_layers_of_llama_names() -> None:
    # Roles are GGUF names without blk.N., so the same per-role rules serve both formats.
    by_name = {t.name: t for t in load_safetensors_tensors(TINY / "model.safetensors.index.json")}
    assert by_name["model.embed_tokens.weight"].role == "token_embd.weight"
    assert by_name["lm_head.weight"].role == "output.weight"
    assert by_name["model.norm.weight"].role == "output_norm.weight"
    assert by_name["model.layers.1.self_attn.k_proj.weight"].role == "attn_k.weight"
    assert by_name["model.layers.1.self_attn.k_proj.weight"].layer == 1
    assert by_name["model.layers.0.post_attention_layernorm.weight"].role == "ffn_norm.weight"
    assert by_name["model.layers.0.mlp.down_proj.weight"].role == "ffn_down.weight"


def test_single_file_header_fields() -> None:
    # Offsets, sizes and __metadata__ of one shard; file_bytes equals the real file size.
    path = TINY / "model-00001-of-00002.safetensors"
    h = load_safetensors_header(path)
    assert h.metadata == {"format": "pt"}
    assert h.file_bytes == path.stat().st_size
    assert h.data_offset == 8 + h.header_bytes
    assert h.data_bytes == sum(t.n_bytes for t in h.tensors)
    assert [t.begin for t in h.tensors] == sorted(t.begin for t in h.tensors)
    t = next(t for t in h.tensors if t.name == "model.embed_tokens.weight")
    assert (t.n_elements, t.n_bytes) == (128 * 32, 128 * 32 * 2)


def test_single_file_tensors_without_index() -> None:
    # A .safetensors path (not an index) gives that file's tensors.
    tensors = load_safetensors_tensors(TINY / "model-00002-of-00002.safetensors")
    assert tensors
    assert all(t.dtype == "F16" for t in tensors)


@pytest.mark.parametrize(
    ("fixture", "weight_name", "logical", "sidecars"),
    [
        # GPTQ qweight [in/8, out] I32 -> Linear weight [out=32, in=64]
        (
            "gptq-4bit-g32.safetensors",
            "model.layers.0.self_attn.q_proj.qweight",
            (32, 64),
            {"attn_q.qzeros", "attn_q.scales", "attn_q.g_idx"},
        ),
        # AWQ qweight [in, out/8] I32 -> [32, 64]; told apart from GPTQ by scales' columns
        (
            "awq-4bit-g32.safetensors",
            "model.layers.0.self_attn.q_proj.qweight",
            (32, 64),
            {"attn_q.qzeros", "attn_q.scales"},
        ),
        # bnb nf4: 1024 bytes hold 2048 weights; absmax/quant_map/quant_state are state
        (
            "bnb-nf4.safetensors",
            "model.layers.0.self_attn.q_proj.weight",
            (2048,),
            {"attn_q.absmax", "attn_q.quant_map", "attn_q.quant_state"},
        ),
        # fp8: the weight is unpacked (1 byte each), weight_scale_inv is a sidecar
        (
            "fp8-e4m3.safetensors",
            "model.layers.0.self_attn.q_proj.weight",
            (32, 64),
            {"attn_q.weight_scale_inv"},
        ),
        # mxfp4: blocks [E, rows, in/32, 16] bytes -> [E, rows, in] weights
        (
            "mxfp4-experts.safetensors",
            "model.layers.0.mlp.experts.gate_up_proj_blocks",
            (4, 128, 64),
            {"ffn_gate_up_exps.scales"},
        ),
    ],
)
def test_quantized_checkpoints_logical_params_and_exact_bytes(
    fixture: str, weight_name: str, logical: tuple[int, ...], sidecars: set[str]
) -> None:
    path = QUANT / fixture
    tensors = load_safetensors_tensors(path)
    header = load_safetensors_header(path)
    # stored bytes are exact: they add up to the data region of the real file
    assert sum(t.n_bytes or 0 for t in tensors) == header.data_bytes
    assert header.file_bytes == path.stat().st_size
    weight = next(t for t in tensors if t.name == weight_name)
    assert weight.shape == logical
    assert not is_quant_sidecar(weight.role)
    assert {t.role for t in tensors if is_quant_sidecar(t.role)} == sidecars
    # names, dtypes and stored shapes agree with the safetensors library
    stored = {t.name: t for t in header.tensors}
    with safe_open(str(path), framework="numpy") as f:
        assert set(f.keys()) == set(stored)
        for name in f.keys():  # noqa: SIM118 (safe_open is not a Mapping)
            assert tuple(f.get_slice(name).get_shape()) == stored[name].shape


def test_gptq_bits_from_explicit_argument_and_from_qzeros() -> None:
    # 8-bit GPTQ: qweight [in/4, out]; bits come from quantization_config or from qzeros/scales.
    shapes = {"a.qweight": (16, 32), "a.qzeros": (2, 8), "a.scales": (2, 32)}
    assert logical_shape("a.qweight", (16, 32), "I32", shapes) == (32, 64)
    assert logical_shape("a.qweight", (16, 32), "I32", {}, bits=8) == (32, 64)
    # 3-bit GPTQ packs 32 weights into 3 int32 rows
    assert logical_shape("a.qweight", (6, 32), "I32", {}, bits=3) == (32, 64)
    # no sibling and no bits: 4-bit assumed
    assert logical_shape("a.qweight", (8, 32), "I32", {}) == (32, 64)
    # qzeros that imply an impossible bit width are ignored
    assert logical_shape(
        "a.qweight", (8, 24), "I32", {"a.qzeros": (2, 1), "a.scales": (2, 24)}
    ) == (
        24,
        64,
    )
    assert logical_shape(
        "a.qweight", (8, 32), "I32", {"a.qzeros": (2, 5), "a.scales": (2, 32)}
    ) == (
        32,
        64,
    )


def test_compressed_tensors_packed_weights() -> None:
    # compressed-tensors pack-quantized int4 (I32, 8 per int) and nvfp4 (U8, 2 per byte)
    assert logical_shape("m.weight_packed", (32, 8), "I32", {}) == (32, 64)
    assert logical_shape("m.weight_packed", (32, 32), "U8", {}) == (32, 64)
    assert logical_shape("m.weight_packed", (32, 32), "F16", {}) == (32, 32)
    assert classify_tensor_name("model.layers.2.mlp.down_proj.weight_packed") == (
        "ffn_down.weight",
        2,
    )


@pytest.mark.parametrize(
    ("name", "role", "layer"),
    [
        ("model.layers.5.mlp.experts.3.gate_proj.weight", "ffn_gate_exps.weight", 5),
        ("model.layers.5.block_sparse_moe.experts.0.w2.weight", "ffn_down_exps.weight", 5),
        ("model.layers.5.block_sparse_moe.gate.weight", "ffn_gate_inp.weight", 5),
        ("model.layers.1.mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight", 1),
        ("model.layers.1.mlp.gate.e_score_correction_bias", "exp_probs_b.bias", 1),
        ("model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", 0),
        ("model.layers.0.self_attn.q_proj.bias", "attn_q.bias", 0),
        ("model.layers.0.mlp.experts.down_proj_bias", "ffn_down_exps.bias", 0),
        ("model.layers.0.mlp.experts.down_proj", "ffn_down_exps.weight", 0),
        ("model.language_model.layers.4.self_attn.o_proj.weight", "attn_output.weight", 4),
        ("transformer.h.2.attn.c_attn.weight", "attn_qkv.weight", 2),
        ("backbone.layers.0.mixer.A_log", "ssm_a", 0),
        ("backbone.layers.0.mixer.D", "ssm_d", 0),
        ("model.layers.0.self_attn.sinks", "attn_sinks.weight", 0),
        ("backbone.layers.0.mixer.in_proj.weight", "ssm_in.weight", 0),
        ("model.layers.3.mlp.unknown_thing.weight", "mlp.unknown_thing.weight", 3),
        ("model.vision_tower.blocks.0.attn.qkv.weight", "vision", None),
        ("visual.blocks.0.mlp.fc1.weight", "vision", None),
        ("transformer.wte.weight", "token_embd.weight", None),
        ("backbone.norm_f.weight", "output_norm.weight", None),
        ("some_global_tensor", "some_global_tensor", None),
        ("rotary_emb.inv_freq", "rotary_emb.inv_freq", None),
    ],
)
def test_classify_tensor_name(name: str, role: str, layer: int | None) -> None:
    # Why: each row is a naming family from a real architecture (Qwen-MoE, Mixtral, DeepSeek,
    # gpt-oss, Gemma-3 multimodal, GPT-2, Mamba, Qwen-VL) or the unknown-name fallback.
    assert classify_tensor_name(name) == (role, layer)


def test_sparse_llama_32_1b_bf16_exact_param_count(tmp_path: Path) -> None:
    # Llama-3.2-1B BF16 as one sparse file (2.47 GB hole): the header alone gives the published
    # parameter count 1,235,814,400 (tied embeddings, no lm_head) and exact bytes.
    shapes = {}
    for name, shape, _ in mf.llama32_1b_tensors():
        if name == "rope_freqs.weight":
            continue
        shapes[name] = ("BF16", shape)
    path = tmp_path / "model.safetensors"
    size = mf.write_safetensors(path, shapes, sparse=True)
    tensors = load_safetensors_tensors(path)
    assert sum(t.n_params for t in tensors) == 1_235_814_400
    assert sum(t.n_bytes or 0 for t in tensors) == 2 * 1_235_814_400
    assert load_safetensors_header(path).file_bytes == size


def test_dtype_aliases_and_sub_byte_types(tmp_path: Path) -> None:
    # E8M0 is written for mxfp4 scales by some tools; F4 packs two per byte.
    path = _json_file(
        tmp_path / "a.safetensors",
        {
            "s": {"dtype": "E8M0", "shape": [4], "data_offsets": [0, 4]},
            "w": {"dtype": "F4", "shape": [2, 4], "data_offsets": [4, 8]},
            "x": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [8, 11]},
        },
        11,
    )
    h = load_safetensors_header(path)
    assert [t.n_bytes for t in h.tensors] == [4, 4, 3]
    assert dtype_bits("E8M0") == 8
    assert dtype_bits("F4") == 4


def test_empty_header_is_valid(tmp_path: Path) -> None:
    # safetensors allows a file with no tensors; data size is 0.
    h = load_safetensors_header(_raw_file(tmp_path / "e.safetensors", b"{}"))
    assert (h.tensors, h.data_bytes) == ((), 0)


# --- malformed input: one clear error naming file, offset or tensor ---------------------------


def test_header_length_over_limit_is_refused_before_reading(tmp_path: Path) -> None:
    # Only 8 bytes exist: the claimed 2**40-byte header is refused without trying to read it.
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 40))
    with pytest.raises(SafetensorsFormatError) as e:
        load_safetensors_header(path)
    assert e.value.offset == 0
    assert str(path) in str(e.value)
    assert str(1 << 40) in str(e.value)
    assert str(MAX_HEADER_BYTES) in str(e.value)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\x01\x02", "8-byte header length is missing"),  # shorter than the length field
        (struct.pack("<Q", 100) + b"{}", "only 2 follow"),  # header cut short
        (struct.pack("<Q", 2) + b"[]", "does not start with '{'"),  # not an object
        (struct.pack("<Q", 3) + b"{x}", "not valid UTF-8 JSON"),  # broken JSON
        (struct.pack("<Q", 3) + b"{\xff}", "not valid UTF-8 JSON"),  # broken UTF-8
    ],
)
def test_broken_prefix(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(SafetensorsFormatError, match=needle):
        load_safetensors_header(path)


@pytest.mark.parametrize(
    ("header", "needle"),
    [
        ({"__metadata__": {"a": 1}}, "__metadata__ must map strings"),
        ({"t": [1]}, "expected an object"),
        ({"t": {"dtype": "BF61", "shape": [1], "data_offsets": [0, 2]}}, "did you mean"),
        ({"t": {"dtype": "QQQ", "shape": [1], "data_offsets": [0, 2]}}, "unknown dtype 'QQQ'"),
        ({"t": {"dtype": "F16", "shape": [-1], "data_offsets": [0, 2]}}, "non-negative"),
        ({"t": {"dtype": "F16", "shape": [True], "data_offsets": [0, 2]}}, "non-negative"),
        ({"t": {"dtype": "F16", "shape": "1", "data_offsets": [0, 2]}}, "non-negative"),
        ({"t": {"dtype": "F16", "shape": [1], "data_offsets": [2]}}, "begin <= end"),
        ({"t": {"dtype": "F16", "shape": [1], "data_offsets": [2, 0]}}, "begin <= end"),
        (
            {"t": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}},
            "not a whole number of bytes",
        ),
        ({"t": {"dtype": "F16", "shape": [2], "data_offsets": [0, 2]}}, "needs 4"),
        (
            {
                "a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]},
            },
            "overlaps",
        ),
        ({"t": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}, "gap"),
    ],
)
def test_invalid_header_entries(tmp_path: Path, header: dict[str, object], needle: str) -> None:
    # Each case is one rule of safetensors' Metadata::validate (or our stricter JSON checks).
    path = _json_file(tmp_path / "bad.safetensors", header, 8)
    with pytest.raises(SafetensorsFormatError, match=needle) as e:
        load_safetensors_header(path)
    assert str(path) in str(e.value)
    assert e.value.key is not None


def test_file_size_must_match_header(tmp_path: Path) -> None:
    # Truncated data (an incomplete download) and trailing bytes are both rejected.
    header = {"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    short = _json_file(tmp_path / "short.safetensors", header, 10)
    with pytest.raises(SafetensorsFormatError, match="truncated"):
        load_safetensors_header(short)
    long = _json_file(tmp_path / "long.safetensors", header, 20)
    with pytest.raises(SafetensorsFormatError, match="longer"):
        load_safetensors_header(long)
    # the pure parser skips the check when the size is unknown (Hub range reads give it)
    raw = json.dumps(header).encode()
    assert parse_safetensors_header(raw, path="x").data_bytes == 16


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="no such file"):
        load_safetensors_header(tmp_path / "nope.safetensors")
    with pytest.raises(SafetensorsFormatError, match="cannot be read"):
        load_safetensors_header(tmp_path)


# --- sharded index ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (b"{not json", "(JSON)"),
        (b"[1]", "weight_map"),
        (b'{"weight_map": {}}', "weight_map"),
        (b'{"weight_map": {"a": 1}}', "weight_map"),
        (b'{"weight_map": {"a": "../x.safetensors"}}', "not a plain file name"),
    ],
)
def test_bad_index(text: bytes, needle: str) -> None:
    with pytest.raises(SafetensorsFormatError, match=needle):
        parse_safetensors_index(text, path="model.safetensors.index.json")


def test_index_and_shard_disagree(tmp_path: Path) -> None:
    # The index names a tensor the shard lacks: the checkpoint is mixed from two versions.
    _json_file(
        tmp_path / "s1.safetensors", {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, 1
    )
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}}))
    with pytest.raises(SafetensorsFormatError, match="lacks them") as e:
        load_safetensors_tensors(index)
    assert e.value.key == "b"


def test_index_missing_files(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError):
        load_safetensors_tensors(tmp_path / "model.safetensors.index.json")
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "gone.safetensors"}}))
    with pytest.raises(SourceNotFoundError, match=r"gone\.safetensors"):
        load_safetensors_tensors(index)


def test_sidecar_suffixes_match_count_params_rule() -> None:
    # spec.tensors (which may not import loaders) keeps its own copy of the sidecar list;
    # count_params must skip exactly the tensors the loader marks as sidecars.
    from oomkit.loaders.tensor_roles import QUANT_SIDECAR_SUFFIXES
    from oomkit.spec.tensors import NON_PARAMETER_SUFFIXES

    assert frozenset(NON_PARAMETER_SUFFIXES) == QUANT_SIDECAR_SUFFIXES


def test_post_attention_layernorm_depends_on_the_block_style() -> None:
    # Llama: post_attention_layernorm is the pre-MLP norm. Gemma-2/3 and OLMo-2 (which also
    # have post_feedforward_layernorm) and gpt-oss (attention sinks): a norm after attention.
    from oomkit.loaders.tensor_roles import classify_tensor_names

    llama = classify_tensor_names(["model.layers.0.post_attention_layernorm.weight"])
    assert llama["model.layers.0.post_attention_layernorm.weight"][0] == "ffn_norm.weight"
    gemma = classify_tensor_names(
        [
            "model.layers.0.post_attention_layernorm.weight",
            "model.layers.0.pre_feedforward_layernorm.weight",
            "model.layers.0.post_feedforward_layernorm.weight",
        ]
    )
    assert (
        gemma["model.layers.0.post_attention_layernorm.weight"][0] == "post_attention_norm.weight"
    )
    assert gemma["model.layers.0.pre_feedforward_layernorm.weight"][0] == "ffn_norm.weight"
    assert gemma["model.layers.0.post_feedforward_layernorm.weight"][0] == "post_ffw_norm.weight"
    oss = classify_tensor_names(
        ["model.layers.1.self_attn.sinks", "model.layers.1.post_attention_layernorm.weight"]
    )
    assert oss["model.layers.1.post_attention_layernorm.weight"] == (
        "post_attention_norm.weight",
        1,
    )


def test_dtype_totals_of_a_gptq_checkpoint() -> None:
    # GPTQ stores int32 qweight (the parameters), int32 qzeros/g_idx and fp16 scales (state):
    # bytes are exact per dtype; only qweight's unpacked weights count as parameters.
    from oomkit.loaders.safetensors import DtypeTotal, dtype_totals

    totals = dtype_totals(load_safetensors_tensors(QUANT / "gptq-4bit-g32.safetensors"))
    assert totals == (
        DtypeTotal(
            dtype="I32", n_tensors=3, n_bytes=8 * 32 * 4 + 2 * 4 * 4 + 64 * 4, n_params=2048
        ),
        DtypeTotal(dtype="F16", n_tensors=1, n_bytes=2 * 32 * 2, n_params=0),
    )
