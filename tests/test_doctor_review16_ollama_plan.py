"""Review 16: an Ollama log's own plan (``msg="offload to cuda" layers.offload=30
memory.available="[7.0 GiB]" memory.required.partial="6.9 GiB"``, llm/memory.go) was parsed but
unused: the first fix was llama.cpp's ``-nkvo`` for an Ollama user, with no ``num_gpu`` or
``OLLAMA_GPU_OVERHEAD``. The fixture is the review's log (PROVENANCE.md, constructed-review16-*):
Windows paths, so environment variables are printed for PowerShell."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.sizes import to_bytes
from oomkit.units import MiB

LOG = Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-review16-ollama-offload.txt"
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}


def _text() -> str:
    return LOG.read_text(encoding="utf-8")


def test_the_plan_and_the_os_are_read() -> None:
    ctx = parse_log(_text()).context
    assert ctx.ollama_weights_repeating_bytes == to_bytes("7.8", "GiB", "ollama")
    assert ctx.host_os == "windows"  # C:\Users\...\ollama_llama_server.exe


def test_the_forwarded_error_keeps_no_logfmt_quote() -> None:
    d = diagnose_text(_text())
    (runner,) = [e for e in d.events if e.runtime == "ollama"]
    assert runner.detail == "cudaMalloc failed: out of memory"


def test_the_explanation_uses_ollamas_numbers() -> None:
    d = diagnose_text(_text())
    assert "Ollama planned 30 of 49 layers" in d.explanation
    assert "memory.required.partial 6.90 GiB within memory.available 7.00 GiB" in d.explanation
    # 4806.25 MiB allocated + the 960 MiB KV request that failed: under 5.63 GiB was free
    assert "less than 5.63 GiB free, 1.37 GiB or more below what Ollama counted" in d.explanation
    assert d.cause == "model_too_large"


def test_fewer_layers_first_sized_from_ollamas_per_layer_size() -> None:
    d = diagnose_text(_text())
    first = d.fixes[0]
    assert first.title == "Put fewer layers on the GPU: num_gpu 17"
    assert "/set parameter num_gpu 17" in first.commands
    assert "PARAMETER num_gpu 17" in first.commands
    assert '"options": {"num_gpu": 17}' in first.commands
    # one block: 7.8 GiB / 48 of weights + 1.5 GiB / 48 of KV; 17 of them, the 916.1 MiB
    # partial-offload graph and the headroom fit in the 4806.25 MiB the runner allocated
    per = to_bytes("7.8", "GiB", "ollama") // 48 + to_bytes("1.5", "GiB", "ollama") // 48
    low = round(4806.25 * MiB)
    graph = to_bytes("916.1", "MiB", "ollama")
    assert 17 * per + graph + HEADROOM_BYTES <= low < 18 * per + graph + HEADROOM_BYTES
    assert first.fits is True


def test_no_llamacpp_flag_for_an_ollama_user() -> None:
    d = diagnose_text(_text())
    assert not any("nkvo" in f.title for f in d.fixes)
    for f in d.fixes:
        for c in f.commands:
            assert not c.startswith("-"), c
    (half,) = [f for f in d.fixes if f.title.startswith("Halve the context")]
    assert half.title == "Halve the context: num_ctx 4096"


def test_gpu_overhead_in_powershell_on_windows() -> None:
    d = diagnose_text(_text())
    (over,) = [f for f in d.fixes if "OLLAMA_GPU_OVERHEAD" in f.title]
    # 7.0 GiB (+0.05 GiB print rounding) - 4806.25 MiB, rounded up to 256 MiB: 2560 MiB
    assert over.commands == ('$env:OLLAMA_GPU_OVERHEAD="2684354560"; ollama serve',)
    (kv,) = [f for f in d.fixes if f.title.startswith("Quantize the KV cache")]
    assert kv.commands == (
        '$env:OLLAMA_FLASH_ATTENTION="1"; $env:OLLAMA_KV_CACHE_TYPE="q8_0"; ollama serve',
    )


def test_os_option_overrides_the_log() -> None:
    d = diagnose_text(_text(), os="linux")
    (over,) = [f for f in d.fixes if "OLLAMA_GPU_OVERHEAD" in f.title]
    assert over.commands == ("OLLAMA_GPU_OVERHEAD=2684354560 ollama serve",)


def test_cli_prints_ollama_forms_with_their_prompts() -> None:
    res = CliRunner().invoke(doctor_command, [str(LOG), "--no-input"], env=ENV)
    assert res.exit_code == 0, res.output
    assert "  1. Put fewer layers on the GPU: num_gpu 17" in res.output
    assert "PS> $env:OLLAMA_GPU_OVERHEAD=" in res.output
    assert "Modelfile: PARAMETER num_gpu 17" in res.output
    assert "-nkvo" not in res.output
    res = CliRunner().invoke(doctor_command, [str(LOG), "--no-input", "--os", "linux"], env=ENV)
    assert "$ OLLAMA_GPU_OVERHEAD=2684354560 ollama serve" in res.output


def test_an_unknown_os_is_a_one_line_usage_error() -> None:
    res = CliRunner().invoke(doctor_command, [str(LOG), "--no-input", "--os", "beos"], env=ENV)
    assert res.exit_code == 2
    assert "Invalid value for '--os': 'beos' is not one of" in res.output
    assert "Traceback" not in res.output


def test_a_llamacpp_build_with_msvc_gets_no_ollama_line() -> None:
    # revfix19d: a plain llama.cpp log gets llama.cpp's flags only (Ollama's forms are for an
    # Ollama log, whose PowerShell form the CLI test above checks)
    log = LOG.parent / "constructed-review16-llamacpp-kv-laptop.txt"
    d = diagnose_text(log.read_text(encoding="utf-8"))  # "build: 4520 ... with MSVC 19.42"
    cmds = [c for f in d.fixes for c in f.commands]
    assert not [c for c in cmds if "ollama serve" in c or "OLLAMA_" in c or "num_ctx" in c]
    assert "-nkvo" in cmds  # a llama.cpp user keeps it


def test_serve_line_shells() -> None:
    from oomkit.planner.commands import ollama_serve_line

    env = ["OLLAMA_FLASH_ATTENTION=1", "OLLAMA_KV_CACHE_TYPE=q8_0"]
    assert (
        ollama_serve_line(env) == "OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve"
    )
    assert ollama_serve_line(env, "windows") == (
        '$env:OLLAMA_FLASH_ATTENTION="1"; $env:OLLAMA_KV_CACHE_TYPE="q8_0"; ollama serve'
    )
