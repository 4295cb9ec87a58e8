"""gpt-oss on Ollama 0.11.x (oomkit.estimate.ollama_gptoss): Ollama's own GraphSize 'gptoss'
figures per release, llm/server.go's CPU fallback, the user's num_gpu, the sinks concat and the
FP16 score copy in the CUDA pool.

The figures are the ones real Ollama logs printed (ollama#11711, #11753, #11982); the runs are
the records of tests/fixtures/verdict_runs (ollama-11744 on 0.11.2 / 0.11.3, ollama-11753).
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.ollama_gptoss import (
    gptoss_flash,
    gptoss_graph_size,
    gptoss_kv_blocks,
    scores_bytes,
)
from oomkit.estimate.ollama_memory_go import estimate_gpu_layers
from oomkit.estimate.verdict import verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

_CONCAT = "attention sinks concat (second F32 score tensor)"


def _gib1(n: int) -> float:
    """As Ollama's format.HumanBytes2 prints GiB: one decimal."""
    return round(n / GiB, 1)


def test_graph_and_kv_reproduce_ollama_11753_log_at_0_11_3() -> None:
    """ollama#11753 (gpt-oss:20b, num_ctx 36864, batch 512): 'memory.required.kv="972.0 MiB"
    ... memory.graph.full="9.0 GiB" memory.graph.partial="9.0 GiB"' (partial = full: PR #11700)."""
    spec = load_model("gpt-oss-20b", offline=True)
    n = spec.num_hidden_layers
    kv = gptoss_kv_blocks(spec, 36864, 512, 1, n)
    assert sum(kv) / MiB == pytest.approx(972.0, abs=0.05)
    assert kv[0] < kv[1]  # even blocks: the sliding window (4096 + batch cells)
    partial, full = gptoss_graph_size("partial_eq_full", spec, 36864, n)
    assert (_gib1(full), _gib1(partial)) == (9.0, 9.0)


def test_graph_reproduces_ollama_11711_log_at_0_11_2() -> None:
    """ollama#11711 (gpt-oss:20b, 0.11.2 era, 8192 cells: 'memory.required.kv="300.0 MiB"'):
    'memory.graph.full="2.0 GiB" memory.graph.partial="4.0 GiB"' (partial = 2 x full)."""
    spec = load_model("gpt-oss-20b", offline=True)
    n = spec.num_hidden_layers
    assert sum(gptoss_kv_blocks(spec, 8192, 512, 1, n)) / MiB == pytest.approx(300.0, abs=0.05)
    partial, full = gptoss_graph_size("partial_2x_full", spec, 8192, n)
    assert (_gib1(full), _gib1(partial)) == (2.0, 4.0)


def test_graph_reproduces_ollama_11982_log_at_0_11_5() -> None:
    """ollama#11982 (gpt-oss:120b on Ollama 0.11.5, KvSize 75000): 'memory.required.kv="2.7
    GiB" ... memory.graph.full="13.7 GiB" memory.graph.partial="13.7 GiB"' (PR #11823: half
    the 0.11.3 figure). 0.11.8's flash-attention figure is a small constant instead."""
    spec = load_model("gpt-oss-120b", offline=True)
    n = spec.num_hidden_layers
    assert _gib1(sum(gptoss_kv_blocks(spec, 75000, 512, 1, n))) == 2.7
    assert tuple(map(_gib1, gptoss_graph_size("partial_half", spec, 75000, n))) == (13.7, 13.7)
    fa = gptoss_graph_size("partial_half_fa", spec, 75000, n, flash=True)
    assert fa == ((4 + (75000 >> 10) + 110) * MiB,) * 2


