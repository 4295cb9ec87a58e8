"""Issue 9 after heldout33/34 (docrec31): runtime formats no parser knew and Chinese overflow /
exceed wordings, each on synthetic texts in the runtime's format and the real records, with the
neighbours that must stay silent.

Formats (``parse_engines``, causes in ``rules_engines``): TensorRT's plugin scratch space,
TensorRT-LLM's KV block pool without a free block, GPUStack's resource-fit scheduler, Windows'
``STATUS_NO_MEMORY``. Prose (``parse_wordings_prose``): 显存…溢出, 超…的显存, 内存被完全占用…崩溃.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text
from recognition_cases import recognition_tests

CORPUS = Path(__file__).resolve().parent / "fixtures" / "oom_corpus"

_TRT_SCRATCH = (
    "[TRT] [E] IBuilder::buildSerializedNetwork: Error Code 4: Internal Error (Internal error: "
    "plugin node LLaMAForCausalLM/transformer/layers/0/attention/PLUGIN_V2_GPTAttention_0 "
    "requires 8589934592 bytes of scratch space, but only 4294967296 is available. Try "
    "increasing the workspace size with IBuilderConfig::setMemoryPoolLimit().\n)"
)
_TRTLLM_BLOCKS = (
    "[TensorRT-LLM][ERROR] Assertion failed: Can't allocate new blocks. No free blocks left. "
    "(/src/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:362)"
)
_GPUSTACK_HELD = (
    "- The model requires approximately 7.5 GiB of VRAM.\n"
    "- With --gpu-memory-utilization=0.9, all GPUs combined need to provide at least 8.3 GiB of "
    "total VRAM and each GPU needs 90% of allocatable VRAM., {}, model: Qwen/Qwen3-4B\n"
    "2025-12-06 07:03:53 - gpustack.policies.candidate_selectors.vllm_resource_fit_selector - "
    "INFO - Action: auto_single_gpu_scheduling_msg, - The current available GPU only has "
    "20.1 GiB allocatable VRAM (83.75%)., {}, model: Qwen/Qwen3-4B"
)
_GPUSTACK_BIG = (
    "- The model requires approximately 26.99 GiB of VRAM and 2.7 GiB of RAM.\n"
    "- The current available GPU only has 15.99 GiB allocatable VRAM."
)

_OOM = (
    _TRT_SCRATCH,
    _TRTLLM_BLOCKS,
    _GPUSTACK_HELD,
    _GPUSTACK_BIG,
    "Process finished with exit code -1073741801 (0xC0000017)",
    "The instruction at 0x7ff6 raised STATUS_NO_MEMORY",
    "worker exited with code 3221225495",
    # kubectl describe pod: a terminated container's exit code, capitalised and aligned
    "    State:          Terminated\n      Reason:       Error\n      Exit Code:    137",
    "Exit code 137",
    # Chinese overflow with words between, in one sentence
    "跑到第三个 epoch 显存就会溢出",
    "显存一开始是够的，但是验证的时候溢出了",
    "推理长音频时内存很快溢出",
    # an exceed verb before the memory
    "batch 调大以后会超显存",
    "反向的时候超过了整张卡的显存",
    "数据一多就超出机器的内存",
    # a memory fully taken, with its crash
    "显存被完全占用，然后程序直接崩溃",
    "处理长视频时内存全部占满，最后进程被杀",
)

_NOT_OOM = (
    # the formats' words without a failure
    "Set the workspace size with IBuilderConfig::setMemoryPoolLimit() to bound the scratch "
    "space a tactic may use.",
    "[TensorRT-LLM][INFO] Max KV cache pages per sequence: 64; blocks are freed when a request "
    "finishes.",
    "GPUStack computes the allocatable VRAM of each GPU from its total minus what instances claim.",
    "Process finished with exit code -1073741819 (0xC0000005)",
    "allocated 3221225495 bytes for the arena",
    "    State:          Terminated\n      Reason:       Completed\n      Exit Code:    0",
    "Exit code 1370",
    # Chinese: no overflow, a number's overflow, a negation, a big card, a need, a share,
    # a full memory without a crash
    "训练时显存占用稳定，没有溢出，loss 也正常下降。",
    "fp16 训练时梯度溢出会导致 loss 变成 nan，和显存大小无关。",
    "显存够用，但是数值溢出导致 nan",
    "为什么单卡不超显存",
    "超大显存的显卡适合训练大模型。",
    "推理需要超过24G的显存",
    "这张卡显存很大，模型大小不超过显存的一半。",
    "vLLM 启动后显存被完全占用，这是预分配，属于正常现象。",
    "显存没有被完全占用，利用率只有百分之五十。",
)

(
    test_engine_format_or_prose_is_recognised,
    test_engine_format_or_prose_is_recognised_inside_a_log,
    test_near_miss_is_silent,
) = recognition_tests(_OOM, _NOT_OOM)


def test_trt_scratch_reads_both_sizes_and_names_the_build_shapes() -> None:
    d = diagnose_text(_TRT_SCRATCH)
    e = d.events[0]
    assert (e.runtime, e.requested_bytes, e.allowed_bytes) == ("tensorrt", 8 << 30, 4 << 30)
    # a 4 GiB pool is a set limit (a power of two; TensorRT's default is the device's memory):
    # raising it comes first, the build's shapes next (revfix17c)
    assert d.cause == "batch_or_activations"
    assert d.fixes[0].title.startswith("Raise the workspace pool")
    assert "max_batch_size" in " ".join(c for f in d.fixes for c in f.commands)


def test_trtllm_no_free_blocks_is_the_kv_pool() -> None:
    d = diagnose_text(_TRTLLM_BLOCKS)
    assert d.events[0].runtime == "tensorrt-llm"
    assert d.cause == "kv_cache_or_context"


def test_gpustack_share_below_the_utilization_is_another_holder() -> None:
    d = diagnose_text(_GPUSTACK_HELD)
    assert len(d.events) == 1  # the two lines of one failure are one event
    e = d.events[0]
    assert e.requested_bytes == int(7.5 * (1 << 30))
    assert e.gpu_memory_utilization == pytest.approx(0.9)
    assert d.cause == "other_process_holding_memory"
    assert "--gpu-memory-utilization=0.82" in d.fixes[0].commands


def test_gpustack_requirement_above_the_allocatable_is_the_model() -> None:
    assert diagnose_text(_GPUSTACK_BIG).cause == "model_too_large"


def test_status_no_memory_is_host_ram() -> None:
    d = diagnose_text("Process finished with exit code -1073741801 (0xC0000017)")
    assert d.events[0].runtime == "windows"
    assert d.cause == "host_ram"


_RECORDS = (
    "h33-TensorRT-LLM-694",
    "h33-TensorRT-LLM-2688",
    "h34-gpustack-2496",
    "h34-gpustack-3745",
    "h33-SenseVoice-250",
    "h33-minimind-522",
    "h33-yolov5-face-42",
    "h34-Moore-AnimateAnyone-71",
    "h34-PaddleCustomDevice-736",
)


def _record(rid: str) -> dict[str, str]:
    for part in ("heldout33", "heldout34"):
        for path in sorted(CORPUS.glob(f"{part}_*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip() and json.loads(line)["id"] == rid:
                    return dict(json.loads(line))
    raise KeyError(rid)


@pytest.mark.parametrize("rid", _RECORDS)
def test_real_record_is_recognised_without_contradiction(rid: str) -> None:
    d = diagnose_text(_record(rid)["text"])
    assert d.oom_found
    assert contradictions(d) == []
    assert not hardware_top_fix(d)


# docperf18: an absurd figure (above 2^60 bytes, negative, not a number) in these wordings was a
# reason to miss the TensorRT message and to drop a TensorRT-LLM KV figure silently; as the
# PyTorch parser does (parse_torch.size_of, _impossible), the message is recognised, the figure
# refused and named in the finding
@pytest.mark.parametrize(
    ("need", "pool", "named"),
    [
        ("1" + "0" * 30, "4294967296", "1" + "0" * 30 + " bytes of scratch space"),
        ("-5", "4294967296", "-5 bytes of scratch space"),
        ("nan", "4294967296", "nan bytes of scratch space"),
        ("0", "4294967296", "0 bytes of scratch space"),
        ("8589934592", "1e30", "1e30 bytes available"),
    ],
)
def test_trt_scratch_refuses_an_absurd_size_and_says_so(need: str, pool: str, named: str) -> None:
    d = diagnose_text(_TRT_SCRATCH.replace("8589934592", need, 1).replace("4294967296", pool, 1))
    e = d.events[0]
    assert (e.runtime, e.format) == ("tensorrt", "trt_scratch_space")
    assert e.ignored_sizes == named
    assert (e.requested_bytes is None) == (need != "8589934592")
    assert (e.allowed_bytes is None) == (pool != "4294967296")
    assert f"The log states {named}: not a believable figure" in d.explanation
    assert d.cause == "unknown"  # no size to compare: the build's shapes, no run-time cause


@pytest.mark.parametrize(
    ("old", "new", "field", "named"),
    [
        ("79.15 GiB", "1" + "0" * 30 + " GiB", "total_bytes", "1" + "0" * 30 + " GiB total"),
        ("63.42 GiB", "-3.00 GiB", "free_bytes", "-3.00 GiB available"),
        ("57.09 GiB", "nan GiB", "available_kv_bytes", "nan GiB for the KV cache"),
        ("(97472)", "(-97472)", "kv_capacity_tokens", "-97472 tokens in the KV cache"),
        ("sequence: 64", "sequence: " + "9" * 26, "max_model_len", None),
    ],
)
def test_trtllm_kv_refuses_an_absurd_figure_and_says_so(
    old: str, new: str, field: str, named: str | None
) -> None:
    from test_doctor_revfix17c import TRTLLM_KV

    plain = diagnose_text(TRTLLM_KV).events[0]
    assert plain.ignored_sizes is None
    d = diagnose_text(TRTLLM_KV.replace(old, new, 1))
    e = d.events[0]
    assert (e.runtime, e.format) == ("tensorrt-llm", "trtllm_kv_no_free_blocks")
    assert getattr(plain, field) is not None
    assert getattr(e, field) is None
    named = named or "9" * 26 + " KV cache pages per sequence"
    assert e.ignored_sizes == named
    assert f"The log states {named}: not a believable figure" in d.explanation
    assert d.cause == "kv_cache_or_context"
