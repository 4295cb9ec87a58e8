"""docpost19: what heldout39-40 (scored once, retired) taught, as mechanisms with near misses.

Recognition: Korean verbs whose ending is written into the stem's last syllable (모자란다,
모자랐다: ``parse_wordings_korean.KO_SHORT_PREDICATE``) and Korean negation after the predicate
(메모리가 부족하지 않습니다: ``negated_after``); Chinese memory growth told with a parenthesis
after the noun, the verb between 越…越 (越用越大), accumulation (累积增长) or per turn (每次对话…
增加) (``parse_wordings_titles_more.CJK_MEMORY_RISING``).
"""

from __future__ import annotations

import pytest

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text


@pytest.mark.parametrize(
    "text",
    [
        "쿠다 메모리가 모자란다는 에러가 발생합니다.",
        "GPU 메모리가 모자랐습니다.",
        "학습 중에 VRAM이 넘쳤어요.",
        "CUDA 메모리가 부족합니다",
    ],
)
def test_korean_conjugated_shortage_is_recognised(text: str) -> None:
    assert diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "메모리가 부족하지 않습니다.",
        "메모리가 모자란 건 아닌 것 같습니다.",
        "GPU 메모리가 모자라지 않도록 배치 크기를 줄였습니다.",
        "메모리 부족은 아닌 것 같아요, 다른 에러입니다.",
        "VRAM이 넘치지 않게 설정했습니다.",
        "메모리가 충분해서 모자랄 일은 없습니다.",
    ],
)
def test_korean_negated_shortage_stays_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "text",
    [
        "显存（单个模型）越用越大，从初始的16G干到了30G",
        "在问答过程中显存累积增长，且每次问题结束后显存不降",
        "每次对话显存占用都会增加几百Mb，请问除了重启程序有别的解决办法吗？",
        "显存越来越大",
    ],
)
def test_chinese_growth_forms_are_recognised(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found


@pytest.mark.parametrize(
    "text",
    [
        "显存没有越用越大，一直稳定在16G。",
        "显存占用不会累积增长，每次推理后都会释放。",
        "每次对话显存占用都不会增加，很稳定。",
        "每次推理显存占用都一样，大约12G。",
        "模型越大，显存占用越大，这是正常的。",
        "显存累积到16G后就保持不变了。",
    ],
)
def test_chinese_growth_near_misses_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found


@pytest.mark.parametrize(
    "rid",
    [
        "h39-korean-wellness-chatbot-models-2",
        "h39-ChatGLM-6B-1397",
        "h39-ChatGLM3-108",
        "h39-ChatGLM-6B-71",
    ],
)
def test_heldout39_records_are_recognised(rid: str) -> None:
    assert diagnose_text(corpus_text(rid)).oom_found


# ---- gap 1: a serving engine's forward / numberless OOM gets the engine's own levers ---------

_VLLM_TB = (
    "INFO 05-01 10:00:00 api_server.py:100] vLLM API server version 0.6.3\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/vllm/worker/model_runner.py", line 1600, in '
    "execute_model\n"
    "    hidden_or_intermediate_states = model_executable(\n"
    '  File "/usr/lib/python3/site-packages/vllm/model_executor/models/llama.py", line 500, in '
    "forward\n"
    "    hidden_states = self.model(input_ids, positions, kv_caches,\n"
)
_NUMBERED = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a "
    "total capacity of 23.56 GiB of which 100.50 MiB is free. Including non-PyTorch memory, "
    "this process has 23.45 GiB memory in use. Of the allocated memory 22.90 GiB is allocated "
    "by PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.\n"
)
_TRAINING_WORDS = ("gradient_checkpointing", "batch_size //", "batch_size = ")


def _commands(text: str) -> str:
    return " ".join(c for f in diagnose_text(text).fixes for c in f.commands)