def test_memory_go_num_gpu_caps_the_walk_and_the_output() -> None:
    """llm/memory.go: with num_gpu set the walk stops once that many layers are placed and the
    output layer is left off; the walk goes from the last block down (0478d440f, v0.7.0)."""
    blocks = [1 * GiB] * 8
    free = [100 * GiB]
    assert estimate_gpu_layers(blocks, GiB, 0, (0, 0), free, 0).layers == 9
    capped = estimate_gpu_layers(blocks, GiB, 0, (0, 0), free, 0, num_gpu=5, descending=True)
    assert capped.layers == 5
    # the sliding-window KV of the even blocks: the walk counts kv[i] per block
    kvs = [0, 2 * GiB] * 4
    room = [12 * GiB]  # buffer blk.0 + kv[0] = 1 GiB; odd blocks cost 3, even 1
    down = estimate_gpu_layers(blocks, 0, sum(kvs), (0, 0), room, 0, kv_blocks=kvs, descending=True)
    up = estimate_gpu_layers(blocks, 0, sum(kvs), (0, 0), room, 0, kv_blocks=kvs)
    # down: 1 + 3 (blk.7) + 1 + 3 + 1 = 9, blk.3 would make 12, not < 12: 4 blocks;
    # up: 1 + 1 (blk.0) + 3 + 1 + 3 + 1 = 10, blk.5 would make 13: 5 blocks
    assert (down.layers, up.layers) == (4, 5)


def test_flash_attention_per_release() -> None:
    """SupportsFlashAttention excluded gptoss until 0.11.5; OLLAMA_FLASH_ATTENTION decided in
    0.11.5-0.11.7; PR #11996 (0.11.8) turned it on by default."""
    g = {v: resolve_generation("ollama", v) for v in ("0.11.3", "0.11.5", "0.11.8")}
    assert [g[v].key for v in g] == ["gptoss-0.11.3", "gptoss-0.11.5", "gptoss-0.11.8"]
    assert gptoss_flash(g["0.11.3"], True) is False
    assert (gptoss_flash(g["0.11.5"], None), gptoss_flash(g["0.11.5"], True)) == (False, True)
    assert (gptoss_flash(g["0.11.8"], None), gptoss_flash(g["0.11.8"], False)) == (True, False)


def _est(model: str, gpus: str, version: str | None, **kw: Any) -> Estimate:
    s = InferenceSettings(runtime="ollama", quant="MXFP4", runtime_version=version, **kw)
    return estimate(model, s, hardware_for(parse_gpu_list(gpus)), offline=True)


def _ollama(est: Estimate) -> dict[str, Any]:
    return cast("dict[str, Any]", est.runtime_details["ollama"])


def _growth(est: Estimate) -> dict[str, int]:
    return cast("dict[str, int]", est.runtime_details.get("cuda_pool_growth_bytes") or {})


_11744: dict[str, Any] = {"ctx": 32678, "n_gpu_layers": 25, "batch_size": 256}


def test_ollama_11744_v0_11_2_graph_estimate_sends_the_model_to_the_cpu() -> None:
    """ollama#11744: 'the same config and same settings on 0.11.2 runs flawlessly', 0.11.3 runs
    out of memory (gpt-oss:120b, num_gpu 25, num_ctx 32678, num_batch 256, 2x RTX 4090 + RTX
    4070). On 0.11.2 the partial graph estimate (2 x 12 GiB) fits no GPU: estimate.Layers is 0
    and llm/server.go starts the runner with the CPU library only, num_gpu 25 or not."""
    old = _est("gpt-oss-120b", "rtx-4090,rtx-4090,rtx-4070", "0.11.2", **_11744)
    assert _ollama(old)["cpu_fallback"] is True
    assert all(d.total_bytes == 0 for d in old.devices if d.device.startswith("cuda"))
    assert verdict(old).level == "fits"


def test_ollama_11744_v0_11_3_puts_num_gpu_25_on_the_gpus_and_dies() -> None:
    """0.11.3 (PR #11700: partial = full, 12 GiB): memory.go places 10 layers on the two 4090s
    (5,5,0) and the runner gets --n-gpu-layers 25 with that split: the 4090s overflow."""
    new = _est("gpt-oss-120b", "rtx-4090,rtx-4090,rtx-4070", "0.11.3", **_11744)
    assert _ollama(new)["cpu_fallback"] is False
    assert any("placed 10 layers (split 5,5,0)" in a for a in new.assumptions)
    cuda0 = new.devices[0]
    assert cuda0.capacity_bytes is not None
    assert cuda0.total_bytes > cuda0.capacity_bytes
    assert verdict(new).level == "does_not_fit"


