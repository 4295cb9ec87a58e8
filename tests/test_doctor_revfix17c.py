"""A new user's review of session 17's engine formats (revfix17c): each message in its runtime's
exact format, through ``diagnose_text`` and the CLI.

* GPUStack (``vllm_resource_fit_selector.py``): the largest worker's line decides the model;
  a lower --gpu-memory-utilization raises the need (claim / utilization), so it is never a fix.
* Base-rate explanations: the table's key and counts are internal, never printed.
* TensorRT's plugin scratch with both sizes: the build's shapes; a set (power-of-two) pool is
  raised first; Python is shown as Python, not after a shell prompt.
* TensorRT-LLM's "No free blocks left": the KV manager's start-up lines size the pool.
* ``kubectl describe pod`` OOMKilled: the container's Limits memory is the lever.
* Prose stating a failed load that needs more than is available: the model, in any language.
"""

from __future__ import annotations

from click.testing import CliRunner

from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text
from oomkit.units import GiB

ENV = {"NO_COLOR": "1", "COLUMNS": "200"}

# gpustack/gpustack tests/policies/candidate_selectors (vLLM): the three lines of one failure
GPUSTACK = (
    "2025-12-06 07:03:53.122009+08:00 - gpustack.policies.candidate_selectors."
    "vllm_resource_fit_selector - INFO - Calculated resource claim for model /var/lib/gpustack/"
    "cache/huggingface/Qwen/Qwen2.5-32B-Instruct, VRAM claim: 70534739660.6, RAM claim: 0\n"
    "Unable to find a schedulable worker for the model.\n"
    "- The model requires approximately 65.69 GiB of VRAM.\n"
    "- With --gpu-memory-utilization=0.9, all GPUs combined need to provide at least 72.99 GiB "
    "of total VRAM and each GPU needs 90% of allocatable VRAM.\n"
    "- The largest available worker has 47.5 GiB allocatable VRAM, 2/2 of GPUs meet the VRAM "
    "utilization ratio, providing 42.75 GiB of allocatable VRAM.\n"
)
TRT_SMALL = (
    "E0202 09:45:39.455421 2001175 helper.h:114] 4: [pluginV2Builder.cpp::makeRunner::476] "
    "Error Code 4: Internal Error (Internal error: plugin node deformable_conv (Output: "
    "deformable_conv_6.tmp_0804) requires 47628288 bytes of scratch space, but only 33554432 is "
    "available. Try increasing the workspace size with IBuilderConfig::setMemoryPoolLimit().\n"
    ")\n"
)
TRT_BIG = (
    "[01/14/2025-10:12:44] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 4: Internal "
    "Error (Internal error: plugin node LLaMAForCausalLM/transformer/layers/0/attention/"
    "wrapper_L562/gpt_attention_L5483/PLUGIN_V2_GPTAttention_0 requires 210571452800 bytes of "
    "scratch space, but only 47697362944 is available. Try increasing the workspace size with "
    "IBuilderConfig::setMemoryPoolLimit().\n)\n"
)
TRTLLM_KV = (
    "[TensorRT-LLM][INFO] Memory usage when calculating max tokens in paged kv cache: total: "
    "79.15 GiB, available: 63.42 GiB\n"
    "[TensorRT-LLM][INFO] Number of blocks in KV cache primary pool: 1523\n"
    "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 64\n"
    "[TensorRT-LLM][INFO] Number of tokens per block: 64.\n"
    "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 57.09 GiB for max tokens in paged KV cache "
    "(97472).\n"
    "[TensorRT-LLM][ERROR] [TensorRT-LLM][ERROR] Assertion failed: Can't allocate new blocks. No "
    "free blocks left. (/home/jenkins/agent/workspace/LLM/main/L0_PostMerge/llm/cpp/tensorrt_llm/"
    "batch_manager/kvCacheManager.cpp:362)\n"
)
KUBECTL = """Name:             vllm-qwen-7d9f8c6b5-x2x9p
Namespace:        inference
Containers:
  vllm:
    Image:         vllm/vllm-openai:v0.8.5
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Tue, 03 Jun 2025 10:01:12 +0000
      Finished:     Tue, 03 Jun 2025 10:03:40 +0000
    Ready:          False
    Restart Count:  4
    Limits:
      memory:          16Gi
      nvidia.com/gpu:  1
    Requests:
      cpu:             4
      memory:          16Gi
"""


def _cli(text: str) -> str:
    res = CliRunner().invoke(doctor_command, ["-", "--no-input"], input=text, env=ENV)
    assert res.exit_code == 0, res.output
    return res.output


def _commands(d: object) -> list[str]:
    return [c for f in d.fixes for c in f.commands]  # type: ignore[attr-defined]