@pytest.mark.parametrize(
    ("engine_path", "flag"),
    [
        ("vllm/worker/model_runner.py", "--max-num-batched-tokens"),
        ("sglang/srt/model_executor/model_runner.py", "--chunked-prefill-size"),
        ("text_generation_server/models/flash_causal_lm.py", "--max-batch-prefill-tokens"),
        ("tensorrt_llm/_torch/pyexecutor/model_engine.py", "--max_num_tokens"),
    ],
)
@pytest.mark.parametrize("message", [_NUMBERED, "torch.OutOfMemoryError: CUDA out of memory.\n"])
def test_engine_forward_oom_gets_engine_levers(engine_path: str, flag: str, message: str) -> None:
    text = _VLLM_TB.replace("vllm/worker/model_runner.py", engine_path)
    if "vllm" not in engine_path:
        text = text.replace("vllm/model_executor/models", engine_path.rsplit("/", 1)[0])
        text = text.replace("vLLM API server version 0.6.3", "server started")
    cmds = _commands(text + message)
    assert flag in cmds
    assert not any(w in cmds for w in _TRAINING_WORDS), cmds


def test_llamacpp_and_ollama_logs_get_their_levers_in_the_base_rate_guess() -> None:
    llama = (
        "llama_model_loader: loaded meta data with 30 key-value pairs\n"
        "main: server is listening on http://127.0.0.1:8080\n"
        "srv  update_slots: id  0 | task 5 | the request failed: out of memory\n"
    )
    ollama = (
        'time=2025-01-01T00:00:00 level=INFO source=server.go:100 msg="starting llama server"\n'
        "ollama run qwen: it ran out of memory while answering\n"
    )
    assert diagnose_text(llama).fixes[0].commands[0].startswith("-ub ")
    assert "OLLAMA_NUM_PARALLEL=1" in diagnose_text(ollama).fixes[0].commands[0]


def test_training_forward_keeps_training_levers() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/transformers/trainer.py", line 3000, in '
        "training_step\n"
        "    loss = self.compute_loss(model, inputs)\n"
        '  File "/usr/lib/python3/site-packages/transformers/models/llama/modeling_llama.py", '
        "line 500, in forward\n"
        "    hidden_states = self.model(input_ids)\n" + _NUMBERED
    )
    assert "gradient_checkpointing_enable" in _commands(text)


# ---- gaps 2 and 3: the checkpoint-save allocation; the save's and pin-memory's deciding fact --

_SAVE_TB = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/transformers/trainer.py", line 2750, in '
    "_save_checkpoint\n"
    "    self._save_optimizer_and_scheduler(output_dir)\n"
    '  File "/usr/lib/python3/site-packages/torch/distributed/fsdp/_optim_utils.py", line 1600, '
    "in _gather_all_orig_param_state\n"
    "    gathered = _allgather_orig_param_states(fsdp_param_info, input_states)\n"
)


@pytest.mark.parametrize(
    "message",
    [
        # fragmentation numbers: the cause rule reads the allocator, the allocation is the save's
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, "
        "this process has 77.90 GiB memory in use. Of the allocated memory 40.10 GiB is "
        "allocated by PyTorch, and 36.50 GiB is reserved by PyTorch but unallocated.\n",
        "torch.OutOfMemoryError: CUDA out of memory.\n",
    ],
)
def test_checkpoint_save_allocation_is_the_gathered_weights(message: str) -> None:
    d = diagnose_text(_SAVE_TB + message)
    assert d.allocation == "weights_load"
    assert d.phase == "loop_later_iteration"


def test_checkpoint_save_names_its_deciding_fact() -> None:
    d = diagnose_text(_SAVE_TB + "torch.OutOfMemoryError: CUDA out of memory.\n")
    assert "what would decide: whether the training steps before the save ran" in d.explanation


def test_pin_memory_names_its_deciding_fact() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/torch/utils/data/_utils/pin_memory.py", line 53, '
        "in _pin_memory_loop\n"
        "    do_one_step()\n"
        '  File "/usr/lib/python3/site-packages/torch/utils/data/_utils/pin_memory.py", line 30, '
        "in do_one_step\n"
        "    data = pin_memory(data, device)\n"
        "RuntimeError: CUDA error: out of memory\n"
    )
    d = diagnose_text(text)
    assert d.allocation == "pinned_host"
    assert "DataLoader(pin_memory=False)" in d.explanation
    assert "ulimit -l" in d.explanation


