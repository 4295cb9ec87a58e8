"""resolve_model: paths of every form, catalog names, Hub ids (fake Hub on 127.0.0.1), offline."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import gguf
import numpy as np
import pytest

from oomkit.errors import (
    OfflineError,
    SafetensorsFormatError,
    SourceNotFoundError,
    UnknownNameError,
)
from oomkit.loaders.safetensors import load_safetensors_tensors
from oomkit.loaders.source import load_local_model, resolve_model

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
TINY = FIXTURES / "safetensors" / "tiny-llama-sharded"
GGUF_FILE = FIXTURES / "gguf" / "tiny-llama-mixed.gguf"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


fake_hub = _load("fake_hub", HERE / "fake_hub.py")
mf = _load("make_fixtures", FIXTURES / "make_fixtures.py")


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # refuses connections
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "OOMKIT_OFFLINE", "HF_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    files = {p.name: p.read_bytes() for p in TINY.iterdir()}
    with fake_hub.serve({"someorg/tiny-model": fake_hub.FakeRepo(files=files)}) as h:
        monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
        yield h


# --- local paths ----------------------------------------------------------------------------


def test_model_directory_gives_config_plus_exact_tensors() -> None:
    spec = resolve_model(str(TINY))
    assert spec.source == "safetensors"
    assert spec.name == "tiny-llama-sharded"
    assert spec.hidden_size == 32
    assert spec.tensors is not None
    assert len(spec.tensors) == len(mf.tiny_llama_shapes())


def test_config_json_alone() -> None:
    spec = resolve_model(str(TINY / "config.json"))
    assert spec.source == "config"
    assert spec.tensors is None
    assert spec.num_key_value_heads == 2


def test_safetensors_file_and_index_with_config_beside() -> None:
    one = resolve_model(str(TINY / "model-00001-of-00002.safetensors"))
    both = resolve_model(str(TINY / "model.safetensors.index.json"))
    assert one.tensors is not None
    assert both.tensors is not None
    # one shard is one part of the model: its siblings are read too (as a split GGUF's are)
    assert len(one.tensors) == len(both.tensors) == 21
    assert both.source == "safetensors"


def test_gguf_file_and_gguf_only_directory(tmp_path: Path) -> None:
    spec = resolve_model(str(GGUF_FILE))
    assert spec.source == "gguf"
    assert spec.name == "tiny-llama-mixed"
    shutil.copy(GGUF_FILE, tmp_path / "model.gguf")
    assert resolve_model(str(tmp_path)).source == "gguf"
    shutil.copy(GGUF_FILE, tmp_path / "other.gguf")
    with pytest.raises(SourceNotFoundError, match="several GGUF files"):
        resolve_model(str(tmp_path))


def test_split_gguf_reads_every_shard(tmp_path: Path) -> None:
    # gguf-py's writer splits into m-00001-of-00002.gguf / m-00002-of-00002.gguf; the spec has
    # the tensors of both, whichever shard is passed.
    # (gemma: a two-tensor llama GGUF is refused as llama.cpp refuses it, gguf_required)
    w = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "gemma", split_max_tensors=1)
    w.add_block_count(1)
    w.add_embedding_length(8)
    w.add_head_count(2)
    w.add_tensor("token_embd.weight", np.zeros((10, 8), np.float32))
    w.add_tensor("output_norm.weight", np.zeros((8,), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for shard in ("m-00001-of-00002.gguf", "m-00002-of-00002.gguf"):
        spec = resolve_model(str(tmp_path / shard))
        assert spec.tensors is not None
        assert {t.name for t in spec.tensors} == {"token_embd.weight", "output_norm.weight"}
    assert resolve_model(str(tmp_path)).vocab_size == 10
    (tmp_path / "m-00002-of-00002.gguf").unlink()
    with pytest.raises(SourceNotFoundError, match=r"m-00002-of-00002\.gguf are missing"):
        resolve_model(str(tmp_path / "m-00001-of-00002.gguf"))


def test_several_safetensors_without_index(tmp_path: Path) -> None:
    # Two shards and no index: both are read. consolidated.safetensors (Mistral's duplicate
    # of the same weights) is skipped when other files exist.
    shutil.copy(TINY / "config.json", tmp_path / "config.json")
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        shutil.copy(TINY / name, tmp_path / name)
    spec = resolve_model(str(tmp_path))
    assert spec.tensors is not None
    assert len(spec.tensors) == 21
    shutil.copy(TINY / "model-00001-of-00002.safetensors", tmp_path / "consolidated.safetensors")
    assert len(resolve_model(str(tmp_path)).tensors or ()) == 21
    # consolidated + a single model.safetensors: the latter alone
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        (tmp_path / name).unlink()
    shutil.copy(TINY / "model-00002-of-00002.safetensors", tmp_path / "model.safetensors")
    only = resolve_model(str(tmp_path)).tensors or ()
    assert {t.name for t in only} == {
        t.name for t in load_safetensors_tensors(TINY / "model-00002-of-00002.safetensors")
    }


def test_config_only_directory(tmp_path: Path) -> None:
    shutil.copy(TINY / "config.json", tmp_path / "config.json")
    spec = resolve_model(str(tmp_path))
    assert spec.source == "config"
    assert spec.tensors is None


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        # safetensors without a config.json: the header has no architecture facts
        ("safetensors-alone", "no config.json beside it"),
        # an empty directory
        ("empty-dir", "no config.json, safetensors or .gguf"),
        # a file type we do not read
        ("txt", "is not a model file"),
    ],
)
def test_local_errors(tmp_path: Path, setup: str, needle: str) -> None:
    if setup == "safetensors-alone":
        target = tmp_path / "model.safetensors"
        shutil.copy(TINY / "model-00001-of-00002.safetensors", target)
    elif setup == "empty-dir":
        target = tmp_path
    else:
        target = tmp_path / "notes.txt"
        target.write_text("hi")
    with pytest.raises(SourceNotFoundError, match=needle) as e:
        resolve_model(str(target))
    assert str(target) in str(e.value)


def test_bad_safetensors_header_reported_before_missing_config(tmp_path: Path) -> None:
    # A header claiming 10 GB is the real problem; the absent config.json comes second.
    path = tmp_path / "model.safetensors"
    path.write_bytes((10 * 10**9).to_bytes(8, "little") + b"{}")
    with pytest.raises(SafetensorsFormatError, match="100000000-byte limit"):
        resolve_model(str(path))


def test_missing_paths_are_not_looked_up_elsewhere(tmp_path: Path) -> None:
    # A path-shaped MODEL that does not exist fails as a path, not as an unknown model name.
    for ref in (str(tmp_path / "nope.gguf"), "./missing-dir", "model.safetensors"):
        with pytest.raises(SourceNotFoundError, match="no such file"):
            resolve_model(ref)
    with pytest.raises(SourceNotFoundError, match="no such file"):
        load_local_model(tmp_path / "gone")


# --- catalog and Hub ------------------------------------------------------------------------


def test_catalog_name_wins_over_hub() -> None:
    # The catalog knows this repo id: no network (HF_ENDPOINT refuses connections).
    spec = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    assert spec.source == "catalog"
    assert resolve_model("llama-3.1-8b").hidden_size == 4096


def test_unknown_plain_name_has_suggestions() -> None:
    with pytest.raises(UnknownNameError) as e:
        resolve_model("llama-9000-zz")
    assert e.value.suggestions
    assert "Did you mean" in str(e.value)
    assert "repo id" in str(e.value)


def test_hub_id_not_in_catalog(hub: object) -> None:
    spec = resolve_model("someorg/tiny-model")
    assert spec.source == "hub"
    assert spec.tensors is not None
    assert len(spec.tensors) == 21


def test_hub_model_page_url(hub: object) -> None:
    # A pasted model page URL resolves like the repo id; other URLs are refused with a hint.
    spec = resolve_model("https://huggingface.co/someorg/tiny-model/tree/main")
    assert spec.source == "hub"
    with pytest.raises(SourceNotFoundError, match="only Hugging Face model pages"):
        resolve_model("https://example.com/model.gguf")


def test_hub_id_offline(hub: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # OOMKIT_OFFLINE=1 read at call time: fail fast with a hint, no request made.
    monkeypatch.setenv("OOMKIT_OFFLINE", "1")
    with pytest.raises(OfflineError, match="offline") as e:
        resolve_model("someorg/tiny-model")
    assert "pass a local config.json" in str(e.value)
    assert hub.requests == []  # type: ignore[attr-defined]
    with pytest.raises(OfflineError):
        resolve_model("someorg/tiny-model", offline=True)
    # explicit offline=False beats the environment
    assert resolve_model("someorg/tiny-model", offline=False).source == "hub"


# --- exact tensors agree with the layout derived from the config ------------------------------


def test_header_tensors_match_the_derived_layout() -> None:
    # Relational check between two independent paths: the roles, layers and parameter counts
    # read from safetensors/GGUF headers equal what spec.tensors derives from the config alone.
    from collections import Counter
    from dataclasses import replace

    from oomkit.spec.tensors import count_params, derive_tensors

    st = resolve_model(str(TINY))
    assert st.tensors is not None
    derived = derive_tensors(replace(st, tensors=None))
    assert Counter((t.role, t.layer, t.n_params) for t in st.tensors) == Counter(
        (t.role, t.layer, t.n_params) for t in derived
    )
    assert count_params(st) == count_params(replace(st, tensors=None)) == 26784
    gg = resolve_model(str(GGUF_FILE))
    assert gg.tensors is not None
    assert Counter((t.name, t.n_params) for t in gg.tensors) == Counter(
        (t.name, t.n_params) for t in derive_tensors(replace(gg, tensors=None))
    )
