"""A vLLM/SGLang plan that needs an offline-quantized (AWQ/GPTQ) checkpoint names it with a
shell placeholder that bash reads as one word (review 22). The old ``<AWQ-checkpoint-of-REPO>``
was an input redirection: pasted, bash said "AWQ-checkpoint-of-...: No such file or directory".
Now ``"${AWQ_CHECKPOINT:?...}"`` (as Ollama's ``OLLAMA_TAG``): the line stops with the sentence
saying what to set, and runs once the variable names the checkpoint."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from oomkit.catalog.models import find_model
from oomkit.hardware.catalog import find_gpu
from oomkit.planner.core import plan_spec
from oomkit.planner.flag_tables import parse_command
from oomkit.planner.request import PlanRequest
from oomkit.spec.hardware import Hardware


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(("runtime", "quant"), [("vllm", "awq"), ("sglang", "gptq")])
def test_placeholder_is_one_shell_word_that_says_what_to_set(runtime: str, quant: str) -> None:
    spec = find_model("llama-3.1-8b").spec()
    hw = Hardware(devices=(find_gpu("rtx-3060").to_device_target(),))
    result = plan_spec(spec, hw, PlanRequest(runtime=runtime, ctx=8192, quant=quant))
    lines = [p.command for p in result.plans if f"--quantization {quant}" in p.command]
    assert lines, [p.command for p in result.plans]
    var = f"{quant.upper()}_CHECKPOINT"
    for line in lines:
        assert var in line
        parse_command(runtime, line)  # one model argument
        # the runtime's executable replaced by `true`: only the shell's reading is tested
        word = "vllm" if runtime == "vllm" else "python"
        shell_line = "true" + line[len(word) :]
        env = {k: v for k, v in os.environ.items() if k != var}
        unset = subprocess.run(
            ["bash", "-c", shell_line], capture_output=True, text=True, env=env, check=False
        )
        assert unset.returncode != 0
        assert f"set {var} to a" in unset.stderr, unset.stderr
        assert "No such file" not in unset.stderr
        done = subprocess.run(
            ["bash", "-c", shell_line],
            capture_output=True,
            text=True,
            env={**env, var: "org/model-awq"},
            check=False,
        )
        assert done.returncode == 0, done.stderr
