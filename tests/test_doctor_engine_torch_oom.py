"""A PyTorch OOM raised inside a running vLLM or SGLang server, diagnosed with --model: the
fixes are the engine's, never transformers' "Load in 4-bit NF4 (bitsandbytes)" (which a
``vllm serve`` cannot take), nor the engine's start-up KV-capacity arithmetic (the server had
started)."""

from __future__ import annotations

from oomkit.api import load_model
from oomkit.diagnose.doctor import diagnose_text

VLLM = """\
INFO 10-14 10:00:00 api_server.py:526] vLLM API server version 0.6.3
INFO 10-14 10:00:30 worker.py:232] Memory profiling results: total_gpu_memory=23.64GiB initial_memory_usage=15.31GiB peak_torch_memory=16.45GiB memory_usage_post_profile=15.42GiB non_torch_memory=0.29GiB kv_cache_size=4.99GiB gpu_memory_utilization=0.92
ERROR 10-14 10:05:00 engine.py:158] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 22.50 GiB memory in use. Of the allocated memory 21.61 GiB is allocated by PyTorch, and 412.00 MiB is reserved by PyTorch but unallocated.
"""  # noqa: E501

SGLANG = """\
[2025-06-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.12 GB, mem usage=15.06 GB.
[2025-06-01 10:00:01 TP0] KV Cache is allocated. #tokens: 371661, K size: 22.68 GB, V size: 22.68 GB
[2025-06-01 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 0 has a total capacity of 79.19 GiB of which 2.13 GiB is free. Including non-PyTorch memory, this process has 77.04 GiB memory in use. Of the allocated memory 72.40 GiB is allocated by PyTorch, and 1.95 GiB is reserved by PyTorch but unallocated.
"""  # noqa: E501


def test_vllm_server_torch_oom_gets_no_transformers_fixes() -> None:
    d = diagnose_text(VLLM, model=load_model("llama-3.1-8b"))
    titles = [f.title for f in d.fixes]
    assert not any("bitsandbytes" in t or "NF4" in t for t in titles), titles
    assert not any(t.startswith("Serve a shorter context") for t in titles), titles
    assert any("--gpu-memory-utilization" in t for t in titles), titles


def test_sglang_server_torch_oom_gets_no_transformers_fixes() -> None:
    d = diagnose_text(SGLANG, model=load_model("llama-3.1-8b"))
    titles = [f.title for f in d.fixes]
    assert not any("bitsandbytes" in t or "NF4" in t or "8-bit" in t for t in titles), titles


def test_a_plain_torch_oom_keeps_the_transformers_fixes() -> None:
    text = VLLM.splitlines()[-1].split("] ", 1)[1]  # the message alone: no engine in the log
    d = diagnose_text(text, model=load_model("llama-3.1-8b"))
    assert any("bitsandbytes" in f.title for f in d.fixes), [f.title for f in d.fixes]
