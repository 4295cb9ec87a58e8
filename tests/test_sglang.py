"""SGLang: default mem_fraction_static heuristic, token pool and req_to_token pool arithmetic."""

from __future__ import annotations

from oomkit.catalog.models import find_model
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.estimate.sglang import (
    dated_mem_fraction_static,
    default_mem_fraction_static,
    estimate_sglang,
    legacy_mem_fraction_static,
    multimodal_policy,
    sglang_batch_defaults,
)
from oomkit.estimate.verdict import Platform, verdict
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

LLAMA8 = find_model("llama-3.1-8b").spec()
H100 = DeviceTarget(name="H100", capacity_bytes=81559 * MiB, architecture="Hopper")


def test_reserved_memory_heuristic_by_gpu_size() -> None:
    # RTX 4090 (24564 MiB): 512 + 2048 x 1.5 + 24 x 2 + 1/8 x 1024 = 3760 MiB reserved
    assert default_mem_fraction_static(1, 24564 * MiB) == round((24564 - 3760) / 24564, 3)
    # H100 at tp 8: 512 + 12288 + 512 x 2 + 1024 = 14848 MiB
    assert sglang_batch_defaults(81559 * MiB, 8) == (8192, 512)
    assert default_mem_fraction_static(8, 81559 * MiB) == round((81559 - 14848) / 81559, 3)
    # B200-class: at least the 16K chunk
    assert sglang_batch_defaults(180 * GiB, 1) == (16384, 512)


def test_a_64_gib_card_uses_the_8k_chunk_tier() -> None:
    # 60-90 GiB tier: 512 + 8192 x 1.5 + 256 x 2 + 128 = 13440 MiB (above the 10 GiB floor)
    assert default_mem_fraction_static(1, 64 * GiB) == round((65536 - 13440) / 65536, 3)
    assert default_mem_fraction_static(1, 59 * GiB) > default_mem_fraction_static(1, 64 * GiB)


def test_legacy_table_decreases_with_tp() -> None:
    fr = [legacy_mem_fraction_static(t) for t in (1, 2, 4, 8, 16)]
    assert fr == [0.88, 0.87, 0.85, 0.81, 0.79]


def test_pool_is_free0_times_fraction_minus_weights() -> None:
    est = estimate_sglang(
        LLAMA8, InferenceSettings(runtime="sglang", ctx=8192), Hardware(devices=(H100,))
    )
    frac = est.runtime_details["mem_fraction_static"]
    assert frac == 0.835
    ctx_bytes, _ = cuda_context_bytes("sglang", H100)
    free0 = H100.capacity_bytes - ctx_bytes  # type: ignore[operator]
    dev = est.devices[0]
    assert dev.kv_cache_bytes == int(free0 * frac) - dev.weights_bytes
    tokens = est.runtime_details["max_total_num_tokens"]
    assert tokens == dev.kv_cache_bytes // 131072
    # max_num_reqs = min(max(tokens / 8192 x 512, 2048), 4096), int32 rows of ctx + 4
    reqs = est.runtime_details["max_num_reqs"]
    assert reqs == min(max(int(tokens / 8192 * 512), 2048), 4096)  # type: ignore[operator]
    req_pool = next(c for c in dev.components if c.label == "req_to_token pool")
    assert req_pool.n_bytes == (reqs + 1) * (8192 + 4) * 4  # type: ignore[operator]
    assert abs(dev.total_bytes - H100.capacity_bytes) < 2  # type: ignore[operator]


def test_weights_over_the_fraction_block_start() -> None:
    small = DeviceTarget(name="12GB", capacity_bytes=12 * GiB)
    est = estimate_sglang(LLAMA8, InferenceSettings(runtime="sglang"), Hardware(devices=(small,)))
    assert est.blockers
    assert est.runtime_details["max_total_num_tokens"] == 0


# --- multimodal models by SGLang generation (fraction factor, chunked prefill, text-only) ---

GEMMA3 = find_model("gemma-3-4b").spec()
MLLAMA = find_model("llama-3.2-11b-vision").spec()
SCOUT = find_model("llama-4-scout").spec()
MISTRAL3 = find_model("mistral-small-3.1-24b").spec()


def _policy(spec: ModelSpec, version: str | None) -> tuple[bool, float, bool | None]:
    p = multimodal_policy(spec, version)
    return p.multimodal, p.fraction_factor, p.chunked_prefill


