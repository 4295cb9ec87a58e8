"""llama-quantize's per-tensor types for the catalog models, computed at build time.

``oomkit models --fits`` estimates every catalog model, and most of one estimate is replaying
``llama_model_quantize_impl`` tensor by tensor (:func:`~oomkit.quant.llamacpp_mix.
predict_gguf_tensor_bytes`). That replay depends only on the tensor list and a few header
facts, so for the catalog models and the quants people shop for it is done once, here, and
shipped as ``data/gguf_mix_table.json.gz`` (22 kB). An entry is found by a fingerprint of
everything the
replay reads (tensor names and shapes in file order, architecture, layer/expert counts, GQA
ratio, file type), so a spec that differs in any of them (a user's config, a GGUF header)
falls back to the replay; ``tests/test_mix_table.py`` replays every entry and fails when the
table is stale. Rebuild with::

    python -m oomkit.quant.mix_table --write
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from oomkit.memo import IdentityMemo
from oomkit.spec.model import TensorInfo

__all__ = ["TABLE_FTYPES", "build_table", "fingerprint", "table_types"]

#: the file types the table holds: the ones reverse search shops with (Q8_0 .. Q4_K_M)
TABLE_FTYPES = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M")
_RESOURCE = "data/gguf_mix_table.json.gz"
_SCHEMA = 1


def fingerprint(
    tensors: Sequence[TensorInfo], *, ftype: str, arch: str, n_layer: int, n_expert: int, n_gqa: int
) -> str:
    """A stable digest of everything the quantizer replay reads (not Python's salted hash)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{_SCHEMA}|{ftype}|{arch}|{n_layer}|{n_expert}|{n_gqa}|".encode())
    h.update(_tensors_digest(tensors))
    return h.hexdigest()


_DIGESTS: IdentityMemo[bytes] = IdentityMemo(64)


def _tensors_digest(tensors: Sequence[TensorInfo]) -> bytes:
    """Digest of the names, shapes and dtypes in order; memoised by identity for immutable
    tuples (one model is looked up once per file type)."""
    hit = _DIGESTS.get(tensors)
    if hit is not None:
        return hit
    text = "\n".join(f"{t.name}:{t.shape!r}:{t.dtype or ''}" for t in tensors)
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    _DIGESTS.put(tensors, digest)
    return digest


def _encode(types: Sequence[str]) -> str:
    """Run-length form ``Q4_K*3,Q6_K,F32*2`` (layers repeat the same few types)."""
    out: list[str] = []
    i = 0
    while i < len(types):
        j = i
        while j < len(types) and types[j] == types[i]:
            j += 1
        out.append(types[i] if j - i == 1 else f"{types[i]}*{j - i}")
        i = j
    return ",".join(out)


def _decode(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in text.split(","):
        name, _, count = part.partition("*")
        out.extend([name] * (int(count) if count else 1))
    return tuple(out)


@cache
def _table() -> dict[str, str]:
    try:
        raw = resources.files("oomkit").joinpath(_RESOURCE).read_bytes()
        data: Any = json.loads(gzip.decompress(raw))
    except (OSError, ValueError, EOFError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != _SCHEMA:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def table_types(
    tensors: Sequence[TensorInfo], *, ftype: str, arch: str, n_layer: int, n_expert: int, n_gqa: int
) -> tuple[str, ...] | None:
    """The precomputed type of each tensor (input order), or None when not in the table."""
    if ftype not in TABLE_FTYPES:
        return None
    entries = _table()
    if not entries:
        return None
    fp = fingerprint(
        tensors, ftype=ftype, arch=arch, n_layer=n_layer, n_expert=n_expert, n_gqa=n_gqa
    )
    text = entries.get(fp)
    if text is None:
        return None
    types = _decode(text)
    return types if len(types) == len(tensors) else None


def _replay_inputs(spec: Any) -> tuple[Sequence[TensorInfo], str, int, int, int]:
    from oomkit.estimate.llamacpp import gguf_arch
    from oomkit.spec.tensors import model_tensors

    attn = spec.attention_layers()
    kv0 = spec.kv_heads(attn[0]) if attn else spec.num_key_value_heads
    return (
        model_tensors(spec),
        gguf_arch(spec),
        spec.num_hidden_layers,
        spec.moe.num_experts if spec.moe else 0,
        spec.num_attention_heads // max(1, kv0),
    )


def build_table() -> dict[str, str]:
    """Replay the quantizer for every catalog model llama.cpp runs and every table file type."""
    from oomkit.catalog.models import search_models
    from oomkit.errors import OomkitError
    from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes

    entries: dict[str, str] = {}
    for entry in search_models(None):
        try:
            spec = entry.spec()
            tensors, arch, n_layer, n_expert, n_gqa = _replay_inputs(spec)
        except OomkitError:
            continue
        for ftype in TABLE_FTYPES:
            try:
                rows = predict_gguf_tensor_bytes(
                    ftype, tensors, n_layer=n_layer, n_expert=n_expert, n_gqa=n_gqa, arch=arch
                )
            except OomkitError:
                continue
            fp = fingerprint(
                tensors, ftype=ftype, arch=arch, n_layer=n_layer, n_expert=n_expert, n_gqa=n_gqa
            )
            entries[fp] = _encode([ty for _, ty, _ in rows])
    return dict(sorted(entries.items()))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["--write"]:
        print("usage: python -m oomkit.quant.mix_table --write", file=sys.stderr)
        return 2
    path = Path(__file__).resolve().parent.parent / _RESOURCE
    entries = build_table()
    doc = {"schema": _SCHEMA, "ftypes": list(TABLE_FTYPES), "entries": entries}
    text = json.dumps(doc, indent=0) + "\n"
    # mtime=0: the same table gives the same bytes (no spurious diffs on rebuild)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"wrote {len(entries)} entries to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
