"""Score oomkit's verdict against real public runs whose outcome is known.

    python benchmarks/verdict_accuracy.py --part dev        # develop on this
    python benchmarks/verdict_accuracy.py --part heldout    # score once, at the end
    python benchmarks/verdict_accuracy.py --split SRC.jsonl # (re)write dev/heldout from SRC

Records (tests/fixtures/verdict_runs/{dev,heldout}.jsonl, one JSON object a line): ``id``,
``url`` (the thread), ``runtime``, ``runtime_version`` (release or date, may be null), ``date``,
``model`` (catalog name), ``quant``, ``ctx``, ``gpu`` (catalog list such as ``2xrtx-3090``),
``vram`` (optional override, e.g. ``"8GiB"``), ``settings`` (other InferenceSettings fields as
the thread states them), ``os``/``display`` (optional platform facts), ``outcome`` (``oom``: died
of OOM at load or on the first request; ``ok``: loaded and ran), ``evidence`` (what the thread
says). The split is by thread: ``sha1(url) % 3 == 0`` goes to the held-out part.

A death called ``fits`` is a false "fits"; a working run called ``does_not_fit`` is a false
"does not fit"; ``tight`` is neither (the careful answer). Agreement counts ``does_not_fit`` for
deaths and ``fits`` for working runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
FIXTURES = ROOT / "tests" / "fixtures" / "verdict_runs"

_SETTING_FIELDS = {
    f.name
    for f in dataclasses.fields(__import__("oomkit.spec.settings").spec.settings.InferenceSettings)
}


def part_of(url: str) -> str:
    """``heldout`` when sha1(url) % 3 == 0, else ``dev`` (split by thread)."""
    return "heldout" if int(hashlib.sha1(url.encode()).hexdigest(), 16) % 3 == 0 else "dev"


def load(part: str) -> list[dict[str, Any]]:
    parts = ("dev", "heldout") if part == "all" else (part,)
    out: list[dict[str, Any]] = []
    for p in parts:
        path = FIXTURES / f"{p}.jsonl"
        out += [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    return out


def judge(rec: dict[str, Any]) -> tuple[str, str]:
    """(verdict level, one-line detail) for one record."""
    from oomkit.api import estimate
    from oomkit.cli.params import parse_gpu_list
    from oomkit.estimate.verdict import Platform, verdict
    from oomkit.hardware.targets import hardware_for
    from oomkit.spec.settings import InferenceSettings
    from oomkit.units import parse_size

    extra = {k: v for k, v in (rec.get("settings") or {}).items() if k in _SETTING_FIELDS}
    if "tensor_split" in extra and extra["tensor_split"] is not None:
        extra["tensor_split"] = tuple(extra["tensor_split"])
    settings = InferenceSettings(
        runtime=rec["runtime"],
        quant=rec.get("quant"),
        ctx=rec.get("ctx"),
        runtime_version=rec.get("runtime_version") or rec.get("date"),
        **extra,
    )
    gpus = parse_gpu_list(rec["gpu"])
    vram = parse_size(rec["vram"]) if rec.get("vram") else None
    n = settings.tp or 1
    hw = hardware_for(gpus, vram_bytes=vram, n_devices=n)
    est = estimate(rec["model"], settings, hw, offline=True)
    plat = Platform(
        os=rec.get("os"),
        display=rec.get("display"),
        segments=tuple(g.segment for g in gpus),
    )
    v = verdict(est, plat)
    m = v.tightest
    detail = (
        ""
        if m is None
        else f"free {m.free_bytes / 2**30:+.2f} GiB, band {m.band_bytes / 2**30:.2f} GiB"
    )
    return v.level, detail


def score(records: list[dict[str, Any]], *, verbose: bool) -> dict[str, Any]:
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    errors: list[str] = []
    for rec in records:
        rt = rec["runtime"]
        try:
            level, detail = judge(rec)
        except Exception as exc:  # a record oomkit cannot express is reported, not hidden
            errors.append(f"{rec['id']}: {type(exc).__name__}: {exc}")
            rows[rt]["error"] += 1
            continue
        died = rec["outcome"] == "oom"
        r = rows[rt]
        r["n"] += 1
        r["deaths" if died else "working"] += 1
        if died and level == "fits":
            r["false_fits"] += 1
        if not died and level == "does_not_fit":
            r["false_dnf"] += 1
        if (died and level == "does_not_fit") or (not died and level == "fits"):
            r["agree"] += 1
        if level == "tight":
            r["tight_deaths" if died else "tight_working"] += 1
        if verbose:
            flag = ""
            if died and level == "fits":
                flag = "  <-- FALSE FITS"
            elif not died and level == "does_not_fit":
                flag = "  <-- FALSE DOES-NOT-FIT"
            print(f"{rec['id']:<52} {rec['outcome']:<4} {level:<13} {detail}{flag}")
    total: dict[str, int] = defaultdict(int)
    for r in rows.values():
        for k, v in r.items():
            total[k] += v
    rows["ALL"] = total
    return {"rows": {k: dict(v) for k, v in rows.items()}, "errors": errors}


def print_table(res: dict[str, Any]) -> None:
    print(
        f"\n{'runtime':<13}{'n':>4}{'deaths':>7}{'work':>6}{'agree':>7}{'false fits':>11}"
        f"{'false dnf':>10}{'tight(d/w)':>12}{'errors':>7}"
    )
    for rt, r in sorted(res["rows"].items(), key=lambda kv: (kv[0] == "ALL", kv[0])):
        n = r.get("n", 0)
        agree = f"{r.get('agree', 0) / n:.0%}" if n else "-"
        work = r.get("working", 0)
        dnf = f"{r.get('false_dnf', 0)} ({r.get('false_dnf', 0) / work:.0%})" if work else "0"
        print(
            f"{rt:<13}{n:>4}{r.get('deaths', 0):>7}{work:>6}{agree:>7}"
            f"{r.get('false_fits', 0):>11}{dnf:>10}"
            f"{str(r.get('tight_deaths', 0)) + '/' + str(r.get('tight_working', 0)):>12}"
            f"{r.get('error', 0):>7}"
        )
    for e in res["errors"]:
        print("  error:", e)


def split(src: Path) -> None:
    recs = [json.loads(ln) for ln in src.read_text().splitlines() if ln.strip()]
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids)), "duplicate ids"
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for p in ("dev", "heldout"):
        lines = [json.dumps(r, ensure_ascii=False) for r in recs if part_of(r["url"]) == p]
        (FIXTURES / f"{p}.jsonl").write_text("\n".join(lines) + "\n")
        print(p, len(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("dev", "heldout", "all"), default="dev")
    ap.add_argument("--split", type=Path, help="write dev/heldout from this jsonl")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if args.split:
        split(args.split)
        return 0
    res = score(load(args.part), verbose=not args.quiet)
    print_table(res)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
