"""List the CUDA totals public messages print per NVIDIA card (what ``cuda_total_bytes`` holds).

    python benchmarks/cuda_totals.py [--card rtx-3090]

Reads the development data only (the doctor corpus's ``DEVELOPMENT_PARTS`` and the verdict runs'
parts): every PyTorch "X GiB total capacity" / "total capacity of X GiB" (``cudaMemGetInfo``'s
total) and vLLM ``total_gpu_memory`` figure, tied to the catalog cards the record names. A
figure is listed for a card when it lies within 1 GiB below the card's NVML total (the driver
reserve seen is 0-0.9 GiB; further below is another card, a vGPU or ECC) and the record names
exactly one such card. Windows/WSL records (WDDM: CUDA reports NVML's total) are marked ``win``.
The catalog keeps, per card, the smallest non-Windows figure after reading each record; this
lists the candidates, it does not write the catalog. Set aside by hand on reading: records whose
card is not certain (h18-nerf_pl-61 an "RTX 2070 mobile", h5-indextts-301 an "RTX 4080 12GB",
h17-OCRFlux-64 "L40-class", h15-FBGEMM-3763 "A10G-class"), and figures equal to the NVML total
on records that do not state the OS (RTX 2060, 3060 Ti, 3080 Ti, 4070: what WDDM reports; those
rows keep the NVML total, or the modelled figure of oomkit.hardware.reserve where their class
has one), h17-OCRFlux-64's 44.35 GiB, and two public threads outside the data: Qwen3-VL#2097's
44.40 GiB on a "single L40" (L40S-like; the L40 keeps 44.53) and MTVCrafter#21's 44.43 GiB on
an RTX 6000 Ada with ECC on (nvidia-smi 46068 MiB; the row is ECC off). Three cards cite public
threads with the message quoted (RTX A4000, L4, A30). ``tests/test_gpu_cuda_total.py`` checks
every catalog figure against the records or quoted threads it cites.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

_FIGURE = re.compile(
    r"(?:GPU \d+; ([\d.]+) GiB total capacity|total capac\w* of ([\d.]+) GiB"
    r"|total_gpu_memory[ =(]*([\d.]+) ?GiB)"
)
_CARD = re.compile(
    r"(?i)\b(?:(?:rtx|gtx|quadro|tesla|titan)[\s-]?[a-z]?\d{3,4}(?:[\s-]?(?:ti|super|laptop|ada))*"
    r"|rtx[\s-]?a\d{4}|a100|h100|h200|v100|p100|p40|t4|a10g?|l4|l40s?|a40|a30"
    r"|[2345]0[5-9]0(?:[\s-]?ti)?)\b"
)
_WINDOWS = re.compile(r"(?i)wsl|[a-z]:\\\\|\\\\users\\\\|windows|win32|\.exe")


def _files() -> list[Path]:
    spec = importlib.util.spec_from_file_location("dc", HERE / "doctor_corpus.py")
    assert spec is not None
    assert spec.loader is not None
    dc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dc)
    corpus = ROOT / "tests" / "fixtures" / "oom_corpus"
    files = [f for p in dc.DEVELOPMENT_PARTS for f in sorted(corpus.glob(f"{p}_*.jsonl"))]
    return files + sorted((ROOT / "tests" / "fixtures" / "verdict_runs").glob("*.jsonl"))


def _key(name: str) -> str | None:
    from oomkit.errors import OomkitError
    from oomkit.hardware.catalog import find_gpu

    try:
        return find_gpu(name).key
    except OomkitError:
        return None


def _family(key: str) -> str:
    """``rtx-3090-ti`` -> ``rtx-3090``, ``a100-40gb-sxm`` -> ``a100``."""
    words = key.split("-")
    return "-".join(words[:2] if words[0] in ("rtx", "gtx", "titan") else words[:1])


def candidates() -> dict[str, list[tuple[float, str, str, str]]]:
    """card key -> [(GiB, os tag, record id, date)] sorted by figure."""
    from oomkit.hardware.catalog import all_gpus

    nvidia = {g.key: g for g in all_gpus() if g.vendor == "nvidia"}
    out: dict[str, set[tuple[float, str, str, str]]] = defaultdict(set)
    for path in _files():
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            text = json.dumps(rec, ensure_ascii=False).replace('\\"', '"')
            named = {k for k in (_key(m.group(0)) for m in _CARD.finditer(text)) if k}
            for part in str(rec.get("gpu") or "").split(","):
                key = re.sub(r"^\d+x", "", part.strip())
                if key:
                    named.add(key)
            # a short name resolves to one row: its family's other sizes and forms are candidates
            family = {k for k in nvidia if _family(k) in {_family(n) for n in named}}
            tag = "win" if _WINDOWS.search(text) else ""
            for m in _FIGURE.finditer(text):
                gib = float(next(g for g in m.groups() if g))
                fits = sorted(
                    k for k in family if 0 <= nvidia[k].memory_bytes / 2**30 - gib <= 1.0 + 0.01
                )
                if len(fits) > 1 and len(set(fits) & named) == 1:
                    fits = sorted(set(fits) & named)  # the row the record names
                if len({nvidia[k].memory_bytes for k in fits}) == 1:  # one card (or its forms)
                    key = "|".join(fits)
                    out[key].add((gib, tag, rec["id"], str(rec.get("date", ""))[:7]))
    return {k: sorted(v) for k, v in out.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--card", help="only this catalog key")
    args = ap.parse_args()
    from oomkit.hardware.catalog import find_gpu

    found = candidates()
    for key, rows in sorted(
        found.items(), key=lambda kv: find_gpu(kv[0].split("|")[0]).memory_bytes
    ):
        if args.card and args.card not in key.split("|"):
            continue
        g = find_gpu(key.split("|")[0])
        linux = [r for r in rows if r[1] != "win"]
        low = f"{min(linux)[0]:.2f}" if linux else "-"
        held = "-" if g.cuda_total_bytes is None else f"{g.cuda_total_bytes / 2**30:.2f}"
        print(f"{key}: NVML {g.memory_bytes / 2**30:.2f} GiB, smallest non-Windows {low}, "
              f"catalog {held}")  # fmt: skip
        for gib, tag, rid, date in rows:
            print(f"    {gib:7.2f} {tag:3} {rid} {date}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
