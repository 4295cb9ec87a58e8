"""How long the planner takes: one model on one GPU, the whole catalog against one GPU, and
every catalog GPU for one model (``gpus --for``, vLLM with its serving levers).

python benchmarks/bench_planner.py            # prints medians (fresh interpreter per run)
pytest benchmarks/bench_planner.py --benchmark-only

Each timed run starts a fresh Python process (the estimator memoises per process, so an
in-process loop would time the caches, not the search). The figure excludes interpreter
start-up: the child times its own work with ``time.perf_counter``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import oomkit
from oomkit.planner.core import plan
from oomkit.planner.request import PlanRequest
from oomkit.planner.reverse import gpus_for, models_that_fit
from oomkit.spec.hardware import Hardware
t1 = time.perf_counter()
case = sys.argv[1]
gpu = oomkit.find_gpu(sys.argv[2]).to_device_target()
hw = Hardware(devices=(gpu,))
if case == "gpus":  # sys.argv[2]: a GPU only to keep the argument order
    n = len(gpus_for(sys.argv[3], runtime=sys.argv[5], ctx=int(sys.argv[4])))
elif case == "plan":
    r = plan(sys.argv[3], hw, PlanRequest(ctx=int(sys.argv[4])))
    n = r.n_estimates
else:
    rows, _ = models_that_fit(hw)
    n = len(rows)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "n": n}))
"""

CASES: dict[str, list[str]] = {
    "plan llama-3.1-8b on rtx-4090, 8k": ["plan", "rtx-4090", "llama-3.1-8b", "8192"],
    "plan llama-3.1-70b on rtx-4090, 32k": ["plan", "rtx-4090", "llama-3.1-70b", "32768"],
    "plan qwen3-30b-a3b on rtx-4060, 32k": ["plan", "rtx-4060", "qwen3-30b-a3b", "32768"],
    "models --fits rtx-4090 (whole catalog)": ["fits", "rtx-4090"],
    "gpus --for llama-3.1-70b -r vllm, 32k": ["gpus", "rtx-4090", "llama-3.1-70b", "32768", "vllm"],
}


def _env() -> dict[str, str]:
    # users run with .pyc files; without them every run recompiles oomkit (~100 ms)
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _once(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        check=True,
        capture_output=True,
        text=True,
        env=_env(),
    ).stdout
    return dict(json.loads(out))


def _cli_once(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of the whole ``oomkit`` process: start-up, work, output, exit."""
    import resource
    import time

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "oomkit", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main(runs: int = 5) -> None:
    _once(CASES["plan llama-3.1-8b on rtx-4090, 8k"])  # writes the .pyc files
    for name, args in CASES.items():
        rows = [_once(args) for _ in range(runs)]
        work = statistics.median(r["work_s"] for r in rows)
        print(f"{name:<42} median {work * 1000:8.1f} ms over {runs} runs  (n={rows[0]['n']})")
    cli = [_cli_once(["models", "--fits", "rtx-4090"]) for _ in range(runs)]
    wall = statistics.median(w for w, _ in cli)
    cpu = statistics.median(c for _, c in cli)
    print(
        f"{'oomkit models --fits rtx-4090 (process)':<42} median {wall * 1000:8.1f} ms wall, "
        f"{cpu * 1000:.1f} ms CPU over {runs} runs"
    )
    print(f"load average {os.getloadavg()[0]:.2f}")


def test_bench_plan_one_gpu(benchmark: Any) -> None:
    benchmark.pedantic(_once, args=(CASES["plan llama-3.1-8b on rtx-4090, 8k"],), rounds=3)


def test_bench_models_fits(benchmark: Any) -> None:
    benchmark.pedantic(_once, args=(CASES["models --fits rtx-4090 (whole catalog)"],), rounds=1)


def test_bench_gpus_for_vllm(benchmark: Any) -> None:
    benchmark.pedantic(_once, args=(CASES["gpus --for llama-3.1-70b -r vllm, 32k"],), rounds=1)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
