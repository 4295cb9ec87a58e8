"""The deciding question on the web: ``POST /api/doctor`` returns ``question``/``answers`` as
``oomkit doctor --json`` does, takes ``{"answers": {id: value}}`` like ``--answer``, names the
field in its errors; the page shows the question as buttons and re-posts with the answer (a
real chromium, as tests/test_web_browser.py drives it)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web API is the [web] extra")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient

from corpus_records import corpus_text
from oomkit.web.app import create_app

ROOT = Path(__file__).resolve().parents[1]
OPEN = "tc-mygirlgpt-11"  # a small request on a full 4 GiB card: open between model and batch
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _cli(text: str, *args: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "doctor", "--json", "-", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_the_question_and_the_answer_are_the_clis(client: TestClient) -> None:
    text = corpus_text(OPEN)
    r = client.post("/api/doctor", content=text, headers={"content-type": "text/plain"})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc == _cli(text)
    q = doc["question"]
    assert q is not None
    assert doc["answers"] == []
    value, leads_to = q["answers"][0]["value"], q["answers"][0]["leads_to"]
    answered = client.post("/api/doctor", json={"log": text, "answers": {q["id"]: value}})
    assert answered.status_code == 200, answered.text
    assert answered.json() == _cli(text, "--answer", f"{q['id']}={value}")
    assert answered.json()["cause"] == leads_to
    assert answered.json()["answers"][0]["id"] == q["id"]


@pytest.mark.parametrize(
    ("answers", "needle"),
    [
        ({"batch2": "yes"}, "answers: unknown question id 'batch2'; valid ids: when, batch1"),
        (
            {"batch1": "maybe"},
            "answers batch1=maybe: not an answer of batch1; valid values: yes, no",
        ),
        ({"batch1": 1}, "answers: Input should be a valid string (got 1)"),
        ({"when": "later"}, "answers: when=later disagrees with when=load"),
    ],
)
def test_bad_answers_are_one_line_errors_naming_the_field(
    client: TestClient, answers: dict[str, Any], needle: str
) -> None:
    body: dict[str, Any] = {"log": corpus_text(OPEN), "answers": answers}
    if "when" in answers:
        body["when"] = "load"
    r = client.post("/api/doctor", json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert needle in detail
    assert "\n" not in detail


# -- the page in a real browser ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_the_page_shows_the_question_as_buttons_and_reposts_the_answer(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright (test extra)")
    text = corpus_text(OPEN)
    plain = _cli(text)
    q = plain["question"]
    second = q["answers"][1]
    expected = _cli(text, "--answer", f"{q['id']}={second['value']}")
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
            page.goto(base + "/")
            page.click("#tab-doctor")
            page.fill("#log", text)
            page.click("#diagnose")
            page.wait_for_selector("#diagnosis .question", timeout=30_000)
            assert page.get_attribute("#diagnosis .question", "data-question") == q["id"]
            buttons = page.locator("#diagnosis .question button.answer")
            assert buttons.count() == len(q["answers"])
            assert buttons.nth(1).get_attribute("data-value") == second["value"]
            assert second["leads_to"] in buttons.nth(1).inner_text()
            assert page.get_attribute("#diagnosis .cause", "data-cause") == plain["cause"]
            buttons.nth(1).click()  # re-posts the log with the answer
            page.wait_for_selector("#diagnosis .answered", timeout=30_000)
            assert page.get_attribute("#diagnosis .cause", "data-cause") == expected["cause"]
            assert page.inner_text("#diagnosis .explanation") == expected["explanation"]
            assert f"{q['id']}={second['value']}" in page.inner_text("#diagnosis .answered")
            assert page.locator("#diagnosis .question").count() == (
                0 if expected["question"] is None else 1
            )
            page.screenshot(path=str(tmp_path / "web-doctor-question.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