def test_multimodal_policy_follows_the_model_runner_of_each_release() -> None:
    # v0.1.16: no adjustment (and no chunked prefill to turn off: not modelled)
    assert _policy(GEMMA3, "0.2.13") == (True, 1.0, None)
    # v0.2.14.post2 - v0.4.0: x 0.95 and chunked prefill off for every VLM
    assert _policy(GEMMA3, "0.2.14") == (True, 0.95, False)
    assert _policy(GEMMA3, "0.4.0") == (True, 0.95, False)
    # v0.4.1 - v0.4.4: chunked prefill off only for the listed VLMs (Mllama, Qwen-VL, DSVL2)
    assert _policy(GEMMA3, "0.4.4") == (True, 0.95, True)
    assert _policy(MLLAMA, "0.4.4") == (True, 0.95, False)
    # v0.4.5: x 0.90, chunked prefill off for every VLM; Llama 4 not yet multimodal
    assert _policy(GEMMA3, "0.4.5") == (True, 0.90, False)
    assert _policy(SCOUT, "0.4.5") == (False, 1.0, True)
    # main after v0.4.5 and v0.4.5.post1/post2: Llama 4 on the multimodal path
    assert _policy(SCOUT, "2025-04-09") == (True, 0.90, False)
    # v0.4.5.post3: text-only again; v0.4.6: Gemma 3 too (mm_disabled_models)
    assert _policy(SCOUT, "2025-04-22") == (False, 1.0, True)
    assert _policy(GEMMA3, "0.4.6") == (False, 1.0, True)
    assert _policy(MISTRAL3, "0.4.6") == (True, 0.90, False)
    # v0.4.6.post5: chunked prefill for VLMs except the unsupported list (Mllama among them)
    assert _policy(MISTRAL3, "2025-05-24") == (True, 0.90, True)
    assert _policy(MLLAMA, "2025-05-24") == (True, 0.90, False)
    # v0.4.10+: the ViT-size adjustment is not modelled (factor 1.0); today's text-only list
    assert _policy(MISTRAL3, "0.4.10") == (True, 1.0, True)
    assert _policy(GEMMA3, None) == (False, 1.0, True)
    assert _policy(LLAMA8, "0.4.5") == (False, 1.0, True)


def _sg(spec: ModelSpec, hw: Hardware, **kw: object) -> Estimate:
    return estimate_sglang(spec, InferenceSettings(runtime="sglang", **kw), hw)  # type: ignore[arg-type]


def test_multimodal_fraction_lowers_an_explicit_value_until_0_4_9() -> None:
    hw = Hardware(devices=(H100,))

    def frac(version: str, given: float | None = None, spec: ModelSpec = MISTRAL3) -> object:
        est = _sg(spec, hw, ctx=8192, runtime_version=version, mem_fraction_static=given)
        return est.runtime_details["mem_fraction_static"]

    assert frac("0.4.4", 0.8) == 0.76  # ModelRunner: x 0.95 of whatever was given
    assert frac("0.4.8", 0.8) == 0.72  # x 0.90
    assert frac("0.4.9", 0.8) == 0.8  # ServerArgs: only the default is lowered
    # v0.4.9's default: reserved tier on an 81559 MiB H100 at tp 1 = (9.5 + 1/2) GiB, x 0.90
    assert frac("0.4.9") == round(round((81559 - 10 * 1024) / 81559, 3) * 0.9, 6)
    # a text model is never adjusted
    assert frac("0.4.8", 0.8, LLAMA8) == 0.8


def test_without_chunked_prefill_a_full_context_request_must_fit_the_rest() -> None:
    """sgl-project/sglang#5212: Llama-4-Scout, tp 8 on H100s, --context-length 1000000; on the
    2025-04-09 main build (Llama 4 multimodal, chunked prefill off) a 400K-token request dies in
    forward_extend. The same server a fortnight later (text-only, 8K chunks) does not, when
    CUDA graphs are off: with them, that build's fa3 local_block_table for a 1M context
    (before PR #6273) does not fit the rest (test_sglang_graph_tables)."""
    hw = Hardware(devices=(H100,) * 8)
    kw: dict[str, object] = {"tp": 8, "ctx": 1_000_000}
    mm = _sg(SCOUT, hw, runtime_version="2025-04-09", **kw)
    text = _sg(SCOUT, hw, runtime_version="2025-04-22", enforce_eager=True, **kw)
    assert any("chunked prefill is off" in b for b in mm.blockers)
    assert not text.blockers
    # the verdict reads the blocker: a run that dies is never "fits"
    assert verdict(mm, Platform()).level == "does_not_fit"
    assert verdict(text, Platform()).level != "does_not_fit"
    graphs = _sg(SCOUT, hw, runtime_version="2025-04-22", **kw)
    assert verdict(graphs, Platform()).level == "does_not_fit"
    details = mm.runtime_details["multimodal"]
    assert isinstance(details, dict)
    peak = details["prefill_peak_bytes"]
    # 2·T·h residual + normed hidden state alone: 2 x 1e6 x 5120 x 2 B
    assert isinstance(peak, int)
    assert peak > 2 * 1_000_000 * 5120 * 2
    rest = next(c for c in mm.devices[0].components if c.label.startswith("activations"))
    assert peak > rest.n_bytes
    # a short context fits the same rest: the check is the request's length, not the model
    short = _sg(SCOUT, hw, runtime_version="2025-04-09", tp=8, ctx=32768)
    assert not short.blockers


