"""``plan --display/--headless`` and ``--os`` describe the machine as ``estimate``'s do: every
plan must clear the verdict's band, and a desktop display (unknown by default, counted in the
band) is what a headless server does not keep free."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from oomkit.estimate.verdict import verdict
from oomkit.planner.core import plan
from oomkit.planner.request import PlanRequest

ASK = ["llama-3.1-8b", "-g", "rtx-3060", "-q", "Q8_0", "--ctx", "128k", "--min-ctx", "2048"]
ASK += ["--headroom", "0GiB", "--no-offload"]


def _best(*extra: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "oomkit", "plan", *ASK, *extra, "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc["plans"][0]  # type: ignore[no-any-return]


def test_headless_plans_a_longer_context_than_an_unknown_display() -> None:
    unknown, headless, display = _best(), _best("--headless"), _best("--display")
    assert headless["settings"]["ctx"] > unknown["settings"]["ctx"]
    assert display["settings"]["ctx"] <= unknown["settings"]["ctx"]


def test_every_plan_clears_the_band_of_the_platform_it_was_asked_for() -> None:
    from oomkit.cli.gpu_choice import choose_hardware
    from oomkit.estimate.verdict import Platform, device_segment, device_unified_bytes

    hw = choose_hardware("rtx-3060").hardware
    for display in (None, True, False):
        req = PlanRequest(ctx=131072, min_ctx=2048, quant="Q8_0", display=display, headroom_bytes=0)
        result = plan("llama-3.1-8b", hw, req, offline=True)
        platform = Platform(
            display=display,
            segments=tuple(device_segment(d) for d in hw.devices),
            unified_bytes=tuple(device_unified_bytes(d) for d in hw.devices),
        )
        assert result.plans
        for p in result.plans:
            assert verdict(p.estimate, platform).level == "fits"


def test_windows_budgets_the_wddm_capacity() -> None:
    linux = _best("--os", "linux")
    windows = _best("--os", "windows", "--display")
    # WDDM reports a different usable total than Linux's CUDA total; the plan follows it
    assert linux["devices"][0]["capacity_bytes"] != windows["devices"][0]["capacity_bytes"]


def test_bad_platform_input_is_refused_in_one_line() -> None:
    import pytest

    from oomkit.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError, match="'display' must be True, False or None"):
        PlanRequest(display="yes")  # type: ignore[arg-type]
    cmd = [sys.executable, "-m", "oomkit", "plan", "llama-3.1-8b", "-g", "rtx-3060"]
    res = subprocess.run([*cmd, "--os", "beos"], capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert "--os" in res.stderr
