"""revfix19d: a llama.cpp KV-cache OOM ranks the levers without a speed cost (-c, a q8_0 cache)
before -nkvo (every decoded token reads the cache over PCIe), and a plain llama.cpp log gets no
Ollama lines."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import Fix, rank

LOG = (
    Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-revfix19d-llamacpp-kv-131072.txt"
)


def test_nkvo_ranks_after_the_context_and_cache_type() -> None:
    d = diagnose_text(LOG.read_text(encoding="utf-8"))
    titles = [f.title for f in d.fixes]
    assert titles[0] == "Halve the context: -c 65536"
    assert titles.index("Quantize the KV cache to q8_0") < titles.index(
        "Keep the KV cache in host RAM: -nkvo"
    )
    cmds = [c for f in d.fixes for c in f.commands]
    assert not [c for c in cmds if "num_ctx" in c or "ollama" in c.lower()]


def test_cli_json_marks_the_slow_fix() -> None:
    res = CliRunner().invoke(doctor_command, [str(LOG), "--json"])
    fixes = json.loads(res.output)["fixes"]
    nkvo = next(f for f in fixes if "-nkvo" in f["commands"])
    assert nkvo["slow"] is True
    assert fixes.index(nkvo) == len([f for f in fixes if f["expected_saving_bytes"]]) - 1


def test_rank_puts_slow_after_unslowed_sized_fixes() -> None:
    slow = Fix(title="slow", why="", commands=(), expected_saving_bytes=16, slow=True)
    fast = Fix(title="fast", why="", commands=(), expected_saving_bytes=8)
    assert [f.title for f in rank([slow, fast])] == ["fast", "slow"]