def test_rotary_cache_spans_the_config_length_not_the_context_length() -> None:
    """get_rope() builds cos_sin_cache for max_position_embeddings (Llama 4: 10485760) whatever
    --context-length says; it is allocated with the weights, so it comes out of the pool."""
    hw = Hardware(devices=(H100,) * 8)
    short = _sg(SCOUT, hw, tp=8, ctx=32768)
    rope = next(c for c in short.devices[0].components if c.label == "rotary cos/sin cache")
    assert rope.n_bytes == 10485760 * 128 * 2
    llama = _sg(LLAMA8, Hardware(devices=(H100,)), ctx=8192)
    small = next(c for c in llama.devices[0].components if c.label == "rotary cos/sin cache")
    assert small.n_bytes == 131072 * 128 * 2
    weights = next(c for c in short.devices[0].components if c.label == "weights")
    pool = short.devices[0].kv_cache_bytes
    frac = short.runtime_details["mem_fraction_static"]
    assert isinstance(frac, float)
    ctx_bytes, _ = cuda_context_bytes("sglang", H100)
    free0 = H100.capacity_bytes - ctx_bytes - 256 * MiB  # type: ignore[operator]
    assert pool == int(free0 * frac) - weights.n_bytes - rope.n_bytes


def test_default_fraction_follows_each_release() -> None:
    """ServerArgs.__post_init__ by release: TP table; 81920 MiB / 13 GiB rule (v0.4.5.post3);
    tp x pp table and the 96 GiB rule (v0.4.6.post2); 0.79 above 180 GB (v0.4.7); reserved
    tiers (v0.4.8); PR #10975 (v0.5.3)."""
    h200 = DeviceTarget(name="H200", capacity_bytes=143771 * MiB, architecture="Hopper")
    b200 = DeviceTarget(name="B200", capacity_bytes=183359 * MiB, architecture="Blackwell")
    r4090 = DeviceTarget(name="RTX 4090", capacity_bytes=24564 * MiB)

    def frac(dev: DeviceTarget, version: str | None, tp: int = 8) -> object:
        est = _sg(LLAMA8, Hardware(devices=(dev,) * tp), tp=tp, ctx=8192, runtime_version=version)
        return est.runtime_details["mem_fraction_static"]

    assert frac(h200, "0.4.5") == 0.81  # the TP table whatever the GPU
    assert frac(h200, "2025-04-22") == (143771 - 13 * 1024) / 143771
    assert frac(H100, "2025-04-22") == 0.81  # 81559 MiB: still the table
    big = 0.88 + 48 * 1024 * 0.12 / 143771
    assert frac(h200, "2025-05-01") == min(big, (143771 - 18 * 1024) / 143771)
    assert frac(b200, "0.4.7") == 0.79
    assert frac(r4090, "0.4.8") == round((24564 - 3.6 * 1024) / 24564, 3) == 0.85
    assert frac(r4090, "0.4.8", tp=1) == 0.879
    assert frac(r4090, "0.5.3") == default_mem_fraction_static(8, 24564 * MiB)
    assert dated_mem_fraction_static("reserved_tier", 1, None) == 0.88


