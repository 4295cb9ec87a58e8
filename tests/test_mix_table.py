"""The build-time quantizer table equals a fresh replay, and is used only where it applies."""

from __future__ import annotations

import dataclasses

import oomkit.quant.mix_table as mix_table
from oomkit.catalog.models import find_model
from oomkit.estimate.llamacpp_weights import _predicted_weights
from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes
from oomkit.quant.mix_table import TABLE_FTYPES, _decode, _encode, build_table


def test_table_is_current() -> None:
    """Replays every catalog model x table file type; fails when the table is stale."""
    shipped = mix_table._table()
    fresh = build_table()
    assert shipped == fresh, (
        "data/gguf_mix_table.json.gz is stale: run `python -m oomkit.quant.mix_table --write`"
    )
    assert len(fresh) > 300


def test_run_length_round_trip() -> None:
    types = ["Q6_K", "F32", "F32", "Q4_K", "Q4_K", "Q4_K", "F32"]
    assert _encode(types) == "Q6_K,F32*2,Q4_K*3,F32"
    assert list(_decode(_encode(types))) == types


def _replay(spec: object, ftype: str) -> tuple[tuple[object, str, int], ...]:
    _predicted_weights.cache_clear()
    rows, _, _ = _predicted_weights(spec, ftype)  # type: ignore[arg-type]
    return rows


def test_table_path_equals_replay_for_a_catalog_model() -> None:
    spec = find_model("qwen3-30b-a3b").spec()
    for ftype in TABLE_FTYPES:
        fast = _replay(spec, ftype)
        tensors = [t for t, _, _ in fast]
        from oomkit.estimate.llamacpp import gguf_arch

        attn = spec.attention_layers()
        slow = predict_gguf_tensor_bytes(
            ftype,
            tensors,  # type: ignore[arg-type]
            n_layer=spec.num_hidden_layers,
            n_expert=spec.moe.num_experts if spec.moe else 0,
            n_gqa=spec.num_attention_heads // spec.kv_heads(attn[0]),
            arch=gguf_arch(spec),
        )
        assert fast == slow


def test_a_changed_spec_is_not_served_from_the_table() -> None:
    """One more layer changes the fingerprint: the replay runs (and differs from the table)."""
    # read as a config (not the catalog's own spec, whose types come with it: oomkit.catalog.specs)
    spec = dataclasses.replace(find_model("llama-3.1-8b").spec(), source="config")
    calls: list[str] = []
    real = mix_table.table_types

    def spy(*args: object, **kw: object) -> object:
        out = real(*args, **kw)  # type: ignore[arg-type]
        calls.append("hit" if out is not None else "miss")
        return out

    import oomkit.quant.mix_table as mt

    mt.table_types = spy  # type: ignore[assignment]
    try:
        _replay(spec, "Q4_K_M")
        wider = dataclasses.replace(spec, intermediate_size=spec.intermediate_size + 256)
        _replay(wider, "Q4_K_M")
        _replay(spec, "IQ2_XS")  # not a table file type
    finally:
        mt.table_types = real
        _predicted_weights.cache_clear()
    assert calls == ["hit", "miss", "miss"]


def test_rebuild_command_refuses_other_arguments() -> None:
    from oomkit.quant.mix_table import main

    assert main([]) == 2
    assert main(["--write", "extra"]) == 2
