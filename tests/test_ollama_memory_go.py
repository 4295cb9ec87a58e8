"""Ollama's llama-runner layer estimate (oomkit.estimate.ollama_memory_go, llm/memory.go).

Blocks are counted from blk.0 and dealt round-robin to the GPUs; llama.cpp then offloads the
LAST blocks in contiguous runs. DeepSeek-R1 (3 leading dense blocks) on 3x MI210 64 GB
reproduces ollama#8776 ("allocating 70139.08 MiB on device 0").
"""

from __future__ import annotations

from oomkit.api import estimate, load_model
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


def test_ollama_8776_r1_on_3x_mi210_overfills_gpu0() -> None:
    settings = InferenceSettings(
        runtime="ollama", quant="Q4_K_M", ctx=2048, runtime_version="0.5.7"
    )
    est = estimate("deepseek-r1", settings, hardware_for(parse_gpu_list("3xmi210")), offline=True)
    gpu0 = est.devices[0]
    assert any("memory.go" in n for n in est.assumptions)
    # llama.cpp puts >= 9 MoE blocks (~6 GiB each) on ROCm0: more than its 64 GiB
    assert gpu0.weights_bytes > 55 * GiB
    assert gpu0.capacity_bytes is not None
    assert gpu0.total_bytes > gpu0.capacity_bytes - 457 * MiB


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
