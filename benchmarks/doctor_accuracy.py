"""Score the OOM doctor against real, human-labelled OOM messages.

Usage (from the repository root)::

    python benchmarks/doctor_accuracy.py [--data PATH/oom_dev.jsonl] [--json out.json]

For every record it checks:

* recognition: some event's runtime matches the record's runtime;
* numbers: every numeric ``parsed`` field whose number appears in the message text is extracted
  exactly (converted through the runtime's unit table, compared to the byte);
* cause: the diagnosed cause equals the human ``cause_label`` (scored on high/medium confidence
  records; low-confidence labels are listed but not scored).

Prints the table, the totals and every disagreement with the doctor's explanation. Exit status 0
when the targets hold (recognition >= 95%, all numbers exact, cause >= 80% on high/medium).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from oomkit.diagnose.doctor import Diagnosis, diagnose_text
from oomkit.diagnose.sizes import RUNTIME_UNITS, decimal_to_bytes

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / ".." / "shared" / "validation" / "oom_dev.jsonl"

# parsed-key stem -> (where, attribute): "event" looks in every event, "context" in the context
_STEMS: dict[str, tuple[str, str]] = {
    "tried": ("event", "requested_bytes"),
    "requested": ("event", "requested_bytes"),
    "required": ("event", "requested_bytes"),
    "total": ("event", "total_bytes"),
    "free": ("event", "free_bytes"),
    "available": ("event", "free_bytes"),
    "process_in_use": ("event", "process_in_use_bytes"),
    "allocated": ("event", "allocated_bytes"),
    "mps_allocated": ("event", "allocated_bytes"),
    "reserved_unallocated": ("event", "reserved_unallocated_bytes"),
    "reserved": ("event", "reserved_bytes"),
    "other_allocations": ("event", "other_allocations_bytes"),
    "max_allowed": ("event", "allowed_bytes"),
    "kv_total": ("context", "kv_self_bytes"),
    "anon_rss": ("event", "anon_rss_bytes"),
    "total_vm": ("event", "total_vm_bytes"),
    "parameter": ("context", "parameter_bytes"),
}
_PLAIN: dict[str, tuple[str, str]] = {
    "device": ("event", "device"),
    "max_seq_len": ("event", "max_model_len"),
    "kv_capacity_tokens": ("event", "kv_capacity_tokens"),
    "shape": ("event", "shape"),
    "max_batch_prefill_tokens": ("event", "prefill_tokens"),
}
_UNIT_SUFFIX = {
    "bytes": "bytes",
    "B": "B",
    "kB": "kB",
    "MiB": "MiB",
    "GiB": "GiB",
    "MB": "MB",
    "GB": "GB",
    "KiB": "KiB",
}
_RUNTIME_WORDS = {
    "pytorch": ("pytorch", "torch"),
    "llama.cpp": ("llama.cpp", "llama-cpp", "koboldcpp", "ik_llama"),
    "ollama": ("ollama",),
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "tgi": ("text-generation-inference", "tgi"),
    "tensorrt-llm": ("tensorrt",),
    "jax": ("jax", "xla"),
    "tensorflow": ("tensorflow",),
    "linux": ("linux", "oom-killer"),
    "windows": ("windows",),
    "accelerate": ("accelerate",),
}
_NUM = re.compile(r"\d+(?:\.\d+)?")


def _numbers_in(text: str) -> set[float]:
    return {float(m.group(0)) for m in _NUM.finditer(text)}


def _unit_runtime(d: Diagnosis) -> str:
    for e in d.events:
        if e.format == "mps":
            return "pytorch-mps"
    return d.events[0].runtime if d.events else "generic"


def _values(d: Diagnosis, where: str, attr: str) -> list[Any]:
    if where == "context":
        return [getattr(d.context, attr, None)]
    return [getattr(e, attr, None) for e in d.events]


def check_numbers(rec: dict[str, Any], d: Diagnosis) -> tuple[int, int, list[str]]:
    """(checked, exact, problems) for the record's numeric parsed fields stated in its text."""
    stated = _numbers_in(rec["text"])
    checked = exact = 0
    problems: list[str] = []
    table = RUNTIME_UNITS.get(_unit_runtime(d), RUNTIME_UNITS["generic"])
    for key, value in rec.get("parsed", {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float, list)):
            continue
        if isinstance(value, list):
            if not value or not all(isinstance(v, (int, float)) for v in value):
                continue
            if not all(float(v) in stated for v in value):
                continue
        elif float(value) not in stated:
            continue  # a number from the thread, not from the message
        stem, _, unit = key.rpartition("_")
        if key in _PLAIN:
            where, attr = _PLAIN[key]
            expected: Any = tuple(value) if isinstance(value, list) else value
        elif unit in _UNIT_SUFFIX and stem in _STEMS:
            where, attr = _STEMS[stem]
            scale = table.get(_UNIT_SUFFIX[unit].lower())
            if scale is None:
                problems.append(f"{key}: no unit {unit} for this runtime")
                checked += 1
                continue
            expected = decimal_to_bytes(repr(value), scale)
        else:
            problems.append(f"{key}={value}: no extractor mapped (not scored)")
            continue
        checked += 1
        got = _values(d, where, attr)
        if expected in got:
            exact += 1
        else:
            problems.append(
                f"{key}={value}: expected {expected}, got {[g for g in got if g is not None]}"
            )
    return checked, exact, problems


