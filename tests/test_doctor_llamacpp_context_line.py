"""llama.cpp's context settings line places a bare buffer failure after the weights
(parse_llamacpp._CONTEXT_INIT, rules_llamacpp._stage; docpost27)."""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log


def test_failure_after_the_context_settings_is_the_kv_cache() -> None:
    # h19-LlamaEdge-241: `llama_new_context_with_model: n_ctx = 131072` then an 8 GiB cudaMalloc
    # failure with no buffer line before it: the weights had loaded; the context's first device
    # buffer is the KV cache (the merged fix passed the user's --ctx-size)
    d = diagnose_text(corpus_text("h19-LlamaEdge-241"))
    assert d.cause == "kv_cache_or_context"
    assert "kv_cache stage" in d.explanation


_FAIL = (
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: "
    "cudaMalloc failed: out of memory\n"
)


def test_current_constructor_wording_is_read() -> None:
    # src/llama-context.cpp, llama_context::llama_context: "%s: n_ctx = %u" with __func__
    text = (
        "llama_context: constructing llama_context\nllama_context: n_ctx         = 131072\n" + _FAIL
    )
    assert parse_log(text).context.context_lines == (2,)
    assert diagnose_text(text).cause == "kv_cache_or_context"


def test_the_rename_of_2025_is_read() -> None:
    text = "llama_init_from_model: n_ctx         = 65536\n" + _FAIL
    assert diagnose_text(text).cause == "kv_cache_or_context"


def test_no_context_line_stays_the_weights() -> None:
    # near miss: the model loader's own settings (n_ctx_train) are not a context being created
    text = "print_info: n_ctx_train      = 131072\n" + _FAIL
    assert parse_log(text).context.context_lines == ()
    assert diagnose_text(text).cause == "model_too_large"


def test_context_line_after_the_failure_does_not_place_it() -> None:
    # near miss: the failure comes first (weights), the context line later in the paste
    text = _FAIL + "llama_context: n_ctx         = 4096\n"
    assert diagnose_text(text).cause == "model_too_large"
