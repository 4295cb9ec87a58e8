"""GGUF tensors as columns (issue 10): the columnar path gives exactly what the per-tensor one did.

* the framing-only scan of :mod:`oomkit.loaders.gguf_table` reads the same table as the
  tensor-by-tensor reader, and hands anything odd to it (same error, same byte offset);
* :class:`TensorTable` refuses what :class:`TensorInfo` refuses, with the same message;
* an estimate from a header's columns equals, byte for byte as JSON, the estimate from the same
  tensors as a plain tuple of :class:`TensorInfo` (the per-tensor path), on real GGUF files
  written with the ``gguf`` package, for many ``-ngl`` / split / mmap / MoE settings;
* the column-wise placement equals the per-tensor loop it replaced (kept below as the oracle).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from pathlib import Path

import gguf
import numpy as np
import pytest

from oomkit.api import estimate_model
from oomkit.errors import GgufFormatError, InvalidModelSpecError
from oomkit.estimate.llamacpp_params import (
    LlamaCppOptions,
    LlamaCppParams,
    backend_alloc_bytes,
    resolve_llamacpp_params,
)
from oomkit.estimate.llamacpp_placement import (
    GGUF_ALIGNMENT,
    REPACK_TYPES,
    PlacedTensor,
    backend_buffer_prefix,
    device_name,
    layer_devices,
    place_weights,
)
from oomkit.estimate.llamacpp_weights import WeightRows, weight_tensors
from oomkit.loaders.gguf import _checked_tensors, _read_header, _Reader, load_gguf, read_gguf
from oomkit.loaders.gguf_spec import gguf_to_spec
from oomkit.loaders.gguf_table import GgufTensorTable, scan_tensor_infos
from oomkit.serialize import dumps, estimate_to_dict
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec, MoESpec, TensorInfo
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensor_table import TensorTable
from oomkit.spec.tensors import active_params, count_params
from oomkit.units import GiB

FIXTURES = Path(__file__).parent / "fixtures" / "gguf"
GPU = DeviceTarget(name="RTX 4090", capacity_bytes=24 * GiB)


def _write_llama(path: Path, n_layers: int, dim: int = 8) -> Path:
    """The layout of benchmarks/bench_many_layers.py: F16/F32, tied embeddings."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(n_layers)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(2 * dim)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_context_length(4096)
    w.add_vocab_size(16)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tensor("token_embd.weight", np.zeros((16, dim), np.float16))
    w.add_tensor("output_norm.weight", np.zeros(dim, np.float32))
    for i in range(n_layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros(dim, np.float32))
        for name, rows in (("attn_q", dim), ("attn_k", dim // 2), ("attn_v", dim // 2)):
            w.add_tensor(f"blk.{i}.{name}.weight", np.zeros((rows, dim), np.float16))
        w.add_tensor(f"blk.{i}.attn_output.weight", np.zeros((dim, dim), np.float16))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.zeros(dim, np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", np.zeros((2 * dim, dim), np.float16))
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((2 * dim, dim), np.float16))
        w.add_tensor(f"blk.{i}.ffn_down.weight", np.zeros((dim, 2 * dim), np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _write_qwen2_q8(path: Path, n_layers: int, dim: int = 32) -> Path:
    """Q8_0 matrices (a repackable type), biases, an untied output."""
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_block_count(n_layers)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(2 * dim)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(8192)
    w.add_vocab_size(64)
    w.add_layer_norm_rms_eps(1e-5)
    q8 = gguf.GGMLQuantizationType.Q8_0

    def q(rows: int, cols: int) -> np.ndarray:
        return np.zeros((rows, cols // 32 * 34), np.uint8)  # 34 bytes per 32 weights

    w.add_tensor("token_embd.weight", q(64, dim), raw_dtype=q8)
    for i in range(n_layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.zeros(dim, np.float32))
        for name, rows in (("attn_q", dim), ("attn_k", dim // 2), ("attn_v", dim // 2)):
            w.add_tensor(p + name + ".weight", q(rows, dim), raw_dtype=q8)
            w.add_tensor(p + name + ".bias", np.zeros(rows, np.float32))
        w.add_tensor(p + "attn_output.weight", q(dim, dim), raw_dtype=q8)
        w.add_tensor(p + "ffn_norm.weight", np.zeros(dim, np.float32))
        w.add_tensor(p + "ffn_gate.weight", q(2 * dim, dim), raw_dtype=q8)
        w.add_tensor(p + "ffn_up.weight", q(2 * dim, dim), raw_dtype=q8)
        w.add_tensor(p + "ffn_down.weight", np.zeros((dim, 2 * dim), np.float16))
    w.add_tensor("output_norm.weight", np.zeros(dim, np.float32))
    w.add_tensor("output.weight", q(64, dim), raw_dtype=q8)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("cols")
    return [
        _write_llama(d / "llama-3.gguf", 3),
        _write_llama(d / "llama-40.gguf", 40),
        _write_qwen2_q8(d / "qwen2q8-3.gguf", 3),
        _write_qwen2_q8(d / "qwen2q8-40.gguf", 40),
        *sorted(FIXTURES.glob("*.gguf")),
    ]


# --- the scan -------------------------------------------------------------------------------


def _at_tensor_infos(path: Path) -> tuple[_Reader, int]:
    """A reader positioned at the tensor infos of ``path``, and the tensor count."""
    raw = path.read_bytes()
    r = _Reader(io.BytesIO(raw), str(path), len(raw))
    _, n_tensors, n_kv = _read_header(r)
    for _ in range(n_kv):
        key = r.string("key")
        r.value(r.u32(), key, keep=False)
    return r, n_tensors


def _checked(path: Path) -> GgufTensorTable:
    """The tensor infos read tensor by tensor (the reader the fast scan falls back to)."""
    r, n_tensors = _at_tensor_infos(path)
    return _checked_tensors(r, n_tensors, load_gguf(path).alignment)


def test_fast_scan_equals_the_tensor_by_tensor_reader(files: list[Path]) -> None:
    for path in files:
        fast = load_gguf(path).tensors
        assert fast == _checked(path), path.name
        assert [t.name for t in fast] == list(fast.names)
        assert fast[-1] == list(fast)[-1]


def test_scan_hands_odd_input_to_the_checked_reader(tmp_path: Path) -> None:
    # a name longer than the fast path takes, names with a newline and a NUL byte: read the
    # same as by the per-tensor reader; a truncated record: the per-tensor reader's error
    long_name = "blk.0." + "x" * 5000
    path = tmp_path / "odd.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for name in (long_name, "a\nb", "nul\x00name", "blk.1.ffn_up.weight"):
        w.add_tensor(name, np.zeros(4, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    g = load_gguf(path)
    assert g.tensors.names == (long_name, "a\nb", "nul\x00name", "blk.1.ffn_up.weight")
    assert g.tensors == _checked(path)
    r, n_tensors = _at_tensor_infos(path)
    assert scan_tensor_infos(r.f, r.pos, r.file_bytes, n_tensors, "<", 32) is None
    raw = path.read_bytes()
    cut = g.data_offset - 40
    with pytest.raises(GgufFormatError, match="truncated at offset"):
        read_gguf(io.BytesIO(raw[:cut]), path="cut.gguf", file_bytes=cut)


# --- TensorTable ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "n_bytes"),
    [
        ((1 << 41, 2), 4),  # a dimension over 2^40
        ((1 << 30, 1 << 30), 4),  # elements over 2^46
        ((4, -1), 4),  # a negative dimension
        ((4, 4.0), 4),  # not an int
        ((1,) * 9, 4),  # nine dimensions
        ((4, 4), -1),  # negative bytes
        ((4, 4), True),  # a bool for bytes, beside an equal int
        ((4, 4), 64.0),  # a float for bytes, beside an equal int
    ],
)
def test_table_refuses_what_tensorinfo_refuses(shape: tuple[int, ...], n_bytes: int) -> None:
    good = ("blk.0.ok.weight", (4, 4), "ok.weight", 0, "F32", 64)
    with pytest.raises(InvalidModelSpecError) as want:
        TensorInfo(
            name="blk.1.bad.weight", shape=shape, role="bad.weight", layer=1, n_bytes=n_bytes
        )
    bad = ("blk.1.bad.weight", shape, "bad.weight", 1, "F32", n_bytes)
    with pytest.raises(InvalidModelSpecError) as got:
        TensorTable(*(tuple(c) for c in zip(good, bad, strict=True)))  # type: ignore[arg-type]
    assert str(got.value) == str(want.value)


def test_table_is_a_sequence_of_tensorinfo(files: list[Path]) -> None:
    spec = gguf_to_spec(load_gguf(files[2]))
    table = spec.tensors
    assert isinstance(table, TensorTable)
    rows = tuple(table)
    assert rows == tuple(table[i] for i in range(len(table))) == table[:]
    assert table[-1] == rows[-1]
    assert TensorTable.of(rows) == table
    assert hash(TensorTable.of(rows)) == hash(table)
    assert table.n_params == tuple(t.n_params for t in rows)
    as_tuple = dataclasses.replace(spec, tensors=rows)
    assert count_params(spec) == count_params(as_tuple)
    assert active_params(spec) == active_params(as_tuple)


# --- the estimate: columns vs a tuple of TensorInfo --------------------------------------------

_SETTINGS: list[dict[str, object]] = [
    {},
    {"n_gpu_layers": 0},
    {"n_gpu_layers": 1},
    {"n_gpu_layers": 2},
    {"n_gpu_layers": -1},
    {"n_gpu_layers": 2, "mmap": False},
    {"n_gpu_layers": 2, "n_cpu_moe": 1},
    {"n_gpu_layers": 3, "ctx": 512, "parallel": 4},
]
_HW = [
    Hardware(devices=(GPU,)),
    Hardware(devices=(GPU, GPU)),
]


def test_estimate_json_same_from_columns_and_from_tensorinfo_rows(files: list[Path]) -> None:
    for path in files:
        spec = gguf_to_spec(load_gguf(path))
        assert isinstance(spec.tensors, TensorTable)
        rows = dataclasses.replace(spec, tensors=tuple(spec.tensors))
        for kw in _SETTINGS:
            for hw in _HW:
                for extra in ({}, {"split_mode": "row"}, {"tensor_split": (3.0, 1.0)}):
                    if extra and len(hw.devices) < 2:
                        continue
                    s = InferenceSettings(**{**kw, **extra})  # type: ignore[arg-type]
                    a = dumps(estimate_to_dict(estimate_model(spec, s, hw)))
                    b = dumps(estimate_to_dict(estimate_model(rows, s, hw)))
                    assert a == b, (path.name, kw, extra, len(hw.devices))


# --- the placement: columns vs the per-tensor loop ----------------------------------------------


def _is_expert(name: str) -> bool:
    return "_exps." in name or name.endswith("_exps")


def _reference_placement(
    tensors: Sequence[tuple[TensorInfo, str, int]],
    n_layer: int,
    params: LlamaCppParams,
    gpus: Sequence[DeviceTarget],
    n_cpu_moe: int,
    tied: bool,
) -> tuple[list[PlacedTensor], dict[str, int], dict[str, int]]:
    """The per-tensor placement loop of oomkit before issue 10 (layer split), as the oracle."""
    per_layer, _ = layer_devices(n_layer, params.n_gpu_layers, gpus, None)
    names = [backend_buffer_prefix(g, i) for i, g in enumerate(gpus)]
    out_gpu = per_layer[n_layer]
    use_mmap = params.mmap
    if use_mmap:
        cpu_buffer = "CPU_Mapped"
    elif gpus and not params.options.no_host:
        cpu_buffer = f"{names[0].rstrip('0123456789')}_Host"
    else:
        cpu_buffer = "CPU"
    dev_ids = [device_name(g, i) for i, g in enumerate(gpus)]
    placed: list[PlacedTensor] = []
    offset = 0
    ranges: list[tuple[int, int]] = []
    for t, ty, nb in tensors:
        ne0 = t.shape[-1] if t.shape else 1
        start = offset
        offset += -(-nb // GGUF_ALIGNMENT) * GGUF_ALIGNMENT
        gi: int | None
        if t.layer is not None and t.layer < n_layer:
            gi = per_layer[t.layer]
            if gi is not None and t.layer < n_cpu_moe and _is_expert(t.name):
                gi = None
        elif t.name.startswith(("output.", "output_norm.", "output_norm_b")):
            gi = out_gpu
        elif t.name.startswith(("token_embd", "position_embd", "token_types")):
            gi = None
        else:
            gi = per_layer[0]
        if gi is None:
            buf = cpu_buffer
            is_mm = len(t.shape) >= 2 and not t.name.startswith("token_embd")
            if params.options.repack and is_mm and ty.upper() in REPACK_TYPES:
                buf = "CPU_REPACK"
            elif use_mmap:
                ranges.append((start, start + nb))
            placed.append(PlacedTensor(t.name, ty, ne0, nb, t.layer, buf, "cpu"))
        else:
            placed.append(PlacedTensor(t.name, ty, ne0, nb, t.layer, names[gi], dev_ids[gi]))
        if tied and t.name == "token_embd.weight" and out_gpu is not None:
            placed.append(
                PlacedTensor(
                    "output.weight(tied)", ty, ne0, nb, None, names[out_gpu], dev_ids[out_gpu]
                )
            )
        elif tied and t.name == "token_embd.weight" and not use_mmap:
            placed.append(PlacedTensor("output.weight(tied)", ty, ne0, nb, None, cpu_buffer, "cpu"))
    buffers: dict[str, int] = {}
    for p in placed:
        if p.buffer != "CPU_Mapped":
            backend = "cpu" if p.device == "cpu" else "cuda"
            alloc = backend_alloc_bytes(p.type_name, p.ne0, p.n_bytes, backend)
            buffers[p.buffer] = buffers.get(p.buffer, 0) + alloc
    if ranges:
        buffers["CPU_Mapped"] = max(e for _, e in ranges) - min(s for s, _ in ranges)
    counts: dict[str, int] = {}
    for p in placed:
        counts[p.device] = counts.get(p.device, 0) + 1
    return placed, buffers, counts


@pytest.mark.parametrize("n_gpu_layers", [0, 1, 2, 3, 4, 999])
@pytest.mark.parametrize(("mmap", "repack"), [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("n_gpus", [0, 1, 2])
def test_placement_equals_the_per_tensor_loop(
    files: list[Path], n_gpu_layers: int, mmap: bool, repack: bool, n_gpus: int
) -> None:
    gpus = (GPU,) * n_gpus
    for path in files:
        spec = gguf_to_spec(load_gguf(path))
        n_layer = spec.num_hidden_layers
        params = resolve_llamacpp_params(
            InferenceSettings(n_gpu_layers=n_gpu_layers, mmap=mmap),
            n_layer=n_layer,
            has_gpu=bool(gpus),
            options=LlamaCppOptions(repack=repack),
        )
        rows, _, _ = weight_tensors(spec, None)
        assert isinstance(rows, WeightRows)
        tied = "output.weight" not in spec.tensors.names  # type: ignore[union-attr]
        for n_cpu_moe in (0, 2):
            want = _reference_placement(tuple(rows), n_layer, params, gpus, n_cpu_moe, tied)
            for table in (rows, tuple(rows)):
                got = place_weights(
                    table,
                    n_layer=n_layer,
                    params=params,
                    gpus=gpus,
                    n_cpu_moe=n_cpu_moe,
                    tied_embeddings=tied,
                )
                assert list(got.tensors) == want[0], path.name
                assert list(got.buffers.items()) == list(want[1].items()), path.name
                assert got.tensor_counts == want[2]


def test_spec_with_table_is_hashable_and_equal_by_columns(files: list[Path]) -> None:
    a = gguf_to_spec(load_gguf(files[1]))
    b = gguf_to_spec(load_gguf(files[1]))
    assert a.tensors is not b.tensors
    assert a == b
    assert hash(a) == hash(b)
    assert isinstance(a, ModelSpec)


# --- the steady-state stack: the pattern search compares in C what the while loop compared ----


def _reference_periodic(spec: ModelSpec, layer_ids: Sequence[int]) -> tuple[int, int, int] | None:
    from oomkit.estimate.llamacpp_stack import _MAX_PERIOD, _TRIAL_REPEATS, layer_signature

    body = list(layer_ids[:-1])
    n = len(body)
    sigs = [layer_signature(spec, il) for il in body]
    best: tuple[int, tuple[int, int, int]] | None = None
    for p in range(1, min(_MAX_PERIOD, n) + 1):
        start = n - p
        while start > 0 and sigs[start - 1] == sigs[start - 1 + p]:
            start -= 1
        repeats = (n - start) // p
        if repeats <= _TRIAL_REPEATS[0]:
            continue
        kept = n - (repeats - _TRIAL_REPEATS[0]) * p
        if best is None or kept < best[0]:
            best = (kept, (start, p, repeats))
    return None if best is None else best[1]


@pytest.mark.parametrize("seed", range(40))
def test_pattern_search_equals_the_while_loop(seed: int) -> None:
    import random

    from oomkit.estimate.llamacpp_stack import _periodic_layers, _signatures, layer_signature

    rng = random.Random(seed)
    n = rng.randint(2, 80)
    period = rng.randint(1, 7)
    pattern = [rng.choice((1, 2, 4)) for _ in range(period)]
    heads = [pattern[i % period] for i in range(n)]
    for _ in range(rng.randint(0, 3)):  # a few irregular layers
        heads[rng.randrange(n)] = 8
    moe = None
    if seed % 3 == 0:  # MoE with a few leading dense layers
        moe = MoESpec(
            num_experts=4,
            num_experts_per_tok=2,
            expert_intermediate_size=32,
            dense_layers=tuple(range(rng.randint(0, 3))),
        )
    spec = ModelSpec(
        name="p",
        architecture="LlamaForCausalLM",
        model_type="llama",
        num_hidden_layers=n,
        hidden_size=64,
        num_attention_heads=8,
        num_key_value_heads=max(heads),
        head_dim=8,
        v_head_dim=8,
        intermediate_size=128,
        vocab_size=100,
        kv_heads_per_layer=tuple(heads) if len(set(heads)) > 1 else None,
        moe=moe,
    )
    ids = list(range(n))
    assert _signatures(spec, ids) == [layer_signature(spec, il) for il in ids]
    got = _periodic_layers(spec, ids)
    want = _reference_periodic(spec, ids)
    assert (None if got is None else (got.start, got.period, got.repeats)) == want
