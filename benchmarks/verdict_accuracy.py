"""Score oomkit's verdict against real public runs whose outcome is known.

    python benchmarks/verdict_accuracy.py --part dev --part dev2   # develop on these
    python benchmarks/verdict_accuracy.py --part heldout2          # score once, at the end
    python benchmarks/verdict_accuracy.py --split SRC.jsonl        # (re)write dev/dev2 from SRC

Parts are the ``<part>.jsonl`` files of tests/fixtures/verdict_runs/: ``dev``, ``dev2`` (the
first held-out part: once its failures were looked at it became development data) and whatever
fresh held-out part lies there (``--part NAME`` scores ``NAME.jsonl``; no part is read unless it
is named). Several ``--part`` print one table per part, then their sum.

Records (one JSON object a line): ``id``,
``url`` (the thread), ``runtime``, ``runtime_version`` (release or date, may be null), ``date``,
``model`` (catalog name), ``quant``, ``ctx``, ``gpu`` (catalog list such as ``2xrtx-3090``),
``vram`` (optional override, e.g. ``"8GiB"``), ``ram`` (optional: the host's installed RAM
when the source states it, e.g. ``"8GiB"``), ``settings`` (other InferenceSettings fields as
the thread states them), ``os``/``display`` (optional platform facts), ``backend`` (optional:
the ggml backend the run used when it is not the vendor's default, e.g. ``vulkan``),
``vulkan_driver`` (optional: the Vulkan driver the log names, ``radv``/``amdvlk``/
``amd-proprietary``; sets the device's per-buffer limit, oomkit.estimate.llamacpp_maxalloc),
``env``
(optional: environment variables the run set that the runtime reads, e.g. ``{"VLLM_USE_V1":
"0"}``; set for that record's estimate only),
``outcome`` (``oom``: died of OOM at load or on the first request; ``ok``: loaded and ran),
``evidence`` (what the thread says), ``scope`` (optional: ``"under_load"`` marks a run that
started and died later under a serving load, after many batches, which a start-up verdict does
not claim; it is judged and printed but counted apart, as ``under load``, not as a death).
``dev``/``dev2`` were split by thread: ``sha1(url) % 3 == 0`` went to ``dev2``.

A death called ``fits`` is a false "fits"; a working run called ``does_not_fit`` is a false
"does not fit"; ``tight`` is neither (the careful answer). Agreement counts ``does_not_fit`` for
deaths and ``fits`` for working runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
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
    """``dev2`` when sha1(url) % 3 == 0, else ``dev`` (split by thread)."""
    return "dev2" if int(hashlib.sha1(url.encode()).hexdigest(), 16) % 3 == 0 else "dev"


def available_parts() -> list[str]:
    """The part names present: every ``<part>.jsonl`` in the fixtures folder."""
    return sorted(p.stem for p in FIXTURES.glob("*.jsonl"))


def load(part: str) -> list[dict[str, Any]]:
    """The records of ``<part>.jsonl``.

    Raises:
        SystemExit: no such part (exit 2, one line naming the parts present).
    """
    path = FIXTURES / f"{part}.jsonl"
    if not path.is_file():
        raise SystemExit(
            f"verdict_accuracy: no part {part!r} (no {path.name} in {FIXTURES}); parts: "
            + ", ".join(available_parts())
        )
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


#: ggml backend names a record may give -> oomkit's device backend: llama.cpp's SYCL build is
#: the Intel GPU's own backend (``xpu`` for oomkit, as PyTorch names the device)
_GGML_BACKEND_NAMES = {"sycl": "xpu"}


def judge(rec: dict[str, Any]) -> tuple[str, str]:
    """(verdict level, one-line detail) for one record.

    Every record's context is the one the run really used. Where the catalog model stands in
    for a rope-scaled variant (leo-hessianai-7B: linear x2; Yarn-Mistral-7B-128k: YaRN x16) its
    ``max_position_embeddings`` is shorter than that context; vLLM accepted the real model's, so
    its start-up length check is relaxed as ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` does (the KV and
    activation arithmetic is the stand-in's, which is the same architecture).
    """
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
    ram = parse_size(rec["ram"]) if rec.get("ram") else None
    n = (settings.tp or 1) * (settings.pp or 1)  # one GPU per tensor x pipeline rank
    hw = hardware_for(gpus, vram_bytes=vram, host_ram_bytes=ram, n_devices=n, os=rec.get("os"))
    backend = _GGML_BACKEND_NAMES.get(rec.get("backend") or "", rec.get("backend"))
    if backend:  # e.g. llama.cpp's Vulkan build on an AMD/NVIDIA/Intel GPU
        hw = dataclasses.replace(
            hw,
            devices=tuple(dataclasses.replace(d, backend=backend) for d in hw.devices),
        )
    if rec.get("vulkan_driver"):  # the driver's maxMemoryAllocationSize (AMDVLK: 2 GiB)
        from oomkit.estimate.llamacpp_maxalloc import vulkan_driver_limit

        lim = vulkan_driver_limit(rec["vulkan_driver"])
        hw = dataclasses.replace(
            hw,
            devices=tuple(dataclasses.replace(d, max_allocation_bytes=lim) for d in hw.devices),
        )
    env = {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", **(rec.get("env") or {})}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        est = estimate(rec["model"], settings, hw, offline=True)
    finally:  # the relaxed check and the record's variables are its own, not the caller's
        for k, old in before.items():
            if old is None:
                del os.environ[k]
            else:
                os.environ[k] = old
    from oomkit.estimate.verdict import device_unified_bytes

    plat = Platform(
        os=rec.get("os"),
        display=rec.get("display"),
        segments=tuple(g.segment for g in gpus),
        unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
        mps_high_watermark_ratio=(
            float(env["PYTORCH_MPS_HIGH_WATERMARK_RATIO"])
            if "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in env
            else None
        ),
    )
    v = verdict(est, plat)
    m = v.tightest
    detail = (
        ""
        if m is None
        else f"free {m.free_bytes / 2**30:+.2f} GiB, band {m.band_bytes / 2**30:.2f} GiB"
    )
    if est.blockers:
        detail = f"{detail}; blocker: {est.blockers[0][:120]}"
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
        r = rows[rt]
        if rec.get("scope") == "under_load":  # not a start-up outcome: shown, counted apart
            r["under_load"] += 1
            if verbose:
                print(f"{rec['id']:<52} {rec['outcome']:<4} {level:<13} {detail}  (under load)")
            continue
        died = rec["outcome"] == "oom"
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
    under = res["rows"].get("ALL", {}).get("under_load", 0)
    if under:
        print(f"  under load (scope 'under_load', not scored): {under}")
    for e in res["errors"]:
        print("  error:", e)


def split(src: Path) -> None:
    recs = [json.loads(ln) for ln in src.read_text().splitlines() if ln.strip()]
    ids = [r["id"] for r in recs]
    assert len(ids) == len(set(ids)), "duplicate ids"
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for p in ("dev", "dev2"):
        lines = [json.dumps(r, ensure_ascii=False) for r in recs if part_of(r["url"]) == p]
        (FIXTURES / f"{p}.jsonl").write_text("\n".join(lines) + "\n")
        print(p, len(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--part",
        action="append",
        metavar="NAME",
        help="score NAME.jsonl of tests/fixtures/verdict_runs (repeatable; default dev)",
    )
    ap.add_argument("--split", type=Path, help="write dev/dev2 from this jsonl")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if args.split:
        split(args.split)
        return 0
    parts = args.part or ["dev"]
    if len(set(parts)) != len(parts):
        ap.error("a part is named twice")
    try:
        loaded = {p: load(p) for p in parts}
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    out: dict[str, Any] = {}
    for p, recs in loaded.items():
        if len(parts) > 1 or not args.quiet:
            print(f"# part {p} ({len(recs)} records)")
        res = score(recs, verbose=not args.quiet)
        print_table(res)
        print()
        out[p] = res
    if len(parts) > 1:
        print(f"# parts {' + '.join(parts)}")
        res = score([r for recs in loaded.values() for r in recs], verbose=False)
        print_table(res)
        out["+".join(parts)] = res
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
