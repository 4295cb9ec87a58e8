"""Ollama's llama-runner layer estimate (oomkit.estimate.ollama_memory_go, llm/memory.go).

Blocks are counted from blk.0 and dealt round-robin to the GPUs; llama.cpp then offloads the
LAST blocks in contiguous runs. DeepSeek-R1 (3 leading dense blocks) on 3x MI210 64 GB
reproduces ollama#8776 ("allocating 70139.08 MiB on device 0").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from oomkit.api import estimate, load_model
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.ollama_memory_go import estimate_gpu_layers, graph_size, ollama_kv_bytes
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB


def test_blocks_dealt_round_robin_from_blk0() -> None:
    # a small first block, then big ones; 2 GPUs of 10 GiB, no graph, no KV
    blocks = [1 * GiB] + [3 * GiB] * 7
    plan = estimate_gpu_layers(blocks, 0, 0, (0, 0), [10 * GiB, 10 * GiB], 0)
    # buffer = blk.0 (1 GiB) per GPU; GPU0 takes blk.0 (1) + blk.2, blk.4 (3 + 3) = 8 < 10;
    # GPU1 takes blk.1, blk.3, blk.5 = 9 + 1 = 10, not > 10: it stops at two
    assert plan.counts == (3, 2)
    assert plan.layers == 5


def test_gpu_that_cannot_take_a_block_leaves_the_list() -> None:
    blocks = [2 * GiB] * 6
    plan = estimate_gpu_layers(blocks, 0, 0, (0, 0), [5 * GiB, 20 * GiB], 0)
    # GPU0: buffer 2 + one block 2 = 4; the next would make 6 > 5: GPU0 drops out, GPU1 takes
    # the rest
    assert plan.counts[0] == 1
    assert sum(plan.counts) == 6


def test_ollama_kv_formula_counts_full_deepseek_heads() -> None:
    spec = load_model("deepseek-r1", offline=True)
    # 2 x n_ctx x 61 layers x (192 + 128) x 128 heads
    assert ollama_kv_bytes(spec, 2048) == 2 * 2048 * 61 * 320 * 128


def test_ollama_8776_r1_on_3x_mi210_model_buffer_of_the_last_gpu() -> None:
    """ollama#8776 logs llama.cpp's devices in the order Ollama hands them over: "using device
    ROCm1 (65430 MiB free)", "ROCm2 (65430 MiB free)", "ROCm0 (64468 MiB free)", then
    "allocating 70139.08 MiB on device 0" (ROCm0: the third in that order). memory.go's split
    (9,10,10 from blk.0) gives llama.cpp's last blocks, all MoE, to the third GPU: its model
    buffer is the one over its free memory, while the first two GPUs' model buffers fit."""
    hw = hardware_for(parse_gpu_list("3xmi210"))
    free = (65430 * MiB, 65430 * MiB, 64468 * MiB)
    hw = dataclasses.replace(
        hw,
        devices=tuple(
            dataclasses.replace(d, capacity_bytes=c) for d, c in zip(hw.devices, free, strict=True)
        ),
    )
    settings = InferenceSettings(
        runtime="ollama", quant="Q4_K_M", ctx=2048, runtime_version="0.5.7"
    )
    est = estimate("deepseek-r1", settings, hw, offline=True)
    assert any("(split 9,10,10)" in n for n in est.assumptions)
    first, second, last = est.devices
    # the logged buffer: 70139.08 MiB; within 0.1%
    assert abs(last.weights_bytes / MiB - 70139.08) < 70
    assert last.capacity_bytes is not None
    assert last.weights_bytes > last.capacity_bytes
    for d in (first, second):
        assert d.capacity_bytes is not None
        assert d.weights_bytes < d.capacity_bytes
    assert any("GPUs in the order Ollama lists them" in n for n in est.assumptions)


def test_ollama_5136_log_figures_reproduce_at_16384_cells() -> None:
    """ollama#5136 (DeepSeek-V2-Lite, ROCm 16 GiB, 2024-06-26) logs memory.go's own figures:
    memory.required.kv=4.2 GiB, memory.graph.full=568.0 MiB, memory.graph.partial=759.4 MiB.
    GraphSize's deepseek2 case and the KV formula give exactly these at a runner context of
    16384 cells (twice the 8192 the reporter names: num_ctx x parallel slots), and not at 8192."""
    spec = load_model("deepseek-v2-lite", offline=True)
    kv = ollama_kv_bytes(spec, 16384)
    assert round(kv / GiB, 1) == 4.2
    partial, full = graph_size(spec, 16384, 512, kv)
    assert round(full / MiB, 1) == 568.0
    assert round(partial / MiB, 1) == 759.4
    partial_8k, full_8k = graph_size(spec, 8192, 512, ollama_kv_bytes(spec, 8192))
    assert round(full_8k / MiB, 1) != 568.0
    assert round(partial_8k / MiB, 1) != 759.4


