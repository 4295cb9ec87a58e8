"""A llama.cpp log whose compute buffer allocated (review 14): the measured size llama.cpp prints
("CUDA0 compute buffer size = N MiB", src/llama-context.cpp) sizes the micro-batch fix, as a
failed compute allocation does; before, the estimate's own figure (307 MiB for this run) did, so
halving -ub was said to save 153 MiB of a 2307 MiB buffer."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.doctor import diagnose_text

_HEAD = (
    "llama_model_loader: - kv   2:                               general.name str              "
    "= Qwen2.5 32B Instruct\n"
    "load_tensors: offloaded 65/65 layers to GPU\n"
    "load_tensors:        CUDA0 model buffer size = 18556.73 MiB\n"
    "load_tensors:   CPU_Mapped model buffer size =   417.66 MiB\n"
    "llama_context: n_ctx         = 16384\n"
    "llama_kv_cache_unified:      CUDA0 KV buffer size =  4096.00 MiB\n"
)
_TAIL = (
    "ggml_cuda_compute_forward: MUL_MAT failed\n"
    "CUDA error: out of memory\n"
    "  current device: 0, in function ggml_cuda_compute_forward at "
    "ggml/src/ggml-cuda/ggml-cuda.cu:2482\n"
)


def _log(compute_mib: str, name: str = "CUDA0") -> str:
    return (
        _HEAD
        + f"llama_context:      {name} compute buffer size = {compute_mib} MiB\n"
        + "llama_context:  CUDA_Host compute buffer size =    42.01 MiB\n"
        + _TAIL
    )


def _ub(text: str) -> tuple[str, int]:
    d = diagnose_text(text)
    (ub,) = [f for f in d.fixes if f.title.startswith("Halve the micro-batch")]
    assert ub.expected_saving_bytes is not None
    return ub.why, ub.expected_saving_bytes


def test_the_logged_compute_buffer_sizes_the_micro_batch_fix() -> None:
    why, saving = _ub(_log(" 2307.00"))
    assert "compute buffer 2.25 GiB as the log's CUDA0 compute buffer line states" in why
    assert "compute/activations 2.25 GiB -> 1.13 GiB" in why
    assert abs(saving - 2307 * 2**19) < 2**20  # half of 2307 MiB


def test_a_line_close_to_the_estimate_changes_nothing() -> None:
    why, _ = _ub(_log("  307.00"))
    assert "compute buffer line states" not in why


def test_another_devices_line_does_not_size_this_one() -> None:
    why, saving = _ub(_log(" 2307.00", name="CUDA1"))
    assert "compute buffer line states" not in why
    assert saving < 400 * 2**20


def test_flags_are_printed_as_flags_not_shell_commands(tmp_path: Path) -> None:
    # "$ -nkvo" read as a shell command (review 14): flags go on the user's own command line,
    # an Ollama /set in `ollama run`'s prompt, real commands keep the shell prompt
    log = tmp_path / "llama.log"
    log.write_text(_log(" 2307.00"), encoding="utf-8")
    out = CliRunner().invoke(doctor_command, [str(log)]).output
    lines = [line.strip() for line in out.splitlines()]
    assert "add to your command line: -ub 256" in lines
    # revfix19d: a plain llama.cpp log gets no Ollama lines (/set, OLLAMA_*=... ollama serve)
    assert not any(line.startswith((">>> /set parameter num_ctx", "$ OLLAMA_")) for line in lines)
    assert not any(line.startswith("$ -") or line.startswith("$ /set") for line in lines)
