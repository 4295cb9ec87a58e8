"""Does the doctor's stated confidence track how often it is right? Agreement per confidence bin.

Usage (from the repository root)::

    python benchmarks/doctor_calibration.py             # leave-one-part-out (the honest figure)
    python benchmarks/doctor_calibration.py --in-sample # every part with the full base-rate table

Each development part's high/medium-labelled records are diagnosed with the base-rate table
built without that part (as ``cause_priors.py --loo`` does), and the diagnoses are binned by the
confidence the doctor prints: per bin, the records, how many agree with ``cause_label``, and the
mean stated confidence. A calibrated doctor is right about as often as it says (a bin stated at
0.5 agrees about half the time). Scored as ``doctor_corpus.py`` scores; labels are never read by
the doctor. ``--in-sample`` uses the shipped table (the development figure, optimistic).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cause_priors import count, labelled
from doctor_corpus import DEVELOPMENT_PARTS, load, part_files

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.priors import override_table

_SCORED = ("high", "medium")
#: lower edges of the bins (a diagnosis falls in the last bin whose edge it reaches)
EDGES = (0.0, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8)


def _bin(confidence: float) -> float:
    return max(edge for edge in EDGES if confidence >= edge - 1e-9)


def rows(in_sample: bool = False) -> list[tuple[float, bool]]:
    """(stated confidence, agrees) for every scored development record."""
    out: list[tuple[float, bool]] = []
    for part in DEVELOPMENT_PARTS:
        records: list[dict[str, Any]] = [
            r for r in load(part_files(part)) if r.get("confidence") in _SCORED
        ]
        if in_sample:
            out += [(d.confidence, d.cause == r["cause_label"]) for r, d in _diagnosed(records)]
            continue
        rest = [p for p in DEVELOPMENT_PARTS if p != part]
        with override_table(count(labelled(rest))):
            out += [(d.confidence, d.cause == r["cause_label"]) for r, d in _diagnosed(records)]
    return out


def _diagnosed(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    return [(r, diagnose_text(r.get("text", ""))) for r in records]


def table(results: list[tuple[float, bool]]) -> list[str]:
    """One line per bin: records, agreement, mean stated confidence."""
    lines = [f"{'confidence':>12} {'records':>8} {'agree':>7} {'agree %':>8} {'stated':>7}"]
    for i, edge in enumerate(EDGES):
        hi = EDGES[i + 1] if i + 1 < len(EDGES) else 1.0
        got = [(c, a) for c, a in results if _bin(c) == edge]
        if not got:
            continue
        agree = sum(a for _, a in got)
        mean = sum(c for c, _ in got) / len(got)
        label = f"{edge:.2f}-{hi:.2f}"
        lines.append(
            f"{label:>12} {len(got):>8} {agree:>7} {100 * agree / len(got):>7.0f}% {mean:>7.2f}"
        )
    agree = sum(a for _, a in results)
    lines.append(f"{'all':>12} {len(results):>8} {agree:>7} {100 * agree / len(results):>7.0f}%")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in-sample", action="store_true", help="use the shipped base-rate table")
    args = ap.parse_args(argv)
    print("\n".join(table(rows(in_sample=args.in_sample))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