def test_ollama_11753_sinks_concat_and_pool_copy() -> None:
    """ollama#11753 (gpt-oss:20b, RTX 3090, num_ctx 36864, died ~30 s into a 34k request;
    Ollama's own figure 22.6 of 23.4 GiB): on 0.11.3 the attention keeps a second F32 score
    tensor (Concat of the sinks) and the FP16 copy of the scores grows the CUDA pool. From
    0.11.5 (PR #11823, sinks in the softmax) the second tensor is gone."""
    kw: dict[str, Any] = {"ctx": 36864, "n_gpu_layers": 25, "flash_attn": False}
    spec = load_model("gpt-oss-20b", offline=True)
    old = _est("gpt-oss-20b", "rtx-3090", "2025-08-06", **kw)  # the thread's day: 0.11.3
    assert _ollama(old)["version_modelled"].startswith("Ollama 0.11.3")
    comps = {c.label: c.n_bytes for c in old.devices[0].components}
    assert comps[_CONCAT] == scores_bytes(spec, 36864 + 1, 512)
    growth = _growth(old)["cuda:0"]
    assert growth == scores_bytes(spec, 36864, 512, elem_bytes=2)
    assert verdict(old).level in ("tight", "does_not_fit")
    new = _est("gpt-oss-20b", "rtx-3090", "0.11.5", **kw)
    assert _CONCAT not in {c.label for c in new.devices[0].components}
    delta = old.devices[0].total_bytes - new.devices[0].total_bytes
    assert delta == comps[_CONCAT]


def test_flash_attention_from_0_11_8_drops_the_scores() -> None:
    """0.11.8: flash attention by default, no score tensor, no pool copy of it."""
    est = _est("gpt-oss-20b", "rtx-3090", "0.11.8", ctx=36864)
    assert _ollama(est)["flash_attention"] is True
    assert not _growth(est).get("cuda:0")


def test_newest_generation_keeps_the_ollama_engine_path() -> None:
    """No version: the 0.12 generation, where none of the 0.11 gpt-oss data applies."""
    est = _est("gpt-oss-20b", "rtx-3090", None, ctx=36864)
    assert "cpu_fallback" not in _ollama(est)
    assert _CONCAT not in {c.label for c in est.devices[0].components}


@pytest.mark.parametrize("version", ["0.10.1", "0.9.6", "2025-07"])
def test_releases_before_gpt_oss_refuse_it(version: str) -> None:
    """Before 0.11.0 (PR #11672) Ollama has no gpt-oss model and its vendored llama.cpp no
    gpt-oss architecture: the model does not load. It was estimated as a llama.cpp-runner run
    ('Ollama 0.7.1-0.10'), a verdict for a run that cannot start."""
    from oomkit.errors import InvalidSettingError

    with pytest.raises(InvalidSettingError, match=r"cannot load gpt-oss-20b .*0\.11\.0"):
        _est("gpt-oss-20b", "rtx-3060", version)
    assert _est("gpt-oss-20b", "rtx-3060", "0.11.0").devices


@pytest.mark.parametrize("gpus", ["", "m2-24gb"])
def test_gpt_oss_runs_on_the_ollama_engine_without_a_cuda_capacity(gpus: str) -> None:
    """Without a GPU of known capacity (or on Metal) the 0.11 gpt-oss path is not taken, and the
    output said 'llama.cpp runner' / engine 'llama runner': 0.11's vendored llama.cpp has no
    gpt-oss, only the Ollama engine's model/models/gptoss runs it."""
    s = InferenceSettings(runtime="ollama", quant="MXFP4", runtime_version="0.11.3")
    hw = hardware_for(parse_gpu_list(gpus)) if gpus else hardware_for(n_devices=1)
    info = _ollama(estimate("gpt-oss-20b", s, hw, offline=True))
    assert info["engine"] == "ollamarunner"
    assert "llama.cpp runner" not in info["version_modelled"]
