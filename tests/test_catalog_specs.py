"""The build-time catalog spec table (oomkit/data/model_specs/) agrees with the config parser."""

from __future__ import annotations

import dataclasses

import pytest

from oomkit.catalog import specs
from oomkit.catalog.models import all_models, find_model
from oomkit.errors import OomkitError


def test_committed_tables_match_the_parser() -> None:
    wanted = specs.family_files()
    on_disk = sorted(p.name for p in specs.SPECS_DIR.glob("*.json"))
    assert on_disk == wanted, "run 'python -m oomkit.catalog.specs --write'"
    for name in wanted:
        assert (specs.SPECS_DIR / name).read_text(encoding="utf-8") == specs.render_family(name), (
            f"oomkit/data/model_specs/{name} is stale: run 'python -m oomkit.catalog.specs --write'"
        )


def test_every_entry_gets_the_parsers_spec() -> None:
    stored = 0
    for entry in all_models():
        try:
            want = specs._built_spec(entry)
        except OomkitError:
            assert specs.precomputed_spec(entry) is None, entry.key
            continue
        got = specs.precomputed_spec(entry)
        assert got is not None, entry.key
        assert got == want, entry.key
        assert repr(got) == repr(want), entry.key  # 1 vs 1.0 vs True: equal, not the same
        assert entry.spec() == want, entry.key
        stored += 1
    assert stored > 150


def test_a_row_for_other_data_is_ignored() -> None:
    entry = find_model("llama-3.1-8b")
    assert specs.precomputed_spec(entry) is not None
    config = {**specs._thaw(entry.config), "num_hidden_layers": 16}
    edited = dataclasses.replace(entry, config=specs._thaw(config))
    assert specs.precomputed_spec(edited) is None  # the digest no longer matches
    assert edited.spec().num_hidden_layers == 16  # parsed, as without the table
    other_params = dataclasses.replace(entry, params=1)
    assert specs.precomputed_spec(other_params) is None
    assert other_params.spec().declared_params == 1


def test_without_a_table_file_the_config_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = find_model("qwen3-30b-a3b")
    monkeypatch.setattr(specs, "_family_rows", lambda file_name: None)
    assert specs.precomputed_spec(entry) is None
    spec = entry.spec()
    assert spec == specs._built_spec(entry)
    assert spec.moe is not None


def test_runs_round_trip() -> None:
    value = ("a",) * 9 + ("b",) + ("a",) * 3
    encoded = specs._encode(value)
    assert encoded == {"__runs__": [["a", 9], ["b", 1], ["a", 3]]}
    assert specs._decode(encoded) == value
    short = (1, 2, 3)
    assert specs._decode(specs._encode(short)) == short
    mixed = (True, 1) * 5  # bools are not run-length coded (True == 1)
    assert specs._decode(specs._encode(mixed)) == mixed


def test_the_rebuild_command_wants_write(capsys: pytest.CaptureFixture[str]) -> None:
    assert specs.main([]) == 2
    assert "--write" in capsys.readouterr().err


def test_a_table_built_by_other_code_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser fix not yet rebuilt into the table: every row is stale, the config is parsed."""
    entry = find_model("llama-3.1-8b")
    specs._family_rows.cache_clear()
    monkeypatch.setattr(specs, "_code_digest", lambda: "00000000")
    try:
        assert specs.precomputed_spec(entry) is None
        assert entry.spec() == specs._built_spec(entry)
    finally:
        specs._family_rows.cache_clear()


def test_the_code_digest_covers_the_config_reader() -> None:
    assert "loaders/hf_config_families.py" in specs._SOURCES
    assert all((specs.DATA_DIR.parent / rel).is_file() for rel in specs._SOURCES)
    assert specs._code_digest() is not None


def test_stored_gguf_types_are_the_replay() -> None:
    from oomkit.estimate.llamacpp_weights import replay_facts
    from oomkit.quant.llamacpp_mix import predict_gguf_tensor_bytes
    from oomkit.spec.tensors import model_tensors

    for key in ("llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-12b", "deepseek-v2-lite", "phi-4"):
        spec = find_model(key).spec()
        tensors = model_tensors(spec)
        for ftype in specs.GGUF_FTYPES:
            replay = predict_gguf_tensor_bytes(ftype, tensors, **replay_facts(spec))  # type: ignore[arg-type]
            assert specs.precomputed_gguf_types(spec, ftype) == tuple(ty for _, ty, _ in replay)


def test_gguf_types_only_for_the_stored_spec() -> None:
    spec = find_model("llama-3.1-8b").spec()
    assert specs.precomputed_gguf_types(spec, "Q4_K_M") is not None
    assert specs.precomputed_gguf_types(spec, "IQ2_XXS") is None  # not a stored file type
    other = dataclasses.replace(spec, intermediate_size=spec.intermediate_size + 256)
    assert specs.precomputed_gguf_types(other, "Q4_K_M") is None
    renamed = dataclasses.replace(spec, name="qwen3-30b-a3b")
    assert specs.precomputed_gguf_types(renamed, "Q4_K_M") is None
    own = dataclasses.replace(spec, source="config")
    assert specs.precomputed_gguf_types(own, "Q4_K_M") is None


def test_an_estimate_with_stored_types_equals_the_replayed_one() -> None:
    """The first prediction of a process takes the stored types; the same spec from a config
    (not the catalog) is replayed: the estimates agree to the byte."""
    import oomkit
    from oomkit.spec.settings import InferenceSettings

    spec = find_model("qwen3-30b-a3b").spec()
    settings = InferenceSettings(quant="Q4_K_M", ctx=8192)
    stored = oomkit.estimate_model(spec, settings)
    replayed = oomkit.estimate_model(dataclasses.replace(spec, source="config"), settings)
    assert [d.weights_bytes for d in stored.devices] == [d.weights_bytes for d in replayed.devices]
    assert stored.total_bytes == replayed.total_bytes
