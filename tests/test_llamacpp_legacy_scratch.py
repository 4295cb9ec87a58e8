"""llama.cpp before ggml_backend_sched (PR #4766, 2024-01-12): the 'VRAM scratch buffer'.

``llama_new_context_with_model`` of those builds (the llama.cpp vendored by llama-cpp-python
0.2.24, vendor/llama.cpp/llama.cpp lines 9407-9445) measured the whole worst-case graph, CPU
and GPU nodes alike, with one measure allocator and ``cudaMalloc``ed that size on the main GPU
(ggml-cuda.cu ``ggml_cuda_assign_scratch_offset``), whatever the number of offloaded layers.
The graph of its day: K/V copied into cache views (no index inputs), ``silu`` and ``mul`` as
separate in-place ops, ``inp_embd`` an ordinary node, an allocator that reuses memory through a
reshape (``allocate_node``), and, until PR #6505 (April 2024), one ``mul_mat_id`` per selected
expert slot. The logged sizes below are real logs of October-December 2023.
"""

from __future__ import annotations

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.llamacpp_galloc import GraphSim, simulate_gallocr
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

MiB = 2**20


def _run(
    model: str, quant: str, ctx: int, ngl: int, version: str, batch: int | None = None
) -> Estimate:
    s = InferenceSettings(
        runtime="llama.cpp",
        quant=quant,
        ctx=ctx,
        n_gpu_layers=ngl,
        runtime_version=version,
        batch_size=batch,
    )
    return estimate(model, s, hardware_for(parse_gpu_list("a100-80gb"), n_devices=1))


def _compute(est: Estimate) -> int:
    return sum(c.n_bytes for c in est.devices[0].components if c.label == "compute buffer")


@pytest.mark.parametrize(
    ("model", "quant", "ctx", "ngl", "version", "batch", "logged"),
    [
        # llama.cpp#4381 (2023-12-13): Mixtral-8x7B, n_ctx 512, 22/33 layers
        ("mixtral-8x7b", "Q8_0", 512, 22, "2023-12-13", None, 114.54),
        # llama-cpp-python server log: 13B, n_ctx 2048, 10/41 layers
        ("llama-2-13b", "Q4_K_M", 2048, 10, "2023-12-01", None, 194.00),
        # 13B, n_ctx 4096, 43/43 layers ('VRAM scratch buffer: 358.00 MB')
        ("llama-2-13b", "Q4_K_M", 4096, 99, "2023-10-20", None, 358.00),
        # Llama-2-7B, n_ctx 512: all 35 layers and 1 of 35 log the same 70.50 MB
        ("llama-2-7b", "Q4_K_M", 512, 99, "2023-10-01", None, 70.50),
        ("llama-2-7b", "Q4_K_M", 512, 1, "2023-10-01", None, 70.50),
        # Nous-Capybara-34B (Yi-34B), server --ctx-size 2048 --n-gpu-layers 32
        ("yi-34b", "Q5_K_M", 2048, 32, "2023-11-26", None, 270.00),
        # SynthIA-7B (Mistral-7B), n_ctx 4096, 32/35 layers, 2023-11-25; n_batch not shown
        # (1024 reproduces it: 512 gives half)
        ("mistral-7b", "Q4_K_M", 4096, 32, "2023-11-25", 1024, 576.01),
    ],
)
def test_2023_vram_scratch_buffer_matches_real_logs(
    model: str, quant: str, ctx: int, ngl: int, version: str, batch: int | None, logged: float
) -> None:
    got = _compute(_run(model, quant, ctx, ngl, version, batch)) / MiB
    assert got == pytest.approx(logged, abs=0.01)


def test_scratch_is_the_whole_graph_whatever_the_offload() -> None:
    one = _run("llama-2-13b", "Q4_K_M", 2048, 1, "2023-12-01")
    full = _run("llama-2-13b", "Q4_K_M", 2048, 99, "2023-12-01")
    assert _compute(one) == _compute(full)
    assert any("VRAM scratch buffer" in a for a in one.assumptions)


def test_moe_slot_loop_until_pr_6505() -> None:
    assert resolve_generation("llama.cpp", "2024-04-17").effects["moe_slot_loop"] is True
    assert "moe_slot_loop" not in resolve_generation("llama.cpp", "2024-04-18").effects
    old = _compute(_run("mixtral-8x7b", "Q4_K_M", 512, 99, "2024-04-17"))
    new = _compute(_run("mixtral-8x7b", "Q4_K_M", 512, 99, "2024-04-18"))
    # one slot's up/gate pair (2 x 14336 x 512 x 4 bytes = 56 MiB) vs both slots' at once
    assert 50 * MiB < new - old < 120 * MiB


def test_december_2023_mixtral_at_30_layers_on_a_3090_is_not_called_over() -> None:
    s = InferenceSettings(
        runtime="llama.cpp", quant="Q4_K_M", ctx=512, n_gpu_layers=30, runtime_version="2023-12-20"
    )
    est = estimate("mixtral-8x7b", s, hardware_for(parse_gpu_list("rtx-3090"), n_devices=1))
    assert _compute(est) == pytest.approx(114.54 * MiB, abs=0.01 * MiB)
    assert est.devices[0].capacity_bytes > est.devices[0].total_bytes


def test_old_allocator_reuses_memory_through_a_reshape() -> None:
    def graph(old: bool) -> GraphSim:
        g = GraphSim(reuse_view_parents=old)
        x = g.inp("x", 1024)
        q = g.op("q", 4096, x)
        q3 = g.view(q, "q_3d")
        r = g.op("rope", 4096, q3, inplace=True)
        g.op("out", 1024, r)
        return g

    assert simulate_gallocr(graph(True)) == 1024 + 4096
    assert simulate_gallocr(graph(False)) == 1024 + 2 * 4096


def test_several_gpus_before_pr_4766_split_rows_with_kv_and_scratch_on_the_main_gpu() -> None:
    # XiongjieDai/GPU-Benchmarks-on-LLM-Inference, 4000_Ada_2.ipynb: LLaMA-65B Q4_0 on two RTX
    # 4000 Ada, b1691, n_ctx 512: 'total VRAM used: 36349.11 MiB (model: 34950.11 MiB,
    # context: 1399.00 MiB)' = KV 1280 MiB + 'VRAM scratch' 119 MiB, then 'CUDA error 2 at
    # ggml-cuda.cu:6603: out of memory' (ggml_cuda_pool_malloc's cudaMalloc)
    s = InferenceSettings(
        runtime="llama.cpp", quant="Q4_0", ctx=512, runtime_version="b1691", mmap=False
    )
    est = estimate("llama-65b", s, hardware_for(parse_gpu_list("2xrtx-4000-ada"), n_devices=2))
    main, other = est.devices
    kv = [c.n_bytes for c in main.components if c.label.startswith("KV buffer")]
    assert kv == [1280 * MiB]
    assert not any(c.label.startswith("KV buffer") for c in other.components)
    assert _compute(est) == pytest.approx(119 * MiB, abs=0.01 * MiB)
    assert any("several GPUs before PR #4766" in a for a in est.assumptions)
    assert main.capacity_bytes - main.total_bytes < 1 * 2**30  # it died: no clean 'fits'
