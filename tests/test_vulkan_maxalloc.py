"""A Vulkan device's per-buffer limit in llama.cpp estimates (oomkit.estimate.llamacpp_maxalloc).

Real catalog model (Qwen3-30B-A3B: 48 layers, 32 query heads) on the Strix Halo catalog GPU; the
compute graph is oomkit's simulation of ggml-alloc, not a fixture.
"""

from __future__ import annotations

import dataclasses

import pytest

from oomkit.api import estimate
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import resolve_generation
from oomkit.estimate.llamacpp_maxalloc import VULKAN_MAX_ALLOCATION_BYTES, max_allocation_bytes
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings

MODEL = "qwen3-30b-a3b"
N_HEAD = 32
PRE_CHUNKS = "2025-08-01"  # before PR #15815 (and before -fa auto)
POST_CHUNKS = "2025-12-01"


def _hw(backend: str, limit: int | None = None) -> Hardware:
    hw = hardware_for([find_gpu("ryzen-ai-max-395-128gb")])
    dev = dataclasses.replace(hw.devices[0], backend=backend, max_allocation_bytes=limit)
    return dataclasses.replace(hw, devices=(dev,))


def _est(
    hw: Hardware, ctx: int, version: str, fa: bool | None = None, ub: int | None = None
) -> Estimate:
    s = InferenceSettings(
        runtime="llama.cpp",
        quant="Q8_0",
        ctx=ctx,
        runtime_version=version,
        flash_attn=fa,
        ubatch=ub,
    )
    return estimate(MODEL, s, hw, offline=True)


def _compute(est: Estimate) -> int:
    buffers = est.runtime_details["buffers"]
    assert isinstance(buffers, dict)
    return int(buffers["compute"]["Vulkan0"])


def test_issue_15009_kq_above_the_radv_limit_blocks() -> None:
    """llama.cpp#15009: n_ctx 70000 without FA died allocating a 4757131264-byte compute buffer."""
    est = _est(_hw("vulkan"), 70000, PRE_CHUNKS)
    n_kv = int(str(est.runtime_details["n_ctx"]))
    kq = n_kv * 512 * N_HEAD * 4  # f32 KQ of one ubatch against every cell
    assert kq > VULKAN_MAX_ALLOCATION_BYTES
    compute = _compute(est)
    assert abs(compute - 4757131264) < 16 * 2**20  # the size the log says failed
    assert len(est.blockers) == 1
    b = est.blockers[0]
    assert "Vulkan0" in b
    assert "'kq'" in b
    assert f"({kq} bytes)" in b
    assert f"({VULKAN_MAX_ALLOCATION_BYTES} bytes)" in b
    assert "flash attention" in b
    assert est.fits is False
    assert verdict(est, Platform()).level == "does_not_fit"


def test_flash_attention_has_no_kq_so_no_blocker() -> None:
    est = _est(_hw("vulkan"), 70000, PRE_CHUNKS, fa=True)
    assert est.blockers == ()
    assert est.fits is True


def test_cuda_and_rocm_have_no_per_buffer_limit() -> None:
    for backend in ("cuda", "rocm"):
        assert _est(_hw(backend), 70000, PRE_CHUNKS).blockers == ()
        assert max_allocation_bytes(DeviceTarget(name="g", backend=backend)) is None


def test_one_compute_buffer_blocks_only_before_the_chunking_build() -> None:
    """At 64000 cells KQ (4.19e9 B) is under the limit but the whole buffer is not."""
    hw = _hw("vulkan")
    pre = _est(hw, 64000, PRE_CHUNKS)
    kq = 64000 * 512 * N_HEAD * 4
    compute = _compute(pre)
    assert kq < VULKAN_MAX_ALLOCATION_BYTES < compute
    assert len(pre.blockers) == 1
    assert "compute buffer" in pre.blockers[0]
    assert f"({compute} bytes)" in pre.blockers[0]
    assert "#15815" in pre.blockers[0]
    post = _est(hw, 64000, POST_CHUNKS, fa=False)
    assert post.blockers == ()


def test_after_the_chunking_build_one_oversized_tensor_still_blocks() -> None:
    est = _est(_hw("vulkan"), 70000, POST_CHUNKS, fa=False)
    assert len(est.blockers) == 1
    assert "'kq'" in est.blockers[0]
    # a smaller micro-batch shrinks KQ below the limit: the suggested fix works
    assert _est(_hw("vulkan"), 70000, POST_CHUNKS, fa=False, ub=256).blockers == ()


