"""The page of ``oomkit serve`` in a real browser: Debian's chromium driven by Playwright.

``oomkit serve`` runs as a subprocess on a free 127.0.0.1 port; the tests pick a model and a GPU,
move the context slider with the keyboard, copy a command through the real clipboard, and paste
a real OOM log into the doctor tab. The numbers the page shows are compared with the CLI's
``--json`` for the same inputs. Screenshots go to ``$OOMKIT_ARTIFACTS`` (else pytest's tmp dir).

Chromium comes from Debian (``apt-get install chromium``, as ``.ci/run`` does), never from
``playwright install``; without it these tests skip and say so.
"""

from __future__ import annotations

import importlib.util
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
    pytest.skip(
        "Debian's chromium is not installed (apt-get install chromium; .ci/run does it)",
        allow_module_level=True,
    )
pytest.importorskip("playwright", reason="the playwright package is not installed (test extra)")
pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from oomkit.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "oom_logs"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
GPU = "rtx-4060-ti-16gb"  # `oomkit gpus --catalog 4060`
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
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(base + "/api/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"oomkit serve exited: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.1)
        else:
            pytest.fail("oomkit serve did not answer within 30 s")
        yield base
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    where = os.environ.get("OOMKIT_ARTIFACTS")
    out = Path(where) if where else tmp_path / "artifacts"
    out.mkdir(parents=True, exist_ok=True)
    return out


def cli_json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    capsys.readouterr()
    main([*argv, "--json"])
    return json.loads(capsys.readouterr().out)


def _renders(page: Page) -> int:
    return int(page.evaluate("Number(document.body.dataset.renders || 0)"))


def _wait_render(page: Page, after: int) -> None:
    page.wait_for_function(
        f"Number(document.body.dataset.renders || 0) > {after} && "
        "!document.body.classList.contains('busy')",
        timeout=TIMEOUT_MS,
    )


def _device_numbers(page: Page) -> dict[str, int]:
    dev = page.locator('#bars .device[data-device="cuda:0"]')
    parts = {
        str(li.get_attribute("data-part")): int(str(li.get_attribute("data-bytes")))
        for li in dev.locator("li[data-part]").all()
    }
    parts["total"] = int(str(dev.locator(".total").get_attribute("data-total-bytes")))
    return parts


def _cli_numbers(doc: dict[str, Any]) -> dict[str, int]:
    d = doc["devices"][0]
    out = {
        "weights": d["weights_bytes"],
        "kv": d["kv_cache_bytes"],
        "compute": d["activations_bytes"],
        "overhead": d["overhead_bytes"],
        "total": d["total_bytes"],
    }
    return {k: v for k, v in out.items() if v}