def recognised(rec: dict[str, Any], d: Diagnosis) -> bool:
    """True if an event's runtime matches the record's runtime text."""
    rt = rec["runtime"].lower()
    return any(any(w in rt for w in _RUNTIME_WORDS.get(e.runtime, (e.runtime,))) for e in d.events)


def score(path: Path) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        d = diagnose_text(rec["text"])
        checked, exact, problems = check_numbers(rec, d)
        rows.append(
            {
                "id": rec["id"],
                "runtime": rec["runtime"],
                "message_format": rec.get("message_format"),
                "recognised": recognised(rec, d),
                "events": [f"{e.runtime}:{e.format or e.kind}" for e in d.events],
                "numbers_checked": checked,
                "numbers_exact": exact,
                "number_problems": problems,
                "label": rec["cause_label"],
                "label_confidence": rec["confidence"],
                "cause": d.cause,
                "confidence": round(d.confidence, 2),
                "agree": d.cause == rec["cause_label"],
                "explanation": d.explanation,
            }
        )
    scored = [r for r in rows if r["label_confidence"] in ("high", "medium")]
    summary = {
        "records": len(rows),
        "recognised": sum(r["recognised"] for r in rows),
        "numbers_checked": sum(r["numbers_checked"] for r in rows),
        "numbers_exact": sum(r["numbers_exact"] for r in rows),
        "cause_scored": len(scored),
        "cause_agree": sum(r["agree"] for r in scored),
        "cause_agree_all_labels": sum(r["agree"] for r in rows),
    }
    summary["recognition_rate"] = summary["recognised"] / max(1, summary["records"])
    summary["numbers_rate"] = summary["numbers_exact"] / max(1, summary["numbers_checked"])
    summary["cause_rate_high_medium"] = summary["cause_agree"] / max(1, summary["cause_scored"])
    return {"summary": summary, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    args = ap.parse_args(argv)
    result = score(args.data)
    rows, s = result["rows"], result["summary"]
    print(f"{'id':44} {'rec':3} {'nums':5} {'conf':4} {'label':28} {'doctor':28}")
    for r in rows:
        print(
            f"{r['id'][:44]:44} {'yes' if r['recognised'] else 'NO':3} "
            f"{r['numbers_exact']}/{r['numbers_checked']:<3} {r['label_confidence'][:4]:4} "
            f"{r['label'][:28]:28} {r['cause'][:20]:20} {'ok' if r['agree'] else 'XX'}"
        )
    print()
    print(
        f"runtime/format recognised: {s['recognised']}/{s['records']} ({s['recognition_rate']:.0%})"
    )
    print(
        f"numbers extracted exactly: {s['numbers_exact']}/{s['numbers_checked']} "
        f"({s['numbers_rate']:.0%})"
    )
    print(
        f"cause agrees (high/medium labels): {s['cause_agree']}/{s['cause_scored']} "
        f"({s['cause_rate_high_medium']:.0%}); "
        f"all labels: {s['cause_agree_all_labels']}/{s['records']}"
    )
    print("\nDisagreements (label vs doctor, with the doctor's reasoning):")
    for r in rows:
        if not r["agree"]:
            print(
                f"- {r['id']} [{r['label_confidence']}]: label {r['label']}, doctor {r['cause']} "
                f"({r['confidence']}): {r['explanation'][:300]}"
            )
    problems = [(r["id"], p) for r in rows for p in r["number_problems"]]
    if problems:
        print("\nNumber notes:")
        for rid, p in problems:
            print(f"- {rid}: {p}")
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    ok = (
        s["recognition_rate"] >= 0.95
        and s["numbers_exact"] == s["numbers_checked"]
        and s["cause_rate_high_medium"] >= 0.80
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
