"""README.md's estimate examples and its API example are today's output, printed in full.

The estimate example had gone stale (258.50 MiB compute and 5.85 GiB where estimate printed
116.01 MiB and 5.71 GiB with ``llama_server=True``). Each ```text block that starts with
``$ oomkit estimate ...`` is run through the CLI and compared line by line with stderr (the
``GPU:`` line) then stdout. One figure is volatile and masked: the ``±X band of real runs`` on
the verdict line, which is refitted from the verdict records whenever one is added
(oomkit/data/verdict_band.json); the rest of that line is compared.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from oomkit.cli import main

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
ESTIMATES = re.findall(r"```text\n\$ oomkit (estimate [^\n]*)\n(.*?)```", README, re.S)
_BAND = re.compile(r"±[\d.]+ [KMGT]?i?B band")


def _masked(lines: list[str]) -> list[str]:
    return [_BAND.sub("±X band", ln) for ln in lines]


def test_readme_has_estimate_examples() -> None:
    assert len(ESTIMATES) >= 2  # llama.cpp on an RTX 4090, vLLM on an H100


@pytest.mark.parametrize(("command", "shown"), ESTIMATES, ids=[c for c, _ in ESTIMATES])
def test_estimate_example_is_todays_output(
    capsys: pytest.CaptureFixture[str], command: str, shown: str
) -> None:
    capsys.readouterr()
    main(shlex.split(command))
    captured = capsys.readouterr()
    out = captured.err.splitlines() + captured.out.splitlines()  # the GPU line is on stderr
    assert _masked(out) == _masked(shown.rstrip("\n").splitlines())


def test_api_example_is_todays_answer() -> None:
    pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
    pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")
    from fastapi.testclient import TestClient

    from oomkit.web.app import create_app

    block = re.search(r"\$ curl -s localhost:8000(\S+) .*?-d '(.*?)'\n(.*?)\n```", README, re.S)
    assert block is not None
    with TestClient(create_app()) as client:
        r = client.post(block.group(1), json=json.loads(block.group(2)))
    assert r.status_code // 100 == 4
    assert r.text == block.group(3)
