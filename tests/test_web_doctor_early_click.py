"""The doctor tab works before the GPU list has loaded (a real chromium against ``oomkit serve``).

The page once attached its Diagnose handler only after ``/api/gpus`` answered, so a click in
the first moment did nothing (a CI run on a loaded box timed out waiting for the diagnosis).
Here the browser holds the GPU list's request back (playwright's request routing: the server is
real, the request is only released after the diagnosis) and the click must still diagnose.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web API is the [web] extra")

from corpus_records import corpus_text

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
RECORD = "tc-mygirlgpt-11"  # a PyTorch OOM from the development corpus


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_diagnose_before_the_gpu_list_loads() -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright (test extra)")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomkit", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(base + "/api/health", timeout=2):
                    break
            except OSError:
                assert proc.poll() is None, "oomkit serve exited"
                time.sleep(0.1)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page()
            held: list[Any] = []
            # the GPU list's request is held (not answered) until the diagnosis is on the page:
            # a handler attached only after the list loads never runs, and the wait times out

            def hold(route: Any) -> None:
                held.append(route)

            page.route("**/api/gpus*", hold)
            page.goto(base + "/", wait_until="domcontentloaded")
            page.click("#tab-doctor")
            page.fill("#log", corpus_text(RECORD))
            page.wait_for_function("document.body.dataset.diagnoses === undefined")
            page.click("#diagnose")
            page.wait_for_selector("#diagnosis .cause", timeout=30_000)
            assert held, "the GPU list was not requested: the test held nothing back"
            assert page.get_attribute("#diagnosis .cause", "data-cause")
            for route in held:
                route.continue_()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
