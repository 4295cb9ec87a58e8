"""Hub loader against a local fake Hub (tests/fake_hub.py) on 127.0.0.1: no real network."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.errors import (
    GatedRepoError,
    OfflineError,
    OomkitError,
    SafetensorsFormatError,
    SourceError,
    SourceNotFoundError,
)
from oomkit.loaders.hub import (
    HubRef,
    hub_cache_dir,
    hub_endpoint,
    is_offline,
    load_hub_model,
    parse_hub_ref,
)
from oomkit.loaders.safetensors import load_safetensors_tensors

HERE = Path(__file__).parent
TINY = HERE / "fixtures" / "safetensors" / "tiny-llama-sharded"
SHA = "a" * 40


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


fake_hub = _load("fake_hub")


def _tiny_files() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in TINY.iterdir()}


def _repos() -> dict[str, object]:
    tiny = _tiny_files()
    single = {
        "config.json": tiny["config.json"],
        "model.safetensors": tiny["model-00001-of-00002.safetensors"],
        "README.md": b"# hi",
    }
    FakeRepo = fake_hub.FakeRepo
    return {
        "org/tiny": FakeRepo(files=tiny, sha=SHA, branches={"main": SHA, "v1": SHA}),
        "org/single": FakeRepo(files=single, sha=SHA, branches={"main": SHA}),
        "org/lazy-server": FakeRepo(
            files=single, sha=SHA, branches={"main": SHA}, ignore_range=True
        ),
        "org/gated": FakeRepo(
            files=tiny,
            sha=SHA,
            branches={"main": SHA},
            gated=True,
            allowed_tokens=frozenset({"ok"}),
        ),
        "org/config-only": FakeRepo(
            files={"config.json": tiny["config.json"]}, sha=SHA, branches={"main": SHA}
        ),
        "org/gguf-only": FakeRepo(files={"m.gguf": b"GGUF"}, sha=SHA, branches={"main": SHA}),
        "org/redirect": FakeRepo(
            files=tiny, sha=SHA, branches={"main": SHA}, redirect_weights=True
        ),
        "org/short-file": FakeRepo(
            files={"config.json": tiny["config.json"], "model.safetensors": b"\x01\x02\x03"},
            sha=SHA,
            branches={"main": SHA},
        ),
        "org/cut-header": FakeRepo(
            files={
                "config.json": tiny["config.json"],
                "model.safetensors": (100).to_bytes(8, "little") + b'{"a": 1}',
            },
            sha=SHA,
            branches={"main": SHA},
        ),
        "org/bad-config": FakeRepo(
            files={"config.json": b"{not json"}, sha=SHA, branches={"main": SHA}
        ),
        "org/listed-not-served": FakeRepo(
            files={},
            sha=SHA,
            branches={"main": SHA},
            api_body=b'{"sha": "'
            + SHA.encode()
            + b'", "siblings": [{"rfilename": "config.json"}]}',
        ),
        "org/bad-request": FakeRepo(
            files={"config.json": b"{}"}, sha=SHA, branches={"main": SHA}, resolve_status=400
        ),
        "org/bad-header": FakeRepo(
            files={"config.json": tiny["config.json"], "model.safetensors": b"\xff" * 8},
            sha=SHA,
            branches={"main": SHA},
        ),
    }


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[object]:
    with fake_hub.serve(_repos()) as h:
        monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.delenv("HF_HUB_CACHE", raising=False)
        for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "OOMKIT_OFFLINE"):
            monkeypatch.delenv(var, raising=False)
        yield h


def test_sharded_repo_exact_tensors_without_weights(hub: object) -> None:
    # The spec's tensors equal those read from the same files locally, and no request fetched
    # more than the header of a weight file (two range reads each: length, then JSON).
    spec = load_hub_model("org/tiny")
    local = load_safetensors_tensors(TINY / "model.safetensors.index.json")
    assert spec.source == "hub"
    assert spec.name == "org/tiny"
    assert spec.tensors is not None
    assert sorted(spec.tensors, key=lambda t: t.name) == sorted(local, key=lambda t: t.name)
    assert spec.hidden_size == 32
    shard_gets = [r for r in hub.requests if r.path.endswith(".safetensors")]  # type: ignore[attr-defined]
    assert len(shard_gets) == 4
    assert all(r.range is not None for r in shard_gets)
    assert {r.range for r in shard_gets if r.range == "bytes=0-7"} == {"bytes=0-7"}
    shard = TINY / "model-00001-of-00002.safetensors"
    header_len = int.from_bytes(shard.read_bytes()[:8], "little")
    assert hub.bytes_served("model-00001-of-00002.safetensors") == 8 + header_len  # type: ignore[attr-defined]
    # files are fetched at the commit the API returned, not at a moving branch
    assert all(f"/resolve/{SHA}/" in r.path for r in shard_gets)


def test_single_file_repo_and_revision(hub: object) -> None:
    spec = load_hub_model("org/single@main")
    assert spec.tensors is not None
    assert {t.name for t in spec.tensors} == {
        t.name for t in load_safetensors_tensors(TINY / "model-00001-of-00002.safetensors")
    }
    api = [r for r in hub.requests if r.path.startswith("/api/")]  # type: ignore[attr-defined]
    assert api[0].path == "/api/models/org/single/revision/main"


def test_server_that_ignores_range_costs_only_the_header(hub: object) -> None:
    # A server answering 200 with the whole file: we still read only the bytes we asked for
    # (the connection is closed after them).
    spec = load_hub_model("org/lazy-server")
    assert spec.tensors is not None
    assert len(spec.tensors) == len(
        load_safetensors_tensors(TINY / "model-00001-of-00002.safetensors")
    )


def test_token_is_sent_and_gated_errors(hub: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # No token: 401 GatedRepo -> GatedRepoError with the license URL and HF_TOKEN hint.
    with pytest.raises(GatedRepoError) as e:
        load_hub_model("org/gated")
    msg = str(e.value)
    assert (
        "is gated: accept the license at https://huggingface.co/org/gated and set HF_TOKEN" in msg
    )
    # A token without access: 403 GatedRepo -> same error.
    monkeypatch.setenv("HF_TOKEN", "not-accepted")
    with pytest.raises(GatedRepoError):
        load_hub_model("org/gated")
    # The accepted token (read at call time) works and is sent as a Bearer header.
    monkeypatch.setenv("HF_TOKEN", "ok")
    spec = load_hub_model("org/gated")
    assert spec.tensors is not None
    assert any(r.authorization == "Bearer ok" for r in hub.requests)  # type: ignore[attr-defined]


def test_missing_repo_revision_and_config(hub: object) -> None:
    with pytest.raises(SourceNotFoundError, match="repository 'org/nope' not found") as e:
        load_hub_model("org/nope")
    assert "HF_TOKEN" in str(e.value)
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(SourceNotFoundError, match="revision 'v9' does not exist"):
        load_hub_model("org/tiny@v9")
    with pytest.raises(SourceNotFoundError, match=r"no config\.json"):
        load_hub_model("org/gguf-only")
    with pytest.raises(SourceNotFoundError, match="not a repo id"):
        load_hub_model("not a repo")


def test_lfs_redirect_keeps_token_on_same_host(
    hub: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Hub redirects weight downloads (302); the range reads follow it and keep the token
    # only because the redirect stays on the same host.
    monkeypatch.setenv("HF_TOKEN", "tok")
    spec = load_hub_model("org/redirect")
    assert spec.tensors is not None
    cdn = [r for r in hub.requests if r.path.startswith("/cdn/")]  # type: ignore[attr-defined]
    assert len(cdn) == 4
    assert all(r.range is not None for r in cdn)
    assert all(r.authorization == "Bearer tok" for r in cdn)


@pytest.mark.parametrize(
    ("repo", "error", "needle"),
    [
        # 3-byte file: the 8-byte length is missing
        ("org/short-file", SafetensorsFormatError, "the server sent 3 bytes"),
        # length claims 100 bytes, the file holds 8: the second range read comes back short
        ("org/cut-header", SafetensorsFormatError, "8 of 100 header bytes"),
        # config.json that is not JSON
        ("org/bad-config", __import__("oomkit.errors").errors.ConfigFormatError, "config.json"),
        # the API lists config.json but resolve says EntryNotFound
        ("org/listed-not-served", SourceNotFoundError, "the repo has no config.json"),
        # any other HTTP error from the file endpoint
        ("org/bad-request", SourceError, "config.json: .*400"),
    ],
)
def test_broken_repos(hub: object, repo: str, error: type[Exception], needle: str) -> None:
    with pytest.raises(error, match=needle):
        load_hub_model(repo)


@pytest.mark.parametrize(
    ("api_error", "error", "needle"),
    [
        # a gated answer from the API itself (private org policies)
        ((403, "GatedRepo"), GatedRepoError, "is gated"),
        # EntryNotFound from the API
        ((404, "EntryNotFound"), SourceNotFoundError, "a file listed by the Hub is missing"),
        # a server error: retry later, with the status and the Hub's message
        ((503, ""), SourceError, "HTTP 503: Server says no"),
    ],
)
def test_api_errors(
    hub: object, api_error: tuple[int, str], error: type[Exception], needle: str
) -> None:
    hub.repos["org/api-error"] = fake_hub.FakeRepo(files={}, api_error=api_error)  # type: ignore[attr-defined]
    with pytest.raises(error, match=needle):
        load_hub_model("org/api-error")


def test_config_only_repo_has_no_exact_tensors(hub: object) -> None:
    spec = load_hub_model("org/config-only")
    assert spec.tensors is None
    assert any("no safetensors" in a for a in spec.assumptions)
    # and offline afterwards: config from the cache, still no tensors
    offline = load_hub_model("org/config-only", offline=True)
    assert offline.tensors is None
    assert offline.hidden_size == spec.hidden_size


def test_bad_remote_header(hub: object) -> None:
    with pytest.raises(SafetensorsFormatError, match="over the 100000000-byte limit") as e:
        load_hub_model("org/bad-header")
    assert "/resolve/" in e.value.path


def test_offline_uses_the_cache(hub: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not cached + HF_HUB_OFFLINE=1 (read at call time) -> OfflineError with a hint, and no
    # request reaches the server.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="not in the Hugging Face cache") as e:
        load_hub_model("org/tiny")
    assert "OOMKIT_OFFLINE" in str(e.value)
    assert hub.requests == []  # type: ignore[attr-defined]
    # Online once fills the cache with config.json and the index ...
    monkeypatch.delenv("HF_HUB_OFFLINE")
    online = load_hub_model("org/tiny")
    # ... then offline works from it (no exact tensors: the shards are not cached)
    monkeypatch.setenv("OOMKIT_OFFLINE", "1")
    before = len(hub.requests)  # type: ignore[attr-defined]
    spec = load_hub_model("org/tiny")
    assert len(hub.requests) == before  # type: ignore[attr-defined]
    assert spec.hidden_size == online.hidden_size
    assert spec.tensors is None
    assert any("offline" in a for a in spec.assumptions)


def test_offline_with_cached_weights_reads_their_headers(
    hub: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A repo whose weights are in the cache (downloaded by transformers earlier): offline
    # still gives exact tensors, from the cached files' headers.
    from huggingface_hub import hf_hub_download

    for name in ("config.json", "model.safetensors"):
        hf_hub_download("org/single", name, cache_dir=hub_cache_dir(), endpoint=hub_endpoint())
    spec = load_hub_model("org/single", offline=True)
    assert spec.tensors is not None
    assert len(spec.tensors) == 10
    # an index in the cache without its shards gives no exact tensors, and no error
    hf_hub_download("org/tiny", "config.json", cache_dir=hub_cache_dir(), endpoint=hub_endpoint())
    hf_hub_download(
        "org/tiny",
        "model.safetensors.index.json",
        cache_dir=hub_cache_dir(),
        endpoint=hub_endpoint(),
    )
    assert load_hub_model("org/tiny", offline=True).tensors is None


def test_unreachable_hub_is_offline_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Port 9 on 127.0.0.1 refuses connections: the network-down case.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    for var in ("HF_HUB_OFFLINE", "OOMKIT_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(OfflineError, match="cannot reach the Hub"):
        load_hub_model("org/tiny")


def test_non_hub_endpoint_answer(hub: object) -> None:
    # HF_ENDPOINT pointing at something that is not a Hub: the API answer is not model info.
    hub.repos["org/weird"] = fake_hub.FakeRepo(  # type: ignore[attr-defined]
        files={}, sha=SHA, branches={"main": SHA}, api_body=b"<html>proxy login</html>"
    )
    with pytest.raises(SourceError, match="unexpected answer"):
        load_hub_model("org/weird")


def test_parse_and_env_helpers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert parse_hub_ref("org/name@v1.0") == HubRef(repo_id="org/name", revision="v1.0")
    assert str(HubRef(repo_id="a/b", revision="r")) == "a/b@r"
    assert str(HubRef(repo_id="a/b")) == "a/b"
    assert parse_hub_ref("https://huggingface.co/org/name") == HubRef(repo_id="org/name")
    assert parse_hub_ref("https://hf.co/org/name/blob/abc123/config.json") == HubRef(
        repo_id="org/name", revision="abc123"
    )
    for bad in (
        "name",
        "org/name@",
        "a/b/c",
        "../x",
        "org/..",
        "/abs/path",
        "https://example.com/org/name",
        "https://huggingface.co/datasets/x/y/z",
    ):
        assert parse_hub_ref(bad) is None, bad
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("OOMKIT_OFFLINE", "true")
    assert is_offline() is True
    assert is_offline(False) is False
    monkeypatch.setenv("OOMKIT_OFFLINE", "0")
    assert is_offline() is False
    monkeypatch.setenv("HF_ENDPOINT", "http://h:1/")
    assert hub_endpoint() == "http://h:1"
    monkeypatch.delenv("HF_ENDPOINT")
    assert hub_endpoint() == "https://huggingface.co"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "c"))
    assert hub_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "h"))
    assert hub_cache_dir() == tmp_path / "h" / "hub"
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert hub_cache_dir() == tmp_path / "x" / "huggingface" / "hub"


def test_errors_are_source_errors() -> None:
    # Every hub failure is catchable as SourceError (the CLI maps it to exit code 1).
    assert issubclass(GatedRepoError, SourceError)
    assert issubclass(OfflineError, SourceError)


def test_deeply_nested_hub_answers(hub: object) -> None:
    # issue 10: a hostile endpoint's nesting is a one-line error, not a RecursionError
    deep = b"[" * 100_000 + b"]" * 100_000
    hub.repos["org/deep-api"] = fake_hub.FakeRepo(  # type: ignore[attr-defined]
        files={}, sha=SHA, branches={"main": SHA}, api_body=deep
    )
    with pytest.raises(SourceError, match="unexpected answer"):
        load_hub_model("org/deep-api")
    hub.repos["org/deep-config"] = fake_hub.FakeRepo(  # type: ignore[attr-defined]
        files={"config.json": b'{"a": ' + deep + b"}"}, sha=SHA, branches={"main": SHA}
    )
    with pytest.raises(OomkitError):
        load_hub_model("org/deep-config")