def test_gpustack_claim_above_what_the_largest_worker_provides_is_the_model() -> None:
    d = diagnose_text(GPUSTACK)
    e = d.events[0]
    assert abs((e.requested_bytes or 0) - 65.69 * GiB) < 2
    assert e.free_bytes == int(42.75 * GiB)
    assert d.cause == "model_too_large"
    assert d.confidence >= 0.7
    # claim / utilization: a lower utilization raises the need; never suggest one
    assert not any("--gpu-memory-utilization=0.8" in c for c in _commands(d))
    assert "47.50 GiB" in d.explanation  # even 1.0 of the worker's allocatable VRAM is short
    assert not contradictions(d)
    assert not hardware_top_fix(d)
    out = _cli(GPUSTACK)
    assert "Cause: model_too_large" in out
    assert "host RAM" not in out


def test_gpustack_worker_with_gpus_below_the_ratio_is_another_holder() -> None:
    held = GPUSTACK.replace("2/2 of GPUs", "1/2 of GPUs").replace("65.69", "30.00")
    assert diagnose_text(held).cause == "other_process_holding_memory"


def test_base_rate_explanations_print_no_internal_counts() -> None:
    out = _cli("我用 4090（24G）跑 Qwen2.5-7B 推理，batch 设成 8、上下文 8k 就显存溢出了\n")
    assert "labelled" in out
    assert "with key" not in out
    assert "batch_or_activations 3" not in out


def test_trt_scratch_set_pool_is_raised_first_and_shown_as_python() -> None:
    d = diagnose_text(TRT_SMALL)
    assert d.cause == "batch_or_activations"
    assert d.fixes[0].title.startswith("Raise the workspace pool")
    assert "1 << 26" in d.fixes[0].commands[0]  # 64 MiB holds the 45.42 MiB need
    assert "log does not give the numbers" not in " ".join(f.why for f in d.fixes)
    assert "would decide the cause" not in d.explanation
    out = _cli(TRT_SMALL)
    assert "Python: config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << 26)" in out
    assert "$ config.set_memory_pool_limit" not in out


def test_trt_scratch_pool_of_the_device_keeps_the_shapes_lever() -> None:
    d = diagnose_text(TRT_BIG)
    # a build-time request above the device: no run-time cause (the corpus labels agree), but
    # the sizes are read and stated, and nothing says the message lacks them
    assert d.cause == "unknown"
    assert "44.42 GiB" in d.explanation
    assert "would decide the cause" not in d.explanation
    assert not d.open_question
    assert d.fixes[0].title == "Build for smaller maximum shapes"
    assert not d.fixes[0].generic
    assert not any("set_memory_pool_limit" in c for c in _commands(d))


def test_trtllm_no_free_blocks_reads_the_kv_managers_lines() -> None:
    d = diagnose_text(TRTLLM_KV)
    e = d.events[0]
    assert (e.kv_capacity_tokens, e.max_model_len) == (97472, 4096)
    assert d.cause == "kv_cache_or_context"
    assert d.fixes[0].commands == ("--max_batch_size 23",)  # 97472 // 4096
    cmds = _commands(d)
    assert not any("trtllm-build" in c for c in cmds)  # one runtime flag, no build mix-up
    assert not any("0.9}" in c or c.endswith(": 0.9") for c in cmds)  # already 0.90: no-op
    assert "0.90 -> 0.95" in d.fixes[1].title
    out = _cli(TRTLLM_KV)
    assert "config: kv_cache_config: {free_gpu_memory_fraction: 0.95}" in out
    assert "$ kv_cache_config" not in out


def test_kubectl_oomkilled_container_names_its_memory_limit() -> None:
    d = diagnose_text(KUBECTL)
    assert d.events[0].allowed_bytes == 16 * GiB
    assert d.cause == "host_ram"
    assert d.confidence >= 0.85
    assert not d.open_question
    cmds = " ".join(_commands(d))
    assert "memory: 32Gi" in cmds
    assert "--limits=memory=32Gi" in cmds
    for wrong in ("swapfile", "docker run", "Windows"):
        assert wrong not in cmds
    out = _cli(KUBECTL)
    assert "16Gi" in out
    assert "Re-run with --answer host_ram" not in out


def test_docker_exit_137_without_limits_keeps_the_host_fixes() -> None:
    d = diagnose_text("container exited: OOMKilled, Exit Code 137")
    assert d.cause == "host_ram"


def test_prose_load_needing_more_than_available_is_the_model_in_any_language() -> None:
    for text in (
        "显存不足，模型加载失败：需要约 15GB 显存，当前只有 12GB 可用。",
        "Out of VRAM, failed to load the model: it needs about 15GB of VRAM but only 12GB is "
        "available.",
        "加载模型时显存不足：CUDA out of memory，模型需要 15GB，显卡只有 12GB。",
    ):
        d = diagnose_text(text)
        assert d.cause == "model_too_large", text
        assert "2.79 GiB short" in d.explanation, text
    # the need below what is available decides nothing; a run that is not a load neither
    assert diagnose_text("模型加载失败：需要约 10GB 显存，当前只有 12GB 可用，显存不足").cause != (
        "model_too_large"
    )
    assert diagnose_text(
        "CUDA out of memory during inference: needs 15GB, only 12GB free"
    ).cause != ("model_too_large")
