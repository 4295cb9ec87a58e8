"""``plan --train`` prints the launcher its plan needs (DeepSpeed for ZeRO, accelerate for FSDP)
with the config file's text, and the config parses back to the plan's settings."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")


def _oomkit(*args: str) -> str:
    cmd = [sys.executable, "-m", "oomkit", "plan", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


DS = ("llama-3.1-8b", "--train", "full", "--gpus", "4", "--gpu", "a100-40gb-sxm4")
FSDP = ("llama-3.1-70b", "--train", "full", "--fsdp", "--gpus", "8", "--gpu", "h100-sxm")


def _check_deepspeed(s: dict[str, Any], command: str, config: str) -> None:
    argv = shlex.split(command)
    # a plan with expandable segments carries the allocator setting in front (emit_text)
    env = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    assert (argv[0] == env) == s["expandable_segments"]
    argv = argv[1:] if argv[0] == env else argv
    assert argv[:2] == ["deepspeed", f"--num_gpus={s['gpus']}"]
    assert argv[argv.index("--deepspeed") + 1] == "ds_config.json"
    cfg = json.loads(config)
    zero = cfg["zero_optimization"]
    assert zero["stage"] == s["zero"]
    assert ("offload_optimizer" in zero) == s["offload_optimizer"]
    assert ("offload_param" in zero) == s["offload_params"]
    assert cfg["train_micro_batch_size_per_gpu"] == s["micro_batch"]
    assert cfg["gradient_accumulation_steps"] == s["grad_accum"]
    assert cfg["bf16"]["enabled"] == (s["mixed_precision"] == "bf16")


def _check_fsdp(s: dict[str, Any], command: str, config: str) -> None:
    argv = shlex.split(command)
    assert argv[:3] == ["accelerate", "launch", "--config_file=fsdp_config.yaml"]
    assert f"--num_processes={s['gpus'] * s['nodes']}" in argv
    cfg = yaml.safe_load(config)
    assert cfg["distributed_type"] == "FSDP"
    f = cfg["fsdp_config"]
    assert f["fsdp_sharding_strategy"] == s["fsdp_strategy"]
    assert f["fsdp_offload_params"] == s["offload_params"]
    assert f["fsdp_activation_checkpointing"] == (s["grad_checkpointing"] != "none")
    assert cfg["num_processes"] == s["gpus"] * s["nodes"]


def test_json_launcher_and_config_match_each_plan() -> None:
    kinds = set()
    for args in (DS, FSDP):
        doc = json.loads(_oomkit(*args, "--json"))
        for p in doc["plans"]:
            s = p["settings"]
            if s["zero"]:
                assert p["launcher"] == "deepspeed"
                assert p["config_file"] == "ds_config.json"
                _check_deepspeed(s, p["command"], p["config"])
            elif s["fsdp"]:
                assert p["launcher"] == "accelerate"
                _check_fsdp(s, p["command"], p["config"])
            else:
                assert p["launcher"] == "torchrun"
                assert p["command"].split()[0] == "torchrun"
                assert p["config"] is None
            kinds.add(p["launcher"])
    assert {"deepspeed", "accelerate"} <= kinds


def _blocks(text: str) -> list[tuple[str, str, str]]:
    """(run line, config file name, config text) per plan of the text output."""
    out: list[tuple[str, str, str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("  run: "):
            continue
        run = line.removeprefix("  run: ")
        j = i + 1
        while j < len(lines) and lines[j].startswith(("  check: ", "  set: ")):
            j += 1
        name, body = "", []
        if j < len(lines) and lines[j].startswith("  ") and lines[j].endswith(":"):
            name = lines[j].strip().rstrip(":")
            j += 1
            while j < len(lines) and lines[j].startswith("    "):
                body.append(lines[j][4:])
                j += 1
        out.append((run, name, "\n".join(body)))
    return out


def test_text_output_config_parses_back() -> None:
    doc = json.loads(_oomkit(*DS, "--json"))
    blocks = _blocks(_oomkit(*DS))
    assert len(blocks) == len(doc["plans"])
    for p, (run, name, body) in zip(doc["plans"], blocks, strict=True):
        if p["settings"]["zero"]:
            assert name == "ds_config.json"
            _check_deepspeed(p["settings"], run, body)
        else:
            assert not name
            assert "deepspeed" not in run
    assert "torchrun" not in blocks[0][0]  # the ZeRO-Offload plan: not plain DDP
