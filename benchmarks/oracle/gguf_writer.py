"""Write *sparse* full-size GGUF files: real header, metadata and tensor infos, data as a hole.

The header is what llama.cpp's converter would write for the architecture (the keys
``llama_model::load_hparams`` reads), the tensor list comes from
:func:`oomkit.spec.tensors.model_tensors` and the per-tensor types from
:func:`oomkit.quant.llamacpp_mix.predict_gguf_tensor_bytes` (llama-quantize's choice for the
file type). The tensor data region is created with ``os.truncate``: it takes no disk space and
reads as zeros, which is all llama.cpp needs to allocate its buffers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter

from oomkit.spec.model import TensorInfo

__all__ = ["write_sparse_gguf"]


def _add_kv(w: GGUFWriter, key: str, value: Any) -> None:
    if isinstance(value, bool):
        w.add_bool(key, value)
    elif isinstance(value, int):
        w.add_uint32(key, value)
    elif isinstance(value, float):
        w.add_float32(key, value)
    elif isinstance(value, str):
        w.add_string(key, value)
    elif isinstance(value, list):
        w.add_array(key, value)
    else:
        raise TypeError(f"unsupported metadata value for {key}: {value!r}")


def write_sparse_gguf(
    path: str,
    *,
    arch: str,
    metadata: dict[str, Any],
    n_vocab: int,
    tensors: Sequence[tuple[TensorInfo, str, int]],
) -> dict[str, int]:
    """Write the GGUF; returns header/data byte counts."""
    w = GGUFWriter(path, arch)
    for key, value in metadata.items():
        _add_kv(w, key.format(arch=arch), value)
    # a minimal SentencePiece-style vocabulary of n_vocab tokens
    w.add_tokenizer_model("llama")
    # byte tokens <0x00>..<0xFF> (type 6) so byte fallback and the newline lookup work
    byte_toks = [f"<0x{b:02X}>" for b in range(256)]
    specials = ["<|end|>", "<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>"]
    rest = n_vocab - 3 - len(byte_toks)
    toks = ["<unk>", "<s>", "</s>", *byte_toks, *specials]
    toks += [f"t{i}" for i in range(rest - len(specials))]
    w.add_token_list(toks)
    w.add_token_scores([0.0] * n_vocab)
    w.add_token_types([2, 3, 3] + [6] * len(byte_toks) + [1] * rest)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    for t, type_name, n_bytes in tensors:
        qtype = GGMLQuantizationType[type_name]
        w.add_tensor_info(t.name, list(t.shape), np.dtype(np.float32), n_bytes, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    assert w.fout is not None
    fout = w.fout[0]
    fout.flush()
    data_offset = fout.tell()
    align = w.data_alignment
    data_offset = -(-data_offset // align) * align
    total = 0
    for _t, _type, n_bytes in tensors:
        total += -(-n_bytes // align) * align
    w.close()
    os.truncate(path, data_offset + total)
    return {"gguf_data_offset": data_offset, "tensor_data_bytes": total}