def test_pick_model_and_gpu_move_context_copy_command(
    server: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    context = browser.new_context(
        viewport={"width": 1200, "height": 1000},
        permissions=["clipboard-read", "clipboard-write"],
        color_scheme="light",
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/")
    _wait_render(page, 0)

    # model: type part of the name, the catalog autocomplete offers the full key
    n = _renders(page)
    page.fill("#model", "llama-3.1-8")
    page.wait_for_function(
        "[...document.querySelectorAll('#model-list option')]"
        ".some(o => o.value === 'llama-3.1-8b')",
        timeout=TIMEOUT_MS,
    )
    page.fill("#model", "llama-3.1-8b")
    page.select_option("#gpu", GPU)
    _wait_render(page, n)
    assert page.input_value("#ctx") == "2"  # 8k
    before = _device_numbers(page)
    verdict_8k = page.inner_text("#verdict")
    expected_8k = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", GPU, "--ctx", "8192"])
    assert before == _cli_numbers(expected_8k)
    assert verdict_8k.startswith("Yes")
    assert "8,192 tokens" in verdict_8k
    page.screenshot(path=str(artifacts / "web-8k.png"), full_page=True)

    # context 8k -> 32k with the keyboard: two steps right on the slider
    n = _renders(page)
    page.focus("#ctx")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#ctx-out") == "32k"
    _wait_render(page, n)
    after = _device_numbers(page)
    verdict_32k = page.inner_text("#verdict")
    expected_32k = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", GPU, "--ctx", "32768"])
    assert after == _cli_numbers(expected_32k)
    assert after["kv"] == 4 * before["kv"]  # the f16 KV cache grows with the context
    assert verdict_32k != verdict_8k
    assert "32,768 tokens" in verdict_32k
    bar_widths = page.eval_on_selector_all(
        "#bars .seg", "segs => segs.map(s => s.getBoundingClientRect().width)"
    )
    assert len(bar_widths) == 4
    assert all(w > 0 for w in bar_widths)

    # the plan table is `oomkit plan --json`; copy the first plan's command
    plan = cli_json(capsys, ["plan", "llama-3.1-8b", "--gpu", GPU, "--ctx", "32768"])
    rows = page.locator("#plan-table tbody tr")
    assert rows.count() == len(plan["plans"]) >= 1
    assert (
        page.locator("#plan-table tbody tr[data-plan='0'] code").inner_text()
        == (plan["plans"][0]["command"])
    )
    page.screenshot(path=str(artifacts / "web-4060ti-32k.png"), full_page=True)  # docs/
    page.locator("#plan-table tbody tr[data-plan='0'] button.copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == plan["plans"][0]["command"]
    # speed is shown exactly when the plan JSON has one
    has_speed = any((p.get("speed") or {}).get("decode_tokens_per_s") for p in plan["plans"])
    assert page.locator("#plan-table thead th.speed-col").is_visible() == has_speed
    assert errors == []
    context.close()


def test_compare_runtimes_and_copy_each_command(
    server: str, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(f"{server}/#model=llama-3.1-8b&gpu={GPU}&ctx=32768")
    _wait_render(page, 0)
    n = _renders(page)
    page.focus("#compare")
    page.keyboard.press("Space")  # the checkbox works from the keyboard
    _wait_render(page, n)
    assert "compare=1" in page.url
    plan = cli_json(capsys, ["plan", "llama-3.1-8b", "-g", GPU, "-c", "32768", "-r", "any"])
    runtimes = page.locator("#plan-table tbody tr td[data-label='Runtime']").all_inner_texts()
    assert runtimes == [p["runtime"] for p in plan["plans"]]
    assert len(set(runtimes)) >= 3
    for i, p in enumerate(plan["plans"]):
        page.locator(f"#plan-table tbody tr[data-plan='{i}'] button.copy").focus()
        page.keyboard.press("Enter")  # copy without a mouse
        page.wait_for_function(
            f"document.querySelector(\"#plan-table tr[data-plan='{i}'] button.copy\")"
            ".textContent === 'Copied'",
            timeout=TIMEOUT_MS,
        )
        assert page.evaluate("navigator.clipboard.readText()") == p["command"]
    context.close()


def test_vllm_on_two_gpus_uses_tensor_parallel(
    server: str, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=qwen3-30b-a3b&gpu=h100-sxm&n=2&runtime=vllm&ctx=32768")
    _wait_render(page, 0)
    argv = ["estimate", "qwen3-30b-a3b", "-r", "vllm", "-g", "2xh100-sxm", "--tp", "2"]
    expected = cli_json(capsys, [*argv, "-c", "32768"])
    shown = page.eval_on_selector_all(
        "#bars .device .total", "ts => ts.map(t => Number(t.dataset.totalBytes))"
    )
    assert shown == [d["total_bytes"] for d in expected["devices"]]
    assert len(shown) == 2
    assert page.locator("#bars .headroom").count() == 0  # vLLM sizes its pool by utilization
    page.close()


def test_state_in_the_url_and_a_model_that_does_not_fit(
    server: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    # transformers: llama.cpp without -ngl (the page has none) runs what its --fit picks, which
    # fits whenever the compute buffer does (oomkit.estimate.llamacpp_fit)
    page.goto(f"{server}/#model=llama-3.1-70b&gpu={GPU}&ctx=8192&runtime=transformers")
    _wait_render(page, 0)
    expected = cli_json(
        capsys, ["estimate", "llama-3.1-70b", "--gpu", GPU, "--ctx", "8192", "-r", "transformers"]
    )
    assert expected["fits"] is False
    assert page.get_attribute("#verdict", "data-fits") == "false"
    assert page.inner_text("#verdict").startswith("No")
    assert _device_numbers(page) == _cli_numbers(expected)
    shown = page.locator("#suggestions li code").all_inner_texts()
    assert shown == [s["command"] for s in expected["suggestions"]]
    page.screenshot(path=str(artifacts / "web-70b-nofit.png"), full_page=True)

    n = _renders(page)
    page.fill("#model", "no-such-model-xy")  # typing: no request for an unknown partial name
    page.wait_for_timeout(600)
    assert _renders(page) == n
    page.fill("#model", "no-such-model-xyz")
    page.press("#model", "Enter")
    _wait_render(page, n)
    assert page.locator("#fit-error").is_visible()
    assert "no-such-model-xyz" in page.inner_text("#fit-error")
    assert page.inner_text("#verdict") == ""
    page.close()


def test_doctor_tab_with_the_keyboard(
    server: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = browser.new_page(viewport={"width": 1100, "height": 1000})
    page.goto(server + "/")
    _wait_render(page, 0)
    # tabs: arrow keys move between them (WAI-ARIA tabs), the panel follows
    page.focus("#tab-fit")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.id") == "tab-doctor"
    assert page.get_attribute("#tab-doctor", "aria-selected") == "true"
    assert page.locator("#panel-doctor").is_visible()
    assert not page.locator("#panel-fit").is_visible()

    log = LOGS / "constructed-llamacpp-kv-fail.txt"
    expected = cli_json(capsys, ["doctor", str(log)])
    page.fill("#log", log.read_text())
    page.focus("#log")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#diagnosis .cause", timeout=TIMEOUT_MS)
    assert page.get_attribute("#diagnosis .cause", "data-cause") == expected["cause"]
    assert page.inner_text("#diagnosis .explanation") == expected["explanation"]
    fixes = page.locator("#diagnosis .fixes > li strong").all_inner_texts()
    assert fixes == [f["title"] for f in expected["fixes"]]
    assert fixes
    page.screenshot(path=str(artifacts / "web-doctor.png"), full_page=True)

    # a real PyTorch OOM message pasted alone
    torch_log = (LOGS / "oom-torch-llama-82-7b-11gb.txt").read_text()
    expected = cli_json(capsys, ["doctor", str(LOGS / "oom-torch-llama-82-7b-11gb.txt")])
    page.fill("#log", torch_log)
    page.click("#diagnose")
    page.wait_for_function(
        f"document.querySelector('#diagnosis .cause')?.dataset.cause === '{expected['cause']}' "
        "&& Number(document.body.dataset.diagnoses) >= 2",
        timeout=TIMEOUT_MS,
    )
    assert "86.00 MiB" in page.inner_text("#diagnosis .events")
    page.keyboard.press("Shift+Tab")  # focus leaves the textarea backwards: still reachable
    page.close()


def test_focus_order_narrow_screen_and_dark_mode(
    server: str, browser: Browser, artifacts: Path
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    page.goto(f"{server}/#model=llama-3.1-8b&gpu={GPU}&ctx=32768")
    _wait_render(page, 0)
    page.focus("#model")
    order = []
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
    assert order == ["gpu", "gpu-count", "runtime", "quant", "compare", "ctx"]
    for field in ("model", "gpu", "gpu-count", "runtime", "quant", "compare", "ctx", "log"):
        assert page.locator(f"label[for='{field}']").count() == 1
    # no horizontal scrolling on a phone-sized screen (the plan table scrolls in its own box)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    rgb = [int(x) for x in bg[bg.index("(") + 1 : bg.index(")")].split(",")[:3]]
    assert sum(rgb) < 150, bg  # dark
    page.screenshot(path=str(artifacts / "web-narrow-dark.png"), full_page=True)
    context.close()


@pytest.fixture(scope="module")
def server_with_gpus() -> Iterator[str]:
    """The app in a uvicorn thread, its live GPUs replayed from a captured nvidia-smi table."""
    import importlib.util
    import threading

    import uvicorn

    from oomkit.web.app import create_app

    spec = importlib.util.spec_from_file_location(
        "web_gpu_replay", ROOT / "tests" / "web_gpu_replay.py"
    )
    assert spec is not None
    assert spec.loader is not None
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)
    port = _free_port()
    config = uvicorn.Config(
        create_app(gpu_backend=replay.ReplayBackend),
        host="127.0.0.1",
        port=port,
        log_level="warning",
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(300):
        if srv.started:
            break
        time.sleep(0.1)
    else:
        pytest.fail("uvicorn did not start within 30 s")
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=20)


def _all_devices(page: Page) -> list[tuple[str, int, int]]:
    """(device, total, capacity) of every GPU bar on the page."""
    return [
        (
            str(d.get_attribute("data-device")),
            int(str(d.locator(".total").get_attribute("data-total-bytes"))),
            int(str(d.get_attribute("data-capacity-bytes"))),
        )
        for d in page.locator("#bars .device").all()
    ]


def _cli_devices(doc: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [
        (d["device"], d["total_bytes"], d["capacity_bytes"])
        for d in doc["devices"]
        if d["capacity_bytes"]
    ]


def test_my_gpus_are_offered_first(
    server_with_gpus: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from oomkit.cli.gpus import use_backend

    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(server_with_gpus + "/")
    _wait_render(page, 0)
    groups = page.eval_on_selector_all("#gpu optgroup", "gs => gs.map(g => g.label)")
    assert groups == ["My GPUs", "Catalog"]
    # this machine's GPUs, all of them: `oomkit estimate --gpu auto` (count, free memory each)
    assert page.input_value("#gpu") == "auto"
    assert page.is_disabled("#gpu-count")
    assert "RTX 4090" in page.inner_text("#gpu optgroup[label='My GPUs'] option")
    spec = importlib.util.spec_from_file_location(
        "web_gpu_replay", ROOT / "tests" / "web_gpu_replay.py"
    )
    assert spec is not None
    assert spec.loader is not None
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)
    use_backend(replay.ReplayBackend)
    try:
        auto = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", "auto", "--ctx", "8192"])
        gpus = cli_json(capsys, ["gpus"])["gpus"]
    finally:
        use_backend(None)
    assert len(_cli_devices(auto)) == 2
    assert _all_devices(page) == _cli_devices(auto)
    assert [c for _, _, c in _all_devices(page)] == [g["memory_free_bytes"] for g in gpus]
    page.screenshot(path=str(artifacts / "web-my-gpus.png"), full_page=True)

    # one of them: its free memory now (as --gpu auto budgets it), the catalog card's numbers
    n = _renders(page)
    page.select_option("#gpu", "live:1")
    _wait_render(page, n)
    assert page.is_disabled("#gpu-count")
    free = gpus[1]["memory_free_bytes"]
    one = cli_json(
        capsys,
        ["estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--vram", f"{free}B", "--ctx", "8192"],
    )
    assert _all_devices(page) == _cli_devices(one)
    assert _all_devices(page)[0][2] == free
    page.close()


def test_windows_16gb_lmstudio_run_is_the_clis(
    server: str, browser: Browser, artifacts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OS, host RAM, -ctk/-ctv and LM Studio on the page: the CLI's numbers for that run."""
    page = browser.new_page(viewport={"width": 1200, "height": 1100})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/#model=llama-3.1-8b&gpu={GPU}&ctx=32768")
    _wait_render(page, 0)
    for field in ("os", "ram", "ctk", "ctv"):
        assert page.locator(f"label[for='{field}']").count() == 1
    n = _renders(page)
    page.select_option("#runtime", "lmstudio")
    page.select_option("#os", "windows")
    page.fill("#ram", "16GiB")
    page.select_option("#ctk", "q8_0")
    page.select_option("#ctv", "q8_0")
    _wait_render(page, n)
    page.wait_for_function("document.querySelector('#bars .host') !== null", timeout=TIMEOUT_MS)
    argv = ["estimate", "llama-3.1-8b", "--gpu", GPU, "--ctx", "32768", "-r", "lmstudio"]
    argv += ["--os", "windows", "--ram", "16GiB", "-ctk", "q8_0", "-ctv", "q8_0"]
    expected = cli_json(capsys, argv)
    assert _all_devices(page) == _cli_devices(expected)
    assert _device_numbers(page) == _cli_numbers(expected)
    plain = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", GPU, "--ctx", "32768"])
    assert _all_devices(page) != _cli_devices(plain)  # the fields changed the answer
    host = page.locator("#bars .host")
    assert int(str(host.get_attribute("data-total-bytes"))) == expected["host"]["total_bytes"]
    assert "os=windows" in page.url
    assert "ctk=q8_0" in page.url
    page.screenshot(path=str(artifacts / "web-windows-lmstudio.png"), full_page=True)

    # a reload keeps the fields (the URL has them)
    page.reload()
    _wait_render(page, 0)
    assert page.input_value("#os") == "windows"
    assert page.input_value("#ram") == "16GiB"
    assert page.input_value("#ctv") == "q8_0"
    assert _all_devices(page) == _cli_devices(expected)

    # the KV types are llama.cpp's: hidden for vLLM (and not sent)
    n = _renders(page)
    page.select_option("#runtime", "vllm")
    _wait_render(page, n)
    assert page.is_hidden("#ctk")

    # a bad value: the server's one-line error names the field, not a flag
    n = _renders(page)
    page.fill("#ram", "lots")
    page.press("#ram", "Enter")  # web23: an incomplete size is sent on Enter / blur
    _wait_render(page, n)
    detail = page.inner_text("#fit-error")
    assert "'ram'" in detail
    assert "--ram" not in detail
    assert not errors
    page.close()


def test_gpu_label_is_the_estimates_capacity_and_context_stops_at_the_models(
    server: str, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    # the dropdown read "RTX 4090 (23.99 GiB)" (NVML's total) while the verdict said "of 23.52
    # GiB" (the CUDA total the estimate budgets against); the slider went to 512k for a 128k
    # model and past GPT-2's 1024-row position table
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=rtx-4090&ctx=8192")
    _wait_render(page, 0)
    expected = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8192"])
    cap = expected["devices"][0]["capacity_bytes"]
    label = page.locator("#gpu option[value='rtx-4090']").inner_text()
    assert label == "RTX 4090 (23.52 GiB usable of 23.99 GiB)"
    assert cap == 25253904384  # 23.52 GiB
    assert "of 23.52 GiB" in page.inner_text("#verdict")
    # Windows: CUDA reports the NVML total under WDDM, and so does the label
    n = _renders(page)
    page.select_option("#os", "windows")
    _wait_render(page, n)
    assert page.locator("#gpu option[value='rtx-4090']").inner_text() == "RTX 4090 (23.99 GiB)"
    win = cli_json(capsys, ["estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--ctx", "8192",
                            "--os", "windows"])  # fmt: skip
    assert win["devices"][0]["capacity_bytes"] == 25757220864
    # llama-3.1-8b: 131072 (max_position_embeddings, llama3 rope already scaled)
    assert page.get_attribute("#ctx", "max") == "6"
    page.focus("#ctx")
    page.keyboard.press("End")
    assert page.inner_text("#ctx-out") == "128k"
    # GPT-2: a learned position table of 1024 rows, a link asking 8k is bounded to it
    page.goto(f"{server}/#model=gpt2&gpu=rtx-4090&ctx=8192")
    page.reload()
    _wait_render(page, 0)
    assert page.get_attribute("#ctx", "max") == "0"
    assert page.inner_text("#ctx-out") == "1k"
    assert "1,024 tokens" in page.inner_text("#verdict")
    assert errors == []
    page.close()


def test_windows_free_memory_is_the_verdicts_after_the_wddm_reservation(
    server: str, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    """On Windows the verdict keeps WDDM's share out of the GPU (a ``reservations`` entry of
    ``verdict_details.margins``): ``estimate`` prints "2.06 GiB free after Windows WDDM ...",
    the page said "leaving 2.56 GiB free", the capacity less the total."""
    from oomkit.units import format_bytes

    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=llama-3.1-8b&gpu={GPU}&os=windows&ctx=32768")
    _wait_render(page, 0)
    argv = ["estimate", "llama-3.1-8b", "--gpu", GPU, "--ctx", "32768", "--os", "windows"]
    expected = cli_json(capsys, argv)
    margin = expected["verdict_details"]["margins"][0]
    assert margin["reservations"]  # WDDM's share, not in the device's total
    dev = expected["devices"][0]
    assert margin["free_bytes"] < dev["capacity_bytes"] - dev["total_bytes"]
    free = format_bytes(margin["free_bytes"])
    assert f"leaving {free} free after " in page.inner_text("#verdict")
    assert page.inner_text('#bars .device[data-device="cuda:0"] .free') == f"{free} free"
    page.close()


def test_a_fit_with_layers_on_the_cpu_says_so(
    server: str, browser: Browser, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama.cpp's ``--fit`` puts a 70B Q4_K_M on one 24 GB card with 43 of 81 layers on the
    GPU; ``estimate`` says so, the page said only "Yes — ... leaving 1.11 GiB free"."""
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=llama-3.1-70b&gpu=rtx-4090&ctx=8192")
    _wait_render(page, 0)
    expected = cli_json(capsys, ["estimate", "llama-3.1-70b", "--gpu", "rtx-4090", "-c", "8192"])
    on_gpu, layers = expected["runtime_details"]["offloaded_layers"].split("/")
    assert int(on_gpu) < int(layers)
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Yes")
    assert f"Only {on_gpu} of {layers} layers are on the GPU" in verdict
    page.close()
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.goto(f"{server}/#model=llama-3.1-8b&gpu=rtx-4090&ctx=8192")
    _wait_render(page, 0)
    assert "layers" not in page.inner_text("#verdict")  # all on the GPU: nothing to say
    page.close()


def test_doctor_error_clears_the_last_logs_diagnosis(server: str, browser: Browser) -> None:
    """A blank paste or a body over 2 MiB after a diagnosed log: the page showed the error
    above the previous log's diagnosis, as if it were this one's."""
    page = browser.new_page(viewport={"width": 1100, "height": 1000})
    page.goto(server + "/")
    _wait_render(page, 0)
    page.click("#tab-doctor")
    for bad, said in (("   ", "Paste the error"), ("x" * (2 * 1024 * 1024 + 1), "2 MiB")):
        page.fill("#log", (LOGS / "oom-torch-llama-82-7b-11gb.txt").read_text())
        page.click("#diagnose")
        page.wait_for_selector("#diagnosis .cause", timeout=TIMEOUT_MS)
        page.fill("#log", bad)
        page.click("#diagnose")
        page.wait_for_selector("#doctor-error", state="visible", timeout=TIMEOUT_MS)
        assert said in page.inner_text("#doctor-error")
        assert page.locator("#diagnosis .cause").count() == 0
    page.close()
