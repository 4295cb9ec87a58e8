"""What the true answer to the deciding question is worth: cause agreement with and without it.

Usage (from the repository root)::

    python benchmarks/doctor_answers.py          # figures
    python benchmarks/doctor_answers.py --show   # and every record an answer changed

``tests/fixtures/oom_corpus/answers/answers_dev.jsonl`` (a folder of its own: a file
``<name>_<x>.jsonl`` beside the parts would be read as a corpus part) holds, for development
records whose ``cause_notes`` state a deciding fact, the answer the thread gives (record id,
question id, value, and the quote of ``cause_notes`` that gives it;
tests/test_doctor_answers_data.py checks each quote is in its record). Only development parts
(``DEVELOPMENT_PARTS`` of ``doctor_corpus.py``) are read; labels are never changed.

Scored as ``doctor_corpus.py`` scores: the diagnosed cause equals ``cause_label``, on records
whose label confidence is high or medium. Three readings:

* without: ``oomkit doctor`` on the text alone (the corpus figures);
* asked: the record's answer to the question the doctor asks, when the thread gives it (what a
  user answering the one prompt would get);
* all: every answer the thread gives (as repeated ``--answer``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doctor_corpus import CORPUS, DEVELOPMENT_PARTS, load, part_files

from oomkit.diagnose.doctor import diagnose_text

ANSWERS = CORPUS / "answers" / "answers_dev.jsonl"
_SCORED = ("high", "medium")


def load_answers(path: Path = ANSWERS) -> dict[str, dict[str, str]]:
    """Record id -> {question id: value}; a record outside the development parts is refused."""
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["part"] not in DEVELOPMENT_PARTS:
            raise SystemExit(
                f"{path.name}: {row['id']} is in {row['part']}, not a development part"
            )
        out.setdefault(row["id"], {})[row["question"]] = row["value"]
    return out


def score(answers: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """One row per scored development record: label, and the cause without/asked/all."""
    rows: list[dict[str, Any]] = []
    for part in DEVELOPMENT_PARTS:
        for rec in load(part_files(part)):
            if rec.get("confidence") not in _SCORED:
                continue
            text = rec.get("text", "")
            plain = diagnose_text(text)
            given = answers.get(rec["id"], {})
            asked = plain.cause
            q = plain.question
            if q is not None and q.id in given:
                asked = diagnose_text(text, answers={q.id: given[q.id]}).cause
            every = diagnose_text(text, answers=given).cause if given else plain.cause
            rows.append(
                {
                    "id": rec["id"],
                    "part": part,
                    "label": rec.get("cause_label"),
                    "question": q.id if q is not None else None,
                    "given": given,
                    "without": plain.cause,
                    "asked": asked,
                    "all": every,
                }
            )
    return rows


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0 (-)"


def report(rows: list[dict[str, Any]], answers: dict[str, dict[str, str]], show: bool) -> str:
    """The printable figures."""
    out: list[str] = []
    carried = [r for r in rows if r["given"]]
    asked = [r for r in carried if r["question"] in r["given"]]
    n_answers = sum(len(v) for v in answers.values())
    out.append(
        f"answers: {n_answers} for {len(answers)} records (of which {len(carried)} have a "
        f"high/medium label); {len(asked)} of those answer the question the doctor asks"
    )
    for name, sub in (
        ("all scored development records", rows),
        ("records carrying an answer", carried),
        ("records answering the asked question", asked),
    ):
        out.append(f"{name} ({len(sub)}):")
        for key in ("without", "asked", "all"):
            agree = sum(r[key] == r["label"] for r in sub)
            out.append(f"  {key:8} {_pct(agree, len(sub))}")
    per_q: Counter[tuple[str, str]] = Counter()
    for r in carried:
        for qid in r["given"]:
            per_q[(qid, "n")] += 1
            if r["all"] == r["label"] and r["without"] != r["label"]:
                per_q[(qid, "gained")] += 1
            if r["all"] != r["label"] and r["without"] == r["label"]:
                per_q[(qid, "lost")] += 1
    out.append("per question id (records; gained / lost with all answers):")
    out.extend(
        f"  {qid:14} {per_q[(qid, 'n')]:>4}  +{per_q[(qid, 'gained')]} -{per_q[(qid, 'lost')]}"
        for qid in sorted({q for q, _ in per_q})
    )
    if show:
        out.append("changed records:")
        out.extend(
            f"  - {r['id']} [{r['part']}] label {r['label']}: {r['without']} -> asked "
            f"{r['asked']}, all {r['all']} ({r['given']}; asked {r['question']})"
            for r in carried
            if r["all"] != r["without"] or r["asked"] != r["without"]
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--show", action="store_true", help="list the records an answer changed")
    args = ap.parse_args(argv)
    answers = load_answers()
    print(report(score(answers), answers, args.show))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
