"""docpost28 (the retired heldout51-54): a prefixed llama.cpp context line, growth stated beside a
host-RAM kill, memory "growing to the point" of the kill, time "later", a bash kill line that lost
its command, and Chinese memory wordings with the device or size between verb and noun."""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import parse_log

# --- WasmEdge's WASI-NN plugin prefix (plugins/wasi_nn/ggml.cpp, LlamaLogCallback) ----------


def test_wasi_nn_prefixed_context_line_sizes_the_context_fix() -> None:
    d = diagnose_text(corpus_text("h19-LlamaEdge-241"))
    assert d.cause == "kv_cache_or_context"
    assert any("-c 65536" in " ".join(f.commands) for f in d.fixes)


def test_other_prefixes_are_not_read_as_the_setting() -> None:
    # near miss: LlamaEdge's own "[INFO] prompt context size: 1024" is not llama.cpp's n_ctx
    text = "[INFO] prompt context size: 1024\n[info] server: n_ctx = 4096\n"
    assert parse_log(text).context.n_ctx is None


# --- a host-RAM kill with the growth stated (rules_stated._host_kill_after_growth) -------------


def test_android_low_memory_kill_after_serial_inferences_is_accumulation() -> None:
    assert diagnose_text(corpus_text("h51-flutter_gemma-402")).cause == "leak_or_accumulation"


def test_android_low_memory_kill_after_epochs_stays_host_ram() -> None:
    # near miss: epochs alone (a data loader or a later, larger batch fills RAM at a step too)
    text = "After 3 epochs: process killed, `ApplicationExitInfo reason=3 (LOW_MEMORY)`"
    assert diagnose_text(text).cause == "host_ram"


def test_memory_growing_to_the_point_of_the_kill_is_accumulation() -> None:
    assert diagnose_text(corpus_text("h53-unsloth-10921")).cause == "leak_or_accumulation"


def test_a_lever_raised_until_the_kill_is_not_growth() -> None:
    # near miss: the subject is the batch size, a lever, not memory
    text = "I kept increasing the batch size until it got oomkilled."
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_hours_later_is_a_run_that_had_been_going() -> None:
    d = diagnose_text(corpus_text("h53-llama2-lora-fine-tuning-18"))
    assert d.cause == "leak_or_accumulation"


def test_seconds_later_is_not_completed_work() -> None:
    text = "It loads, and a few seconds later it fails with cuda_out_of_memory."
    assert diagnose_text(text).cause != "leak_or_accumulation"


# --- bash's kill line without its command (normalize_locale._KILLED, parse_other._BASH_KILLED) -


def test_zh_bash_kill_line_that_lost_its_command_is_host_ram() -> None:
    d = diagnose_text(corpus_text("h54-ERNIE-24"))
    assert d.cause == "host_ram"
    assert "23195" in d.explanation


def test_english_bash_kill_line_at_the_end_of_the_line() -> None:
    assert diagnose_text("run.sh: line 30: 23195 Killed\n").cause == "host_ram"


def test_kill_word_inside_a_sentence_is_not_a_kill() -> None:
    # near miss: words follow on the line that are not a command after padding
    assert diagnose_text("第 30 行说明: 已杀死的任务会显示在这里吗").cause == "unknown"


# --- Chinese: the device or the card's size between the verb and the memory noun ----------------


def test_blew_the_cpu_memory_is_host_ram() -> None:
    assert diagnose_text(corpus_text("h52-GLM-130B-88")).cause == "host_ram"


def test_used_up_the_16g_vram_is_recognised() -> None:
    assert diagnose_text("跑到50秒左右时会用尽16G显存").cause != "unknown"


def test_how_to_avoid_blowing_the_cpu_memory_is_advice() -> None:
    assert diagnose_text("如何避免爆cpu内存").cause == "unknown"


# --- WebLLM's own device-lost message (webgpu_status._webllm_lost) -----------------------------


def test_webllm_device_lost_reads_the_memory_its_stack_documents() -> None:
    d = diagnose_text(corpus_text("h22-web-llm-517"))
    assert d.cause == "model_too_large"
    assert d.confidence <= 0.45
    assert "device reset" in d.explanation.lower()
    assert "smaller build" in d.explanation


def test_a_reset_that_names_no_stack_stays_unknown() -> None:
    # near miss: Chromium's queue line alone (any WebGPU page prints it) and ncnn's submit
    work_done = (
        "OperationError: Device lost during onSubmittedWorkDone (do not use this error for "
        "recovery - it is NOT guaranteed to happen on device loss)"
    )
    assert diagnose_text(work_done).cause == "unknown"
    assert diagnose_text("error : vkQueueSubmit failed -4").cause == "unknown"