def _write_glm_mtp_gguf(path: Path) -> None:
    """A GLM-4.5-style GGUF: block_count 4 = 3 layers (1 leading dense) + 1 MTP/nextn block
    kept as blk.3, as llama.cpp's converter writes them."""
    q4k = gguf.GGMLQuantizationType.Q4_K

    def q(*shape: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
        return np.zeros((*shape[:-1], shape[-1] // 256 * 144), np.uint8)

    d, e, ff, vocab, nb = 1024, 8, 1024, 4096, 4
    w = gguf.GGUFWriter(str(path), "glm4moe")
    for key, value in {
        "block_count": nb,
        "embedding_length": d,
        "feed_forward_length": 4 * d,
        "attention.head_count": 8,
        "attention.head_count_kv": 2,
        "context_length": 131072,
        "nextn_predict_layers": 1,
        "expert_count": e,
        "expert_used_count": 2,
        "expert_feed_forward_length": ff,
        "expert_shared_count": 1,
        "leading_dense_block_count": 1,
        "attention.key_length": 128,
        "attention.value_length": 128,
        "vocab_size": vocab,
    }.items():
        w.add_uint32(f"glm4moe.{key}", value)
    w.add_float32("glm4moe.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_tensor("token_embd.weight", q(vocab, d), raw_dtype=q4k)
    w.add_tensor("output_norm.weight", np.zeros(d, np.float32))
    w.add_tensor("output.weight", q(vocab, d), raw_dtype=q4k)
    for i in range(nb):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.zeros(d, np.float32))
        w.add_tensor(p + "attn_q.weight", q(8 * 128, d), raw_dtype=q4k)
        w.add_tensor(p + "attn_k.weight", q(2 * 128, d), raw_dtype=q4k)
        w.add_tensor(p + "attn_v.weight", q(2 * 128, d), raw_dtype=q4k)
        w.add_tensor(p + "attn_output.weight", q(d, 8 * 128), raw_dtype=q4k)
        w.add_tensor(p + "ffn_norm.weight", np.zeros(d, np.float32))
        if i == 0:
            w.add_tensor(p + "ffn_gate.weight", q(4 * d, d), raw_dtype=q4k)
            w.add_tensor(p + "ffn_up.weight", q(4 * d, d), raw_dtype=q4k)
            w.add_tensor(p + "ffn_down.weight", q(d, 4 * d), raw_dtype=q4k)
            continue
        w.add_tensor(p + "ffn_gate_inp.weight", np.zeros((e, d), np.float32))
        w.add_tensor(p + "exp_probs_b.bias", np.zeros(e, np.float32))
        w.add_tensor(p + "ffn_gate_exps.weight", q(e, ff, d), raw_dtype=q4k)
        w.add_tensor(p + "ffn_up_exps.weight", q(e, ff, d), raw_dtype=q4k)
        w.add_tensor(p + "ffn_down_exps.weight", q(e, d, ff), raw_dtype=q4k)
        w.add_tensor(p + "ffn_gate_shexp.weight", q(ff, d), raw_dtype=q4k)
        w.add_tensor(p + "ffn_up_shexp.weight", q(ff, d), raw_dtype=q4k)
        w.add_tensor(p + "ffn_down_shexp.weight", q(d, ff), raw_dtype=q4k)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_mtp_block_counted_as_memory_go_counts_block_count(tmp_path: Path) -> None:
    """memory.go walks ``range BlockCount()`` (the GGUF block_count, nextn blocks included) and
    its KV formula multiplies by BlockCount: a nextn block at blk.{n_layer} must neither crash
    the walk nor be dropped from it."""
    path = tmp_path / "glm_mtp.gguf"
    _write_glm_mtp_gguf(path)
    spec = load_model(str(path), offline=True)
    assert (spec.num_hidden_layers, spec.num_nextn_predict_layers) == (3, 1)
    assert ollama_kv_bytes(spec, 2048, 4) == 2 * 2048 * 4 * (128 + 128) * 2
    settings = InferenceSettings(runtime="ollama", runtime_version="0.5.7")
    tiny = estimate(str(path), settings, hardware_for(vram_bytes=40 * MiB), offline=True)
    assert tiny.fits is False
    # room for the 4 blocks + output as memory.go counts them: -ngl 5 of block_count 4, so
    # llama.cpp offloads its 3 main blocks and the output (the nextn one is among the last 5)
    est = estimate(str(path), settings, hardware_for(vram_bytes=850 * MiB), offline=True)
    assert not any("memory.go counted blocks" in n for n in est.assumptions)
    assert est.runtime_details["ollama"]["num_gpu"] is None  # every layer on the GPU
    # less room: memory.go stops after blk.0..blk.2 (split 3); -ngl 3 of 4 blocks leaves 2
    # main blocks on the GPU
    part = estimate(str(path), settings, hardware_for(vram_bytes=820 * MiB), offline=True)
    assert any("(split 3)" in n for n in part.assumptions)
    assert part.runtime_details["ollama"]["num_gpu"] == 2


def test_llama_runner_runs_memory_go_even_when_llamacpp_would_fit() -> None:
    """With num_gpu unset the llama runner always takes memory.go's -ngl (llm/server.go:
    NumGPU < 0 -> estimate.Layers). memory.go counts DeepSeek-V2-Lite's KV with full heads,
    8.4 GiB at 32k, so a 12 GiB card gets part of the layers although llama.cpp's own (MLA)
    layout would hold them all; at 8k memory.go places every layer."""
    hw = hardware_for(parse_gpu_list("rtx-3060"))
    at = {
        ctx: estimate(
            "deepseek-v2-lite",
            InferenceSettings(runtime="ollama", ctx=ctx, runtime_version="0.9.0"),
            hw,
            offline=True,
        )
        for ctx in (8192, 32768)
    }
    long = at[32768].runtime_details["ollama"]
    assert isinstance(long, dict)
    assert isinstance(long["num_gpu"], int)
    assert 0 < long["num_gpu"] < 28
    assert any("own KV figure 8.44 GiB" in n for n in at[32768].assumptions)
    short = at[8192].runtime_details["ollama"]
    assert isinstance(short, dict)
    assert short["num_gpu"] is None


def test_kv_formula_before_0_1_45_uses_embedding_per_head() -> None:
    """memory.go before 0.1.45 (8e0641a9b) sized f16 KV as 2 x 2 x n_ctx x n_layer x
    n_embd / n_head x n_head_kv; 0.1.45-0.4 use key_length + value_length; 0.5+ multiply by
    the cache type's bytes per element."""
    spec = load_model("deepseek-v2-lite", offline=True)
    assert ollama_kv_bytes(spec, 16384, embd_per_head=True) == 2 * 2 * 16384 * 27 * 2048
    assert ollama_kv_bytes(spec, 16384, elem_bytes=1.0) == 16384 * 27 * 320 * 16


def test_ollama_plans_offer_no_llamacpp_only_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """Ollama has no --n-cpu-moe (api/types.go Runner: num_gpu, num_ctx, num_batch, ...):
    its plans move whole layers with PARAMETER num_gpu."""
    args = ["deepseek-r1", "-r", "ollama", "--gpu", "3xmi210", "--ctx", "2048"]
    code = main(["estimate", *args, "--runtime-version", "0.5.7", "--offline"])
    out = capsys.readouterr().out
    assert code == 3
    assert "n-cpu-moe" not in out
    assert "PARAMETER num_gpu" in out


def test_qwen2_graph_case_reproduces_ollama_5913_log() -> None:
    """ollama#5913 (dolphin-qwen2:72b q4_K_S, num_ctx 2048, batch 512, 2024-07-24) logs
    memory.go's figures: memory.required.kv=640.0 MiB, memory.graph.full=313.0 MiB,
    memory.graph.partial=1.3 GiB. GraphSize's qwen2 case gives exactly these; the fallback
    GQA x kv / 6 (8 x 640 MiB / 6 = 853 MiB for both) gives neither."""
    spec = load_model("qwen2-72b", offline=True)
    kv = ollama_kv_bytes(spec, 2048)
    assert kv == 640 * MiB
    partial, full = graph_size(spec, 2048, 512, kv)
    assert round(full / MiB, 1) == 313.0
    assert round(partial / GiB, 1) == 1.3
    gqa_fallback = 8 * kv // 6
    assert full != gqa_fallback
    assert partial != gqa_fallback


def test_qwen2_split_over_unequal_gpus_comes_from_memory_go() -> None:
    """ollama#8984's machine (3090 + 8 GB 4070 Laptop, Qwen2.5-32B q5_K_S, num_ctx 2048, Ollama
    of 2025-02): with num_gpu unset the llama runner passes llama.cpp memory.go's
    --tensor-split, blocks dealt alternately from blk.0 until the 8 GB card is full (its 0.9
    GiB partial graph and 457 MiB minimum kept free), not llama.cpp's own split by free
    memory. Before v0.1.32 (no qwen2 case in GraphSize) that path is not taken."""
    hw = hardware_for(parse_gpu_list("rtx-3090,rtx-4070-laptop"))
    new = estimate(
        "qwen2.5-32b",
        InferenceSettings(runtime="ollama", quant="Q5_K_S", ctx=2048, runtime_version="0.5.7"),
        hw,
        offline=True,
    )
    assert any("GPUs in the order Ollama lists them" in n for n in new.assumptions)
    split = new.settings["tensor_split"]
    assert isinstance(split, str)
    big, small = (int(x) for x in split.split(","))
    assert big + small == 65  # 64 blocks + output
    # memory.go's room on the 8 GB card: its free memory less graph, minimum and blk.0 buffer
    spec = load_model("qwen2.5-32b", offline=True)
    partial, _ = graph_size(spec, 2048, 512, ollama_kv_bytes(spec, 2048))
    assert 0.85 * GiB < partial < 0.95 * GiB
    assert 15 <= small <= 19
    old = estimate(
        "qwen2.5-32b",
        InferenceSettings(runtime="ollama", quant="Q5_K_S", ctx=2048, runtime_version="0.1.31"),
        hw,
        offline=True,
    )
    assert not any("GPUs in the order Ollama lists them" in n for n in old.assumptions)
