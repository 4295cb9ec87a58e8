"""Ollama runner logs (review 14): the compute buffer a failed allocation states is the run's
compute buffer (ggml-alloc.c ``ggml_gallocr_reserve_n`` allocates it whole), so the estimate's
sizing uses it; it used its own, smaller figure and concluded the run "already fits ... (another
process on the GPU?)". And the fixes are in Ollama's terms: OLLAMA_FLASH_ATTENTION=1 and
num_batch, not llama.cpp's ``-fa on`` / ``-ub``."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text

# a synthetic Ollama log in its runner's format: the server.go offload line (free memory, the
# estimate Ollama made), the llama.cpp loader's model name, n_ctx, and the failed compute buffer
_SERVER = (
    'time=2026-11-21T08:00:00.100Z level=INFO source=memory.go:356 msg="offload to cuda" '
    'layers.requested=-1 layers.model=65 layers.offload=65 layers.split="" '
    'memory.available="[23.5 GiB]" memory.gpu_overhead="0 B" memory.required.full="23.0 GiB" '
    'memory.required.partial="23.0 GiB" memory.required.kv="4.0 GiB" '
    'memory.required.allocations="[23.0 GiB]" memory.weights.total="18.1 GiB" '
    'memory.weights.repeating="17.5 GiB" memory.weights.nonrepeating="609.1 MiB" '
    'memory.graph.full="700.0 MiB" memory.graph.partial="940.0 MiB"'
)
_MODEL = (
    "llama_model_loader: - kv   2:                               general.name str              "
    "= Qwen2.5 32B Instruct"
)
_FAIL = (
    "llama_context: n_ctx         = 16384\n"
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 940.00 MiB on device 0: cudaMalloc "
    "failed: out of memory\n"
    "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 985661440\n"
    "llama_init_from_model: failed to initialize the context: failed to allocate compute buffers\n"
    'time=2026-11-21T08:00:09.000Z level=ERROR source=sched.go:455 msg="error loading llama '
    'server" error="llama runner process has terminated: cudaMalloc failed: out of memory"\n'
)


def _log(with_model: bool = True) -> str:
    return "\n".join([_SERVER, *([_MODEL] if with_model else []), _FAIL])


def test_the_failed_compute_buffer_sizes_the_estimate() -> None:
    d = diagnose_text(_log())
    whys = " ".join(f.why for f in d.fixes)
    assert "already fits" not in whys
    assert "compute buffer 940.00 MiB as the log's failed allocation states" in whys
    assert "compute/activations 940.00 MiB ->" in whys
    # halving num_batch halves the logged compute buffer, not the estimate's own figure
    (ub,) = [f for f in d.fixes if f.title.startswith("Halve the micro-batch")]
    assert ub.title == "Halve the micro-batch: num_batch 256"
    assert ub.expected_saving_bytes is not None
    assert abs(ub.expected_saving_bytes - 470 * 2**20) < 2**20


def test_ollama_fixes_are_in_ollamas_terms() -> None:
    for text in (_log(), _log(with_model=False)):
        d = diagnose_text(text)
        commands = [c for f in d.fixes for c in f.commands]
        titles = [f.title for f in d.fixes]
        assert "Enable flash attention: OLLAMA_FLASH_ATTENTION=1" in titles
        assert "OLLAMA_FLASH_ATTENTION=1 ollama serve" in commands
        assert not any(c.startswith(("-fa", "-ub")) for c in commands), commands
        assert not any(t.endswith(("-fa on", "-ub 256")) for t in titles), titles


def test_llamacpp_log_keeps_llamacpp_flags() -> None:
    text = _FAIL.split("time=")[0]  # the same failure from llama-server: no Ollama lines
    d = diagnose_text(text)
    commands = [c for f in d.fixes for c in f.commands]
    assert "-fa on" in commands
    assert any(c.startswith("-ub 256") for c in commands)
