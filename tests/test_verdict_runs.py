"""The verdict-scoring fixtures: real runs with a source, split by thread, scorable offline."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli.params import parse_gpu_list

FIXTURES = Path(__file__).parent / "fixtures" / "verdict_runs"
REQUIRED = {
    "id",
    "url",
    "runtime",
    "date",
    "model",
    "ctx",
    "gpu",
    "settings",
    "outcome",
    "evidence",
}


def _records(part: str) -> list[dict[str, object]]:
    lines = (FIXTURES / f"{part}.jsonl").read_text().splitlines()
    return [json.loads(ln) for ln in lines if ln.strip()]


def test_counts_and_unique_ids() -> None:
    recs = _records("dev") + _records("heldout")
    assert len(recs) >= 60
    assert sum(r["outcome"] == "oom" for r in recs) >= 25
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("part", ["dev", "heldout"])
def test_split_by_thread_and_schema(part: str) -> None:
    for r in _records(part):
        assert set(r) >= REQUIRED, r["id"]
        url = str(r["url"])
        assert url.startswith("https://github.com/"), r["id"]
        expected = "heldout" if int(hashlib.sha1(url.encode()).hexdigest(), 16) % 3 == 0 else "dev"
        assert expected == part, r["id"]
        assert r["outcome"] in ("oom", "ok")
        find_model(str(r["model"]))  # offline catalog name
        parse_gpu_list(str(r["gpu"]))
