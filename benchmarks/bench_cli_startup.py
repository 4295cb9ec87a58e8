"""Cold start of ``oomkit estimate llama-3.1-8b --quant Q4_K_M --ctx 8192 --json`` (issue 10).

Each run is a fresh interpreter. Runs of the command and of a bare ``python -c pass`` (the
interpreter and ``site`` alone, which this tool cannot change) are interleaved so that load on a
shared machine hits both alike; medians over ``--runs`` (default 30) are printed, and with
``--importtime`` the sum of ``python -X importtime`` self times (median of 5 runs).

Byte-code caching is forced on (``PYTHONDONTWRITEBYTECODE`` is dropped from the children's
environment): an installed oomkit has its ``.pyc`` files, and compiling every module from source
on each run would measure the compiler instead.

    python benchmarks/bench_cli_startup.py [--runs 30] [--importtime] [--src PATH ...]

``--src`` runs the command with ``PYTHONPATH=PATH`` (several: compare checkouts in one go,
interleaved). ``pytest benchmarks/bench_cli_startup.py --benchmark-only`` runs it under
pytest-benchmark.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ARGS = ["estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--ctx", "8192", "--json"]
CMD = [sys.executable, "-m", "oomkit", *ARGS]
BARE = [sys.executable, "-c", "pass"]


def _env(src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def _once(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def _importtime_ms(env: dict[str, str]) -> float:
    """Sum of the self times ``-X importtime`` reports for one run of the command (ms)."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", *CMD[1:]], check=True, capture_output=True, env=env
    ).stderr.decode()
    total = 0
    for line in err.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            total += int(line.split("|")[0].split(":")[1])
    return total / 1000


def test_cli_cold_start(benchmark) -> None:  # type: ignore[no-untyped-def]
    env = _env(None)
    benchmark.pedantic(lambda: _once(CMD, env), rounds=10, iterations=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--src", action="append", default=None)
    opts = parser.parse_args()
    srcs: list[str | None] = list(opts.src) if opts.src else [None]
    envs = {s: _env(s) for s in srcs}
    for s in srcs:  # compile the .pyc files and warm the OS file cache
        _once(CMD, envs[s])
    runs: dict[str | None, list[float]] = {s: [] for s in srcs}
    bare: list[float] = []
    for _ in range(opts.runs):
        for s in srcs:
            runs[s].append(_once(CMD, envs[s]))
        bare.append(_once(BARE, envs[srcs[0]]))
    print(f"command: oomkit {' '.join(ARGS)}  ({opts.runs} runs each, interleaved)")
    for s in srcs:
        line = (
            f"  {s or 'installed oomkit'}: median {statistics.median(runs[s]) * 1000:.1f} ms, "
            f"min {min(runs[s]) * 1000:.1f} ms"
        )
        if opts.importtime:
            imp = statistics.median(_importtime_ms(envs[s]) for _ in range(5))
            line += f"; -X importtime self-time sum {imp:.1f} ms"
        print(line)
    print(f"  python -c pass: median {statistics.median(bare) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
