"""Push many random and mutated inputs through every doctor parser; count exceptions.

Usage: python benchmarks/fuzz_doctor.py [--n 100000] [--seed 0]

Inputs: random printable/unicode text, and mutations of the real messages in
tests/fixtures/oom_logs (truncation, byte flips, duplicated lines, huge numbers, unicode and
control characters spliced in, lines joined or split). Each input goes through every parser in
``oomkit.diagnose.parse.PARSERS`` and through ``diagnose_text``. Exit status 1 on any exception.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from pathlib import Path

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import PARSERS
from oomkit.diagnose.text import split_lines
from oomkit.diagnose.upstream_wordings import WORDINGS

LOGS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "oom_logs"
_JUNK = [
    "9" * 60,
    "-0",
    "1e999",
    "nan",
    "\u00a0",
    "\u200b",
    "\U0001f600",
    "\x00",
    "\r",
    "\t",
    "GiB",
    "MiB",
    "(",
    ")",
    "[rank0]: ",
    "; ",
    ".",
    "Process ",
    "capacty",
    "١٢٣",
]


def _mutate(rng: random.Random, base: str) -> str:
    s = base
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and s:
            s = s[: rng.randrange(len(s))]
        elif op == 1 and s:
            b = bytearray(s.encode("utf-8"))
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            s = b.decode("utf-8", errors="replace")
        elif op == 2:
            lines = s.split("\n")
            i = rng.randrange(len(lines))
            lines[i:i] = [lines[i]] * rng.randint(1, 5)
            s = "\n".join(lines)
        elif op == 3:
            p = rng.randrange(len(s) + 1)
            s = s[:p] + rng.choice(_JUNK) * rng.randint(1, 3) + s[p:]
        elif op == 4:
            s = "".join(
                c if not c.isdigit() else rng.choice("0123456789") * rng.randint(1, 3) for c in s
            )
        elif op == 5:
            s = s.replace("\n", " ") if rng.random() < 0.5 else s.replace(" ", "\n", 3)
        else:
            s = s + "\n" + rng.choice(REAL)
    return s


def _random_text(rng: random.Random) -> str:
    n = rng.randint(0, 300)
    if rng.random() < 0.5:
        return "".join(chr(rng.randint(32, 126)) for _ in range(n))
    return "".join(chr(rng.randint(0, 0x2FFF)) for _ in range(n))


REAL = [p.read_text(encoding="utf-8") for p in sorted(LOGS.glob("*.txt"))]
# the wordings harvested from the runtimes' sources are mutated too (upstream_wordings.py)
REAL += [w.example for w in WORDINGS]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    failures = 0
    t0 = time.perf_counter()
    for i in range(args.n):
        text = _random_text(rng) if i % 3 == 0 else _mutate(rng, rng.choice(REAL))
        try:
            lines = split_lines(text)
            for parser in PARSERS:
                parser(lines)
            diagnose_text(text).to_dict()
        except Exception:
            failures += 1
            if failures <= 5:
                print(f"input {i}: {text[:200]!r}")
                traceback.print_exc()
    dt = time.perf_counter() - t0
    print(
        f"{args.n} inputs through {len(PARSERS)} parsers + diagnose_text: "
        f"{failures} exceptions in {dt:.1f} s ({args.n / dt:.0f} inputs/s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
