"""The weights table of a llama.cpp run: each tensor with its GGML type and exact bytes.

Exact from a GGUF header; otherwise llama-quantize's per-tensor choice is replayed over the
tensors derived from the config (:func:`oomkit.quant.llamacpp_mix.predict_gguf_tensor_bytes`),
read from the build-time table for catalog models (:mod:`oomkit.quant.mix_table`). The tables
are immutable and memoised, so the estimator's re-estimates (planner, doctor, reverse search)
reuse them and their sums.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import compress
from typing import cast, overload

from oomkit.memo import IdentityMemo
from oomkit.spec.model import ModelSpec, TensorInfo
from oomkit.spec.tensor_table import TensorTable
from oomkit.spec.tensors import is_parameter, is_parameter_role

__all__ = ["WeightRows", "assumed_ftype", "priced_ftype", "replay_facts", "weight_tensors"]

#: one row of a weights table: the tensor, its ggml type name (upper case), its exact bytes
WeightRow = tuple[TensorInfo, str, int]


class WeightRows(Sequence[WeightRow]):
    """The weights table of a header's :class:`TensorTable`, as columns (issue 10: a 20k-layer
    GGUF has 180k rows). Rows are built only for a consumer that indexes or iterates it; the
    placement and the sums read :attr:`table` and :attr:`types`."""

    __slots__ = ("table", "types")

    def __init__(self, table: TensorTable, types: tuple[str, ...]) -> None:
        self.table = table
        self.types = types

    @property
    def n_bytes(self) -> tuple[int, ...]:
        return cast("tuple[int, ...]", self.table.n_bytes)  # all set (see weight_tensors)

    def __len__(self) -> int:
        return len(self.types)

    @overload
    def __getitem__(self, i: int) -> WeightRow: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[WeightRow, ...]: ...

    def __getitem__(self, i: int | slice) -> WeightRow | tuple[WeightRow, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        return (self.table[i], self.types[i], self.n_bytes[i])

    def __iter__(self) -> Iterator[WeightRow]:
        return zip(self.table, self.types, self.n_bytes, strict=True)


#: the weights table of each recent header table (one object per table, so the placement memo,
#: keyed by its identity, hits on re-estimates)
_HEADER_ROWS: IdentityMemo[WeightRows] = IdentityMemo(64)


def _header_rows(table: TensorTable) -> WeightRows | None:
    """The exact weights table of a header, or None when a tensor lacks its type or bytes."""
    hit = _HEADER_ROWS.get(table)
    if hit is not None:
        return hit
    if None in table.dtypes or None in table.n_bytes:
        return None
    upper = {d: str(d).upper() for d in set(table.dtypes)}  # a handful of distinct types
    rows = WeightRows(table, tuple(map(upper.__getitem__, table.dtypes)))
    _HEADER_ROWS.put(table, rows)
    return rows


def weight_tensors(
    spec: ModelSpec, quant: str | None, q2k_mix: str | None = None, moe_mix: str | None = None
) -> tuple[Sequence[WeightRow], str, tuple[str, ...]]:
    """(tensor, ggml type, bytes) in file order, where they came from, and assumptions.

    Exact types and bytes from a GGUF header win; otherwise llama-quantize's per-tensor choice
    for ``quant`` is predicted over the tensors derived from the config. A header read as a
    :class:`TensorTable` gives a :class:`WeightRows` (columns); otherwise a tuple.
    ``q2k_mix``: a predicted Q2_K file is the 2023 mix of that name
    (:mod:`oomkit.quant.llamacpp_q2k_legacy`; the llama.cpp generation's ``q2k_mix``).
    ``moe_mix``: a predicted k-quant MoE file is the mix of that name
    (:mod:`oomkit.quant.llamacpp_moe_legacy`; the generation's ``moe_mix``).
    """
    if isinstance(spec.tensors, TensorTable) and len(spec.tensors):
        header = _header_rows(spec.tensors)
        if header is not None:
            return header, "gguf header (exact tensor types and bytes)", ()
    elif spec.tensors and all(t.dtype is not None and t.n_bytes is not None for t in spec.tensors):
        upper: dict[str | None, str] = {}  # a handful of distinct types, ~10 tensors a layer
        rows = tuple(
            (
                t,
                upper.get(t.dtype) or upper.setdefault(t.dtype, str(t.dtype).upper()),
                int(t.n_bytes or 0),
            )
            for t in spec.tensors
        )
        return rows, "gguf header (exact tensor types and bytes)", ()
    if moe_mix is not None:
        return _legacy_moe_weights(spec, quant, q2k_mix, moe_mix)
    if q2k_mix is not None:
        return _legacy_q2k_weights(spec, quant, q2k_mix)
    return _predicted_weights(spec, quant)


@lru_cache(maxsize=64)
def _legacy_moe_weights(
    spec: ModelSpec, quant: str | None, q2k_mix: str | None, mix: str
) -> tuple[tuple[tuple[TensorInfo, str, int], ...], str, tuple[str, ...]]:
    """The Q2_K/today's prediction, re-typed to a pre-#4872 MoE mix for a k-quant MoE file."""
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype
    from oomkit.quant.llamacpp_moe_legacy import legacy_moe_rows

    if q2k_mix is not None:
        rows, source, notes = _legacy_q2k_weights(spec, quant, q2k_mix)
    else:
        rows, source, notes = _predicted_weights(spec, quant)
    if quant is None:
        return rows, source, notes
    ft = llamacpp_ftype(quant)
    facts = replay_facts(spec)
    old = legacy_moe_rows(
        rows, ftype=ft.name, default_type=ft.default_type, n_expert=int(facts["n_expert"])
    )
    if old == rows:
        return rows, source, notes
    note = (
        f"{ft.name} of a MoE model as llama-quantize mixed it before PR #4872 (2024-01-11, {mix}): "
        "every expert matrix at the file type's default type, no ffn_down bumps; a newer file "
        "is larger"
    )
    return old, source, (*notes, note)


@lru_cache(maxsize=64)
def _legacy_q2k_weights(
    spec: ModelSpec, quant: str | None, mix: str
) -> tuple[tuple[tuple[TensorInfo, str, int], ...], str, tuple[str, ...]]:
    """:func:`_predicted_weights`, re-typed to a 2023 Q2_K mix when the file type is Q2_K."""
    from oomkit.quant.llamacpp_ftypes import llamacpp_ftype

    rows, source, notes = _predicted_weights(spec, quant)
    if quant is None or llamacpp_ftype(quant).name != "Q2_K":
        return rows, source, notes
    from oomkit.quant.llamacpp_q2k_legacy import legacy_q2k_rows

    facts = replay_facts(spec)
    old = legacy_q2k_rows(
        rows,
        mix,
        arch=str(facts["arch"]),
        n_layer=int(facts["n_layer"]),
        n_gqa=int(facts["n_gqa"]),
        n_expert=int(facts["n_expert"]),
    )
    if old == rows:
        return rows, source, notes
    note = (
        f"Q2_K as llama-quantize mixed it in the build's day ({mix}: mostly 3-bit from PR #2707 "
        "until January 2024, when Q2_K became 2-bit; a newer Q2_K file is smaller)"
        if mix == "3bit-2023-08"
        else f"Q2_K as llama-quantize mixed it in the build's day ({mix}: PR #1684's mix, "
        "Q4_K attn_v and ffn_down)"
    )
    return old, source, (*notes, note)


#: weights tables predicted in this process (see _predicted_weights)
_PREDICTIONS = [0]


def assumed_ftype(spec: ModelSpec) -> str:
    """The GGUF file type priced when no quant is given: MXFP4_MOE for a checkpoint released in
    MXFP4 (gpt-oss: the GGUF everyone runs keeps the experts in MXFP4), else Q4_K_M (the most
    common file type). The estimate's ``settings.quant`` reports it (JSON and text alike)."""
    q = spec.quantization
    return "MXFP4_MOE" if q is not None and q.method == "mxfp4" else "Q4_K_M"


def priced_ftype(spec: ModelSpec, source: str) -> str | None:
    """The file type to report when no quant was given: :func:`assumed_ftype` when the weights
    were predicted (``source`` from :func:`weight_tensors`), None when a GGUF header gave each
    tensor's exact type (the file's own mix)."""
    return None if source.startswith("gguf header") else assumed_ftype(spec)


# The doctor re-estimates one model tens of times (binary searches over -ngl, -c, --n-cpu-moe),
# and llama-quantize's per-tensor choice depends only on the spec and the file type: predict
# it once per (spec, quant). Both are frozen; the result is an immutable tuple.
@lru_cache(maxsize=256)
def _predicted_weights(
    spec: ModelSpec, quant: str | None
) -> tuple[tuple[tuple[TensorInfo, str, int], ...], str, tuple[str, ...]]:
    from oomkit.quant.ggml_types import GGML_TYPES
    from oomkit.quant.llamacpp_ftypes import UNSLOTH_DYNAMIC, llamacpp_ftype
    from oomkit.spec.tensors import model_tensors

    notes: list[str] = []
    ftype = quant
    if ftype is None:
        ftype = assumed_ftype(spec)
        notes.append(
            "no quant given: the checkpoint is MXFP4, assumed MXFP4_MOE (experts stay "
            "MXFP4, as convert_hf_to_gguf.py writes them)"
            if ftype == "MXFP4_MOE"
            else "no quant given: assumed Q4_K_M (the most common GGUF file type)"
        )
    canonical = llamacpp_ftype(ftype).name  # one alias table: "fp16" -> F16, "mxfp4" -> MXFP4_MOE
    ud = ftype.strip().upper()
    if not ud.startswith("UD-") and ud.endswith("_K_XL"):
        ud = "UD-" + ud
    if ud in UNSLOTH_DYNAMIC:
        notes.append(
            f"{ud} (Unsloth Dynamic) modelled as llama-quantize {canonical}: Unsloth upcasts "
            "some tensors per model, so the real file is usually a few % larger or smaller"
        )
    ftype = canonical
    tensors = model_tensors(spec)
    facts = replay_facts(spec)
    # the catalog models' replays were done at build time (same function, same inputs): a
    # catalog spec's types come with its build-time spec (oomkit.catalog.specs, one small
    # file: the first estimate of a process skips the replay and its modules, ~2 ms); the
    # fingerprinted table pays off from a process's second prediction on (models --fits, the
    # planner; gzip, hashlib, parse: ~7 ms cold)
    _PREDICTIONS[0] += 1
    types = None
    if spec.source == "catalog":
        from oomkit.catalog.specs import precomputed_gguf_types

        types = precomputed_gguf_types(spec, ftype)
    if types is not None and len(types) != len(tensors):
        types = None
    if types is None and _PREDICTIONS[0] > 1:
        from oomkit.quant.mix_table import table_types

        types = table_types(tensors, ftype=ftype, **facts)  # type: ignore[arg-type]
    if types is not None:
        sized: dict[tuple[str, int], int] = {}  # layers repeat (type, size) pairs
        out = []
        for t, ty in zip(tensors, types, strict=True):
            key = (ty, t.n_params)
            n = sized.get(key)
            if n is None:
                n = sized[key] = GGML_TYPES[ty].tensor_bytes(t.n_params)
            out.append((t, ty, n))
        rows = tuple(out)
    else:
        from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes

        rows = predict_gguf_tensor_bytes(ftype, tensors, **facts)  # type: ignore[arg-type]
    if ud in UNSLOTH_HEAD_16BIT:
        rows = _head_16bit(rows)
        notes.append(
            f"{ud}: output.weight (the lm_head) kept at BF16, as Unsloth writes it (one GPU "
            "buffer of vocab x hidden x 2 bytes)"
        )
    return rows, f"predicted llama-quantize {ftype} types over config-derived tensors", tuple(notes)


#: Unsloth Dynamic quants whose files keep the untied lm_head (``output.weight``) at 16 bits.
#: Evidence: Kimi-Dev-72B-UD-Q8_K_XL (Qwen2.5-72B: vocab 152064, hidden 8192) loaded with all
#: layers on a Vulkan device fails "ggml_vulkan: Device memory allocation of size 2491416576
#: failed" (kyuz0/amd-strix-halo-toolboxes benchmark/results, Aug 2025): ggml-vulkan packs
#: weights into buffers of at most ``suballocation_block_size`` (1 GiB), so a larger buffer is
#: one tensor, and 2491416576 = 152064 x 8192 x 2 is exactly that tensor at 16 bits (at Q8_0
#: it would be 1323565056). The input embedding stays in a host buffer (llama.cpp keeps the
#: input layer on the CPU), so only the GPU's lm_head is evidenced; a tied model's
#: ``token_embd`` is left at the base mix's type. llama-bench prints such a file as Q8_0 and
#: 78.21 GiB where pure Q8_0 is 71.95 GiB: Unsloth raises other tensors too, per model, which
#: is not modelled.
UNSLOTH_HEAD_16BIT = frozenset({"UD-Q8_K_XL"})


def _head_16bit(
    rows: tuple[tuple[TensorInfo, str, int], ...],
) -> tuple[tuple[TensorInfo, str, int], ...]:
    """``rows`` with ``output.weight`` retyped to BF16 (2 bytes a parameter)."""
    from oomkit.quant.ggml_types import GGML_TYPES

    return tuple(
        (t, "BF16", GGML_TYPES["BF16"].tensor_bytes(t.n_params))
        if t.name == "output.weight"
        else (t, ty, n)
        for t, ty, n in rows
    )


def replay_facts(spec: ModelSpec) -> dict[str, int | str]:
    """The header facts llama-quantize's type choice reads besides the tensors: block count,
    expert count, GQA ratio of layer 0 and the GGUF architecture name."""
    from oomkit.estimate.llamacpp import gguf_arch  # the estimator imports this module

    n_expert = spec.moe.num_experts if spec.moe else 0
    attn = spec.attention_layers()
    kv0 = spec.kv_heads(attn[0]) if attn else spec.num_key_value_heads
    return {
        "n_layer": spec.num_hidden_layers,
        "n_expert": n_expert,
        "n_gqa": spec.num_attention_heads // max(1, kv0),
        "arch": gguf_arch(spec),
    }


_ROW_SUMMARIES: IdentityMemo[tuple[bool, int, int]] = IdentityMemo(256)


def _rows_summary(rows: Sequence[WeightRow]) -> tuple[bool, int, int]:
    """(tied embeddings, file bytes, parameters) of a weights table; memoised by identity
    (the tables are immutable and memoised themselves; the entry keeps its table alive)."""
    hit = _ROW_SUMMARIES.get(rows)
    if hit is not None:
        return hit
    if isinstance(rows, WeightRows):
        t = rows.table
        # is_parameter depends on the role only: decide it once per distinct role
        param = {role: is_parameter_role(role) for role in set(t.roles)}
        out = (
            "output.weight" not in t.names,
            sum(rows.n_bytes),
            sum(compress(t.n_params, map(param.__getitem__, t.roles))),
        )
        _ROW_SUMMARIES.put(rows, out)
        return out
    out = (
        not any(t.name == "output.weight" for t, _, _ in rows),
        sum(n for _, _, n in rows),
        sum(t.n_params for t, _, _ in rows if is_parameter(t)),
    )
    _ROW_SUMMARIES.put(rows, out)
    return out
