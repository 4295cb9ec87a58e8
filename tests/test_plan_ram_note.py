"""A plan that offloads to the CPU with no ``--ram`` says how much host RAM it assumed: a
405B model "fitting" a 12 GB card by putting 221 GiB in RAM nobody stated was silent."""

from __future__ import annotations

import json
import subprocess
import sys


def _plan(*args: str) -> dict[str, object]:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "plan", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode in (0, 3), res.stderr
    doc: dict[str, object] = json.loads(res.stdout)
    return doc


def test_offload_without_ram_names_the_ram_it_assumed() -> None:
    doc = _plan("llama-3.1-70b", "--gpu", "rtx-3060", "--ctx", "8k")
    notes = doc["notes"]
    assert isinstance(notes, list)
    ram = [n for n in notes if n.startswith("--ram not given")]
    assert len(ram) == 1
    assert "pass --ram SIZE" in ram[0]


def test_no_ram_note_when_ram_is_given_or_nothing_offloads() -> None:
    with_ram = _plan("llama-3.1-70b", "--gpu", "rtx-3060", "--ctx", "8k", "--ram", "64GiB")
    on_gpu = _plan("llama-3.1-8b", "--gpu", "rtx-4090")
    for doc in (with_ram, on_gpu):
        notes = doc["notes"]
        assert isinstance(notes, list)
        assert not any(n.startswith("--ram not given") for n in notes)
