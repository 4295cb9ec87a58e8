"""Issue 10 items 1 and 3: absurd or hostile model files give one-line errors, fast.

Real files: config.json variants of a fixture, GGUF headers written with the ``gguf`` package,
safetensors headers written by hand as the format specifies.
"""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from oomkit.api import estimate_model, load_model
from oomkit.cli import main
from oomkit.errors import (
    ConfigFormatError,
    GgufFormatError,
    InvalidModelSpecError,
    OomkitError,
    SafetensorsFormatError,
    SourceNotFoundError,
)
from oomkit.spec.model import ModelSpec

FIX = Path(__file__).parent / "fixtures"
LLAMA = json.loads((FIX / "configs" / "llama-3.1-8b.json").read_text())
MIXTRAL = json.loads((FIX / "configs" / "mixtral-8x7b-v0.1.json").read_text())


def _cfg(
    tmp_path: Path, base: dict[str, Any], name: str = "m", raw: str | None = None, **kw: Any
) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(raw if raw is not None else json.dumps({**base, **kw}))
    return d / "config.json"


def _cli_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["estimate", *args])
    _, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code in (1, 2), err
    assert lines, err
    assert lines[0].startswith("Error: "), err
    assert "internal error" not in err, err
    assert "Traceback" not in err
    return lines[0]


_FP8_BAD_BLOCK = {"quant_method": "fp8", "weight_block_size": [None, 1]}
_DEEP_VALUE = json.dumps(LLAMA)[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}"

CONFIG_CASES: list[tuple[str, dict[str, Any], str | None, str]] = [
    ("inf", {}, json.dumps(LLAMA)[:-1] + ', "hidden_size": Infinity}', "hidden_size"),
    ("1e400", {}, json.dumps(LLAMA)[:-1] + ', "vocab_size": 1e400}', "vocab_size"),
    ("1e308", {"hidden_size": 1e308}, None, "hidden_size"),
    ("nan", {}, json.dumps(LLAMA)[:-1] + ', "num_attention_heads": NaN}', "num_attention_heads"),
    ("2^63 layers", {"num_hidden_layers": 2**63}, None, "num_hidden_layers"),
    ("10^7 layers", {"num_hidden_layers": 10**7}, None, "num_hidden_layers"),
    ("0 layers", {"num_hidden_layers": 0}, None, "num_hidden_layers"),
    ("0 heads", {"num_attention_heads": 0}, None, "num_attention_heads"),
    ("kv > heads", {"num_key_value_heads": 64}, None, "num_key_value_heads"),
    ("negative dim", {"intermediate_size": -1}, None, "intermediate_size"),
    ("string dim", {"hidden_size": "4096"}, None, "hidden_size"),
    ("block [null,1]", {"quantization_config": _FP8_BAD_BLOCK}, None, "weight_block_size"),
    ("deep json", {}, "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("deep json value", {}, _DEEP_VALUE, "nested too deeply"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("label", "kw", "raw", "needle"), CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES]
)
def test_bad_config_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    label: str,
    kw: dict[str, Any],
    raw: str | None,
    needle: str,
) -> None:
    path = _cfg(tmp_path, LLAMA, raw=raw, **kw)
    t0 = time.process_time()
    line = _cli_error(capsys, str(path), "--gpu", "rtx-4090")
    assert time.process_time() - t0 < 5
    assert needle in line, line
    with pytest.raises((ConfigFormatError, InvalidModelSpecError)):
        load_model(path)


@pytest.mark.parametrize("k", [0, 10**7, -1])
def test_num_experts_per_tok(tmp_path: Path, capsys: pytest.CaptureFixture[str], k: int) -> None:
    path = _cfg(tmp_path, MIXTRAL, num_experts_per_tok=k)
    assert "num_experts_per_tok" in _cli_error(capsys, str(path))


def test_unknown_architecture_is_an_explicit_assumption(tmp_path: Path) -> None:
    path = _cfg(tmp_path, LLAMA, architectures=["FooBarForCausalLM"], model_type="foobar")
    est = estimate_model(path)
    assert any("'FooBarForCausalLM' is not known" in a for a in est.assumptions)


