"""A local fake of the Hugging Face Hub HTTP API, serving real files on 127.0.0.1.

It answers the requests oomkit and huggingface_hub make, the way huggingface.co answers them
(status codes and ``X-Error-Code`` values as in huggingface_hub ``utils/_http.py``
``hf_raise_for_status``):

* ``GET /api/models/{repo}/revision/{rev}`` - JSON with ``sha`` and ``siblings``; a missing repo
  is ``401`` + ``X-Error-Code: RepoNotFound`` (the Hub does not tell missing from private), an
  unknown revision ``404`` + ``RevisionNotFound``.
* ``HEAD|GET /{repo}/resolve/{rev}/{file}`` - the file with ``X-Repo-Commit``, ``ETag``,
  ``Content-Length``, ``Accept-Ranges: bytes``; ``Range: bytes=a-b`` gives ``206`` +
  ``Content-Range``. A gated repo answers ``401`` (no token) or ``403`` (token without access)
  with ``X-Error-Code: GatedRepo``; a missing file ``404`` + ``EntryNotFound``.

Every request is logged (method, path, Range, Authorization) so tests can check that weights
were never downloaded.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FakeHub", "FakeRepo", "Request", "serve"]


@dataclass
class FakeRepo:
    files: Mapping[str, bytes]
    sha: str = "0" * 40
    branches: Mapping[str, str] = field(default_factory=lambda: {"main": "0" * 40})
    gated: bool = False
    #: tokens that have accepted the license of a gated repo
    allowed_tokens: frozenset[str] = frozenset()
    #: answer Range requests with 200 and the whole body (a server that ignores Range)
    ignore_range: bool = False
    #: replace the API's JSON answer (a proxy or a non-Hub server behind HF_ENDPOINT)
    api_body: bytes | None = None
    #: answer the API with this (status, X-Error-Code), e.g. (500, "") or (403, "GatedRepo")
    api_error: tuple[int, str] | None = None
    #: redirect safetensors downloads to /cdn/... (relative, same host) as the Hub does for LFS
    redirect_weights: bool = False
    #: answer every resolve request with this status (e.g. 400) instead of the file
    resolve_status: int | None = None


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None
    authorization: str | None


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo]
    requests: list[Request] = field(default_factory=list)
    endpoint: str = ""

    def bytes_served(self, suffix: str) -> int:
        """Body bytes sent for GETs of files whose path ends with ``suffix``."""
        return sum(r[1] for r in self._served if r[0].endswith(suffix))

    _served: list[tuple[str, int]] = field(default_factory=list)


_API = re.compile(r"^/api/models/([^/]+/[^/]+)/revision/([^/]+)$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_CDN = re.compile(r"^/cdn/([^/]+/[^/]+)/([^/]+)/(.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(
            self, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None
        ) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if "Content-Length" not in (headers or {}):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                # recorded before the write: the client may read the body and the test check
                # the count before this thread runs again (a race seen in a CI dry run)
                hub._served.append((self.path, len(body)))
                self.wfile.write(body)

        def _error(self, status: int, code: str, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            self._send(
                status,
                body,
                {
                    "X-Error-Code": code,
                    "X-Error-Message": message,
                    "Content-Type": "application/json",
                },
            )

        def _token(self) -> str | None:
            auth = self.headers.get("Authorization")
            return auth.removeprefix("Bearer ").strip() if auth else None

        def _revision(self, repo: FakeRepo, rev: str) -> str | None:
            if rev == repo.sha:
                return rev
            return repo.branches.get(rev)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            hub.requests.append(
                Request(
                    self.command,
                    path,
                    self.headers.get("Range"),
                    self.headers.get("Authorization"),
                )
            )
            if m := _API.match(path):
                return self._api(m.group(1), m.group(2))
            if m := _RESOLVE.match(path):
                return self._resolve(m.group(1), m.group(2), m.group(3))
            if m := _CDN.match(path):
                return self._resolve(m.group(1), m.group(2), m.group(3), cdn=True)
            return self._error(404, "EntryNotFound", "Not Found")

        def _api(self, repo_id: str, rev: str) -> None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(401, "RepoNotFound", "Repository not found")
            if repo.api_error is not None:
                return self._error(repo.api_error[0], repo.api_error[1], "Server says no")
            sha = self._revision(repo, rev)
            if sha is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            info = {
                "_id": "x",
                "id": repo_id,
                "modelId": repo_id,
                "sha": sha,
                "private": False,
                "gated": "manual" if repo.gated else False,
                "siblings": [{"rfilename": f} for f in sorted(repo.files)],
            }
            body = repo.api_body if repo.api_body is not None else json.dumps(info).encode()
            self._send(200, body, {"Content-Type": "application/json"})
            return None

        def _resolve(self, repo_id: str, rev: str, filename: str, *, cdn: bool = False) -> None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(401, "RepoNotFound", "Repository not found")
            if repo.resolve_status is not None:
                return self._error(repo.resolve_status, "", "Bad request")
            if repo.redirect_weights and not cdn and filename.endswith(".safetensors"):
                sha = self._revision(repo, rev) or rev
                self._send(302, b"", {"Location": f"/cdn/{repo_id}/{sha}/{filename}"})
                return None
            if repo.gated and self._token() not in repo.allowed_tokens:
                if self._token() is None:
                    return self._error(
                        401,
                        "GatedRepo",
                        f"Access to model {repo_id} is restricted. You must have access to it "
                        "and be authenticated to access it. Please log in.",
                    )
                return self._error(
                    403,
                    "GatedRepo",
                    f"Access to model {repo_id} is restricted and you are not in the "
                    "authorized list. Visit https://huggingface.co/{repo_id} to ask for access.",
                )
            sha = self._revision(repo, rev)
            if sha is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            body = repo.files.get(filename)
            if body is None:
                return self._error(404, "EntryNotFound", f"{filename} does not exist")
            headers = {
                "X-Repo-Commit": sha,
                "ETag": '"' + hashlib.sha256(body).hexdigest() + '"',
                "Accept-Ranges": "bytes",
                "Content-Type": "application/octet-stream",
            }
            rng = self.headers.get("Range")
            m = _RANGE.match(rng) if rng else None
            if m and not repo.ignore_range:
                start = int(m.group(1))
                end = min(int(m.group(2)) if m.group(2) else len(body) - 1, len(body) - 1)
                if start >= len(body):
                    self._send(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                    return None
                headers["Content-Range"] = f"bytes {start}-{end}/{len(body)}"
                self._send(206, body[start : end + 1], headers)
                return None
            self._send(200, body, headers)
            return None

    return Handler


@contextmanager
def serve(repos: dict[str, FakeRepo]) -> Iterator[FakeHub]:
    """Run a fake Hub on 127.0.0.1 (random port) for the duration of the ``with`` block."""
    hub = FakeHub(repos=repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
