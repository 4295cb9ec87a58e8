"""Score the OOM doctor on the public OOM corpus (tests/fixtures/oom_corpus) and oom_dev.jsonl.

Usage (from the repository root)::

    python benchmarks/doctor_corpus.py --part dev --show     # development part (+ disagreements)
    python benchmarks/doctor_corpus.py --part dev2 --show    # second development part
    python benchmarks/doctor_corpus.py --part oom_dev        # ../shared/validation/oom_dev.jsonl
    python benchmarks/doctor_corpus.py --part heldout2       # held-out: aggregate figures only
    python benchmarks/doctor_corpus.py --part all --out benchmarks/doctor_corpus_results.txt

A part is every file ``tests/fixtures/oom_corpus/<part>_<family>.jsonl`` (``dev_torch.jsonl`` and
``dev_serving.jsonl`` make part ``dev``), discovered from the file names, plus ``oom_dev``; a new
part such as ``heldout2_*.jsonl`` is picked up without a change here.

For every part and every runtime family it prints:

* recognised: the doctor found an OOM event in the message (``Diagnosis.oom_found``), and how many
  of those a specific parser recognised (not only the generic OOM-keyword fallback);
* cause agreement: the diagnosed cause equals the human ``cause_label``, scored on records whose
  label confidence is high or medium;
* a confusion matrix (label rows x doctor columns) over the scored records;
* the invariants of issue 9: contradictions between fixes and hardware-only top fixes (both must
  be 0).

A held-out part (any part whose name starts with ``heldout``) is scored once, at the end of a
change: this script prints only aggregate figures for it (never a record, an id or a message),
whatever the flags say, unless ``--reveal`` is given. ``--show`` lists the disagreements of the
development parts (dev, dev2, oom_dev) for rule work. ``--reveal`` is for parts that have been
retired to development (a held-out part that was scored and then handed over to rule work, before
the lead renames its files): with it, ``--show`` also lists that part's records. Never use it on a
part that is still held out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oomkit.diagnose.analysis import CAUSES
from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "oom_corpus"
OOM_DEV_CANDIDATES = (
    ROOT.parent / "shared" / "validation" / "oom_dev.jsonl",
    Path("/work/shared/validation/oom_dev.jsonl"),
)
_PART_RE = re.compile(r"^(?P<part>[A-Za-z0-9]+)_[A-Za-z0-9_.-]+\.jsonl$")
_SCORED = ("high", "medium")
#: parts whose labels may shape the doctor: development data and retired held-out parts. ``--part
#: all`` scores these only: a fresh held-out part is scored once, by naming it (``--part
#: heldout8``), never as a side effect of checking the development figures.
DEVELOPMENT_PARTS = (
    "dev",
    "dev2",
    "heldout2",
    "heldout3",
    "heldout4",
    "heldout5",
    "heldout6",
    "heldout7",
    "heldout8",
    "heldout9",
    "heldout10",
    "heldout11",
    "heldout12",
    "heldout13",
    "heldout14",
    "heldout15",
    "heldout16",
    "heldout17",
    "heldout18",
    "heldout19",
    "heldout20",
    "heldout21",
    "heldout22",
    "heldout23",
    "heldout24",
    "heldout25",
    "heldout26",
    "heldout27",
    "heldout28",
    "heldout29",
    "heldout30",
    "heldout31",
    "heldout32",
    "heldout33",
    "heldout34",
    "heldout35",
    "heldout36",
    "heldout37",
    "heldout38",
    "heldout39",
    "heldout40",
    "heldout41",
    "heldout42",
    "heldout43",
    "heldout44",
    "heldout45",
    "heldout46",
    "heldout47",
    "heldout48",
    "heldout49",
    "heldout50",
    "heldout51",
    "heldout52",
    "heldout53",
    "heldout54",
    "heldout55",
    "heldout56",
    "heldout57",
    "heldout58",
    "heldout59",
    "oom_dev",
)
# record runtime text -> family (first match wins; lower-case substring tests)
_FAMILIES = (
    ("sglang", ("sglang",)),
    ("vllm", ("vllm",)),
    ("tgi", ("text-generation-inference", "tgi")),
    ("tensorrt-llm", ("tensorrt",)),
    ("ollama", ("ollama",)),
    ("llama.cpp", ("llama.cpp", "llama-cpp", "llamacpp", "koboldcpp", "ggml", "lm studio")),
    ("jax", ("jax", "xla", "flax")),
    ("tensorflow", ("tensorflow", "keras", "tf ")),
    ("mps", ("mps", "apple")),
    ("rocm", ("rocm", "hip", "amd")),
    ("os", ("linux", "oom-killer", "windows", "wsl")),
    ("pytorch", ("torch", "transformers", "accelerate", "peft", "deepspeed", "diffusers", "comfy")),
)


def family(runtime: str) -> str:
    """The runtime family of a record's free-text ``runtime`` field."""
    rt = runtime.lower()
    for fam, words in _FAMILIES:
        if any(w in rt for w in words):
            return fam
    return "other"


def discover_parts(corpus: Path | None = None) -> list[str]:
    """The parts present: ``<part>`` of every ``<part>_<family>.jsonl``, then ``oom_dev``.

    Development parts (``dev``, ``dev2``, ...) come first, held-out parts (``heldout*``) after.
    """
    folder = CORPUS if corpus is None else corpus
    names = {m["part"] for p in folder.glob("*.jsonl") if (m := _PART_RE.match(p.name))}
    return [*sorted(names, key=lambda n: (is_heldout(n), n)), "oom_dev"]


def is_heldout(part: str) -> bool:
    """A held-out part: scored for aggregates only, never shown record by record."""
    return part.startswith("heldout")


