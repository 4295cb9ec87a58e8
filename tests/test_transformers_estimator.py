"""transformers estimator: accelerate's device_map="auto" budgets, eager scores, cache growth."""

from __future__ import annotations

import pytest

from oomkit.catalog.models import find_model
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.estimate.transformers import (
    auto_device_map,
    estimate_transformers,
    prefill_activation_bytes,
)
from oomkit.estimate.transformers_prefill import decode_step_bytes
from oomkit.estimate.verdict import verdict
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB

LLAMA8 = find_model("llama-3.1-8b").spec()
GB24 = DeviceTarget(name="RTX 4090", capacity_bytes=24 * GiB)


def _groups(n_layers: int, layer: int, embed: int, head: int) -> list[tuple[tuple[int, int], int]]:
    return (
        [((0, 0), embed)]
        + [((1, i), layer) for i in range(n_layers)]
        + [
            ((2, 0), 1),
            ((3, 0), head),
        ]
    )


def test_single_gpu_uses_90_percent_of_free_minus_the_largest_layer() -> None:
    # 10 layers of 10 units, embeddings/lm_head 30: budget 0.9 x 200 - 30 = 150 holds
    # embed 30 + 10 x 10 = 130 + norm 1 but not lm_head (30)
    where = auto_device_map(_groups(10, 10, 30, 30), [200])
    assert where[(3, 0)] == -1
    assert all(where[(1, i)] == 0 for i in range(10))
    # with 20 more units of free memory everything fits
    assert -1 not in auto_device_map(_groups(10, 10, 30, 30), [240]).values()


def test_bitsandbytes_keeps_another_tenth_back() -> None:
    g = _groups(10, 10, 30, 30)
    assert -1 not in auto_device_map(g, [220]).values()  # 0.9 x 220 - 30 = 168 >= 161
    assert -1 in auto_device_map(g, [220], bnb=True).values()  # 0.81 x 220 - 30 < 161


def test_balanced_split_over_two_gpus() -> None:
    # total 161: GPU0 gets 161 / 2 + 1.25 x 10 = 93 minus the largest layer (30) for weights
    where = auto_device_map(_groups(10, 10, 30, 30), [1000, 1000])
    on0 = [k for k, d in where.items() if d == 0]
    assert (0, 0) in on0
    assert sum(1 for k in on0 if k[0] == 1) == 3  # 30 + 3 x 10 <= 63 < 30 + 4 x 10
    assert where[(3, 0)] == 1


def test_llama8_fits_one_24gb_card_without_offload() -> None:
    est = estimate_transformers(
        LLAMA8, InferenceSettings(runtime="transformers", ctx=1024), Hardware(devices=(GB24,))
    )
    assert est.host.weights_bytes == 0
    ctx, _ = cuda_context_bytes("transformers", GB24)
    assert est.devices[0].weights_bytes <= (24 * GiB - ctx) * 0.9


def test_two_cards_share_layers_and_their_kv() -> None:
    hw = Hardware(devices=(GB24, GB24))
    est = estimate_transformers(LLAMA8, InferenceSettings(runtime="transformers", ctx=4096), hw)
    assert len(est.devices) == 2
    a, b = est.devices
    assert a.weights_bytes > 0
    assert b.weights_bytes > 0
    # KV follows the layers: 128 KiB per token over 32 layers, 4096 + 256 tokens
    assert a.kv_cache_bytes + b.kv_cache_bytes == 131072 * (4096 + 256)


def test_eager_scores_cost_matches_eager_attention_forward() -> None:
    kw = {"batch": 1, "seq": 4096, "elem": 2}
    sdpa, _ = prefill_activation_bytes(LLAMA8, attn_impl="sdpa", **kw)  # type: ignore[arg-type]
    eager, _ = prefill_activation_bytes(LLAMA8, attn_impl="eager", **kw)  # type: ignore[arg-type]
    # bf16 scores + their fp32 copy (ATen softmax's toType) + the fp32 output, + the mask
    scores = 32 * 4096 * 4096 * (2 + 4 + 4) + 4096 * 4096 * 2
    attn_io = 4096 * (4096 + 2048 + 4096) * 2  # q, k + v (8 heads x 256), attention output
    # embeddings, the layer's input, the post-attention residual and the normed input (the
    # four hidden-size tensors the H100 snapshot showed at a later layer's peak)
    stream = 4 * 4096 * 4096 * 2
    assert eager == stream + attn_io + scores
    assert sdpa < eager
    fp16, _ = prefill_activation_bytes(LLAMA8, attn_impl="eager", half_to_float=True, **kw)  # type: ignore[arg-type]
    assert eager - fp16 == 32 * 4096 * 4096 * 2  # CUDA Half upcasts inside the kernel