def test_the_device_limit_is_overridable() -> None:
    """AMD's own drivers report 2 GiB: a 2 GiB device blocks where RADV's 4 GiB does not."""
    hw2 = _hw("vulkan", limit=2 * 2**30)
    assert _est(_hw("vulkan"), 40000, POST_CHUNKS, fa=False).blockers == ()
    blk = _est(hw2, 40000, POST_CHUNKS, fa=False).blockers
    assert len(blk) == 1
    assert f"({2 * 2**30} bytes)" in blk[0]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4GB", True])
def test_max_allocation_bytes_is_validated(bad: object) -> None:
    with pytest.raises(InvalidSettingError, match="max_allocation_bytes"):
        DeviceTarget(name="g", backend="vulkan", max_allocation_bytes=bad)  # type: ignore[arg-type]


def test_generation_table_dates_the_chunking_change() -> None:
    before = resolve_generation("llama.cpp", "2025-09-15")
    after = resolve_generation("llama.cpp", "2025-10-02")
    assert before.effects.get("compute_chunks") is False
    assert "compute_chunks" not in after.effects
    assert "#15815" in after.change
    assert "compute_chunks" not in resolve_generation("llama.cpp", None).effects


def test_one_weight_or_kv_tensor_above_the_limit_blocks() -> None:
    """ggml_backend_alloc_ctx_tensors_from_buft gives a tensor above the buffer type's max size
    a buffer of its own, which ggml-vulkan then refuses: the output matrix (151936 x 2048 Q8_0,
    330 MB) on a 300 MiB device, a layer's K cache (70144 cells x 512 x f16) on a 64 MiB one."""
    blk = _est(_hw("vulkan", limit=300 * 2**20), 4096, POST_CHUNKS, fa=False).blockers
    assert len(blk) == 1
    assert "weight tensor 'output.weight'" in blk[0]
    assert f"({151936 * 2048 // 32 * 34} bytes)" in blk[0]
    est = _est(_hw("vulkan", limit=64 * 2**20), 70000, POST_CHUNKS, fa=True)
    cells = int(str(est.runtime_details["n_ctx"]))  # 70000 padded to 256
    kv = [b for b in est.blockers if "KV tensor 'cache_k_l" in b]
    assert len(kv) == 1
    assert f"({cells * 512 * 2} bytes)" in kv[0]


def test_ollama_shares_the_llamacpp_path() -> None:
    """Ollama's runners allocate through the same ggml (its engine: today's ggml-alloc). Ollama
    0.12.6 caps num_ctx at the model's trained 40960 (review8), so the limit is a 2 GiB one
    (AMDVLK's) for the 40960-token kq tensor."""
    hw = _hw("vulkan", limit=2 * 2**30)

    def ollama(fa: bool) -> tuple[str, ...]:
        s = InferenceSettings(
            runtime="ollama", quant="Q8_0", ctx=40960, runtime_version="0.12.6", flash_attn=fa
        )
        return estimate(MODEL, s, hw, offline=True).blockers

    off = ollama(False)
    assert len(off) == 1
    assert "compute tensor 'kq'" in off[0]
    assert ollama(True) == ()


def test_the_limit_is_refused_outside_vulkan() -> None:
    """Only ggml-vulkan has a per-buffer limit: setting one on a CUDA device was answered with
    a blocker that blamed Vulkan (review of session 4); now it is refused at the boundary."""
    from oomkit.errors import InvalidSettingError
    from oomkit.spec.hardware import DeviceTarget

    with pytest.raises(InvalidSettingError, match="Vulkan per-buffer limit"):
        DeviceTarget(name="RTX 4090", backend="cuda", max_allocation_bytes=1 << 30)
    assert DeviceTarget(name="iGPU", backend="vulkan", max_allocation_bytes=1 << 30)


def _strix(driver: str, model: str, quant: str) -> Estimate:
    """kyuz0/amd-strix-halo-toolboxes' llama-bench: -ngl 99 -mmp 0, pp512 (ctx 512), b6486."""
    from oomkit.estimate.llamacpp_maxalloc import vulkan_driver_limit

    s = InferenceSettings(runtime="llama.cpp", quant=quant, ctx=512, runtime_version="b6486")
    return estimate(model, s, _hw("vulkan", limit=vulkan_driver_limit(driver)), offline=True)


