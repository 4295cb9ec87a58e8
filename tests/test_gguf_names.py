"""GGUF tensor names -> (layer, role) without the regex: the answer of
``^blk\\.(\\d+)\\.(.+)$`` for ordinary and odd names."""

from __future__ import annotations

import re

import pytest

from oomkit.loaders.gguf import GgufFile, GgufTensor
from oomkit.loaders.gguf_spec import gguf_tensor_infos

_BLK_RE = re.compile(r"^blk\.(\d+)\.(.+)$")

NAMES = [
    "token_embd.weight",
    "output.weight",
    "blk.0.attn_q.weight",
    "blk.0.ffn_down.weight",
    "blk.12.attn_k.bias",
    "blk.007.attn_v.weight",  # leading zeros: layer 7
    "blk.1.",  # nothing after the layer: not a layer tensor
    "blk..attn_q.weight",
    "blk.1a.attn_q.weight",
    "blk.-1.attn_q.weight",
    "blk.\u0663.attn_q.weight",  # an Arabic-Indic digit: \\d matches it
    "blk.2.attn_q.weight\n",  # a trailing newline: $ matches before it
    "blk.3.attn\nq.weight",
    "blkx.4.attn_q.weight",
    "blk.5",
    "blk.12.attn_k.bias",  # a layer seen before
]


def _expected(name: str) -> tuple[int | None, str]:
    m = _BLK_RE.match(name)
    return (int(m.group(1)), m.group(2)) if m else (None, name)


@pytest.mark.parametrize("order", [NAMES, NAMES[::-1]])
def test_layer_and_role_match_the_regex(order: list[str]) -> None:
    tensors = tuple(
        GgufTensor(name=n, dims=(4,), ggml_type="F32", type_id=0, offset=0, n_bytes=16)
        for n in order
    )
    g = GgufFile(
        path="x.gguf",
        version=3,
        byte_order="<",
        metadata={},
        tensors=tensors,
        alignment=32,
        data_offset=0,
        file_bytes=0,
    )
    got = [(t.layer, t.role) for t in gguf_tensor_infos(g)]
    assert got == [_expected(n) for n in order]
