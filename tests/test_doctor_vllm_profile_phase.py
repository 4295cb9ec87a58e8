"""vLLM start-up phases (review 14): an OOM whose traceback passes through the memory profile
(gpu_worker.py ``determine_available_memory`` -> gpu_model_runner.py ``profile_run``) died in the
profile's dummy batch, before the KV cache was sized and before graphs were captured
(``compile_or_warm_up_model`` -> ``capture_model``): its levers are the profile batch
(--max-num-batched-tokens/--max-num-seqs), not --enforce-eager. It was read as "vLLM had
already profiled memory and sized its KV cache", with --enforce-eager offered."""

from __future__ import annotations

import pytest

from oomkit.diagnose.doctor import diagnose_text

_PREFIX = "ERROR 11-20 10:12:10 [core.py:700] "
_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total "
    "capacity of 44.40 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process "
    "has 43.10 GiB memory in use. Of the allocated memory 41.00 GiB is allocated by PyTorch, and "
    "900.00 MiB is reserved by PyTorch but unallocated."
)
_WORKER = "/opt/venv/lib/python3.11/site-packages/vllm/v1/worker"


def _log(frames: list[tuple[str, int, str, str]]) -> str:
    lines = ["INFO 11-20 10:12:03 [gpu_model_runner.py:1890] Model loading took 26.1 GiB"]
    lines.append(_PREFIX + "EngineCore failed to start.")
    lines.append(_PREFIX + "Traceback (most recent call last):")
    for path, line, fn, src in frames:
        lines.append(_PREFIX + f'  File "{_WORKER}/{path}", line {line}, in {fn}')
        lines.append(_PREFIX + f"    {src}")
    lines.append(_PREFIX + _OOM)
    return "\n".join(lines) + "\n"


def _commands(text: str) -> list[str]:
    d = diagnose_text(text)
    return [c for f in d.fixes for c in f.commands]


@pytest.mark.parametrize(
    "frames",
    [
        [
            ("gpu_worker.py", 240, "determine_available_memory", "self.model_runner.profile_run()"),
            ("gpu_model_runner.py", 2710, "profile_run", "hidden_states = self._dummy_run("),
            ("gpu_model_runner.py", 2480, "_dummy_run", "outputs = self.model("),
        ],
        [("gpu_model_runner.py", 2725, "_dummy_sampler_run", "output = self.sampler(")],
    ],
    ids=["profile-run", "dummy-sampler"],
)
def test_profile_run_frames_give_the_profile_batch_levers(
    frames: list[tuple[str, int, str, str]],
) -> None:
    text = _log(frames)
    d = diagnose_text(text)
    commands = _commands(text)
    assert "memory profile" in d.explanation
    assert "already profiled" not in d.explanation
    assert "--max-num-batched-tokens 2048   # vLLM" in commands
    assert "--max-num-seqs 64   # vLLM" in commands
    assert not any("--enforce-eager" in c for c in commands)


def test_graph_capture_frames_keep_enforce_eager() -> None:
    text = _log(
        [
            ("gpu_worker.py", 330, "compile_or_warm_up_model", "self.model_runner.capture_model()"),
            ("gpu_model_runner.py", 3050, "capture_model", "self._capture_cudagraphs("),
            ("gpu_model_runner.py", 3120, "_capture_cudagraphs", "self._dummy_run("),
        ]
    )
    d = diagnose_text(text)
    assert "capturing CUDA graphs" in d.explanation
    # revfix21b: a lower --gpu-memory-utilization (graphs kept) ranks before eager mode
    assert d.fixes[0].title.startswith("Leave vLLM more non-KV headroom")
    assert any(f.title.startswith("Skip CUDA-graph capture: --enforce-eager") for f in d.fixes)
