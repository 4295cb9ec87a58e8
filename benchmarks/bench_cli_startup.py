"""Cold start of ``oomkit estimate --json`` (the main job), in fresh interpreters.

python benchmarks/bench_cli_startup.py            # prints median/min over 10 runs
pytest benchmarks/bench_cli_startup.py --benchmark-only
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CMD = [
    sys.executable,
    "-m",
    "oomkit",
    "estimate",
    "llama-3.1-8b",
    "--quant",
    "Q4_K_M",
    "--ctx",
    "8192",
    "--gpu",
    "rtx-4090",
    "--json",
]


def _once() -> float:
    t = time.perf_counter()
    subprocess.run(CMD, check=True, capture_output=True)
    return time.perf_counter() - t


def _import_only() -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import oomkit"], check=True)
    return time.perf_counter() - t


def test_cli_cold_start(benchmark) -> None:  # type: ignore[no-untyped-def]
    benchmark.pedantic(_once, rounds=5, iterations=1)


def main() -> None:
    _once()  # warm the OS file cache, not the interpreter
    runs = [_once() for _ in range(10)]
    base = [_import_only() for _ in range(10)]
    print(
        f"oomkit estimate --json cold start: median {statistics.median(runs) * 1000:.0f} ms, "
        f"min {min(runs) * 1000:.0f} ms (10 runs); bare 'import oomkit' interpreter: "
        f"median {statistics.median(base) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