def test_amdvlk_refuses_gemma3_27b_bf16_tied_output_that_radv_takes() -> None:
    """AMDVLK#413 / llama.cpp#15054: the same gemma-3-27b BF16 GGUF on the same Strix Halo dies
    on AMDVLK ('Device memory allocation of size 2819260416 failed') and runs on RADV: its tied
    token_embd (262208 x 5376 BF16) is copied to the GPU as the output weight, above AMDVLK's
    2 GiB maxMemoryAllocationSize and under RADV's 4 GB."""
    dead = _strix("amdvlk", "gemma-3-27b", "BF16").blockers
    assert len(dead) == 1
    assert "weight tensor 'output.weight(tied)'" in dead[0]
    assert "(2819260416 bytes)" in dead[0]  # the size the AMDVLK log says failed
    assert f"({2**31} bytes)" in dead[0]
    assert _strix("radv", "gemma-3-27b", "BF16").blockers == ()
    # gpt-oss-120b MXFP4 ran on the same AMDVLK toolbox (build 6486): no tensor above 2 GiB
    assert _strix("amdvlk", "gpt-oss-120b", "MXFP4").blockers == ()


def test_vulkan_driver_names() -> None:
    """The short names and the driverName ggml-vulkan prints on its device line."""
    from oomkit.estimate.llamacpp_maxalloc import vulkan_driver_limit

    assert vulkan_driver_limit("radv") == VULKAN_MAX_ALLOCATION_BYTES == 0xFFFFFFFC
    assert vulkan_driver_limit("AMD open-source driver") == 2**31
    assert vulkan_driver_limit("AMD proprietary driver") == vulkan_driver_limit("amd-proprietary")
    with pytest.raises(InvalidSettingError, match="unknown Vulkan driver 'nvk'"):
        vulkan_driver_limit("nvk")


def test_amdvlk_refuses_the_bf16_lm_head_of_a_ud_q8_k_xl_file() -> None:
    """kyuz0/amd-strix-halo-toolboxes (Aug 2025, llama-bench -ngl 999 -mmp 0, pp512): Kimi-Dev-72B
    UD-Q8_K_XL (Qwen2.5-72B) dies on AMDVLK with 'Device memory allocation of size 2491416576
    failed' and runs on RADV and ROCm. ggml-vulkan packs weights into 1 GiB buffers, so that
    buffer is one tensor: the lm_head at 16 bits (152064 x 8192 x 2), which Unsloth keeps in
    its UD-Q8_K_XL files; plain Q8_0 (1.23 GiB lm_head) passes AMDVLK's 2 GiB."""
    from oomkit.estimate.llamacpp_maxalloc import vulkan_driver_limit

    def run(driver: str | None, quant: str) -> Estimate:
        s = InferenceSettings(
            runtime="llama.cpp",
            quant=quant,
            ctx=512,
            runtime_version="2025-08-09",
            n_gpu_layers=999,
            mmap=False,
        )
        lim = None if driver is None else vulkan_driver_limit(driver)
        hw = _hw("rocm") if driver is None else _hw("vulkan", limit=lim)
        return estimate("qwen2.5-72b", s, hw, offline=True)

    dead = run("amdvlk", "UD-Q8_K_XL").blockers
    assert len(dead) == 1
    assert "weight tensor 'output.weight'" in dead[0]
    assert "(2491416576 bytes)" in dead[0]  # the size the AMDVLK log says failed
    assert run("radv", "UD-Q8_K_XL").blockers == ()
    assert run(None, "UD-Q8_K_XL").blockers == ()
    assert run("amdvlk", "Q8_0").blockers == ()  # llama-quantize's Q8_0 lm_head: 1323565056 B


def test_ud_q8_k_xl_keeps_only_the_untied_lm_head_at_bf16() -> None:
    """The retyping touches ``output.weight`` only: a tied model (gemma-3-27b) and every other
    tensor keep llama-quantize's Q8_0."""
    from oomkit.catalog.models import find_model
    from oomkit.estimate.llamacpp_weights import _predicted_weights

    ud, _, notes = _predicted_weights(find_model("qwen2.5-72b").spec(), "UD-Q8_K_XL")
    q8, _, _ = _predicted_weights(find_model("qwen2.5-72b").spec(), "Q8_0")
    diff = [(a[0].name, a[1], a[2]) for a, b in zip(ud, q8, strict=True) if a != b]
    assert diff == [("output.weight", "BF16", 152064 * 8192 * 2)]
    assert any("lm_head" in n for n in notes)
    g_ud, _, _ = _predicted_weights(find_model("gemma-3-27b").spec(), "UD-Q8_K_XL")
    g_q8, _, _ = _predicted_weights(find_model("gemma-3-27b").spec(), "Q8_0")
    assert g_ud == g_q8
