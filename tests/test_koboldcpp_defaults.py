"""``-r koboldcpp`` runs llama.cpp's estimator with koboldcpp's own default: flash attention
is opt-in there (koboldcpp.py ``--flashattention``, ``action='store_true'``), where
llama-server's ``-fa`` is ``auto`` (on). Real record: koboldcpp issue 1780 (1.99.4, Windows,
2x RTX 5090, Llama-3.3-70B Q4_K_M at 32768 with KV offload): all 81 layers died at warm-up on
device 1, 75 layers ran."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

ASK = ["llama-3.3-70b", "-q", "Q4_K_M", "-g", "2xrtx-5090", "-c", "32768", "-ts", "30,34"]
ASK += ["--os", "windows"]


def _estimate(*extra: str) -> tuple[int, dict[str, Any]]:
    cmd = [sys.executable, "-m", "oomkit", "estimate", *ASK, *extra, "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    doc: dict[str, Any] = json.loads(res.stdout)
    return res.returncode, doc


def test_koboldcpp_defaults_to_flash_attention_off_and_says_so() -> None:
    _, doc = _estimate("-r", "koboldcpp", "-ngl", "75")
    assert doc["settings"]["flash_attn"] is False
    assert any("koboldcpp's default" in a for a in doc["assumptions"])
    _, on = _estimate("-r", "koboldcpp", "-ngl", "75", "--flash-attn")
    assert on["settings"]["flash_attn"] is True
    assert not any("koboldcpp's default" in a for a in on["assumptions"])
    _, server = _estimate("-r", "llama.cpp", "-ngl", "75")
    assert server["settings"]["flash_attn"] is True


@pytest.mark.parametrize(("layers", "lived"), [(81, False), (75, True)])
def test_koboldcpp_1780_pair(layers: int, lived: bool) -> None:
    code, doc = _estimate("-r", "koboldcpp", "-ngl", str(layers))
    if lived:
        assert doc["verdict"] == "fits", doc["verdict_details"]
        assert code == 0
    else:  # the death on device 1 is never called "fits"
        assert doc["verdict"] in ("tight", "does_not_fit"), doc["verdict_details"]
        assert code != 0
