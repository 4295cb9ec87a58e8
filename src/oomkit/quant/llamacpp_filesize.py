"""Size of a GGUF file that llama-quantize writes: header + aligned tensor data.

Layout (ggml/docs/gguf.md; ``gguf_write_to_buf`` in ggml/src/gguf.cpp): a header (magic,
version, counts, key/value metadata, one info record per tensor), padding to
``general.alignment`` (default ``GGUF_DEFAULT_ALIGNMENT`` = 32), then each tensor's data padded
to the alignment (``zeros(fout, GGML_PAD(new_size, align) - new_size)`` in
``llama_model_quantize_impl``).

The tensor data is exact (:mod:`oomkit.quant.llamacpp_mix`). The header is exact for the
tensor-info records and an **estimate** for the metadata, which the tokenizer dominates:

* every token: an 8-byte length + the UTF-8 string (``tokenizer.ggml.tokens``, assumed
  :data:`AVG_TOKEN_CHARS` bytes) + a 4-byte ``token_type``; SentencePiece ("llama") vocabularies
  add a 4-byte float ``score``;
* BPE ("gpt2") vocabularies add ``tokenizer.ggml.merges``: an 8-byte length + "a b" strings
  (:data:`AVG_MERGE_CHARS` bytes). Merges number about 1x the vocabulary for Qwen2/2.5
  (151,387 for 151,643 tokens) and about 2.2x for Llama-3 (280,147 for 128,256); pass
  ``n_merges`` when known, else the vocabulary size is used;
* a fixed :data:`OTHER_METADATA_BYTES` allowance for general.*, hyper-parameters and the chat
  template.

For a 1B model the header is ~1% of the file, for 7B+ models < 0.2%; pass ``header_bytes`` (from a
real GGUF header) to remove the estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

from oomkit.errors import InvalidSettingError
from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes
from oomkit.spec.model import TensorInfo
from oomkit.units import KiB, align_up

__all__ = [
    "AVG_MERGE_CHARS",
    "AVG_TOKEN_CHARS",
    "GGUF_DEFAULT_ALIGNMENT",
    "OTHER_METADATA_BYTES",
    "estimate_gguf_header_bytes",
    "gguf_tensor_infos_bytes",
    "predict_gguf_file_bytes",
]

#: ``GGUF_DEFAULT_ALIGNMENT`` (ggml/include/gguf.h); ``general.alignment`` may override it.
GGUF_DEFAULT_ALIGNMENT = 32
#: Mean UTF-8 bytes of a token string in the GGUF vocabulary (byte-level BPE and SentencePiece
#: vocabularies of 32k-256k entries; "Ġthe" is 5 bytes).
AVG_TOKEN_CHARS = 7
#: Mean UTF-8 bytes of a BPE merge string ("Ġ t", "in g").
AVG_MERGE_CHARS = 11
#: general.*, architecture hyper-parameters, special token ids and a chat template.
OTHER_METADATA_BYTES = 16 * KiB
_FIXED_HEADER_BYTES = 4 + 4 + 8 + 8  # magic, version, n_tensors, n_kv


def gguf_tensor_infos_bytes(tensors: Sequence[TensorInfo]) -> int:
    """Exact bytes of the tensor-info records: name (u64 length + bytes), n_dims (u32),
    dims (u64 each), type (u32), offset (u64)."""
    return sum(8 + len(t.name.encode()) + 4 + 8 * max(1, len(t.shape)) + 4 + 8 for t in tensors)


def estimate_gguf_header_bytes(
    tensors: Sequence[TensorInfo],
    *,
    vocab_size: int,
    tokenizer_model: str = "gpt2",
    n_merges: int | None = None,
) -> int:
    """Estimated GGUF header bytes (before alignment padding); see the module docstring.

    Args:
        tensors: the tensors (their info records are counted exactly).
        vocab_size: tokens in ``tokenizer.ggml.tokens``.
        tokenizer_model: ``tokenizer.ggml.model``: "gpt2" (byte-level BPE with merges),
            "llama" (SentencePiece with scores), or another name (tokens and types only).
        n_merges: BPE merges; None means ``vocab_size`` for "gpt2" and 0 otherwise.

    Returns:
        Bytes (an estimate: token strings are taken at their mean length).
    """
    if vocab_size < 0:
        raise InvalidSettingError(
            f"Header estimate failed for 'vocab_size' ({vocab_size}): it must be >= 0. "
            "Pass the tokenizer's vocabulary size.",
            setting="vocab_size",
            value=str(vocab_size),
        )
    per_token = 8 + AVG_TOKEN_CHARS + 4
    if tokenizer_model == "llama":
        per_token += 4
    merges = n_merges if n_merges is not None else (vocab_size if tokenizer_model == "gpt2" else 0)
    tokenizer_bytes = vocab_size * per_token + merges * (8 + AVG_MERGE_CHARS)
    return (
        _FIXED_HEADER_BYTES
        + OTHER_METADATA_BYTES
        + tokenizer_bytes
        + gguf_tensor_infos_bytes(tensors)
    )


def predict_gguf_file_bytes(
    ftype: str,
    tensors: Sequence[TensorInfo],
    *,
    n_layer: int,
    n_expert: int,
    n_gqa: int,
    arch: str,
    vocab_size: int | None = None,
    tokenizer_model: str = "gpt2",
    n_merges: int | None = None,
    header_bytes: int | None = None,
    alignment: int = GGUF_DEFAULT_ALIGNMENT,
    has_imatrix: bool = False,
    pure: bool = False,
    output_tensor_type: str | None = None,
    token_embedding_type: str | None = None,
) -> int:
    """Bytes of the GGUF file llama-quantize writes for ``ftype``.

    ``align_up(header, alignment) + sum(align_up(tensor_bytes, alignment))``. With
    ``header_bytes`` given that header is used; else it is estimated from ``vocab_size`` (see
    :func:`estimate_gguf_header_bytes`).

    Raises:
        InvalidSettingError: neither ``header_bytes`` nor ``vocab_size`` given.
        UnknownNameError: unknown file type.
    """
    if header_bytes is None:
        if vocab_size is None:
            raise InvalidSettingError(
                "GGUF size prediction failed for 'header_bytes' (no vocab_size either): the "
                "header holds the tokenizer. Pass vocab_size or header_bytes.",
                setting="header_bytes",
                value="None",
            )
        header_bytes = estimate_gguf_header_bytes(
            tensors, vocab_size=vocab_size, tokenizer_model=tokenizer_model, n_merges=n_merges
        )
    rows = predict_gguf_tensor_bytes(
        ftype,
        tensors,
        n_layer=n_layer,
        n_expert=n_expert,
        n_gqa=n_gqa,
        arch=arch,
        has_imatrix=has_imatrix,
        pure=pure,
        output_tensor_type=output_tensor_type,
        token_embedding_type=token_embedding_type,
    )
    data_bytes = sum(align_up(n, alignment) for _, _, n in rows)
    return align_up(header_bytes, alignment) + data_bytes
