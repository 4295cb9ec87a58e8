"""False positives of the OOM doctor on real text that mentions memory without an OOM (issue 9).

The negative set, ``tests/fixtures/prose_negatives.jsonl``, is every sentence that names a memory
(memory, RAM, VRAM, HBM, swap, 显存, 内存) in runtimes' own documentation: the Markdown docs of
``ollama/ollama``, ``huggingface/accelerate``, ``huggingface/peft`` and
``huggingface/text-generation-inference`` (each record's ``source`` is ``repo:path@commit``), the
README of ``transformers`` and ``torch`` (their PyPI long descriptions), two vLLM docs pages
(``docs/configuration/conserving_memory.md``, ``optimization.md``) and llama.cpp's server
argument explanations (``tools/server/README.md``, the table's cells reworded as sentences). Code
blocks, tables and headings were dropped; sentences of 25 to 400 characters were kept.

``mentions_oom`` marks the sentences that name an OOM themselves ("out of memory", "OOM", "ran out
of RAM"): docs that *talk about* the failure, reported apart. The rest (``mentions_oom`` false)
are the near-misses: docs, benchmarks and advice that mention memory without a failure; every one
the doctor calls an OOM is a false positive.

Usage: ``python benchmarks/doctor_prose_negatives.py [--show]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse_wordings_exits import exit_match
from oomkit.diagnose.parse_wordings_kills import kill_match
from oomkit.diagnose.parse_wordings_plain import plain_match
from oomkit.diagnose.parse_wordings_report import report_match
from oomkit.diagnose.parse_wordings_strain import strain_match
from oomkit.diagnose.parse_wordings_usage import usage_match

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "prose_negatives.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show", action="store_true", help="list the sentences the doctor fires on")
    args = ap.parse_args()
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line]
    for mentions in (False, True):
        sub = [r for r in rows if r["mentions_oom"] is mentions]
        fired = [r for r in sub if diagnose_text(r["text"]).oom_found]
        prose = [r for r in sub if report_match(r["text"], r["text"].lower())]
        usage = [r for r in sub if usage_match(r["text"])]
        plain = [r for r in sub if plain_match(r["text"], r["text"].lower())]
        strain = [r for r in sub if strain_match(r["text"], r["text"].lower())]
        kills = [r for r in sub if kill_match(r["text"], r["text"].lower())]
        exits = [r for r in sub if exit_match(r["text"], r["text"].lower())]
        what = "name an OOM (docs about the failure)" if mentions else "memory, no OOM"
        print(
            f"{what}: {len(sub)} sentences; doctor fires on {len(fired)} "
            f"({100 * len(fired) / max(1, len(sub)):.1f}%); the prose-report grammar alone on "
            f"{len(prose)}; the memory-use grammar alone on {len(usage)}; the plain-wording "
            f"grammar alone on {len(plain)}; the strain grammar alone on {len(strain)}; the kill "
            f"grammar alone on {len(kills)}; the exit grammar alone on {len(exits)}"
        )
        if args.show:
            for r in fired + [r for r in usage + plain + strain + kills + exits if r not in fired]:
                print(f"    {r['source']}: {r['text'][:160]}")


if __name__ == "__main__":
    main()