def part_files(part: str) -> list[Path]:
    """The JSONL files of one part (missing files are skipped)."""
    if part == "oom_dev":
        return [p for p in OOM_DEV_CANDIDATES if p.exists()][:1]
    return sorted(p for p in CORPUS.glob(f"{part}_*.jsonl") if _PART_RE.match(p.name))


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Records of the files, in order (blank lines skipped)."""
    return [
        json.loads(line)
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def score_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-record results (kept in memory only) and per-family aggregates."""
    rows: list[dict[str, Any]] = []
    for rec in records:
        d = diagnose_text(rec.get("text", ""))
        rows.append(
            {
                "id": rec.get("id", "?"),
                "family": family(str(rec.get("runtime", ""))),
                "recognised": d.oom_found,
                "specific": any(e.runtime != "generic" for e in d.events),
                "label": rec.get("cause_label", "unknown"),
                "label_confidence": rec.get("confidence", "low"),
                "cause": d.cause,
                "confidence": round(d.confidence, 2),
                "agree": d.cause == rec.get("cause_label"),
                "alloc_label": rec.get("allocation", "unknown"),
                "alloc_agree": d.allocation == rec.get("allocation"),
                "contradictions": len(contradictions(d)),
                "hardware_top": hardware_top_fix(d),
                "explanation": d.explanation,
                "top_fix": d.fixes[0].title if d.fixes else None,
            }
        )
    return {"rows": rows}


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "0/0 (-)"


def _matrix(rows: list[dict[str, Any]]) -> list[str]:
    pairs = Counter((r["label"], r["cause"]) for r in rows)
    labels = [c for c in CAUSES if any(k[0] == c or k[1] == c for k in pairs)]
    short = {c: c.split("_")[0][:6] for c in labels}
    out = ["    label \\ doctor " + " ".join(f"{short[c]:>6}" for c in labels)]
    for lab in labels:
        cells = " ".join(f"{pairs.get((lab, c), 0):>6}" for c in labels)
        out.append(f"    {lab[:16]:16} {cells}")
    return out


def report(part: str, rows: list[dict[str, Any]], *, show: bool, reveal: bool = False) -> list[str]:
    """Printable aggregate lines for one part (and disagreements when allowed)."""
    out = [f"== part {part}: {len(rows)} records =="]
    fams = sorted({r["family"] for r in rows})
    out.append(
        f"  {'family':13} {'records':>7} {'recognised':>14} {'specific':>14} {'cause (h/m)':>14}"
    )
    for fam in [*fams, "ALL"]:
        sub = rows if fam == "ALL" else [r for r in rows if r["family"] == fam]
        scored = [r for r in sub if r["label_confidence"] in _SCORED]
        out.append(
            f"  {fam:13} {len(sub):>7} "
            f"{_pct(sum(r['recognised'] for r in sub), len(sub)):>14} "
            f"{_pct(sum(r['specific'] for r in sub), len(sub)):>14} "
            f"{_pct(sum(r['agree'] for r in scored), len(scored)):>14}"
        )
    scored = [r for r in rows if r["label_confidence"] in _SCORED]
    known = [r for r in rows if r["alloc_label"] not in ("unknown", None)]
    out.append(
        "  allocation agrees (records with a known allocation label): "
        f"{_pct(sum(r['alloc_agree'] for r in known), len(known))}"
    )
    out.append(
        f"  all labels (incl. low): {_pct(sum(r['agree'] for r in rows), len(rows))}; "
        f"contradictions: {sum(r['contradictions'] for r in rows)}; "
        f"hardware-only top fixes: {sum(bool(r['hardware_top']) for r in rows)}"
    )
    out.append("  confusion matrix (high/medium labels):")
    out.extend(_matrix(scored))
    for fam in fams:
        sub = [r for r in scored if r["family"] == fam]
        if sub and any(not r["agree"] for r in sub):
            out.append(f"  confusion {fam}:")
            out.extend(_matrix(sub))
    if show and (reveal or not is_heldout(part)):
        out.append("  disagreements:")
        out.extend(
            f"  - {r['id']} [{r['label_confidence']}] {r['family']}: label {r['label']}, "
            f"doctor {r['cause']} ({r['confidence']}): {r['explanation'][:240]}"
            for r in rows
            if not r["agree"] or not r["recognised"]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    known = discover_parts()
    ap.add_argument("--part", choices=(*known, "all"), default="dev")
    ap.add_argument("--show", action="store_true", help="list disagreements (dev parts only)")
    ap.add_argument(
        "--reveal",
        action="store_true",
        help=(
            "with --show, also list the records of a heldout* part: for parts that have been "
            "retired to development (never for a part that is still held out)"
        ),
    )
    ap.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = ap.parse_args(argv)
    parts = [p for p in known if p in DEVELOPMENT_PARTS] if args.part == "all" else [args.part]
    fresh = [p for p in known if p not in DEVELOPMENT_PARTS]
    if args.part == "all" and fresh:
        print(f"# not in 'all' (fresh, score once by name): {', '.join(fresh)}", file=sys.stderr)
    lines: list[str] = []
    ok = True
    for part in parts:
        rows = score_records(load(part_files(part)))["rows"]
        lines.extend(report(part, rows, show=args.show, reveal=args.reveal))
        lines.append("")
        scored = [r for r in rows if r["label_confidence"] in _SCORED]
        rec = sum(r["recognised"] for r in rows) / max(1, len(rows))
        agree = sum(r["agree"] for r in scored) / max(1, len(scored))
        ok = ok and rec >= 0.95 and agree >= 0.80
        ok = ok and not any(r["contradictions"] or r["hardware_top"] for r in rows)
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
