"""llama.cpp's CUDA pool while quantized prompt matmuls went through cuBLAS (llamacpp_pool).

A real GGUF (written with the ``gguf`` package: Q4_K/Q6_K layer weights, a Q8_0 output matrix)
gives the exact bytes; the catalog's Yi-34B with llama-quantize's Q4_K_M types on a 22 GB
2080 Ti reproduces xinference#1036 (2k runs, 4k dies in ggml_cuda_pool_malloc_vmm).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

LABEL = "CUDA pool (cuBLAS dequantized weight)"


def _make_fixtures() -> ModuleType:
    """tests/fixtures/make_fixtures.py (loaded by path, as tests/test_gguf_loader.py does)."""
    if "make_fixtures" in sys.modules:
        return sys.modules["make_fixtures"]
    path = Path(__file__).parent / "fixtures" / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = mod
    spec.loader.exec_module(mod)
    return mod


def _pool(est: Estimate, device: int = 0) -> int:
    return sum(c.n_bytes for c in est.devices[device].components if c.label == LABEL)


def _est(
    model: str | Path,
    gpu: str,
    version: str,
    *,
    ctx: int = 2048,
    ubatch: int | None = None,
    batch: int | None = None,
    quant: str | None = None,
    vram: int | None = None,
) -> Estimate:
    settings = InferenceSettings(
        runtime="llama.cpp",
        ctx=ctx,
        runtime_version=version,
        ubatch=ubatch,
        batch_size=batch,
        quant=quant,
    )
    hw = hardware_for(parse_gpu_list(gpu), vram_bytes=vram)
    return estimate(str(model), settings, hw, offline=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pool") / "tiny.gguf"
    _make_fixtures().make_gguf_tiny_llama(path, n_vocab=4096)
    return path


def test_cublas_pool_only_between_pr_3776_and_pr_8075(tiny: Path) -> None:
    ub = 512
    before_6122 = _est(tiny, "rtx-3090", "2024-02-01")
    # tensor cores: FP16 output matrix [4096 x 256] + FP16 activations + FP16 result
    assert _pool(before_6122) == 2 * (4096 * 256 + ub * 256 + 4096 * ub)
    after_6122 = _est(tiny, "rtx-3090", "2024-05-01")
    # the largest layer matrix is 256 x 256 (attn_q, ffn_*): the output is a matrix-vector now
    assert _pool(after_6122) == 2 * (256 * 256 + ub * 256 + 256 * ub)
    for version in ("b1412", "2024-07-01", "2025-06-01"):  # MMQ before #3776 and after #8075
        assert _pool(_est(tiny, "rtx-3090", version)) == 0


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer Llama GGUF with a Q6_K token embedding and no output.weight: llama.cpp uses the
    embedding as the output matrix (a duplicate placed with the output layer, as for Gemma)."""
    import gguf
    import numpy as np

    mf = _make_fixtures()
    q = gguf.GGMLQuantizationType
    n_vocab, n_embd = 4096, 256
    path = tmp_path_factory.mktemp("pool") / "tied.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    mf._tiny_llama_gguf_common(w, n_layer=1, n_embd=n_embd, n_ff=n_embd)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(n_vocab)])
    mf._raw(w, "token_embd.weight", (n_vocab, n_embd), q.Q6_K)
    w.add_tensor("blk.0.attn_norm.weight", np.zeros((n_embd,), np.float32))
    for name, rows in (("attn_q", n_embd), ("attn_k", 128), ("attn_v", 128)):
        mf._raw(w, f"blk.0.{name}.weight", (rows, n_embd), q.Q4_K)
    mf._raw(w, "blk.0.attn_output.weight", (n_embd, n_embd), q.Q4_K)
    w.add_tensor("blk.0.ffn_norm.weight", np.zeros((n_embd,), np.float32))
    for name in ("ffn_gate", "ffn_up", "ffn_down"):
        mf._raw(w, f"blk.0.{name}.weight", (n_embd, n_embd), q.Q4_K)
    w.add_tensor("output_norm.weight", np.zeros((n_embd,), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_tied_output_matrix_is_pooled_like_a_separate_one(tied: Path) -> None:
    """Review3 finding 4: the tied copy ("output.weight(tied)") is the output matmul's weight;
    before PR #6122 it ran over every prompt token, so it is dequantized into the pool."""
    ub = 512
    assert _pool(_est(tied, "rtx-3090", "2024-02-01")) == 2 * (4096 * 256 + ub * 256 + 4096 * ub)
    # after PR #6122 it is a matrix-vector product again: the 256 x 256 layer matrices
    assert _pool(_est(tied, "rtx-3090", "2024-05-01")) == 2 * (256 * 256 + ub * 256 + 256 * ub)


def test_gemma_7b_tied_output_dominates_the_pool() -> None:
    """gemma-7b ties its 256000 x 3072 output to the embedding: ~1.7 GiB in the pool before
    PR #6122, not one FFN matrix."""
    est = _est("gemma-7b", "rtx-3090", "2024-03-01", quant="Q4_K_M")
    assert _pool(est) == 2 * (256000 * 3072 + 512 * 3072 + 256000 * 512)


def _pool_tokens(rows: int, cols: int, tokens: int) -> int:
    return 2 * (rows * cols + tokens * cols + rows * tokens)


def test_physical_batch_was_b_before_pr_6017_and_never_exceeds_n_ctx(tiny: Path) -> None:
    """Review3 finding 10: before PR #6017 (b2413) a prompt step was -b tokens
    (``cparams.n_batch = params.n_batch``, 512 by default, no -ub); from it, -ub out of -b.
    Either way no step holds more tokens than the context (llama_context caps n_batch at n_ctx
    for causal attention; before, the worst-case graph was ``min(n_ctx, n_batch)``)."""
    out = (4096, 256)  # the tiny model's Q8_0 output matrix, pooled while all_logits
    old = _est(tiny, "rtx-3090", "2024-02-01", batch=1024)
    assert _pool(old) == _pool_tokens(*out, 1024)
    assert old.runtime_details["n_ubatch"] == old.runtime_details["n_batch"] == 1024
    # a build before PR #6017 parsed no -ub ("error: unknown argument"): refused, as -fa is
    with pytest.raises(InvalidSettingError, match="PR #6017"):
        _est(tiny, "rtx-3090", "2024-02-01", batch=1024, ubatch=256)
    assert _pool(_est(tiny, "rtx-3090", "2024-02-01")) == _pool_tokens(*out, 512)  # -b 512
    # PR #6017 (2024-03-13) .. PR #6122: -b 1024 is a logical batch of 512-token micro-batches
    assert _pool(_est(tiny, "rtx-3090", "2024-03-20", batch=1024)) == _pool_tokens(*out, 512)
    # --ctx 200: 224 cells (padded to 32), so no step exceeds 224 tokens
    assert _pool(_est(tiny, "rtx-3090", "2024-02-01", ctx=200)) == _pool_tokens(*out, 224)
    assert _pool(_est(tiny, "rtx-3090", "2024-03-20", ctx=200)) == _pool_tokens(*out, 224)
    # a 16-token context: 32 cells, 32-token steps go through MMQ: no pool at all
    assert _pool(_est(tiny, "rtx-3090", "2024-02-01", ctx=16)) == 0


def test_v100_keeps_cublas_for_64_token_batches_after_pr_8075(tiny: Path) -> None:
    """Review3 finding 11: PR #8075's ggml_cuda_should_use_mmq returns ``cc < CC_VOLTA ||
    ne11 < MMQ_DP4A_MAX_BATCH_SIZE`` (64) on NVIDIA GPUs without int8 tensor cores, and the
    function of today keeps that test: a V100 still dequantizes for cuBLAS; Turing+ do not."""
    layer = 2 * (256 * 256 + 512 * 256 + 256 * 512)  # output is a matrix-vector since #6122
    for version in ("2024-07-01", "2025-06-01", "2026-02-01"):
        assert _pool(_est(tiny, "v100-16gb-pcie", version)) == layer, version
        assert _pool(_est(tiny, "rtx-3090", version)) == 0, version  # int8 tensor cores: MMQ
        assert _pool(_est(tiny, "p40", version)) == 0, version  # cc < Volta: MMQ
    # below 64 tokens the V100 runs MMQ (dp4a)
    assert _pool(_est(tiny, "v100-16gb-pcie", "2024-07-01", ubatch=48)) == 0
    assert _pool(_est(tiny, "v100-16gb-pcie", "2024-07-01", ubatch=64)) > 0
    # no --runtime-version: today's llama.cpp, the same
    today = estimate(
        str(tiny),
        InferenceSettings(runtime="llama.cpp", ctx=2048),
        hardware_for(parse_gpu_list("v100-16gb-pcie")),
        offline=True,
    )
    assert _pool(today) == layer


def test_rocm_pool_is_stated_as_not_modelled(tiny: Path) -> None:
    """ROCm's hipBLAS dequantize path is not modelled: the estimate says so."""
    est = _est(tiny, "mi210", "2024-07-01")
    assert _pool(est) == 0
    assert any(a.startswith("ROCm: llama.cpp's hipBLAS path") for a in est.assumptions)
    assert not any("hipBLAS" in a for a in _est(tiny, "rtx-3090", "2024-07-01").assumptions)


def test_pascal_pooled_until_pr_4682_and_small_batches_use_mmq(tiny: Path) -> None:
    # b1430..PR #4682: the compile-time tensor-core test sent Pascal down the FP16 path too
    assert _pool(_est(tiny, "p40", "b1430")) == 2 * (4096 * 256 + 512 * 256 + 4096 * 512)
    assert _pool(_est(tiny, "p40", "2024-02-01")) == 0  # MMQ again below Volta
    # MMQ for <= 32 tokens (-b before PR #6017, -ub after)
    assert _pool(_est(tiny, "rtx-3090", "2024-02-01", batch=32)) == 0
    assert _pool(_est(tiny, "rtx-3090", "2024-03-20", ubatch=32)) == 0


def test_xinference_1036_yi34b_pool_holds_the_output_matrix() -> None:
    est = _est("yi-34b", "rtx-2080-ti", "2024-02-23", ctx=4096, quant="Q4_K_M", vram=22 * GiB)
    # output.weight 64000 x 7168 dequantized to FP16 (+ activations and result over 512 tokens)
    assert _pool(est) == 2 * (64000 * 7168 + 512 * 7168 + 64000 * 512)
    plat = Platform(segments=tuple(g.segment for g in parse_gpu_list("rtx-2080-ti")))
    assert verdict(est, plat).level != "fits"  # died on the first request
    works = _est("yi-34b", "rtx-2080-ti", "2024-02-23", quant="Q4_K_M", vram=22 * GiB)
    assert verdict(works, plat).level != "does_not_fit"  # 2k ran
    later = _est("yi-34b", "rtx-2080-ti", "2024-04-15", ctx=4096, quant="Q4_K_M", vram=22 * GiB)
    assert 0 < _pool(later) < 0.4 * GiB  # a 20480 x 7168 FFN matrix, not the output


def test_legacy_pool_keeps_one_attention_buffer_per_prompt_step() -> None:
    """PR #3749's batched KQ/KQV GEMM: n_head x n_batch x n_kv FP16 from the legacy pool, which
    allocates 1.05x a request no cached buffer covers and frees nothing."""
    from oomkit.estimate.llamacpp_pool import attention_pool_growth_bytes

    # Llama-2-70B (64 heads), -c 8192, 512-token steps: n_kv grows 512 a step, every request
    # outgrows the cached buffers (k+1)/k > 1.05, so all 16 stay: 1.05 x 32 MiB x (1+..+16)
    step = 64 * 512 * 512 * 2
    expected = sum(-(-int(1.05 * step * k) // 256) * 256 for k in range(1, 17))
    assert attention_pool_growth_bytes(64, 8192, 512) == expected
    assert round(expected / GiB, 2) == 4.46
    # a 2717-token prompt (llama.cpp#3780 on b1446) leaves six buffers, under 0.5 GiB
    assert attention_pool_growth_bytes(64, 2717, 512) < GiB // 2
    # past 20 steps the 5% look-ahead starts to cover the next request: fewer buffers than steps
    long = attention_pool_growth_bytes(64, 64 * 512, 512)
    assert long < sum(-(-int(1.05 * step * k) // 256) * 256 for k in range(1, 65))
    assert long > -(-int(1.05 * step * 64) // 256) * 256


def test_llamacpp_3780_batched_attention_pool_from_pr_3749_until_pr_3882() -> None:
    """llama.cpp#3780: Llama-2-70B Q6_K, -c 8192, -ngl 83 on 3x P40: b1412 runs, b1428/b1430
    OOM, b1446 runs a 2717-token prompt ('no longer OOMs but performance is very poor'). From
    PR #3749 each P40 may hold 4.46 GiB of attention buffers for a prompt near 8192 tokens, more
    than the ~3.4 GiB left: 'tight', with that as the risk; PR #3882 takes Pascal off the
    batched GEMM; Volta+ keep it until the VMM pool."""

    def run(version: str, gpu: str = "3xp40") -> Estimate:
        return _est("llama-2-70b", gpu, version, ctx=8192, quant="Q6_K")

    def growth(version: str, gpu: str = "3xp40") -> int:
        g = run(version, gpu).runtime_details.get("cuda_pool_growth_bytes") or {}
        assert isinstance(g, dict)
        return int(g.get("cuda:0", 0))

    assert growth("b1412") == 0
    assert round(growth("b1430") / GiB, 2) == 4.46
    assert growth("b1446") == growth("b1430")
    assert growth("2023-11-15") == 0  # PR #3882: no batched GEMM without tensor cores
    assert growth("2023-11-15", "3xrtx-3090") > 0  # Volta+ keep it
    assert growth("2023-12-30", "3xrtx-3090") == 0
    old = verdict(run("b1412"), Platform(display=False))
    new = verdict(run("b1430"), Platform(display=False))
    assert old.level == "fits"
    assert new.level == "tight"
    assert any("legacy CUDA pool" in r for r in new.risks)
