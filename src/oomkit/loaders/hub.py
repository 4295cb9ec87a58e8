"""Hugging Face Hub: ``org/name[@revision]`` -> config.json + safetensors headers, no weights.

What is fetched, and how (the same requests ``huggingface_hub`` makes):

1. ``GET {endpoint}/api/models/{repo}/revision/{rev}`` - the commit and the file list
   (``HfApi.model_info``), so a revision moving underneath us cannot mix two commits.
2. ``config.json`` (and ``model.safetensors.index.json`` for sharded checkpoints) through
   ``huggingface_hub.hf_hub_download``, so they land in, and are served from, the normal HF cache.
3. For each safetensors file, two HTTP range reads of ``{endpoint}/{repo}/resolve/{sha}/{file}``:
   ``bytes=0-7`` (header length) then ``bytes=8-{8+N-1}`` (the JSON header), as
   ``HfApi.get_safetensors_metadata`` does. The response body is never read past the range, so
   a server that ignores ``Range`` still costs only the header.

The environment is read at call time (never at import): ``HF_TOKEN`` (else the token saved by
``hf auth login``), ``HF_ENDPOINT``, ``HF_HUB_OFFLINE``/``OOMKIT_OFFLINE``, ``HF_HUB_CACHE``/
``HF_HOME``. Offline, config.json comes from the cache and safetensors headers from cached
weight files when they are there; nothing else is attempted.
"""

from __future__ import annotations

import json
import os
import re
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oomkit.errors import (
    GatedRepoError,
    OfflineError,
    OomkitError,
    SafetensorsFormatError,
    SourceError,
    SourceNotFoundError,
)
from oomkit.loaders.safetensors import (
    MAX_HEADER_BYTES,
    SafetensorsHeader,
    load_safetensors_tensors,
    parse_safetensors_header,
    parse_safetensors_index,
    tensor_infos,
)
from oomkit.spec.model import ModelSpec, TensorInfo

__all__ = [
    "DEFAULT_ENDPOINT",
    "HubRef",
    "hub_cache_dir",
    "hub_endpoint",
    "hub_page_ref",
    "is_offline",
    "load_hub_model",
    "parse_hub_ref",
    "repo_id_problem",
]

DEFAULT_ENDPOINT = "https://huggingface.co"
_TIMEOUT_S = 10.0
#: all Hub requests of one model load together must finish within this (a server that drips
#: one byte per 9 s never trips the per-socket timeout)
HUB_DEADLINE_S = 60.0
#: largest JSON answer read from the Hub API (a model's file list is ~100 KB)
MAX_API_BODY_BYTES = 16 << 20
#: most weight files read remotely for one model
MAX_REMOTE_FILES = 10_000
_CHUNK = 1 << 16
_MAX_PARALLEL_SHARDS = 8
#: a part of a Hub repo id (huggingface_hub utils/_validators.py ``validate_repo_id``:
#: ``REPO_ID_REGEX`` is ``\b[\w\-.]{1,96}\b`` compiled with ``re.ASCII``, "[a-zA-Z0-9] or '-',
#: '_', '.'", and it refuses "--", ".." and a trailing ".git")
_REPO_PART_MAX = 96
_REPO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
# https://huggingface.co/org/name[/tree/rev | /blob/rev/...] (also hf.co)
_URL_RE = re.compile(
    r"^https?://(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<repo>[^/@\s]+/[^/@\s]+)"
    r"(?:/(?:tree|blob|resolve)/(?P<rev>[^/\s]+)(?:/.*)?)?/?$"
)
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True, kw_only=True)
class HubRef:
    """A parsed ``org/name[@revision]``."""

    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.repo_id + (f"@{self.revision}" if self.revision else "")


def parse_hub_ref(ref: str) -> HubRef | None:
    """Parse ``org/name``, ``org/name@revision`` or a model page URL; None for anything else.

    >>> parse_hub_ref("meta-llama/Llama-3.1-8B@main")
    HubRef(repo_id='meta-llama/Llama-3.1-8B', revision='main')
    >>> parse_hub_ref("https://huggingface.co/Qwen/Qwen3-8B/tree/v1")
    HubRef(repo_id='Qwen/Qwen3-8B', revision='v1')
    >>> parse_hub_ref("llama-3.1-8b") is None
    True
    """
    text = hub_page_ref(ref) or ref.strip()
    repo, at, revision = text.partition("@")
    if repo_id_problem(repo) is not None or (at and not revision):
        return None
    return HubRef(repo_id=repo, revision=revision or None)