def test_vision_tower_is_loaded_whole_or_split_by_release() -> None:
    """Gemma 3's tower is a transformers AutoModel on every rank until v0.4.6.post4, SGLang's TP
    SiglipVisionModel after; Llama 4's transformers Llama4VisionModel is built whole from
    v0.4.5.post1 (when the checkpoint has vision weights) until v0.4.10 builds it only with
    --enable-multimodal. It is loaded with the weights, so it comes out of the pool."""

    def tower(spec: ModelSpec, version: str | None, tp: int) -> int:
        est = _sg(spec, Hardware(devices=(H100,) * tp), tp=tp, ctx=8192, runtime_version=version)
        comp = [c for c in est.devices[0].components if c.label == "vision encoder + projector"]
        return comp[0].n_bytes if comp else 0

    g = GEMMA3.multimodal_params * 2
    assert tower(GEMMA3, "0.4.4", 2) == g  # whole on both ranks
    assert tower(GEMMA3, "2025-05-24", 2) == g // 2  # split
    assert tower(GEMMA3, None, 2) == g // 2
    s = SCOUT.multimodal_params * 2
    assert tower(SCOUT, "0.4.5", 8) == 0  # v0.4.5 skips the vision weights
    assert tower(SCOUT, "2025-04-09", 8) == s
    assert tower(SCOUT, "0.4.9", 8) == s
    assert tower(SCOUT, "0.4.10", 8) == 0  # text-only by default: not built
    assert tower(LLAMA8, "0.4.9", 1) == 0
    # it is charged before the pool: same fraction and weights, a smaller pool
    a = _sg(SCOUT, Hardware(devices=(H100,) * 8), tp=8, ctx=8192, runtime_version="0.4.9")
    b = _sg(SCOUT, Hardware(devices=(H100,) * 8), tp=8, ctx=8192, runtime_version="0.4.10")
    assert a.devices[0].kv_cache_bytes == b.devices[0].kv_cache_bytes - s


# --- a token pool below the context length: SGLang caps requests, it does not refuse to start ---

L4 = DeviceTarget(name="L4", capacity_bytes=22478 * MiB, architecture="Ada Lovelace")


def test_pool_below_the_context_is_a_request_cap_not_a_blocker() -> None:
    # tp_worker.py: max_req_len = min(context_len - 1, max_total_num_tokens - 1); the only
    # start-up check is max_req_len - 5 > 0, so a 131072 context over a smaller pool loads
    est = estimate_sglang(
        LLAMA8, InferenceSettings(runtime="sglang", ctx=131072), Hardware(devices=(L4,))
    )
    tokens = est.runtime_details["max_total_num_tokens"]
    assert isinstance(tokens, int)
    assert 0 < tokens < 131072
    assert not est.blockers
    assert est.fits is True
    note = next(a for a in est.assumptions if a.startswith("the token pool"))
    assert f"caps a request at {tokens - 1} tokens" in note
    v = verdict(est, Platform())
    assert v.level == "tight"  # was "does_not_fit" while the cap counted as a refusal
    assert v.risks[0].startswith(f"the token pool caps a request at {tokens - 1} tokens")
    assert v.safe_change is not None
    assert v.safe_change.startswith("--context-length ")
    assert "over on" in v.summary()
    # the same model at a context the pool holds: no note, and the pool margin is positive
    short = estimate_sglang(
        LLAMA8, InferenceSettings(runtime="sglang", ctx=8192), Hardware(devices=(L4,))
    )
    assert not any(a.startswith("the token pool") for a in short.assumptions)
    assert verdict(short, Platform()).level == "fits"


def test_a_pool_that_holds_no_request_stops_the_server() -> None:
    # a fraction that leaves the pool 3 cells: "Memory pool size is too small"
    # (tp_worker.py: max_req_input_len = min(ctx - 1, tokens - 1) - 5 <= 0)
    base = estimate_sglang(
        LLAMA8,
        InferenceSettings(runtime="sglang", ctx=8192, mem_fraction_static=0.75),
        Hardware(devices=(L4,)),
    )
    cell = base.runtime_details["cell_size_bytes"]
    assert isinstance(cell, int)
    assert L4.capacity_bytes is not None
    free0 = L4.capacity_bytes - cuda_context_bytes("sglang", L4)[0]
    frac = (int(free0 * 0.75) - base.devices[0].kv_cache_bytes + 3 * cell + cell // 2) / free0
    est = estimate_sglang(
        LLAMA8,
        InferenceSettings(runtime="sglang", ctx=8192, mem_fraction_static=frac),
        Hardware(devices=(L4,)),
    )
    assert est.runtime_details["max_total_num_tokens"] == 3
    assert any("Memory pool size is too small" in b for b in est.blockers)
    assert verdict(est, Platform()).level == "does_not_fit"
