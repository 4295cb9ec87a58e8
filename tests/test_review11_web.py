"""The page with a link someone edited (review11), in Debian's chromium (as test_web_browser.py):
a value a select does not offer (``#runtime=bogus``) used to blank the select and send
``runtime: ""``, so the page showed "String should have at least 1 character" for a field the
user never typed; it keeps the default instead. Markup in the link stays text."""

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

from playwright.sync_api import sync_playwright  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_edited_link_keeps_defaults_and_shows_markup_as_text() -> None:
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
                urllib.request.urlopen(base + "/api/models?q=llama", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(CHROMIUM),
                                  args=["--headless", "--no-sandbox", "--disable-gpu"])  # fmt: skip
            page = b.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(f"{base}/#model=llama-3.1-8b&gpu=rtx-4090&runtime=bogus&n=999&ctx=8192")
            page.wait_for_function("Number(document.body.dataset.renders || 0) > 0",
                                   timeout=30_000)  # fmt: skip
            assert page.input_value("#runtime") == "llama.cpp"
            assert page.input_value("#gpu-count") != ""
            assert page.inner_text("#fit-error") == ""
            assert page.inner_text("#verdict").startswith("Yes")
            page.goto("about:blank")
            page.goto(f"{base}/#model=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&gpu=rtx-4090")
            page.wait_for_function("Number(document.body.dataset.renders || 0) > 0",
                                   timeout=30_000)  # fmt: skip
            assert "<img src=x onerror=alert(1)>" in page.inner_text("#fit-error")
            assert dialogs == []
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