def _gguf(path: Path, kv: dict[str, int], *, n_layers: int = 2, dim: int = 8) -> Path:
    w = gguf.GGUFWriter(str(path), "llama")
    base = {
        "llama.block_count": n_layers, "llama.embedding_length": dim,
        "llama.feed_forward_length": 2 * dim, "llama.attention.head_count": 2,
        "llama.attention.head_count_kv": 1, "llama.context_length": 4096, "llama.vocab_size": 16,
    }  # fmt: skip
    for key, value in {**base, **kv}.items():
        if value < 0:
            w.add_int32(key, value)
        elif value >= 2**32:
            w.add_uint64(key, value)
        else:
            w.add_uint32(key, value)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    z = lambda *s: np.zeros(s, np.float16)  # noqa: E731
    w.add_tensor("token_embd.weight", z(16, dim))
    w.add_tensor("output_norm.weight", np.zeros(dim, np.float32))
    for i in range(n_layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros(dim, np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", z(dim, dim))
        w.add_tensor(f"blk.{i}.attn_k.weight", z(dim // 2, dim))
        w.add_tensor(f"blk.{i}.attn_v.weight", z(dim // 2, dim))
        w.add_tensor(f"blk.{i}.attn_output.weight", z(dim, dim))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.zeros(dim, np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", z(2 * dim, dim))
        w.add_tensor(f"blk.{i}.ffn_up.weight", z(2 * dim, dim))
        w.add_tensor(f"blk.{i}.ffn_down.weight", z(dim, 2 * dim))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize(
    ("kv", "needle"),
    [
        ({"llama.embedding_length": -8}, "embedding_length"),
        ({"llama.block_count": 2**40}, "block_count"),
        ({"llama.attention.head_count": 0}, "num_attention_heads"),
        ({"llama.attention.head_count_kv": 4}, "num_key_value_heads"),
        # the default --ctx: named by its key, not as a --ctx never typed (revfix18f)
        ({"llama.context_length": 2**30}, "llama.context_length"),
    ],
    ids=repr,
)
def test_bad_gguf_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kv: dict[str, int], needle: str
) -> None:
    path = _gguf(tmp_path / "bad.gguf", kv)
    assert needle in _cli_error(capsys, str(path))
    with pytest.raises((GgufFormatError, InvalidModelSpecError)):
        load_model(path)


def _ds2(path: Path, **over: int) -> Path:
    """A 2-layer DeepSeek-V3-style GGUF (MLA, MoE) with some keys overridden."""
    keys = {
        "block_count": 2, "embedding_length": 64, "feed_forward_length": 128,
        "attention.head_count": 4, "attention.head_count_kv": 1, "attention.key_length": 72,
        "attention.value_length": 64, "attention.key_length_mla": 48,
        "attention.value_length_mla": 32, "attention.kv_lora_rank": 56,
        "attention.q_lora_rank": 96, "rope.dimension_count": 16, "expert_count": 8,
        "expert_used_count": 2, "expert_shared_count": 1, "expert_feed_forward_length": 32,
        "leading_dense_block_count": 1, "context_length": 4096,
    }  # fmt: skip
    keys.update({k.replace("__", "."): v for k, v in over.items()})
    w = gguf.GGUFWriter(str(path), "deepseek2")
    for k, v in keys.items():
        if v >= 2**32:
            w.add_uint64(f"deepseek2.{k}", v)
        else:
            w.add_uint32(f"deepseek2.{k}", v)
    w.add_tensor("token_embd.weight", np.zeros((100, 64), np.float32))
    w.add_tensor("blk.1.ffn_gate_exps.weight", np.zeros((8, 32, 64), np.float16))
    w.add_tensor("output.weight", np.zeros((100, 64), np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"leading_dense_block_count": 10**9}, "leading_dense_block_count"),
        ({"expert_used_count": 0}, "num_experts_per_tok"),
        ({"expert_used_count": 10**7}, "expert_used_count"),
        ({"expert_count": 2**40}, "expert_count"),
    ],
    ids=repr,
)
def test_bad_moe_gguf_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], over: dict[str, int], needle: str
) -> None:
    path = _ds2(tmp_path / "ds.gguf", **over)
    t0 = time.process_time()
    assert needle in _cli_error(capsys, str(path))
    assert time.process_time() - t0 < 5


def _st(path: Path, header: bytes) -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    return path


def test_deep_safetensors_header_and_index(tmp_path: Path) -> None:
    deep = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    from oomkit.loaders.safetensors import load_safetensors_header

    st = _st(tmp_path / "x.safetensors", deep)
    with pytest.raises(SafetensorsFormatError):
        load_safetensors_header(st)
    d = tmp_path / "idx"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA))
    (d / "model.safetensors.index.json").write_bytes(deep)
    with pytest.raises(SafetensorsFormatError):
        load_model(d)


