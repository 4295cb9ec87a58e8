"""snapshot_report: a snapshot-shaped pickle written here, checked against torch's own viewer,
and hostile/absurd pickles refused by the restricted unpickler."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oomkit.errors import SnapshotFormatError
from oomkit.inprocess import snapshot
from oomkit.inprocess.snapshot import load_snapshot, snapshot_report
from oomkit.units import GiB, KiB, MiB

ROOT = Path(__file__).resolve().parents[1]


def _frames(filename: str, line: int, name: str) -> list[dict[str, Any]]:
    # Same shape as torch's recorded stacks: C++ and torch-internal frames first, then user code.
    return [
        {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"},
        {"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125,
         "name": "forward"},
        {"filename": filename, "line": line, "name": name},
    ]  # fmt: skip


def _block(size: int, state: str, frames: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "address": 0,
        "size": size,
        "requested_size": size,
        "state": state,
        "frames": frames or [],
    }


def _segment(addr: int, blocks: list[dict[str, Any]], seg_type: str) -> dict[str, Any]:
    offset = addr
    for b in blocks:
        b["address"] = offset
        offset += b["size"]
    total = sum(b["size"] for b in blocks)
    allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    active = sum(b["size"] for b in blocks if b["state"] != "inactive")
    return {
        "device": 0,
        "address": addr,
        "total_size": total,
        "allocated_size": allocated,
        "active_size": active,
        "requested_size": allocated,
        "stream": 0,
        "segment_type": seg_type,
        "segment_pool_id": (0, 0),
        "is_expandable": False,
        "frames": [],
        "blocks": blocks,
    }


def make_snapshot() -> dict[str, Any]:
    """A fragmented device: 25 MiB reserved-but-free, largest hole 16 MiB, 20 MiB request failed."""
    train = _frames("/home/u/train.py", 42, "step")
    attn = _frames("/home/u/model.py", 10, "attention")
    large = _segment(
        0x7F0000000000,
        [
            _block(16 * MiB, "active_allocated", train),
            _block(8 * MiB, "inactive"),
            _block(24 * MiB, "active_allocated", attn),
            _block(16 * MiB, "inactive"),
        ],
        "large",
    )
    small = _segment(
        0x7F1000000000,
        [
            _block(512 * KiB, "active_allocated", train),
            _block(512 * KiB, "active_pending_free"),
            _block(1 * MiB, "inactive"),
        ],
        "small",
    )
    trace = [
        {"action": "segment_alloc", "addr": 0x7F0000000000, "size": 64 * MiB, "stream": 0,
         "frames": train},
        {"action": "alloc", "addr": 0x7F0000000000, "size": 16 * MiB, "stream": 0, "frames": train},
        {"action": "oom", "size": 20 * MiB, "stream": 0, "device_free": 4 * MiB, "frames": attn},
    ]  # fmt: skip
    return {"segments": [large, small], "device_traces": [trace], "external_annotations": []}


def test_report_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(make_snapshot()))
    rep = snapshot_report(path)
    assert rep.segment_count == 2
    assert rep.reserved_bytes == 66 * MiB
    assert rep.allocated_bytes == 40 * MiB + 512 * KiB
    assert rep.pending_free_bytes == 512 * KiB
    assert rep.reserved_unallocated_bytes == 25 * MiB
    assert rep.largest_free_block_bytes == 16 * MiB
    assert rep.failed_request_bytes == 20 * MiB
    assert rep.device_free_at_oom_bytes == 4 * MiB
    assert rep.request_fits_largest_free_block is False
    # Segments ranked by reserved-but-unallocated bytes.
    assert [s.unallocated_bytes for s in rep.segments] == [24 * MiB, 1 * MiB]
    assert rep.segments[0].largest_free_block_bytes == 16 * MiB
    # Allocation sites: the first user frame, not torch/ or C++ frames.
    assert rep.top_sites[0].location == "/home/u/model.py:10 in attention"
    assert rep.top_sites[0].allocated_bytes == 24 * MiB
    assert rep.top_sites[1].location == "/home/u/train.py:42 in step"
    assert rep.top_sites[1].count == 2
    assert any("expandable_segments:True" in a for a in rep.advice)
    text = rep.format()
    assert "failed request: 20.00 MiB (device had 4.00 MiB free)" in text
    assert "largest free block: 16.00 MiB" in text


def test_torch_viewer_agrees_on_the_structure(tmp_path: Path) -> None:
    # torch's own _memory_viz.segsum reads the same dict and checks each segment adds up.
    torch = pytest.importorskip("torch")
    from torch.cuda import _memory_viz

    data = make_snapshot()
    text = _memory_viz.segsum(data)
    assert "segments: 2" in text
    assert torch.__version__  # the viewer ran against this torch
    rep = snapshot.summarize_snapshot(data)
    assert rep.reserved_bytes == sum(s["total_size"] for s in data["segments"])


def test_expandable_segments_in_snapshot_settings_changes_advice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    data = make_snapshot()
    data["allocator_settings"] = {"expandable_segments": True}
    rep = snapshot.summarize_snapshot(data)
    assert not any("Start the process with" in a for a in rep.advice)


class _Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_before_it_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "x": _Evil(str(marker))}))
    with pytest.raises(SnapshotFormatError, match=r"global '(posix|os|nt)\.system' is not allowed"):
        load_snapshot(path)
    assert not marker.exists()
    # Control: the plain unpickler really would have run it.
    pickle.loads(path.read_bytes())
    assert marker.exists()


@pytest.mark.parametrize(
    "payload",
    [
        pickle.dumps({"segments": [], "f": eval}),  # builtins.eval
        pickle.dumps({"segments": [], "c": subprocess.Popen}),  # a class from another module
        pickle.dumps({"segments": [], "b": bytearray(b"x")}),  # builtins.bytearray, not allowed
    ],
)
def test_other_globals_refused(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "p.pickle"
    path.write_bytes(payload)
    with pytest.raises(SnapshotFormatError, match="is not allowed"):
        load_snapshot(path)


def test_torch_objects_refused(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "shape": torch.Size([2, 3])}))
    with pytest.raises(SnapshotFormatError, match=r"torch\.Size"):
        load_snapshot(path)


def test_absurd_sizes_and_wrong_shapes(tmp_path: Path) -> None:
    data = make_snapshot()
    data["segments"][0]["blocks"][0]["size"] = 2**70
    with pytest.raises(SnapshotFormatError, match=r"segments\[0\]\.blocks\[0\]\.size"):
        snapshot.summarize_snapshot(data)
    data = make_snapshot()
    data["segments"][1]["total_size"] = -1
    with pytest.raises(SnapshotFormatError, match="total_size"):
        snapshot.summarize_snapshot(data)
    path = tmp_path / "list.pickle"
    path.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(SnapshotFormatError, match="'segments'"):
        load_snapshot(path)
    (tmp_path / "trunc.pickle").write_bytes(pickle.dumps(make_snapshot())[:100])
    with pytest.raises(SnapshotFormatError, match="unpickle"):
        load_snapshot(tmp_path / "trunc.pickle")
    with pytest.raises(SnapshotFormatError, match="stat"):
        load_snapshot(tmp_path / "missing.pickle")


def test_oversized_file_refused_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.pickle"
    with open(path, "wb") as fh:  # sparse: no disk used
        fh.truncate(2 * GiB + 1)
    with pytest.raises(SnapshotFormatError, match=r"larger than the 2\.00 GiB limit"):
        load_snapshot(path)


def test_provoke_script_skips_without_cuda() -> None:
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu" / "provoke_oom.py"), "--out", "unused"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "skip" in done.stdout.lower()