def test_dynamic_cache_growth_is_one_tensor_of_one_layer() -> None:
    hw = Hardware(devices=(DeviceTarget(name="H100", capacity_bytes=80 * GiB),))
    s = InferenceSettings(runtime="transformers", ctx=2000, max_new_tokens=48)
    dyn = estimate_transformers(LLAMA8, s, hw)
    static = estimate_transformers(
        LLAMA8,
        InferenceSettings(
            runtime="transformers", ctx=2000, max_new_tokens=48, cache_implementation="static"
        ),
        hw,
    )
    diff = dyn.devices[0].activations_bytes - static.devices[0].activations_bytes
    # the prefill's peak holds the prompt's KV only: the 48 new tokens' K and V of 32 layers
    # (8 heads x 128 x bf16) are not beside it, where a StaticCache holds all 2048 from the start
    # (the dynamic cache's torch.cat copy of one layer's K, 2048 tokens, on top)
    assert diff == -48 * 32 * 2 * 8 * 128 * 2 + 8 * 128 * 2 * 2048
    # a short prompt and a long generation: the peak is a decode step, the final cache + one
    # layer's K copied by torch.cat (8 heads x 128 x bf16 x 4016 tokens) + the step's logits
    long = estimate_transformers(
        LLAMA8, InferenceSettings(runtime="transformers", ctx=16, max_new_tokens=4000), hw
    )
    step = decode_step_bytes(LLAMA8, batch=1, elem=2)
    assert long.devices[0].activations_bytes == 8 * 128 * 2 * 4016 + step


def _tf(quant: str, hw: Hardware, device_map: str | None, spec: ModelSpec = LLAMA8) -> Estimate:
    return estimate_transformers(
        spec, InferenceSettings(runtime="transformers", quant=quant, device_map=device_map), hw
    )


def test_device_map_none_puts_every_weight_on_the_first_gpu() -> None:
    # fp32 llama-3.1-8b (32 GB of weights) on a 24 GiB card: device_map="auto" offloads the
    # rest to CPU; without a device_map (model.to("cuda")) all of it lands on the GPU
    hw = Hardware(devices=(GB24,))
    auto = _tf("fp32", hw, "auto")
    none = _tf("fp32", hw, "none")
    offloaded = auto.runtime_details["offloaded_to_cpu_bytes"]
    assert isinstance(offloaded, int)
    assert offloaded > 0
    assert auto.fits is True  # explicit --device-map auto: the slow offload is accepted
    assert auto.blockers == ()
    assert none.runtime_details["offloaded_to_cpu_bytes"] == 0
    on_gpu = auto.devices[0].components[0].n_bytes  # "weights" (the streamed layer is apart)
    assert none.devices[0].components[0].n_bytes == on_gpu + offloaded
    assert none.fits is False
    assert none.settings["device_map"] == "none"


def test_unset_device_map_does_not_fit_by_cpu_offload_on_one_gpu() -> None:
    # from_pretrained's default is no device_map: unset keeps the auto placement (echoed as
    # what was modelled) but a fit that needs CPU offload is a blocker
    hw = Hardware(devices=(GB24,))
    unset = _tf("fp32", hw, None)
    auto = _tf("fp32", hw, "auto")
    assert unset.settings["device_map"] == "auto"
    assert unset.devices == auto.devices
    assert unset.runtime_details == auto.runtime_details
    assert unset.fits is False
    (blocker,) = unset.blockers
    assert "--device-map auto" in blocker
    assert verdict(unset).level == "does_not_fit"
    assert verdict(auto).level in ("fits", "tight")
    # no offload needed: unset is the plain fit it was
    bf16 = _tf("bf16", hw, None)
    assert bf16.runtime_details["offloaded_to_cpu_bytes"] == 0
    assert bf16.blockers == ()
    assert bf16.fits is True


