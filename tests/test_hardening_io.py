"""Issue 10 item 3: inputs from the outside world are bounded in size and time.

Real parts: a local HTTP server on 127.0.0.1 (slow and oversized Hub answers), real pipes and
files for the doctor, pickles written by ``pickle`` for the snapshot reader.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from oomkit.cli import main
from oomkit.errors import (
    GatedRepoError,
    MissingDependencyError,
    OfflineError,
    SnapshotFormatError,
    SourceError,
)


class _Handler(BaseHTTPRequestHandler):
    mode = "drip"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            if self.mode == "drip":
                self.wfile.write(b'{"sha": "')
                for _ in range(100):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(0.2)
            else:
                self.wfile.write(b'{"x": "' + b"a" * 5000 + b'"}')
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _http(srv: ThreadingHTTPServer) -> object:
    from oomkit.loaders import hub

    ref = hub.parse_hub_ref("org/model")
    assert ref is not None
    return hub._Http(ref, f"http://127.0.0.1:{srv.server_address[1]}", None)


def test_hub_overall_deadline(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from oomkit.loaders import hub

    monkeypatch.setattr(hub, "HUB_DEADLINE_S", 1.0)
    _Handler.mode = "drip"
    http = _http(server)
    t0 = time.process_time()
    with pytest.raises(OfflineError, match="did not answer within 1 s"):
        http.get(f"{http.endpoint}/api/models/org/model/revision/main")  # type: ignore[attr-defined]
    assert time.process_time() - t0 < 5


def test_hub_body_cap(server: ThreadingHTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from oomkit.loaders import hub

    monkeypatch.setattr(hub, "MAX_API_BODY_BYTES", 1000)
    _Handler.mode = "big"
    http = _http(server)
    with pytest.raises(SourceError, match=r"over \d+ MiB"):
        http.get(f"{http.endpoint}/api/models/org/model/revision/main")  # type: ignore[attr-defined]


def test_hf_token_with_newline_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    from oomkit.loaders import hub

    monkeypatch.setenv("HF_TOKEN", "hf_secretvalue123\nX")
    with pytest.raises(GatedRepoError) as e:
        hub._token()
    assert "secretvalue" not in str(e.value)


def test_offline_hint_only_when_offline_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from oomkit.cli.output import error_exit_code

    err = OfflineError("x", source="org/m")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("OOMKIT_OFFLINE", raising=False)
    assert "HF_HUB_OFFLINE" not in (error_exit_code(err)[1] or "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "unset HF_HUB_OFFLINE" in (error_exit_code(err)[1] or "")


@pytest.mark.parametrize("value", ["inf", "nan", "1e9", "0", "0.0", "1e-9", "0.05"])
def test_gpus_watch_bounded(capsys: pytest.CaptureFixture[str], value: str) -> None:
    """0 (or a tiny interval) would re-query the GPUs in a busy loop: refused, one line."""
    assert main(["gpus", "--watch", value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ")
    assert "--watch" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["--watch", "-1"], ["--watch=-1"], ["--watch", "-0.5"]])
def test_gpus_watch_negative_names_the_option(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """click reads a negative value of an optional-value option as an unknown option ("No such
    option '-1'"); the error names --watch and the value instead."""
    assert main(["gpus", *args]) == 2
    err = capsys.readouterr().err
    assert "Invalid value for '--watch'" in err
    assert "No such option" not in err
    assert len(err.strip().splitlines()) == 1
    # a stray negative number after a flag is still an unknown option
    assert main(["gpus", "--json", "-1"]) == 2
    assert "No such option '-1'" in capsys.readouterr().err


def test_nvidia_smi_inf_values() -> None:
    from oomkit.hardware.smi import parse_query_gpu_csv

    text = (
        "index, name, uuid, memory.total [MiB], memory.used [MiB], memory.free [MiB], "
        "utilization.gpu [%]\n0, NVIDIA A100, GPU-1, inf, nan, 1e400, inf\n"
    )
    devices = parse_query_gpu_csv(text)
    assert all(d.memory_total_bytes is None for d in devices)


def _oomkit(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    return subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m oomkit {" ".join(args)} {stdin}'],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_doctor_with_stdin_closed() -> None:
    r = _oomkit("doctor", "-", stdin="<&-")
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("Error: "), r.stderr
    assert "stdin is closed" in r.stderr
    assert "Traceback" not in r.stderr


def test_doctor_input_cap_streams_head_and_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oomkit.cli import doctor

    monkeypatch.setattr(doctor, "MAX_LOG_BYTES", 1 << 20)
    monkeypatch.setattr(doctor, "_HEAD_BYTES", 64 << 10)
    monkeypatch.setattr(doctor, "_CHUNK", 16 << 10)
    log = tmp_path / "big.log"
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 23.65 GiB of which 1.02 GiB is free. Including non-PyTorch memory, "
        "this process has 22.61 GiB memory in use.\n"
    )
    log.write_text("step ok\n" * 500_000 + oom)  # 4 MB of noise, the OOM at the end
    code = main(["doctor", str(log)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "skipped" in err
    assert "2.00 GiB" in out or "2 GiB" in out


def test_free_memory_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    from oomkit.inprocess import torch_memory

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match="PyTorch is not installed"):
        torch_memory.allocator_stats()
    with pytest.raises(MissingDependencyError):
        torch_memory.free_memory()


def _snap(tmp_path: Path, raw: bytes) -> Path:
    p = tmp_path / "snap.pickle"
    p.write_bytes(raw)
    return p


def test_snapshot_length_claim(tmp_path: Path) -> None:
    from oomkit.inprocess.snapshot import load_snapshot

    # BINBYTES8 claiming 2^40 bytes, then nothing
    raw = b"\x80\x04\x8e" + (1 << 40).to_bytes(8, "little") + b"xx"
    t0 = time.process_time()
    with pytest.raises(SnapshotFormatError):
        load_snapshot(_snap(tmp_path, raw))
    assert time.process_time() - t0 < 2


def test_snapshot_deep_lists(tmp_path: Path) -> None:
    from oomkit.inprocess.snapshot import load_snapshot

    raw = b"\x80\x04" + b"]" * 100_000 + b"a" * 99_999 + b"."  # EMPTY_LIST x N, APPEND x N-1
    with pytest.raises(SnapshotFormatError, match="nested deeper"):
        load_snapshot(_snap(tmp_path, raw))


def test_snapshot_memo_fan_out(tmp_path: Path) -> None:
    from oomkit.inprocess.snapshot import load_snapshot

    x: list[object] = ["leaf"]
    for _ in range(30):  # each level references the previous list 1000 times: 1000^30 leaves
        x = [x] * 1000
    raw = pickle.dumps({"segments": x}, protocol=4)
    assert len(raw) < 200_000
    t0 = time.process_time()
    with pytest.raises(SnapshotFormatError, match=r"fanned out|nested"):
        load_snapshot(_snap(tmp_path, raw))
    assert time.process_time() - t0 < 10
