"""Recognition of formats and wordings the doctor missed on development parts (issue 9, docrec30).

Each mechanism has positives in the runtime's (or the users') own form, negatives with the same
words and no OOM, and the real development records it recognises (every one would fail without the
change). Nothing here reads a held-out part.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.diagnose.consistency import contradictions, hardware_top_fix
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.normalize_locale import delocalize

CORPUS = Path(__file__).resolve().parent / "fixtures" / "oom_corpus"

POSITIVES = (
    # TensorRT's Myelin status, cut after the status name (FastDeploy's TRT backend log)
    "[ERROR] fastdeploy/backends/tensorrt/trt_backend.cc(238)::log   1: "
    "[codeGenerator.cpp::compileGraph::476] Error Code 1: Myelin (myelinExceededMemBudget : Exceed",
    "[TRT] [E] 1: [codeGenerator.cpp::compileGraph::811] Error Code 1: Myelin "
    "(myelinExceededMemBudget : Exceeded memory budget of 2048 MB)",
    # PyTorch's cut "Allocation on device" through ComfyUI's /logs entries, a custom node's prefix
    "2025-03-24T17:01:07.440479 - Error during inference: Allocation on device "
    "2025-03-24T17:01:07.440479 - ",
    "Exception in sampler: Allocation on device",
    # vLLM V0's scheduler when preemption by swapping finds no CPU block
    "RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap space to "
    "avoid this error.",
    # a memory that keeps getting bigger (the verb form of a leak report)
    "cuda memory usage becomes bigger and bigger as time steps add",
    "During the training process, the GPU memory will become higher and higher",
    "the memory was keeping getting larger when testing",
    "VRAM usage keeps on getting bigger after every request",
    # an explosion verb with the memory as its object
    "I can't run this function twice because it explodes the 24GB of memory in a 4090.",
    "Initial load looks ok, then blows up gpu1 vram.",
    # a program that cannot get enough memory, told as possession or space
    "the generated config does not allocate enough GPU memory for the corresponding KV cache",
    "CUDA report me that i haven't enough free space to complete the operation",
    "I haven't enough VRAM for the 13B model",
    # an exhaustion verb the report grammar lacked
    "It works fine for short audios (<1min) but pumps all the RAM with an audio of 8min.",
    "the VAE decode saturates all of the VRAM at 1080p",
    # a memory that cannot be released (a leak report, as "is not released" is)
    "each step there would be 30mb of gpu memory which could not be released",
    # a buffer's allocation error, in a title
    "Buffer Allocation Error Without Manual Context Trim",
    # bash's Killed quoted in CJK prose; the pinyin homophone 现存 for 显存
    "运行解冻后的epoch会出现killed的现象该怎么解决？",
    "训练到一半终端显示Killed",
    "我这边bs=1的情况下也出现现存溢出的情况",
    "启动时报现存不够",
)

NEGATIVES = (
    "[graphContext.h::MyelinGraphContext::26] Error Code 1: Myelin (myelinVersionMismatch : "
    "Compiled against cuBLAS 11.3.0.0 but running against cuBLAS 11.2.1.0.)",
    "Error during test: Allocation on device 0 launch on device 1",
    "INFO 04-08 11:37:49 cache_engine.py:104] CPU swap space: 4.00 GiB, # CPU blocks: 2048",
    "Memory usage gets larger with the batch size, so start with a small one.",
    "Memory bandwidth becomes higher and higher with each GPU generation.",
    "The cache grows bigger and bigger as you add documents, which is expected.",
    "The GPU exploded after the driver update, so I replaced the card.",
    "To avoid blowing up memory, the loader streams the shards one by one.",
    "The GPU node does not have enough free space on the disk for the dataset.",
    "Buffer allocation error handling was reworked in this release.",
    "The fused attention kernel saturates all the memory bandwidth of the card.",
    "Pinned memory that can be released later is kept in a pool.",
    "我kill了进程，然后重新启动了训练。",
    "现存的问题是日志太长，显存使用正常。",
    # TFLite's message for any failed AllocateTensors (here a shape check), not an OOM
    "java.lang.NullPointerException: Internal error: Cannot allocate memory for the interpreter: "
    "tensorflow/contrib/lite/kernels/conv.cc:191 input->dims->size != 4 (0 != 4)",
)


@pytest.mark.parametrize("text", POSITIVES)
def test_recognised_without_contradiction_or_hardware_top_fix(text: str) -> None:
    d = diagnose_text(text)
    assert d.oom_found, text
    assert not contradictions(d), text
    assert not hardware_top_fix(d), text


@pytest.mark.parametrize("text", NEGATIVES)
def test_same_words_without_an_oom_stay_silent(text: str) -> None:
    assert not diagnose_text(text).oom_found, text


def test_runtime_formats_are_read_as_their_runtime() -> None:
    myelin = diagnose_text(POSITIVES[0]).primary
    assert myelin is not None
    assert (myelin.runtime, myelin.format) == ("tensorrt", "trt_myelin_mem_budget")
    comfy = diagnose_text(POSITIVES[2]).primary
    assert comfy is not None
    assert comfy.runtime == "comfyui"
    swap = diagnose_text(POSITIVES[4])
    assert swap.primary is not None
    assert (swap.primary.runtime, swap.primary.kind) == ("vllm", "kv_swap_exhausted")
    assert swap.cause == "kv_cache_or_context"
    assert any("--swap-space" in c for f in swap.fixes for c in f.commands)


def test_homophone_is_read_as_vram_only_beside_what_vram_takes() -> None:
    assert delocalize("16G现存，只成功一次") == "16G显存，只成功一次"
    assert delocalize("GPU现存有16G") == "GPU显存有16G"
    assert delocalize("现存的方法") == "现存的方法"


# the development records these mechanisms recognise (ids; the part is in each file's name)
GAINED = {
    "heldout25": ("h25-mmdetection-9424", "h25-mistral-inference-20"),
    "heldout29": ("h29-ollama-14832", "h29-speechbrain-1330"),
    "heldout30": ("h30-hf-Smaug-72B-exl2-4",),
    "heldout31": ("h31-FastDeploy-1229",),
    "heldout32": (
        "h32-AtSpeed-3",
        "h32-ComfyUI-LatentSyncWrapper-128",
        "h32-STG-Mamba-1",
        "h32-candle-567",
        "h32-dynamo-10104",
        "h32-dynamo-1471",
        "h32-faster-rcnn-pytorch-27",
        "h32-pytorch_geometric_temporal-247",
        "h32-stylegan2-pytorch-180",
    ),
}


@pytest.mark.parametrize("part", sorted(GAINED))
def test_development_records_are_recognised(part: str) -> None:
    records = {
        r["id"]: r
        for path in sorted(CORPUS.glob(f"{part}_*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for r in (json.loads(line),)
    }
    for rid in GAINED[part]:
        d = diagnose_text(records[rid]["text"])
        assert d.oom_found, rid
        assert not contradictions(d), rid
        assert not hardware_top_fix(d), rid