def _index_dir(tmp_path: Path, shards: dict[str, str]) -> Path:
    d = tmp_path / "sharded"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA))
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": shards}))
    return d


def test_fifo_named_by_index_never_blocks(tmp_path: Path) -> None:
    d = _index_dir(tmp_path, {"model.embed_tokens.weight": "fifo.safetensors"})
    os.mkfifo(d / "fifo.safetensors")
    t0 = time.process_time()
    with pytest.raises(SafetensorsFormatError, match="not a regular file"):
        load_model(d)
    assert time.process_time() - t0 < 2


def test_missing_shards_error_is_short(tmp_path: Path) -> None:
    shards = {f"t{i}": f"model-{i:06d}-of-100000.safetensors" for i in range(20_000)}
    d = _index_dir(tmp_path, shards)
    with pytest.raises(SourceNotFoundError) as e:
        load_model(d)
    msg = str(e.value)
    assert "20000 missing" in msg
    assert "and 19995 more" in msg
    assert len(msg) < 600


def test_symlinked_shard_counted_once(tmp_path: Path) -> None:
    header = json.dumps(
        {"model.norm.weight": {"dtype": "F32", "shape": [4096], "data_offsets": [0, 16384]}}
    ).encode()
    d = tmp_path / "linked"
    d.mkdir()
    # a config this one tensor can belong to (a header far smaller than the config's model is
    # refused as another file's): 1 tiny layer, 32-wide
    tiny = {**LLAMA, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 16}  # fmt: skip
    tiny.pop("head_dim", None)
    (d / "config.json").write_text(json.dumps(tiny))
    st = _st(d / "model.safetensors", header)
    with st.open("ab") as f:
        f.write(b"\0" * 16384)
    once = load_model(d).tensors
    (d / "model-copy.safetensors").symlink_to(st)
    twice = load_model(d).tensors
    assert once is not None
    assert twice is not None
    assert len(twice) == len(once) == 1


def test_unknown_user_home(capsys: pytest.CaptureFixture[str]) -> None:
    line = _cli_error(capsys, "~nosuchuser_oomkit/model")
    assert "home directory" in line


def test_dev_stdin_and_process_substitution(tmp_path: Path) -> None:
    cfg = FIX / "configs" / "llama-3.2-1b.json"
    r, w = os.pipe()
    os.write(w, cfg.read_bytes())
    os.close(w)
    try:
        spec = load_model(f"/dev/fd/{r}")  # what bash's <(cat config.json) hands over
    finally:
        os.close(r)
    assert spec.num_hidden_layers == 16
    plain = tmp_path / "stdin"  # a redirected /dev/stdin resolves to a file without a suffix
    plain.write_bytes(cfg.read_bytes())
    assert load_model(plain).hidden_size == 2048


def test_layer_scan_is_linear(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The recurrent-layer check runs once per estimate, not once per layer (was O(n^2))."""
    calls = {"n": 0}
    original = ModelSpec.recurrent_layers

    def counting(self: ModelSpec) -> tuple[int, ...]:
        calls["n"] += 1
        return original(self)

    monkeypatch.setattr(ModelSpec, "recurrent_layers", counting)
    path = _gguf(tmp_path / "deep.gguf", {}, n_layers=600)
    from oomkit.spec.settings import InferenceSettings

    for runtime in ("llama.cpp", "vllm", "transformers"):
        calls["n"] = 0
        estimate_model(path, InferenceSettings(runtime=runtime, ctx=4096))
        assert calls["n"] <= 4, (runtime, calls["n"])


def test_many_layer_gguf_is_fast(tmp_path: Path) -> None:
    """5000 layers (45k tensors) read and estimated; the 20k-layer figure is in
    benchmarks/bench_many_layers.py."""
    path = _gguf(tmp_path / "5k.gguf", {}, n_layers=5000)
    t0 = time.process_time()
    est = estimate_model(path)
    elapsed = time.process_time() - t0
    assert est.model.params > 0
    assert elapsed < 20, elapsed  # shared 2-core CI box; O(n^2) took minutes


def test_error_is_never_internal_for_oomkit_errors() -> None:
    assert issubclass(InvalidModelSpecError, OomkitError)
