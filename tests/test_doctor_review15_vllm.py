"""Session-15 review: the doctor's vLLM fixes are sized by the release and settings the log
states (fixtures/oom_logs/constructed-review15-*.txt, constructed from vLLM's own formats).

Each expectation is recomputed through the public ``oomkit.estimate`` API with the log's
``--runtime-version``, never hard-coded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oomkit.api import estimate, load_model
from oomkit.cli.doctor import doctor_command
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"


def _doctor(name: str, *args: str, stdin: str | None = None) -> dict[str, Any]:
    path = str(LOGS / f"constructed-review15-{name}.txt")
    argv = ["-", "--no-input", "--json", *args] if stdin else [path, "--json", *args]
    r = CliRunner().invoke(doctor_command, argv, input=stdin)
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def _flag(d: dict[str, Any], flag: str) -> int | None:
    """The value a fix sets ``flag`` to (None: no such fix)."""
    for f in d["fixes"]:
        for c in f["commands"]:
            m = re.fullmatch(re.escape(flag) + r" (\d+)", c)
            if m:
                return int(m.group(1))
    return None


def _h100(n: int) -> Hardware:
    return Hardware(devices=(DeviceTarget(name="H100", capacity_bytes=84_934_656_000),) * n)


def test_v0_063_fixes_start_from_that_releases_defaults() -> None:
    # vLLM 0.6.3.post1 (V0): max_num_seqs 256 and, with chunked prefill on above 32K (PR #6666),
    # a 2048-token batch; the fixes used to start from current vLLM's 1024 / 8192
    d = _doctor("vllm2", "-r", "vllm", "-m", "llama-3.1-70b", "--gpu", "2xh100", "--ctx", "131072")
    assert any("modelled: vLLM V0" in n for n in d["notes"]), d["notes"]
    est = estimate(
        load_model("llama-3.1-70b"),
        InferenceSettings(
            runtime="vllm", tp=2, ctx=131072, gpu_memory_utilization=0.9, runtime_version="0.6.3"
        ),
        _h100(2),
    )
    seqs = est.runtime_details["max_num_seqs"]
    batched = est.runtime_details["max_num_batched_tokens"]
    assert (seqs, batched) == (256, 2048)
    assert _flag(d, "--max-num-seqs") == 64
    assert _flag(d, "--max-num-batched-tokens") == 1024
    whys = " ".join(f["why"] for f in d["fixes"])
    assert "(256 -> 64)" in whys
    assert "(2048 -> 1024)" in whys
    # 0.6.3 captures the CUDA graphs after sizing the KV cache: --enforce-eager frees no KV
    assert est.runtime_details["cudagraph_charged"] is False
    assert not any("--enforce-eager" in c for f in d["fixes"] for c in f["commands"])


def test_zero_gpu_blocks_anchor_the_pool_and_no_shorter_context_is_claimed() -> None:
    # "# GPU blocks: 0": vLLM had no block of KV; no --max-model-len makes one request fit
    d = _doctor("vllm2", "-r", "vllm", "-m", "llama-3.1-70b", "--gpu", "2xh100", "--ctx", "131072")
    assert _flag(d, "--max-model-len") is None
    for f in d["fixes"]:
        if f.get("estimated"):
            assert "the KV pool is 0 bytes" in f["why"], f["why"]


def test_model_given_without_runtime_keeps_the_logs_release() -> None:
    d = _doctor("vllm2", "-m", "llama-3.1-70b", "--gpu", "2xh100")
    assert any("modelled: vLLM V0" in n for n in d["notes"]), d["notes"]
    assert _flag(d, "--max-num-seqs") == 64


def test_stated_batch_is_reduced_never_raised() -> None:
    # vllm1.log: "Chunked prefill is enabled with max_num_batched_tokens=2048." (vLLM 0.8.5)
    d = _doctor("vllm1", "-m", "qwen2.5-32b", "--gpu", "h100")
    assert d["context"]["max_num_batched_tokens"] == 2048
    n = _flag(d, "--max-num-batched-tokens")
    assert n is not None
    assert n < 2048
    assert any("(2048 -> 1024)" in f["why"] for f in d["fixes"])


def test_without_model_the_utilization_raise_the_error_names_ranks_first() -> None:
    # vllm1.log: 8.00 GiB needed, 5.12 GiB available, weights 61.04 GiB at 0.90, no GPU total:
    # the budget holds at least weights + pool, so the GPU is at least (61.04 + 5.12) / 0.90
    # and a raise sized on that bound is enough on the real (larger) card
    d = _doctor("vllm1")
    first = d["fixes"][0]
    assert first["title"].startswith("Raise --gpu-memory-utilization to ")
    new = float(first["title"].rsplit(" ", 1)[1])
    gib = 1 << 30
    floor = (d["context"]["weights_bytes"] + 5.12 * gib) / 0.9
    assert 0.9 + (8.00 - 5.12) * gib / floor <= new < 0.9 + (8.00 - 5.12) * gib / floor + 0.01
    assert (1 - new) * floor >= 1 * gib  # the graphs captured after the budget still fit
    assert first["fits"] is True


def test_no_blocks_without_model_states_the_logs_settings() -> None:
    text = (LOGS / "constructed-review15-vllm2.txt").read_text(encoding="utf-8")
    d = _doctor("vllm2", stdin=text)
    assert "no profiling numbers" not in d["explanation"]
    for fact in ("tensor_parallel_size 2", "gpu_memory_utilization 0.90", "max_model_len 131072"):
        assert fact in d["explanation"]
    assert "adds no block" in d["explanation"]
    cmds = [c for f in d["fixes"] for c in f["commands"]]
    assert "--quantization awq" not in cmds  # a bf16 checkpoint: AWQ needs an AWQ checkpoint
    assert any("pre-quantized checkpoint" in f["why"] for f in d["fixes"])


def test_modelled_generation_is_a_note_not_a_warning() -> None:
    r = CliRunner().invoke(doctor_command, [str(LOGS / "constructed-review15-vllm2.txt")])
    assert r.exit_code == 0, r.output
    assert "Note: modelled: vLLM V0" in r.stderr
    assert "Warning: modelled" not in r.stderr


def test_traceback_source_line_is_not_a_message() -> None:
    d = _doctor("vllm2")
    text = (LOGS / "constructed-review15-vllm2.txt").read_text(encoding="utf-8").splitlines()
    lines = [e["line"] for e in d["events"]]
    assert all(not text[n - 1].strip().startswith("raise ") for n in lines), lines
    assert len(lines) == 3


def test_a_flattened_paste_that_goes_on_to_the_message_is_still_recognised() -> None:
    from oomkit.diagnose.doctor import diagnose_text

    d = diagnose_text(
        'raise ValueError("No available memory for the cache blocks. " ValueError: No available '
        "memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
        "the engine."
    )
    assert [e.format for e in d.events] == ["vllm_no_cache_blocks"]