def test_unset_device_map_answers_as_none_where_every_weight_fits_the_gpu() -> None:
    # bf16 llama-3.1-8b (14.96 GiB) on 16.5 GiB: auto's budget 0.9 x free - lm_head offloads,
    # yet model.to("cuda") holds every weight: unset answers as the script without a device_map
    hw = Hardware(devices=(DeviceTarget(name="16.5 GiB", capacity_bytes=16 * GiB + GiB // 2),))
    auto = _tf("bf16", hw, "auto")
    offloaded = auto.runtime_details["offloaded_to_cpu_bytes"]
    assert isinstance(offloaded, int)
    assert offloaded > 0
    unset = _tf("bf16", hw, None)
    none = _tf("bf16", hw, "none")
    assert unset.fits is True
    assert unset.blockers == ()
    assert unset.settings["device_map"] == "none"  # echoes what was modelled
    assert unset.devices == none.devices
    assert "device_map unset" in unset.assumptions[-1]


def test_unset_device_map_shards_over_several_gpus_without_offload() -> None:
    # 32 GB of fp32 weights over 2 x 24 GiB: accelerate's balanced split needs no CPU, so the
    # unset device_map still fits; without a device_map everything lands on cuda:0
    hw = Hardware(devices=(GB24, GB24))
    unset = _tf("fp32", hw, None)
    assert unset.runtime_details["offloaded_to_cpu_bytes"] == 0
    assert len(unset.devices) == 2
    assert unset.blockers == ()
    assert unset.fits is True
    assert _tf("fp32", hw, "auto").fits is True
    assert _tf("fp32", hw, "none").fits is False


def test_unset_device_map_over_several_gpus_with_offload_does_not_fit() -> None:
    # 70B bf16 (~141 GB) over 2 x 24 GiB: only CPU offload makes it "fit"
    hw = Hardware(devices=(GB24, GB24))
    spec = find_model("llama-3.1-70b").spec()
    unset = _tf("bf16", hw, None, spec)
    auto = _tf("bf16", hw, "auto", spec)
    offloaded = auto.runtime_details["offloaded_to_cpu_bytes"]
    assert isinstance(offloaded, int)
    assert offloaded > 50 * GiB
    assert auto.fits is True
    assert unset.fits is False
    (blocker,) = unset.blockers
    assert "CPU offload" in blocker


def test_device_map_rejects_other_values() -> None:
    from oomkit.errors import OomkitError

    with pytest.raises(OomkitError, match="device_map"):
        InferenceSettings(runtime="transformers", device_map="balanced")


def test_cli_says_when_it_only_fits_by_cpu_offload(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    args = ["estimate", "llama-3.1-8b", "-r", "transformers", "-q", "fp32", "-g", "rtx-4090"]
    assert main([*args, "--offline", "--device-map", "auto"]) in (0, 4)
    assert "Fits only by CPU offload" in capsys.readouterr().out
    assert main([*args, "--offline"]) == 3  # unset: the offload is not accepted
    out = capsys.readouterr().out
    assert "Does not fit." in out
    assert "pass --device-map auto to accept that" in out
    assert main([*args, "--offline", "--device-map", "none"]) == 3
    assert "device_map=None" in capsys.readouterr().out
    assert main([*args, "--device-map", "balanced"]) == 2


def test_device_map_is_validated_and_only_transformers_reads_it() -> None:
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.checks import ignored_settings

    with pytest.raises(InvalidSettingError, match="device_map"):
        InferenceSettings(device_map="balanced")
    s = InferenceSettings(device_map="none")
    assert "device_map" not in ignored_settings(s, "transformers")
    for runtime in ("vllm", "sglang", "llama.cpp", "ollama"):
        assert "device_map" in ignored_settings(s, runtime)


def test_explain_names_the_moe_grouped_mm_term_it_charges() -> None:
    """transformers 5's grouped_mm experts set Qwen3-30B-A3B's prefill peak (1.14 GiB at 8192
    tokens), but --explain printed the dense 'MLP B·S·3i·e' formula it did not use."""
    from oomkit.api import estimate, load_model

    hw = Hardware(devices=(DeviceTarget(name="h200", capacity_bytes=140 * GiB),))
    est = estimate(
        load_model("qwen3-30b-a3b", offline=True),
        InferenceSettings(runtime="transformers", ctx=8192),
        hw,
        offline=True,
    )
    act = next(c for c in est.devices[0].components if c.label == "prefill peak + cache growth")
    assert "MoE grouped_mm" in act.formula
    dense = next(
        c
        for c in estimate("llama-3.1-8b", InferenceSettings(runtime="transformers"), hw)
        .devices[0]
        .components
        if c.label == "prefill peak + cache growth"
    )
    assert "MoE" not in dense.formula


def test_balanced_buffer_is_the_first_layer_not_the_largest() -> None:
    # accelerate get_balanced_memory keeps the size of the FIRST module of a no-split class
    # (model.layers.0): a small first layer makes a small buffer, so the GPUs before the last
    # take fewer of the large layers and the rest can overflow to the CPU
    small_first = [((0, 0), 1), ((1, 0), 2)] + [((1, i), 10) for i in range(1, 9)] + [((3, 0), 1)]
    # total 84, mean leaf 84 / 20 = 4.2: per GPU 42 + 1.25 x 4.2 = 47.25, GPU 0 keeps the
    # largest layer (10) back: 37.25 holds 1 + 2 + 3 x 10 (the largest layer's 1.25 x 10
    # would give 54.5 - 10 = 44.5 and a fourth large layer)
    where = auto_device_map(small_first, [100, 45], n_leaves=20)
    assert sum(1 for k, d in where.items() if d == 0 and k[0] == 1) == 4
    # the last GPU (45 free) takes 4 of the 5 large layers left; layer 8 and the head go to the CPU
    assert where[(1, 8)] == -1
    assert where[(3, 0)] == -1


def test_deepseek_v2_on_8_a100_overflows_to_the_cpu_as_accelerate_plans() -> None:
    """DeepSeek-Coder-V2-Instruct (DeepSeek-V2, bf16) on 8x A100 80GB with device_map auto:
    layer 0 is dense (first_k_dense_replace=1, 0.68 GB) and the buffer is 1.25 x that, so
    accelerate 0.32.1's own get_balanced_memory + infer_auto_device_map (run on a meta-device
    DeepseekV2 from the model's config with the GPUs' free memory given) plans 55.61 GB on each
    of GPUs 1-6 and 8.99 GB (layer 59, norm, lm_head) on the CPU (DeepSeek-V2#11: accelerate's
    split of this model is wrong; the maintainers load it with device_map='sequential')."""
    spec = find_model("deepseek-v2").spec()
    gpu = DeviceTarget(name="A100 80GB", capacity_bytes=80 * GiB)
    s = InferenceSettings(runtime="transformers", quant="bf16", ctx=256, device_map="auto")
    est = estimate_transformers(spec, s, Hardware(devices=(gpu,) * 8))
    cpu = est.host.weights_bytes
    assert abs(cpu - 8.99e9) < 0.1e9
    mid = [d.weights_bytes for d in est.devices[1:7]]
    assert all(abs(w - 55.61e9) < 0.1e9 for w in mid)


def test_cli_takes_max_new_tokens_for_the_kv_of_a_long_generation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A transformers user generating 4096 tokens after an 8k prompt holds 12k tokens of KV;
    the CLI had no way to say so (the estimator's max_new_tokens was fixed at its 256 default)."""
    import json

    from oomkit.cli import main
    from oomkit.cli.estimate_fast import parse_estimate_args

    args = ["estimate", "llama-3.1-8b", "-r", "transformers", "-g", "rtx-4090", "--ctx", "8192"]

    def kv(*extra: str) -> int:
        assert main([*args, *extra, "--json"]) in (0, 4)
        doc = json.loads(capsys.readouterr().out)
        return int(doc["devices"][0]["kv_cache_bytes"])

    per_token = 32 * 2 * 8 * 128 * 2  # Llama-3.1-8B: layers x K,V x kv heads x head dim x bf16
    assert kv() == (8192 + 256) * per_token
    assert kv("--max-new-tokens", "4096") == (8192 + 4096) * per_token
    # both the click path and the click-free fast path read it
    parsed = parse_estimate_args([*args, "--max-new-tokens", "4096"])
    assert parsed is not None
    assert parsed["max_new_tokens"] == 4096
    assert main([*args, "--max-new-tokens", "0"]) == 2  # generate() refuses max_new_tokens <= 0
    assert "--max-new-tokens must be an integer in [1," in capsys.readouterr().err
    assert main(["estimate", "llama-3.1-8b", "-g", "rtx-4090", "--max-new-tokens", "64"]) == 0
    assert "llama.cpp does not use --max-new-tokens: ignored" in capsys.readouterr().err
