"""docrt23: the runtime the log shows decides the spelling of every fix
(:mod:`oomkit.diagnose.runtime_vocab`), on the real messages of review23 (doctor dev corpus)
and near-misses that must keep their own runtime's lines."""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.runtime_vocab import (
    LEVERS,
    line_family,
    quoted_frame,
    route_engine,
)


def _lines(d: object) -> list[str]:
    fixes: tuple[Fix, ...] = d.fixes  # type: ignore[attr-defined]
    return [c for f in fixes for c in (f.title, *f.commands)]


# --- the table and the line classifier ----------------------------------------------------------


def test_each_engine_flag_belongs_to_one_runtime() -> None:
    assert line_family("--enforce-eager   # vLLM") == "vllm"
    assert line_family("--cuda-graph-max-bs 16   # SGLang") == "sglang"
    assert line_family("--max-batch-prefill-tokens 2048") == "tgi"
    assert line_family("--cuda-memory-fraction 0.9") == "tgi"
    assert line_family("max_cache_len=4096") == "transformers"
    # near-misses: a shell command, a llama.cpp short flag, a flag two engines share
    assert line_family("nvidia-smi --query-compute-apps=pid --format=csv") is None
    assert line_family("-c 4096") is None
    assert line_family("--kv-cache-dtype fp8") is None


def test_a_lever_is_rewritten_with_its_number_where_the_unit_is_the_same() -> None:
    fix = Fix(
        title="Cap the context",
        why="x",
        commands=("--max-model-len 4096   # vLLM",),
        expected_saving_bytes=None,
    )
    routed = route_engine(fix, "sglang")
    assert routed is not None
    assert routed.commands == ("--context-length 4096",)
    # TGI has no graph-capture flag in the table: the line goes, and with it the fix
    assert "skip_graphs" in LEVERS
    assert "tgi" not in LEVERS["skip_graphs"]
    eager = Fix(
        title="Skip CUDA-graph capture: --enforce-eager",
        why="x",
        commands=("--enforce-eager   # vLLM",),
        expected_saving_bytes=None,
    )
    assert route_engine(eager, "tgi") is None
    sglang = route_engine(eager, "sglang")
    assert sglang is not None
    assert sglang.title == "Skip CUDA-graph capture: --disable-cuda-graph"


def test_quoted_frame_stops_before_the_oom_message() -> None:
    raw = (
        "text_generation.errors.GenerationError: Request failed during generation: Server "
        "error: CUDA out of memory. Tried to allocate 42.00 MiB."
    )
    assert quoted_frame(raw) == (
        "text_generation.errors.GenerationError: Request failed during generation"
    )
    # near-miss: a source line without the message is quoted whole
    assert quoted_frame("outputs = model(**batch)") == "outputs = model(**batch)"


# --- the real messages --------------------------------------------------------------------------


def test_tgi_log_gets_tgi_levers_not_vllm_or_sglang_flags() -> None:
    d = diagnose_text(corpus_text("sv-tgi-1374-codellama34b-after-warmup"))
    lines = _lines(d)
    assert any("--max-batch-prefill-tokens" in c for c in lines)
    assert any("--cuda-memory-fraction" in c for c in lines)
    for foreign in ("--enforce-eager", "--disable-cuda-graph", "--max-num-seqs", "torch.compile"):
        assert not any(foreign in c for c in lines), foreign
    assert "Server error: CUDA out of memory" not in d.explanation  # not pasted twice
    assert d.question is None or d.question.id != "model_fits"  # served: the model loaded


def test_ollama_journal_gets_ollama_syntax_and_the_fix_follows_the_cause() -> None:
    d = diagnose_text(corpus_text("sv-ollama-11997-gptoss20b-42k-ctx"))
    lines = _lines(d)
    assert any("OLLAMA_FLASH_ATTENTION=1" in c for c in lines)
    assert any("num_ctx" in c for c in lines)
    for c in lines:
        assert not c.startswith(("-c ", "-fa")), c
        assert ": -c" not in c, c
        assert ": -fa" not in c, c
    # a compute-stage failure read as batch/activations leads with a compute lever
    if d.cause == "batch_or_activations":
        assert "flash attention" in d.fixes[0].title.lower()


def test_plain_llama_cpp_runtime_failure_keeps_llama_cpp_flags() -> None:
    """Near-miss: the same ggml lines without the journal's ``ollama[PID]:`` prefix."""
    text = corpus_text("sv-ollama-11997-gptoss20b-42k-ctx")
    plain = "\n".join(line.split(": ", 1)[1] for line in text.splitlines() if ": " in line)
    d = diagnose_text(plain)
    lines = _lines(d)
    assert any(c.startswith("-fa") for c in lines)
    assert not any("OLLAMA_" in c or "num_ctx" in c for c in lines)


def test_exllamav2_cache_oom_gets_exllamav2_levers_and_no_answered_question() -> None:
    d = diagnose_text(corpus_text("sv-exl2-677-llama70b-24bpw-cache"))
    lines = _lines(d)
    assert any("ExLlamaV2Cache(model, max_seq_len=" in c for c in lines)
    assert any("ExLlamaV2Cache_Q4" in c for c in lines)
    assert not any("max_cache_len" in c or "max_new_tokens" in c for c in lines)
    assert d.question is None or d.question.id != "model_fits"


def test_transformers_static_cache_keeps_transformers_advice() -> None:
    """Near-miss: a transformers cache allocation keeps max_cache_len."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/x/transformers/cache_utils.py", line 1150, in __init__\n'
        "    new_layer_key_cache = torch.zeros(cache_shape, dtype=self._dtype, device=d)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to"
    )
    assert not any("ExLlamaV2" in c for c in _lines(diagnose_text(text)))


def test_xla_buffer_without_a_batch_is_not_given_a_sized_saving() -> None:
    d = diagnose_text(corpus_text("tc-colabfold-65"))
    shrink = [f for f in d.fixes if f.title.startswith("Shrink the batch")]
    assert shrink
    assert shrink[0].expected_saving_bytes is None


def test_run_already_in_16_bits_is_not_told_to_run_in_bf16() -> None:
    from oomkit.api import load_model

    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/transformers/trainer.py", line 3698, in '
        "training_step\n"
        "    self.accelerator.backward(loss, **kwargs)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a "
        "total capacity of 23.52 GiB of which 1.12 GiB is free. Including non-PyTorch memory, "
        "this process has 22.39 GiB memory in use. Of the allocated memory 21.71 GiB is "
        "allocated by PyTorch, and 234.61 MiB is reserved by PyTorch but unallocated.\n"
    )
    d = diagnose_text(text, model=load_model("llama-3.1-8b"))
    assert not any(f.title == "Run in bf16/fp16" for f in d.fixes)
