"""web23 (review23 findings 5, 9, 10, 11): the page of ``oomkit serve`` in a real browser.

- the doctor tab takes model / GPU / "when did it fail" as ``oomkit doctor -m --gpu --when``
  does, and its fixes are the CLI's for the same inputs (sized, not "generic");
- Host RAM typed slowly ("6", "64", "64Gi") is not an error on the way; a bad value keeps the
  last good result on the page with the error under the box;
- a link's ``gpu=h100`` (a CLI alias) picks the H100, never the RTX 4090 silently; an unknown
  name is an error under the GPU box naming the parameter;
- the legend lists only the parts the bars show (no "gradients/optimizer" for inference).

Debian's chromium as in test_web_browser.py. Screenshots go to ``$OOMKIT_ARTIFACTS`` (else
pytest's tmp dir).
"""

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

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)
pytest.importorskip("playwright", reason="the playwright package is not installed (test extra)")
pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from oomkit.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "oom_logs"
TIMEOUT_MS = 30_000
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
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
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        yield b
        b.close()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = os.environ.get("OOMKIT_ARTIFACTS")
    path = Path(out) if out else tmp_path_factory.mktemp("web23")
    path.mkdir(parents=True, exist_ok=True)
    return path


def cli_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    capsys.readouterr()
    main([*argv, "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _renders(page: Page) -> int:
    return int(page.evaluate("Number(document.body.dataset.renders || 0)"))


def _wait_render(page: Page, after: int) -> None:
    page.wait_for_function(
        f"Number(document.body.dataset.renders || 0) > {after} && "
        "!document.body.classList.contains('busy')",
        timeout=TIMEOUT_MS,
    )


def _diagnoses(page: Page) -> int:
    return int(page.evaluate("Number(document.body.dataset.diagnoses || 0)"))


def _page_fixes(page: Page) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for li in page.locator("#diagnosis .fixes > li").all():
        saving = li.locator(".saving")
        got = saving.get_attribute("data-bytes") if saving.count() else None
        out.append((li.locator("strong").inner_text(), int(got) if got is not None else None))
    return out


def _cli_fixes(doc: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(f["title"], f["expected_saving_bytes"]) for f in doc["fixes"]]


def test_doctor_tab_takes_model_gpu_when_as_the_cli(
    server: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = LOGS / "oom-torch-llama-82-7b-11gb.txt"
    facts = ["-m", "llama-3.1-8b", "--gpu", "2080ti", "--when", "first-step"]
    bare = cli_json(capsys, ["doctor", str(log), "--no-input"])
    sized = cli_json(capsys, ["doctor", str(log), "--no-input", *facts])
    assert _cli_fixes(bare) != _cli_fixes(sized)  # the facts change the answer
    assert any(s is not None for _, s in _cli_fixes(sized))

    page = browser.new_page(viewport={"width": 1200, "height": 1100})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/")
    _wait_render(page, 0)  # the page's handlers are attached once it has started
    page.click("#tab-doctor")
    for name, box in (("model", "doctor-model"), ("gpu", "doctor-gpu"), ("when", "doctor-when")):
        assert page.get_attribute(f"#{box}", "name") == name
        assert page.locator(f"label[for='{box}']").count() == 1
    page.fill("#log", log.read_text())
    page.click("#diagnose")
    page.wait_for_function("Number(document.body.dataset.diagnoses || 0) >= 1", timeout=TIMEOUT_MS)
    assert _page_fixes(page) == _cli_fixes(bare)

    n = _diagnoses(page)
    page.fill("#doctor-model", "llama-3.1-8b")
    page.fill("#doctor-gpu", "2080ti")  # the CLI's short name, as --gpu takes it
    page.select_option("#doctor-when", "first-step")
    page.click("#diagnose")
    page.wait_for_function(
        f"Number(document.body.dataset.diagnoses || 0) > {n}", timeout=TIMEOUT_MS
    )
    assert _page_fixes(page) == _cli_fixes(sized)
    assert page.get_attribute("#diagnosis .cause", "data-cause") == sized["cause"]
    page.screenshot(path=str(artifacts / "web23-doctor-facts.png"), full_page=True)

    # a GPU the catalog lacks: the CLI's one line, under the GPU box
    page.fill("#doctor-gpu", "no-such-gpu")
    page.click("#diagnose")
    page.wait_for_selector("#doctor-gpu-error", state="visible", timeout=TIMEOUT_MS)
    assert "Unknown GPU 'no-such-gpu'" in page.inner_text("#doctor-gpu-error")
    assert page.get_attribute("#doctor-gpu", "aria-invalid") == "true"
    assert page.get_attribute("#doctor-model", "aria-invalid") is None
    page.fill("#doctor-gpu", "2080ti")
    page.fill("#doctor-model", "no-such-model-xyz")
    page.press("#doctor-model", "Enter")
    page.wait_for_selector("#doctor-model-error", state="visible", timeout=TIMEOUT_MS)
    assert "no-such-model-xyz" in page.inner_text("#doctor-model-error")
    assert not page.locator("#doctor-gpu-error").is_visible()
    assert not errors
    page.close()


def test_host_ram_typed_slowly_keeps_the_result(
    server: str, browser: Browser, artifacts: Path
) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=rtx-4090&ctx=8192")
    _wait_render(page, 0)
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Yes")
    page.click("#ram")
    page.keyboard.type("64", delay=50)
    page.wait_for_timeout(800)  # well past the page's 250 ms debounce
    assert not page.locator("#ram-error").is_visible()
    assert not page.locator("#fit-error").is_visible()
    assert page.inner_text("#verdict") == verdict
    page.keyboard.type("Gi", delay=50)
    page.wait_for_timeout(800)
    assert not page.locator("#ram-error").is_visible()
    n = _renders(page)
    page.keyboard.type("B", delay=50)
    _wait_render(page, n)  # complete: sent without Enter
    assert not page.locator("#ram-error").is_visible()
    assert "ram=64GiB" in page.url

    # a bad value, sent on leaving the box: the error is under it, the last result stays
    n = _renders(page)
    page.fill("#ram", "64")
    page.press("#ram", "Tab")
    _wait_render(page, n)
    assert page.locator("#ram-error").is_visible()
    assert "no unit" in page.inner_text("#ram-error")
    assert page.inner_text("#verdict") == verdict
    assert page.locator("#bars .device").count() == 1
    assert page.locator("#stale-note").is_visible()
    page.screenshot(path=str(artifacts / "web23-ram-kept.png"), full_page=True)
    n = _renders(page)
    page.fill("#ram", "32GiB")
    _wait_render(page, n)
    assert not page.locator("#stale-note").is_visible()
    assert not page.locator("#ram-error").is_visible()
    page.close()


def test_link_gpu_takes_the_clis_names(
    server: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=h100&ctx=8192")
    _wait_render(page, 0)
    assert page.input_value("#gpu") == "h100-sxm"
    expected = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", "h100", "--ctx", "8192"])
    cap = page.locator('#bars .device[data-device="cuda:0"]').get_attribute("data-capacity-bytes")
    assert int(str(cap)) == expected["devices"][0]["capacity_bytes"]
    assert not page.locator("#gpu-link-error").count()

    page.goto(f"{server}/#model=llama-3.1-8b&gpu=2x4090&ctx=8192")
    page.reload()
    _wait_render(page, 0)
    assert page.input_value("#gpu") == "rtx-4090"
    assert page.input_value("#gpu-count") == "2"

    page.goto(f"{server}/#model=llama-3.1-8b&gpu=no-such-gpu&runtime=bogus&ctx=8192")
    page.reload()
    _wait_render(page, 0)
    note = page.inner_text("#gpu-link-error")
    assert "gpu=no-such-gpu" in note
    assert "Unknown GPU 'no-such-gpu'" in note
    assert "instead" in note  # says what it shows
    assert page.get_attribute("#gpu", "aria-invalid") == "true"
    assert "runtime=bogus" in page.inner_text("#runtime-link-error")
    page.screenshot(path=str(artifacts / "web23-link-gpu-error.png"))
    page.select_option("#gpu", "rtx-3090")
    assert not page.locator("#gpu-link-error").is_visible()
    page.close()


def test_legend_lists_the_parts_shown(server: str, browser: Browser, artifacts: Path) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=rtx-4090&ctx=8192")
    _wait_render(page, 0)
    legend = page.inner_text("#legend")
    assert "gradients/optimizer" not in legend
    for part in page.locator("#bars li[data-part]").all():
        shown = page.locator(f"#legend [data-part='{part.get_attribute('data-part')}']")
        assert shown.is_visible()
    assert "weights" in legend
    page.screenshot(path=str(artifacts / "web23-desktop.png"), full_page=True)
    narrow = browser.new_page(viewport={"width": 375, "height": 812})
    narrow.goto(f"{server}/#model=llama-3.1-8b&gpu=rtx-4090&ctx=8192")
    _wait_render(narrow, 0)
    width = narrow.evaluate("document.documentElement.scrollWidth")
    assert width <= 375
    narrow.screenshot(path=str(artifacts / "web23-375.png"), full_page=True)
    narrow.click("#tab-doctor")
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 375
    narrow.screenshot(path=str(artifacts / "web23-375-doctor.png"), full_page=True)
    narrow.close()
    page.close()