def hub_page_ref(url: str) -> str | None:
    """``org/name[@rev]`` as a model page URL spells it, checked or not; None for another text.

    >>> hub_page_ref("https://huggingface.co/Qwen/Qwen3-8B/tree/v1")
    'Qwen/Qwen3-8B@v1'
    """
    m = _URL_RE.match(url.strip())
    if m is None:
        return None
    return m.group("repo") + (f"@{m.group('rev')}" if m.group("rev") else "")


def repo_id_problem(repo: str) -> str | None:
    """Why ``repo`` is not a Hub repo id ``org/name``; None when it is one.

    The rules of ``huggingface_hub.utils.validate_repo_id`` (ASCII letters, digits, '-', '_',
    '.'; 1 to 96 of them a part, starting and ending with a letter, digit or '_'; no '--',
    '..' or trailing '.git'), with the namespace required: a bare name is a catalog name.
    Checked before any request: ``http.client`` cannot even send a non-ASCII path.

    >>> repo_id_problem("Qwen/Qwen3-8B") is None
    True
    >>> repo_id_problem("Qwen/通义千问")
    "letters, digits, '-', '_', '.' only, not '通', '义', '千', '问'"
    """
    parts = repo.split("/")
    if len(parts) != 2:
        return "a repo id is org/name, with one '/'"
    bad = [c for c in dict.fromkeys(repo) if c != "/" and c not in _REPO_CHARS]
    if bad:
        shown = ", ".join(repr(c) if c.isprintable() else ascii(c) for c in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        return f"letters, digits, '-', '_', '.' only, not {shown}{more}"
    for part in parts:
        if not part:
            return "a repo id is org/name; neither part may be empty"
        if len(part) > _REPO_PART_MAX:
            return f"at most {_REPO_PART_MAX} characters a part, not {len(part)}"
        if part[0] in "-." or part[-1] in "-.":
            return "a part cannot start or end with '-' or '.'"
    if "--" in repo or ".." in repo:
        return "no '--' or '..'"
    if repo.endswith(".git"):
        return "it cannot end in '.git'"
    return None


def is_offline(offline: bool | None = None) -> bool:
    """``offline`` when given, else ``OOMKIT_OFFLINE`` or ``HF_HUB_OFFLINE`` (read now)."""
    if offline is not None:
        return offline
    return any(
        os.environ.get(var, "").strip().lower() in _TRUE
        for var in ("OOMKIT_OFFLINE", "HF_HUB_OFFLINE")
    )


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` (read now) without a trailing slash, else https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_cache_dir() -> Path:
    """The HF hub cache, resolved now: ``HF_HUB_CACHE``, ``HF_HOME/hub``, ``XDG_CACHE_HOME``..."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg) / "huggingface" / "hub"


def _token() -> str | None:
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        token = token.strip()
        if not token.isprintable() or " " in token:
            # never echo it: http.client would put the whole header value in its error
            raise GatedRepoError(
                "HF_TOKEN contains whitespace or a control character (a pasted newline?); "
                "set it to the token alone.",
                source="HF_TOKEN",
            )
        return token
    try:
        from huggingface_hub import get_token
    except ImportError:  # pragma: no cover - huggingface_hub is a test dependency
        return None
    saved = get_token()
    return saved or None


def _gated(ref: HubRef) -> GatedRepoError:
    return GatedRepoError(
        f"Fetching model files failed for '{ref}' (Hugging Face Hub): {ref.repo_id} is gated: "
        f"accept the license at https://huggingface.co/{ref.repo_id} and set HF_TOKEN "
        "(or run 'hf auth login').",
        source=str(ref),
    )


def _not_found(ref: HubRef, what: str) -> SourceNotFoundError:
    return SourceNotFoundError(
        f"Fetching model files failed for '{ref}' (Hugging Face Hub): {what}. Check the "
        "spelling at https://huggingface.co/models; for a private repo set HF_TOKEN; for a "
        "local model pass its path.",
        source=str(ref),
    )


def _offline(ref: HubRef, why: str) -> OfflineError:
    return OfflineError(
        f"Fetching model files failed for '{ref}' (offline): {why}. Run once online to fill the "
        "cache (unset OOMKIT_OFFLINE/HF_HUB_OFFLINE), or pass a local config.json, model "
        "directory or .gguf file.",
        source=str(ref),
    )


def _http_error(ref: HubRef, code: int, error_code: str | None, message: str | None) -> OomkitError:
    """Map a Hub HTTP error to ours, like huggingface_hub's ``hf_raise_for_status``."""
    if error_code == "GatedRepo":
        return _gated(ref)
    if error_code == "RevisionNotFound":
        return _not_found(ref, f"revision '{ref.revision}' does not exist")
    if error_code == "EntryNotFound":
        return _not_found(ref, "a file listed by the Hub is missing")
    if error_code == "RepoNotFound" or code in (401, 404):
        # the Hub answers 401 for private and missing repos alike
        return _not_found(ref, f"repository '{ref.repo_id}' not found (or private)")
    return SourceError(
        f"Fetching model files failed for '{ref}' (Hugging Face Hub): HTTP {code}"
        f"{': ' + message if message else ''}. Retry later, or pass a local path.",
        source=str(ref),
    )


class _AuthOnSameHost(urllib.request.HTTPRedirectHandler):
    """Follow redirects; send the token again only to the same host (CDN URLs are pre-signed)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get("Authorization")
        same_host = (
            urllib.parse.urlsplit(newurl).netloc == urllib.parse.urlsplit(req.full_url).netloc
        )
        if new is not None and auth and same_host:
            new.add_unredirected_header("Authorization", auth)
        return new


class _Http:
    """Minimal GET client for the Hub API and range reads (stdlib only)."""

    def __init__(self, ref: HubRef, endpoint: str, token: str | None) -> None:
        self.ref = ref
        self.endpoint = endpoint
        self.token = token
        self.opener = urllib.request.build_opener(_AuthOnSameHost())
        self.deadline = time.monotonic() + HUB_DEADLINE_S

    def _too_slow(self) -> OfflineError:
        return OfflineError(
            f"Fetching model files failed for '{self.ref}' ({self.endpoint}): the Hub did not "
            f"answer within {HUB_DEADLINE_S:g} s. Try again, or pass a local config.json.",
            source=str(self.ref),
        )

    def _read(self, resp: Any, limit: int) -> bytes:
        """Up to ``limit`` bytes in chunks, checking the overall deadline between chunks."""
        parts: list[bytes] = []
        got = 0
        while got < limit:
            if time.monotonic() > self.deadline:
                raise self._too_slow()
            # read1: what has arrived (read(n) would wait for all n bytes of a dripping server)
            reader = getattr(resp, "read1", resp.read)
            chunk = reader(min(_CHUNK, limit - got))
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def get(self, url: str, *, range_: tuple[int, int] | None = None) -> tuple[bytes, int | None]:
        """GET ``url``; return (body, total size of the resource when the server says)."""
        req = urllib.request.Request(url, headers={"User-Agent": "oomkit"})
        if self.token:
            req.add_unredirected_header("Authorization", f"Bearer {self.token}")
        limit = None
        if range_ is not None:
            req.add_header("Range", f"bytes={range_[0]}-{range_[1]}")
            limit = range_[1] - range_[0] + 1
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise self._too_slow()
        try:
            with self.opener.open(req, timeout=min(_TIMEOUT_S, remaining)) as resp:
                total = _total_size(
                    resp.headers.get("Content-Range"), resp.headers.get("Content-Length")
                )
                if range_ is not None and resp.status == 200 and range_[0] > 0:
                    self._read(resp, range_[0])  # server ignored Range: skip to the wanted bytes
                cap = limit if limit is not None else MAX_API_BODY_BYTES + 1
                body = self._read(resp, cap)
                if limit is None and len(body) > MAX_API_BODY_BYTES:
                    raise SourceError(
                        f"Fetching model files failed for '{self.ref}' ({self.endpoint}): the "
                        f"answer is over {MAX_API_BODY_BYTES >> 20} MiB. Check HF_ENDPOINT "
                        "points at a Hugging Face Hub.",
                        source=str(self.ref),
                    )
                return body, total
        except urllib.error.HTTPError as e:
            e.close()
            raise _http_error(
                self.ref, e.code, e.headers.get("X-Error-Code"), e.headers.get("X-Error-Message")
            ) from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise OfflineError(
                f"Fetching model files failed for '{self.ref}' ({self.endpoint}): cannot reach "
                f"the Hub ({reason}). Check the network or HF_ENDPOINT, or set OOMKIT_OFFLINE=1 "
                "to use the cache only.",
                source=str(self.ref),
            ) from e


def _total_size(content_range: str | None, content_length: str | None) -> int | None:
    if content_range and "/" in content_range:
        total = content_range.rpartition("/")[2].strip()
        return int(total) if total.isdigit() else None
    return int(content_length) if content_length and content_length.isdigit() else None


def _remote_header(http: _Http, base: str, filename: str) -> SafetensorsHeader:
    url = f"{base}/{urllib.parse.quote(filename)}"
    prefix, total = http.get(url, range_=(0, 7))
    if len(prefix) < 8:
        raise SafetensorsFormatError(
            f"Reading safetensors header failed for '{url}' (byte offset 0): the server sent "
            f"{len(prefix)} bytes for the 8-byte length. Retry; the file may be empty.",
            path=url,
            offset=0,
        )
    (n,) = struct.unpack("<Q", prefix)
    if n > MAX_HEADER_BYTES:
        raise SafetensorsFormatError(
            f"Reading safetensors header failed for '{url}' (byte offset 0): header length claims "
            f"{n} bytes, over the {MAX_HEADER_BYTES}-byte limit. The file is not a safetensors "
            "checkpoint.",
            path=url,
            offset=0,
        )
    header, _ = http.get(url, range_=(8, 8 + n - 1)) if n else (b"", None)
    if len(header) < n:
        raise SafetensorsFormatError(
            f"Reading safetensors header failed for '{url}' (byte offset 8): the server sent "
            f"{len(header)} of {n} header bytes. Retry the request.",
            path=url,
            offset=8,
        )
    return parse_safetensors_header(header, path=url, file_bytes=total)


def _hf_download(ref: HubRef, filename: str, revision: str | None, *, offline: bool) -> Path:
    """``hf_hub_download`` with the environment read now; its errors mapped to ours."""
    try:
        import huggingface_hub
        from huggingface_hub import constants as hf_constants
        from huggingface_hub import errors as hf_errors
    except ImportError as e:  # pragma: no cover - huggingface_hub is a test dependency
        raise SourceError(
            f"Fetching model files failed for '{ref}' (Hugging Face Hub): huggingface_hub is not "
            "installed. Run: pip install 'oomkit[hub]'.",
            source=str(ref),
        ) from e
    # huggingface_hub freezes HF_HUB_OFFLINE when it is first imported
    # (huggingface_hub/constants.py); make it agree with our call-time reading for this call.
    frozen_offline = hf_constants.HF_HUB_OFFLINE
    hf_constants.HF_HUB_OFFLINE = offline
    try:
        path = huggingface_hub.hf_hub_download(
            ref.repo_id,
            filename,
            revision=revision,
            cache_dir=hub_cache_dir(),
            endpoint=hub_endpoint(),
            token=_token() or False,
            local_files_only=offline,
        )
    except hf_errors.GatedRepoError as e:
        raise _gated(ref) from e
    except hf_errors.RepositoryNotFoundError as e:
        raise _not_found(ref, f"repository '{ref.repo_id}' not found (or private)") from e
    except hf_errors.RevisionNotFoundError as e:
        raise _not_found(ref, f"revision '{ref.revision}' does not exist") from e
    except hf_errors.RemoteEntryNotFoundError as e:
        raise _not_found(ref, f"the repo has no {filename}") from e
    except (hf_errors.LocalEntryNotFoundError, hf_errors.OfflineModeIsEnabled) as e:
        why = f"{filename} is not in the Hugging Face cache ({hub_cache_dir()})"
        cause = e.__cause__
        if offline or cause is None:
            raise _offline(ref, why) from e
        if isinstance(cause, hf_errors.HfHubHTTPError):  # the Hub answered, with an error
            status = getattr(cause.response, "status_code", "error")
            raise SourceError(
                f"Fetching model files failed for '{ref}' (Hugging Face Hub): {filename}: "
                f"HTTP {status} ({str(cause).strip()}). Retry later, or pass a local path.",
                source=str(ref),
            ) from e
        raise _offline(ref, f"{why} and the Hub cannot be reached ({cause})") from e
    except (hf_errors.HfHubHTTPError, OSError) as e:
        raise SourceError(
            f"Fetching model files failed for '{ref}' (Hugging Face Hub): {filename}: {e}. "
            "Retry later, or pass a local path.",
            source=str(ref),
        ) from e
    finally:
        hf_constants.HF_HUB_OFFLINE = frozen_offline
    return Path(str(path))


def _read_json(path: Path, ref: HubRef) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        from oomkit.errors import ConfigFormatError

        raise ConfigFormatError(
            f"Reading {path.name} failed for '{ref}' ({path}): {e}. Delete the cached file and "
            "retry.",
            path=str(path),
        ) from e


def _weight_files(siblings: list[str]) -> tuple[str | None, tuple[str, ...]]:
    """(index file, root-level safetensors files) from a repo's file list."""
    if "model.safetensors.index.json" in siblings:
        return "model.safetensors.index.json", ()
    root = tuple(sorted(f for f in siblings if f.endswith(".safetensors") and "/" not in f))
    return None, root


def _remote_tensors(
    ref: HubRef, http: _Http, sha: str, siblings: list[str], bits: int | None
) -> tuple[TensorInfo, ...] | None:
    index, files = _weight_files(siblings)
    if index is not None:
        index_path = _hf_download(ref, index, ref.revision, offline=False)
        files = tuple(
            sorted(parse_safetensors_index(index_path.read_bytes(), path=str(index_path)))
        )
    if not files:
        return None
    if len(files) > MAX_REMOTE_FILES:
        raise SourceError(
            f"Fetching model files failed for '{ref}': {len(files)} weight files, over the "
            f"{MAX_REMOTE_FILES} limit.",
            source=str(ref),
        )
    base = f"{http.endpoint}/{ref.repo_id}/resolve/{sha}"
    with ThreadPoolExecutor(max_workers=min(_MAX_PARALLEL_SHARDS, len(files))) as pool:
        headers = tuple(pool.map(lambda f: _remote_header(http, base, f), files))
    return tensor_infos(headers, bits=bits)


def _cached_tensors(ref: HubRef, bits: int | None) -> tuple[TensorInfo, ...] | None:
    """Headers of weight files already in the HF cache (offline)."""
    from huggingface_hub import try_to_load_from_cache

    for name in ("model.safetensors.index.json", "model.safetensors"):
        hit = try_to_load_from_cache(
            ref.repo_id, name, cache_dir=hub_cache_dir(), revision=ref.revision
        )
        if isinstance(hit, str):
            try:
                return load_safetensors_tensors(hit, bits=bits)
            except SourceNotFoundError:
                return None  # index cached but some shard not: no exact tensors
    return None


def load_hub_model(ref: str, *, offline: bool | None = None) -> ModelSpec:
    """Build a spec for a Hub repo from its config.json and safetensors headers (no weights).

    Args:
        ref: ``org/name`` or ``org/name@revision`` (branch, tag or commit).
        offline: force offline mode; None reads ``OOMKIT_OFFLINE``/``HF_HUB_OFFLINE`` now.

    Returns:
        The spec with ``source="hub"``; ``tensors`` holds the exact tensors when the repo has
        safetensors weights (None otherwise, with a note in ``assumptions``).

    Raises:
        GatedRepoError: the repo is gated and HF_TOKEN is missing or not yet accepted.
        SourceNotFoundError: no such repo, revision or config.json.
        OfflineError: offline and not cached, or the Hub cannot be reached.
        SafetensorsFormatError: a safetensors header is malformed.
    """
    parsed = parse_hub_ref(ref)
    if parsed is None:
        raise SourceNotFoundError(
            f"Resolving model failed for '{ref}' (Hugging Face Hub): not a repo id. Write "
            "org/name or org/name@revision.",
            source=ref,
        )
    from oomkit.loaders.hf_config import parse_config

    off = is_offline(offline)
    notes: list[str] = []
    if off:
        config = _read_json(
            _hf_download(parsed, "config.json", parsed.revision, offline=True), parsed
        )
        spec = parse_config(config, name=parsed.repo_id, source="hub")
        bits = spec.quantization.bits if spec.quantization else None
        tensors = _cached_tensors(parsed, bits)
        if tensors is None:
            notes.append(
                "offline: safetensors headers not in the cache; tensors derived from config"
            )
    else:
        http = _Http(parsed, hub_endpoint(), _token())
        rev = urllib.parse.quote(parsed.revision or "main", safe="")
        info_raw, _ = http.get(f"{http.endpoint}/api/models/{parsed.repo_id}/revision/{rev}")
        try:
            info = json.loads(info_raw)
            sha = str(info.get("sha") or parsed.revision or "main")
            siblings = [str(s["rfilename"]) for s in info.get("siblings", [])]
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
            raise SourceError(
                f"Fetching model files failed for '{parsed}' (Hugging Face Hub API): unexpected "
                f"answer ({e}). Check HF_ENDPOINT points at a Hugging Face Hub.",
                source=str(parsed),
            ) from e
        if "config.json" not in siblings:
            raise _not_found(
                parsed,
                "the repo has no config.json (a GGUF-only repo? download the .gguf, pass its path)",
            )
        # by the user's revision (not the sha) so the cache records refs/<branch> for offline use
        config = _read_json(
            _hf_download(parsed, "config.json", parsed.revision, offline=False), parsed
        )
        spec = parse_config(config, name=parsed.repo_id, source="hub")
        bits = spec.quantization.bits if spec.quantization else None
        tensors = _remote_tensors(parsed, http, sha, siblings, bits)
        if tensors is None:
            notes.append("no safetensors weights in the repo; tensors derived from config")
    return replace(spec, tensors=tensors, source="hub", assumptions=(*spec.assumptions, *notes))
