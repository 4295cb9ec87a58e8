"""Test-wide setup: the tests pass whatever the user's Hugging Face environment says.

``HF_HUB_OFFLINE``, ``HF_HOME``, ``HF_TOKEN`` (and their relatives) change what the Hub loader
does: exported offline mode refuses the fake Hub the tests serve, a real ``HF_HOME`` exposes the
user's cache and saved token. Each test starts with none of them set and ``HF_HOME`` pointing at
an empty per-session folder; a test that needs one sets it itself (``monkeypatch.setenv``).

``huggingface_hub`` also freezes some of them when it is first imported (its ``constants``
module), which may happen during collection (``transformers`` imports it), so those frozen
copies are reset too.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

#: Variables that change where the Hub loader looks, what it may fetch, and as whom.
HF_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "OOMKIT_OFFLINE",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
)


@pytest.fixture(scope="session")
def _empty_hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hf_home")


@pytest.fixture(autouse=True)
def _hermetic_hf_env(monkeypatch: pytest.MonkeyPatch, _empty_hf_home: Path) -> None:
    for var in HF_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(_empty_hf_home))
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False, raising=False)
        monkeypatch.setattr(constants, "HF_HOME", str(_empty_hf_home), raising=False)
        monkeypatch.setattr(
            constants, "HF_TOKEN_PATH", str(_empty_hf_home / "token"), raising=False
        )
        monkeypatch.setattr(
            constants, "HF_STORED_TOKENS_PATH", str(_empty_hf_home / "stored_tokens"), raising=False
        )


@pytest.fixture(scope="session")
def gpu_replay() -> ModuleType:
    """The NVML replay backend (tests/web_gpu_replay.py: real nvidia-smi/NVML output, no driver)."""
    spec = importlib.util.spec_from_file_location(
        "web_gpu_replay", Path(__file__).parent / "web_gpu_replay.py"
    )
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def verdict_scorer() -> ModuleType:
    """benchmarks/verdict_accuracy.py as a module (``load(part)``, ``judge(record)``)."""
    path = Path(__file__).parents[1] / "benchmarks" / "verdict_accuracy.py"
    spec = importlib.util.spec_from_file_location("verdict_accuracy", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("verdict_accuracy", mod)
    spec.loader.exec_module(mod)
    return mod


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``oomkit ARGV`` in this process: its exit code, stdout and stderr.

    What was printed before the call and not yet read is dropped first, so ``out`` and ``err``
    are this command's alone. A test module imports it (``from conftest import run_cli``;
    ``tests`` is on ``pythonpath``).
    """
    from oomkit.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
