"""review23: a bad value typed into a box of the page (Host RAM "lots", an unknown model) is shown
under that box, which is marked invalid (``aria-invalid``, read through its
``aria-describedby``), not only in the banner under the form: the user sees which box to fix.
Debian's chromium as in test_web_browser.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)
pytest.importorskip("playwright", reason="the playwright package is not installed (test extra)")
pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")

from playwright.sync_api import Page, sync_playwright  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
TIMEOUT_MS = 30_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _renders(page: Page) -> int:
    return int(page.evaluate("Number(document.body.dataset.renders || 0)"))


def _wait_render(page: Page, after: int) -> None:
    page.wait_for_function(
        f"Number(document.body.dataset.renders || 0) > {after} && "
        "!document.body.classList.contains('busy')",
        timeout=TIMEOUT_MS,
    )


def test_bad_typed_values_are_shown_at_their_box() -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomkit", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/api/health", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(CHROMIUM),
                                  args=["--headless", "--no-sandbox", "--disable-gpu"])  # fmt: skip
            page = b.new_page()
            page.goto(f"{base}/#model=llama-3.1-8b&gpu=rtx-4090&ctx=8192")
            _wait_render(page, 0)
            assert page.get_attribute("#ram", "aria-invalid") is None

            n = _renders(page)
            page.fill("#ram", "lots")
            page.press("#ram", "Enter")  # web23: an incomplete size is sent on Enter / blur
            _wait_render(page, n)
            assert page.get_attribute("#ram", "aria-invalid") == "true"
            assert page.locator("#ram-error").is_visible()
            assert "'lots'" in page.inner_text("#ram-error")
            assert "ram-error" in str(page.get_attribute("#ram", "aria-describedby"))
            assert page.get_attribute("#model", "aria-invalid") is None

            n = _renders(page)
            page.fill("#ram", "64GiB")
            _wait_render(page, n)
            assert page.get_attribute("#ram", "aria-invalid") is None
            assert not page.locator("#ram-error").is_visible()
            assert page.inner_text("#verdict").startswith("Yes")

            n = _renders(page)
            page.fill("#model", "no-such-model-xyz")
            page.press("#model", "Enter")
            _wait_render(page, n)
            assert page.get_attribute("#model", "aria-invalid") == "true"
            assert "no-such-model-xyz" in page.inner_text("#model-error")
            assert page.get_attribute("#ram", "aria-invalid") is None
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
