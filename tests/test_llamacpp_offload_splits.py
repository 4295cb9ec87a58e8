"""From llama.cpp PR #6083 (2024-03-18) the scheduler starts a new split at each CPU weight it
offloads (ggml/src/ggml-backend.cpp ``ggml_backend_sched_split_graph``: "by starting a new split,
the memory of the previously offloaded weights can be reused"), so under partial offload the
main CUDA GPU's compute buffer holds one weight copy at a time, plus a CPU layer's K/V cache
views for its attention, not a whole CPU layer (:mod:`oomkit.estimate.llamacpp_offload_splits`).

The real run (llama.cpp #11474, 2025-01-31): DeepSeek-R1 UD-IQ1_S, ``--n-gpu-layers 8 --ctx-size
8192 --cache-type-k q4_0`` on one RTX 3090 loaded and generated 512 tokens at 3.28 tokens/s.
With a whole CPU layer (2.58 GiB) staged beside the 2 GiB KQ matrix the model said 1.43 GiB over.
"""

from __future__ import annotations

from oomkit.api import estimate, load_model
from oomkit.cli.params import parse_gpu_list
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.llamacpp_offload_splits import (
    SPLIT_NOTE,
    WHOLE_LAYER_NOTE,
    largest_cpu_weight_bytes,
)
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

GiB = 2**30


def _run(model: str, gpu: str, version: str, **kw: object) -> Estimate:
    s = InferenceSettings(runtime="llama.cpp", runtime_version=version, **kw)  # type: ignore[arg-type]
    return estimate(model, s, hardware_for(parse_gpu_list(gpu), n_devices=1))


def _compute(est: Estimate) -> int:
    return sum(c.n_bytes for c in est.devices[0].components if c.label == "compute buffer")


def _free(est: Estimate) -> int:
    d = est.devices[0]
    assert d.capacity_bytes is not None
    return d.capacity_bytes - d.total_bytes


def test_one_weight_copy_per_split_from_pr_6083() -> None:
    kw: dict[str, object] = {"quant": "Q4_K_M", "ctx": 4096, "n_gpu_layers": 30}
    old = _run("llama-2-13b", "rtx-3090", "2024-03-15", **kw)
    new = _run("llama-2-13b", "rtx-3090", "2024-03-20", **kw)
    assert WHOLE_LAYER_NOTE in old.assumptions
    assert SPLIT_NOTE not in old.assumptions
    assert SPLIT_NOTE in new.assumptions
    assert WHOLE_LAYER_NOTE not in new.assumptions
    # a Llama-2-13B Q4_K_M layer is ~0.2 GB of weights, no longer added; one CPU layer's K/V
    # views (2 x 4096 cells x 5120 x f16 = 80 MiB) are
    assert 0 < _compute(old) - _compute(new) < 0.2 * GiB
    # full offload: nothing to stage either way
    full = {**kw, "n_gpu_layers": 99}
    assert _compute(_run("llama-2-13b", "rtx-3090", "2024-03-15", **full)) == _compute(
        _run("llama-2-13b", "rtx-3090", "2024-03-20", **full)
    )


def test_r1_udiq1s_8_layers_on_a_3090_at_8k_is_not_over() -> None:
    kw: dict[str, object] = {
        "quant": "IQ1_S",
        "ctx": 8192,
        "n_gpu_layers": 8,
        "cache_type_k": "q4_0",
        "llama_server": False,
    }
    est = _run("deepseek-r1", "rtx-3090", "2025-01-31", **kw)
    assert SPLIT_NOTE in est.assumptions
    assert _free(est) > 0  # it ran
    # the buffer is the 2 GiB KQ graph plus one CPU layer's K (q4_0) / V (f16) views, ~0.36 GiB
    assert 2.5 * GiB < _compute(est) < 3.0 * GiB


def test_largest_cpu_weight_is_one_expert_tensor() -> None:
    from oomkit.estimate.llamacpp import estimate_llamacpp_breakdown

    s = InferenceSettings(
        runtime="llama.cpp", quant="IQ1_S", ctx=8192, n_gpu_layers=8, runtime_version="2025-01-31"
    )
    hw = hardware_for(parse_gpu_list("rtx-3090"), n_devices=1)
    _, bd = estimate_llamacpp_breakdown(load_model("deepseek-r1"), s, hw)
    cpu = [i for i, d in enumerate(bd.placement.layer_device) if d == "cpu"]
    largest = largest_cpu_weight_bytes(bd.placement, cpu)
    # ffn_down_exps of a MoE layer: 256 x 7168 x 2048 at Q2_K (the IQ1_S mix's first MoE layers)
    assert largest == 256 * 7168 * 2048 // 256 * 84


def test_metal_stages_nothing_before_pr_15995_then_splits() -> None:
    # ggml-metal's offload_op: NULL / "return false" until llama.cpp PR #15995 (2025-09-20), then
    # MUL_MAT with a batch >= 32 (ggml-metal.cpp line 618 at ggml f05196c): llamacpp_unified
    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.estimate.llamacpp_params import LlamaCppOptions
    from oomkit.estimate.llamacpp_unified import NOTE as METAL_NOTE

    kw: dict[str, object] = {"quant": "Q4_K_M", "ctx": 2048, "n_gpu_layers": 18}
    assert METAL_NOTE in _run("llama-3.1-70b", "m1-16gb", "2024-10-18", **kw).assumptions
    assert SPLIT_NOTE in _run("llama-3.1-70b", "m1-16gb", "2025-10-01", **kw).assumptions
    # the same (today's) build with ggml-metal's offload_op refusing or accepting the matmuls
    s = InferenceSettings(runtime="llama.cpp", **kw)  # type: ignore[arg-type]
    hw = hardware_for(parse_gpu_list("m1-16gb"), n_devices=1)
    spec = load_model("llama-3.1-70b")
    off = estimate_llamacpp(spec, s, hw, options=LlamaCppOptions(metal_op_offload=False))
    on = estimate_llamacpp(spec, s, hw, options=LlamaCppOptions())
    assert WHOLE_LAYER_NOTE not in off.assumptions
    assert SPLIT_NOTE in on.assumptions
    # the split holds a CPU layer's K/V views or its largest weight copy on top of the graph
    assert _compute(off) < _compute(on)
