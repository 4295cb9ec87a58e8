"""Bounded local load test of ``oomkit serve``: POST /api/estimate for a fixed time.

Starts ``oomkit serve`` on a free 127.0.0.1 port (or uses ``--url``, which must be a loopback
address), runs ``--concurrency`` client threads (httpx, keep-alive) for ``--duration`` seconds,
and prints requests/s, latency percentiles and errors. Every answer must be 200 with the same
JSON as the first one (the estimate is deterministic); anything else counts as an error.

    python benchmarks/load_web.py --duration 20 --concurrency 4
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import httpx

ROOT = Path(__file__).resolve().parents[1]
BODY = {"model": "llama-3.1-8b", "gpu": "rtx-4060-ti-16gb", "ctx": 32768}
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomkit", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/api/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:  # noqa: PERF203 - polling until the server is up
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("oomkit serve did not start within 30 s")


def _pct(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return float("nan")
    i = min(len(sorted_ms) - 1, max(0, round(q / 100 * len(sorted_ms) + 0.5) - 1))
    return sorted_ms[i]


def run(url: str, duration_s: float, concurrency: int) -> int:
    expected = hashlib.sha256(httpx.post(url + "/api/estimate", json=BODY).content).hexdigest()
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + duration_s

    def worker() -> None:
        local: list[float] = []
        errs: list[str] = []
        with httpx.Client(base_url=url, timeout=30) as client:
            while time.monotonic() < stop_at:
                t0 = time.perf_counter()
                try:
                    r = client.post("/api/estimate", json=BODY)
                    ok = r.status_code == 200 and hashlib.sha256(r.content).hexdigest() == expected
                    if not ok:
                        errs.append(f"HTTP {r.status_code}")
                except httpx.HTTPError as e:
                    errs.append(type(e).__name__)
                local.append((time.perf_counter() - t0) * 1000)
        with lock:
            latencies.extend(local)
            errors.extend(errs)

    t_start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t_start
    ms = sorted(latencies)
    print(f"POST {url}/api/estimate {BODY}")
    print(f"duration {elapsed:.1f} s, concurrency {concurrency}, requests {len(ms)}")
    print(f"throughput {len(ms) / elapsed:.1f} requests/s")
    print(
        f"latency ms: p50 {_pct(ms, 50):.1f}  p90 {_pct(ms, 90):.1f}  p99 {_pct(ms, 99):.1f}  "
        f"max {ms[-1] if ms else float('nan'):.1f}  mean {statistics.fmean(ms) if ms else 0:.1f}"
    )
    print(f"errors {len(errors)}" + (f" ({sorted(set(errors))})" if errors else ""))
    return 1 if errors or not ms else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=20.0, help="seconds (1..300)")
    ap.add_argument("--concurrency", type=int, default=4, help="client threads (1..64)")
    ap.add_argument("--url", help="a running server on 127.0.0.1 (default: start one)")
    args = ap.parse_args()
    if not 1 <= args.duration <= 300 or not 1 <= args.concurrency <= 64:
        ap.error("--duration must be 1..300 s and --concurrency 1..64")
    proc = None
    if args.url:
        if urlparse(args.url).hostname not in LOOPBACK:
            ap.error("--url must be a loopback address (127.0.0.1, localhost, ::1)")
        url = args.url.rstrip("/")
    else:
        proc, url = _start_server()
    try:
        return run(url, args.duration, args.concurrency)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    sys.exit(main())
