"""``plan --runtime transformers`` over several GPUs: ``device_map="auto"`` splits the layers,
so the plan must not say "tensor parallel N" (it did, while its own snippet, memory and speed
were the layer split's)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_transformers_plan_over_two_gpus_is_a_layer_split() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "oomkit", "plan", "llama-3.1-70b", "--runtime", "transformers",
         "--gpu", "2xa100-80gb-sxm", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    best = json.loads(res.stdout)["plans"][0]
    assert not any("tensor parallel" in c for c in best["changes"])
    assert best["settings"].get("tp") is None
    assert 'device_map="auto"' in best["command"]
    assert "layer split" in best["speed"]["basis"]
    assert len(best["devices"]) == 2
