"""The suite does not depend on the user's Hugging Face environment (see conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_hf_variables_are_cleared_for_each_test() -> None:
    for var in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OOMKIT_OFFLINE"):
        assert var not in os.environ, var
    assert Path(os.environ["HF_HOME"]).is_dir()


def test_hub_tests_pass_with_offline_token_and_home_exported(tmp_path: Path) -> None:
    # The user's shell exports offline mode, a token and a real cache before running pytest,
    # and huggingface_hub is imported first (as transformers does at collection): the Hub
    # tests, which serve a fake Hub and need network mode, still pass.
    home = tmp_path / "user_hf"
    home.mkdir()
    (home / "token").write_text("hf_user_saved_token\n")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_TOKEN": "hf_exported\n",
        "HF_HOME": str(home),
        "PYTHONPATH": str(ROOT / "src"),
    }
    code = (
        "import sys, huggingface_hub, pytest\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-x', "
        f"'{ROOT / 'tests' / 'test_hub.py'}', '{ROOT / 'tests' / 'test_source.py'}', "
        f"'{ROOT / 'tests' / 'test_cli.py'}']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
