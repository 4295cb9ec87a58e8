"""review21 finding 14: a GGUF that lacks a tensor its architecture requires is refused (exit
1, one line naming the file and the first missing tensor), as llama.cpp's loader refuses it;
the complete file is estimated as before. Files written by gguf-py's GGUFWriter."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from conftest import run_cli
from oomkit.loaders.gguf_required import first_missing_tensor

_ATTN = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output")
_DENSE = ("ffn_norm", "ffn_gate", "ffn_down", "ffn_up")


def _write(path: Path, arch: str, tails: tuple[str, ...], *, drop: str | None = None) -> Path:
    n_embd, n_ff, n_vocab, n_layer = 64, 128, 100, 2
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(n_layer)
    w.add_context_length(2048)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    names = ["token_embd.weight", "output_norm.weight"]
    names += [f"blk.{il}.{t}.weight" for il in range(n_layer) for t in tails]
    for name in names:
        if name == drop:
            continue
        shape: tuple[int, ...] = (n_embd,) if "norm" in name else (n_embd, n_embd)
        if name == "token_embd.weight":
            shape = (n_vocab, n_embd)
        w.add_tensor(name, np.zeros(shape, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize(
    ("arch", "tails", "drop"),
    [
        ("llama", _ATTN + _DENSE, "blk.0.attn_k.weight"),
        ("llama", _ATTN + _DENSE, "output_norm.weight"),
        ("qwen2", _ATTN + _DENSE, "blk.1.ffn_up.weight"),
        ("qwen3", (*_ATTN, "attn_k_norm", "attn_q_norm", *_DENSE), "blk.0.attn_q_norm.weight"),
    ],
)
def test_missing_tensor_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, arch: str, tails: tuple[str, ...],
    drop: str,
) -> None:  # fmt: skip
    whole = _write(tmp_path / "whole.gguf", arch, tails)
    code, out, err = run_cli(capsys, "estimate", str(whole), "--gpu", "rtx-3060", "--offline")
    assert code == 0, err
    broken = _write(tmp_path / "broken.gguf", arch, tails, drop=drop)
    code, out, err = run_cli(capsys, "estimate", str(broken), "--gpu", "rtx-3060", "--offline")
    assert code == 1, out
    lines = err.strip().splitlines()
    assert lines[0].startswith("Error: "), err
    assert f"'{broken}'" in lines[0]
    assert f"missing tensor '{drop}'" in lines[0]
    assert "Traceback" not in err


def test_the_reviewers_file_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # review21's tiny.gguf: a llama GGUF with token_embd and blk.N.attn_q only
    path = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_context_length(2048)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_tensor("token_embd.weight", np.zeros((100, 64), np.float32))
    for il in range(2):
        w.add_tensor(f"blk.{il}.attn_q.weight", np.zeros((64, 64), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    code, _, err = run_cli(capsys, "estimate", str(path), "--gpu", "rtx-3060", "--offline")
    assert code == 1
    assert "missing tensor 'output_norm.weight'" in err  # llama.cpp creates it before blk.0


def test_moe_llama_needs_experts_not_a_dense_ffn() -> None:
    names = {"token_embd.weight", "output_norm.weight"}
    names |= {f"blk.0.{t}.weight" for t in (*_ATTN, "ffn_norm")}
    assert first_missing_tensor("llama", names, n_layer=1, n_expert=8) == (
        "blk.0.ffn_gate_inp.weight"
    )
    assert first_missing_tensor("llama", names, n_layer=1, n_expert=0) == "blk.0.ffn_gate.weight"
