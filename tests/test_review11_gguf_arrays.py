"""Long string arrays of a GGUF header (review11): a tokenizer's tokens and merges are skipped
1 MiB at a time, not one read and one seek per string (a 2M-entry array took 2.4-5.6 s on the
2-core box, 0.5 s now). Real files written with the ``gguf`` package; the reader must land on
the same offset, read the keys after the array, and refuse a truncated or oversized entry."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from oomkit.errors import GgufFormatError
from oomkit.loaders.gguf import MAX_STRING_BYTES, load_gguf

gguf = pytest.importorskip("gguf")


def _write(path: Path, tokens: list[str]) -> Path:
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_uint32("llama.context_length", 4096)  # a key after the array
    w.add_string("general.name", "after-the-array")
    w.add_tensor("token_embd.weight", np.zeros((8, 4), np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_long_array_with_buffer_crossings_and_a_long_string(tmp_path: Path) -> None:
    # ~300k short strings cross many 1 MiB buffers; one 3 MiB string takes the seek path
    tokens = [f"tok{i}" for i in range(300_000)]
    tokens[150_000] = "x" * (3 << 20)
    f = load_gguf(_write(tmp_path / "m.gguf", tokens))
    assert f.metadata["llama.context_length"] == 4096
    assert f.metadata["general.name"] == "after-the-array"
    arr = f.metadata["tokenizer.ggml.tokens"]
    assert arr.length == len(tokens)  # type: ignore[union-attr]
    assert [t.name for t in f.tensors] == ["token_embd.weight"]


def test_truncated_inside_the_array_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.gguf", [f"tok{i}" for i in range(200_000)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # cut inside the token array
    with pytest.raises(GgufFormatError, match="truncated"):
        load_gguf(path)


def test_oversized_string_length_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.gguf", ["a", "bb", "ccc"])
    data = bytearray(path.read_bytes())
    # the second string's u64 length: after 'bb' we find its 8-byte length prefix
    at = data.index(b"\x02\x00\x00\x00\x00\x00\x00\x00bb")
    data[at : at + 8] = struct.pack("<Q", MAX_STRING_BYTES + 1)
    path.write_bytes(bytes(data))
    with pytest.raises(GgufFormatError, match="byte limit") as e:
        load_gguf(path)
    assert e.value.offset == at
