"""Review 16: llama.cpp's "Largest context that fits" from the log alone left no room for the
compute buffer llama.cpp allocates right after the KV cache (src/llama-context.cpp: the
``llama_context`` constructor reserves the worst-case graph, ``ggml_gallocr_reserve_n``), and
``-nkvo`` ranked first although it leaves that buffer (2 GiB at n_ctx 32768 without flash
attention) on the GPU. The fixture is the review's log (PROVENANCE.md, constructed-review16-*)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES
from oomkit.units import KiB, MiB

LOG = (
    Path(__file__).parent / "fixtures" / "oom_logs" / "constructed-review16-llamacpp-kv-laptop.txt"
)
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}


def _text() -> str:
    return LOG.read_text(encoding="utf-8")


def test_the_largest_context_keeps_room_for_the_compute_buffer() -> None:
    d = diagnose_text(_text())
    (fit,) = [f for f in d.fixes if f.title.startswith("Largest context that fits")]
    n = int(fit.title.rsplit(" ", 1)[1])
    # 7101 MiB free at load, 6282.51 MiB of weights: 818.49 MiB for KV + compute buffer; the KV
    # is 128 KiB per token (4096 MiB at 32768); before, -c 6400 left 10 MiB for the compute
    room = 7101 * MiB - round(6282.51 * MiB)
    assert n * 128 * KiB + HEADROOM_BYTES <= room
    assert n == 2304  # the largest multiple of 256 that leaves the headroom
    assert "512.00 MiB is kept for the compute buffer" in fit.why
    assert "without flash attention it grows with n_ctx" in fit.why
    assert fit.fits is True


def test_a_context_that_fits_ranks_before_nkvo() -> None:
    d = diagnose_text(_text())
    titles = [f.title for f in d.fixes]
    assert titles[0] == "Largest context that fits: -c 2304"
    (nkvo,) = [f for f in d.fixes if "-nkvo" in f.title]
    assert nkvo.fits is None  # the compute buffer at n_ctx 32768 stays on the GPU
    assert "the compute buffer stays on the GPU" in nkvo.why


def test_a_failed_compute_buffer_keeps_the_headroom_on_top() -> None:
    """When the compute buffer is what failed, its request (at the failing n_ctx, so at least the
    one at a shorter context) is in the shortfall; the headroom is kept on top of it."""
    text = _text().replace("size =  6282.51 MiB", "size =  2282.51 MiB")
    head = text[: text.index("ggml_backend_cuda_buffer_type_alloc_buffer")]
    text = head + (
        "llama_kv_cache_init:      CUDA0 KV buffer size =  4096.00 MiB\n"
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 2100.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 2202009600\n"
        "llama_init_from_model: failed to allocate compute buffers\n"
    )
    d = diagnose_text(text)
    (fit,) = [f for f in d.fixes if f.title.startswith("Largest context that fits")]
    n = int(fit.title.rsplit(" ", 1)[1])
    assert "the compute buffer's request is in that shortfall" in fit.why
    shortfall = 2100 * MiB - (7101 * MiB - round(2282.51 * MiB) - 4096 * MiB)
    freed = 4096 * MiB - n * 128 * KiB
    assert shortfall + HEADROOM_BYTES <= freed < shortfall + HEADROOM_BYTES + 256 * 128 * KiB
    assert n == 17408  # 21504 before: no headroom
    assert d.fixes[0] is fit


def test_cli_prints_the_fitting_context_first() -> None:
    res = CliRunner().invoke(doctor_command, [str(LOG), "--no-input"], env=ENV)
    assert res.exit_code == 0, res.output
    assert "  1. Largest context that fits: -c 2304" in res.output
    assert "-c 6400" not in res.output


def test_the_model_aware_capacity_is_the_free_memory_the_log_states() -> None:
    """ggml_cuda_init's "Device 0: <name>" line states no free memory and came first, so the
    estimator-sized fixes took the catalog's 8 GiB instead of the loader's "7101 MiB free"."""
    res = CliRunner().invoke(
        doctor_command,
        [str(LOG), "--no-input", "--model", "llama-3.1-8b", "--quant", "Q6_K"],
        env=ENV,
    )
    assert res.exit_code == 0, res.output
    assert "capacity from the log: CUDA0 6.93 GiB free at load" in res.output
    assert "of 8.00 GiB" not in res.output
