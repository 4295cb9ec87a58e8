"""Ollama plans name a real library tag or a placeholder the shell refuses (review 14)."""

from __future__ import annotations

import subprocess

from oomkit.cli.params import parse_gpu_list
from oomkit.hardware.targets import hardware_for
from oomkit.planner.core import plan
from oomkit.planner.ollama_tags import ollama_from
from oomkit.planner.request import PlanRequest


def test_library_tags_follow_size_flavor_quant() -> None:
    assert ollama_from("llama-3.1-8b", "Q6_K").value == "llama3.1:8b-instruct-q6_K"
    assert ollama_from("qwen2.5-32b", "Q4_K_M").value == "qwen2.5:32b"  # its default
    assert ollama_from("llama-3.3-70b", "Q5_K_M").value == "llama3.3:70b-instruct-q5_K_M"
    assert ollama_from("llama-3.1-8b", "F16").value == "llama3.1:8b-instruct-fp16"


def test_review_plan_prints_a_real_tag() -> None:
    hw = hardware_for(parse_gpu_list("rtx-3060"))
    for runtime in ("ollama", "any"):
        r = plan("llama-3.1-8b", hw, PlanRequest(runtime=runtime, ctx=32768))
        cmds = [p.command for p in r.plans if p.runtime == "ollama"]
        assert cmds, runtime
        for c in cmds:
            assert "<tag with" not in c, c
            assert "FROM llama3.1:8b" in c, c


def test_unknown_tag_is_a_loud_placeholder() -> None:
    got = ollama_from("gemma-3-12b", "Q6_K")
    assert got.note is not None
    assert "OLLAMA_TAG" in got.note
    hw = hardware_for(parse_gpu_list("rtx-3060"))
    r = plan("gemma-3-12b", hw, PlanRequest(runtime="ollama", ctx=32768, quant="Q6_K"))
    command = r.plans[0].command
    assert "<tag with" not in command
    printf = next(line for line in command.splitlines() if line.startswith("printf"))
    script = printf.replace("ollama create planned -f Modelfile", "echo created")
    res = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        cwd="/tmp",
    )
    assert res.returncode != 0
    assert "OLLAMA_TAG" in res.stderr
    assert "created" not in res.stdout
    res = subprocess.run(
        ["bash", "-c", script.replace("> Modelfile", "")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OLLAMA_TAG": "gemma3:12b-it-q8_0"},
    )
    assert res.stdout.startswith("FROM gemma3:12b-it-q8_0\nPARAMETER num_ctx"), res.stdout