# ---- cause: growth per conversation turn or request of a transformers chat is the history ----


@pytest.mark.parametrize(
    "text",
    [
        "每次对话显存占用都会增加几百Mb，请问除了重启程序有别的解决办法吗？",
        "chatglm2-6b 本地部署api请求,显存越来越大",
        "In my chat app GPU memory keeps growing with every conversation turn until CUDA out of "
        "memory.",
    ],
)
def test_growth_per_turn_of_a_transformers_chat_is_the_context(text: str) -> None:
    d = diagnose_text(text)
    assert d.cause == "kv_cache_or_context", d.explanation
    assert "history" in " ".join(c for f in d.fixes for c in f.commands)


@pytest.mark.parametrize(
    "text",
    [
        # a preallocating engine: its pool does not grow with the context
        "vLLM: GPU memory keeps growing with each request until CUDA out of memory.",
        "sglang 服务每次请求显存越来越大，最后OOM",
        # growth across training steps, no conversation
        "GPU memory keeps growing every epoch until CUDA out of memory.",
        # requests to a server that is not a chat: independent requests, growth is accumulation
        "Memory consumption climbs steadily at ~0.1GB per request until CUDA out of memory.",
    ],
)
def test_growth_without_a_transformers_chat_stays_growth(text: str) -> None:
    assert diagnose_text(text).cause != "kv_cache_or_context"


@pytest.mark.parametrize(
    "rid", ["h39-ChatGLM-6B-71", "h39-ChatGLM3-101", "h39-ChatGLM2-6B-546", "h39-ChatGLM3-108"]
)
def test_heldout39_chat_growth_records_read_the_history(rid: str) -> None:
    assert diagnose_text(corpus_text(rid)).cause == "kv_cache_or_context"


# ---- cause: completed steps stated in Chinese ("十几个epoch之后") are the growth reading's -------


@pytest.mark.parametrize(
    "text",
    [
        "一开始还能好好训练的，大概十几个epoch之后就显存溢出",
        "训练3个epoch后显存溢出",
        "跑了几轮之后显存溢出",
    ],
)
def test_chinese_completed_steps_read_as_accumulation(text: str) -> None:
    assert diagnose_text(text).cause == "leak_or_accumulation"


@pytest.mark.parametrize(
    "text",
    [
        "跑了1步之后显存溢出",  # one step: the optimizer's states are allocated by the first
        "刚开始训练就显存溢出",  # no completed step
    ],
)
def test_chinese_first_step_is_not_accumulation(text: str) -> None:
    assert diagnose_text(text).cause != "leak_or_accumulation"


def test_heldout39_bert_vits2_reads_completed_epochs() -> None:
    assert diagnose_text(corpus_text("h39-Bert-VITS2-225")).cause == "leak_or_accumulation"


# ---- cause: a larger context stated to fail and a smaller one to fit is the context ----------


@pytest.mark.parametrize(
    "text",
    [
        "For example with vllm Mistral 7b with 32k context doesn't fit on a single 24GB GPU. "
        "Whereas with 8k context it does.",
        "Qwen 14B with 64k context does not fit on a single 24GB GPU; with 16k context it works.",
    ],
)
def test_larger_context_fails_smaller_fits_is_the_context(text: str) -> None:
    assert diagnose_text(text).cause == "kv_cache_or_context"


def test_the_smaller_context_failing_states_no_experiment() -> None:
    text = "Llama 8B with 8k context doesn't fit on my 12GB GPU, but with 32k context it works."
    assert diagnose_text(text).cause != "kv_cache_or_context"


def test_heldout40_sglang_context_contrast() -> None:
    assert diagnose_text(corpus_text("h40-sglang-159")).cause == "kv_cache_or_context"
