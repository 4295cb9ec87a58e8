"""Pipeline parallelism for vLLM and SGLang: each stage holds its layers (get_pp_indices)."""

from __future__ import annotations

import pytest

from oomkit.api import estimate_model
from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.estimate.pipeline import stage_layers, stage_tensors
from oomkit.hardware.catalog import find_gpu
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.tensors import model_tensors


def test_stage_layers_match_vllm_get_pp_indices() -> None:
    # vLLM docs: 61 layers over 4 stages -> [15, 15, 16, 15]; 22 over 4 -> [5, 6, 6, 5]
    assert [len(stage_layers(61, r, 4)) for r in range(4)] == [15, 15, 16, 15]
    assert [len(stage_layers(22, r, 4)) for r in range(4)] == [5, 6, 6, 5]
    assert [len(stage_layers(61, r, 2)) for r in range(2)] == [31, 30]
    spans = [stage_layers(80, r, 3) for r in range(3)]
    assert [i for s in spans for i in s] == list(range(80))  # a partition, in order


def test_more_stages_than_layers_is_refused() -> None:
    with pytest.raises(InvalidSettingError, match="more pipeline stages"):
        stage_layers(2, 0, 4)


def test_stage_tensors_partition_the_checkpoint() -> None:
    spec = find_model("qwen2-72b").spec()
    tensors = model_tensors(spec)
    parts = [stage_tensors(tensors, r, 4, spec.num_hidden_layers) for r in range(4)]
    names = [t.name for p in parts for t in p]
    assert sorted(names) == sorted(t.name for t in tensors)  # untied: each tensor once
    assert any(t.name == "token_embd.weight" for t in parts[0])
    assert any(t.name == "output.weight" for t in parts[-1])
    assert not any(t.layer is None for t in parts[1] + parts[2])


def test_tied_embeddings_are_copied_to_the_last_stage() -> None:
    spec = find_model("llama-3.2-1b").spec()  # tie_word_embeddings
    tensors = model_tensors(spec)
    last = stage_tensors(tensors, 1, 2, spec.num_hidden_layers)
    assert any(t.name == "token_embd.weight" for t in last)


def _vllm(pp: int, tp: int, n: int, model: str = "qwen2-72b"):  # type: ignore[no-untyped-def]
    gpus = [find_gpu("rtx-4090")] * n
    hw = hardware_for(gpus, n_devices=n)
    s = InferenceSettings(runtime="vllm", ctx=8192, tp=tp, pp=pp)
    return estimate_model(find_model(model).spec(), s, hw)


def test_vllm_pipeline_stages_split_the_weights() -> None:
    one = _vllm(pp=1, tp=4, n=4)
    two = _vllm(pp=2, tp=4, n=8)
    assert len(two.devices) == 8
    w1 = one.devices[0].category_bytes("weights")
    w2 = [d.category_bytes("weights") for d in two.devices]
    # half the layers per rank; the embeddings / LM head stay with their stage
    assert all(0.45 * w1 < w < 0.55 * w1 for w in w2)
    assert two.settings["pp"] == 2
    assert not one.fits
    assert two.fits  # 72B bf16 on 8x24 GB: fits only when the stages split the layers
    # the first stage does not sample: its activation peak is the forward live set
    first, last = two.devices[0], two.devices[-1]
    assert first.category_bytes("activations") < last.category_bytes("activations")


def test_vllm_pp_needs_tp_x_pp_gpus() -> None:
    with pytest.raises(InvalidSettingError, match="needs 8 GPUs"):
        _vllm(pp=2, tp=4, n=4)


def test_sglang_pipeline_stages_split_weights_and_pool() -> None:
    gpus = [find_gpu("rtx-4090")] * 8
    hw = hardware_for(gpus, n_devices=8)
    spec = find_model("qwen2-72b").spec()
    one = estimate_model(spec, InferenceSettings(runtime="sglang", ctx=8192, tp=8), hw)
    two = estimate_model(spec, InferenceSettings(runtime="sglang", ctx=8192, tp=4, pp=2), hw)
    assert len(two.devices) == 8
    # tp 8 x pp 1 and tp 4 x pp 2 both give each rank an eighth of the weights
    w1 = one.devices[0].category_bytes("weights")
    w2 = two.devices[0].category_bytes("weights")
    assert 0.9 * w1 < w2 < 1.1 * w1
    assert two.settings["pp"] == 2
    assert two.runtime_details["max_total_num_tokens"]


def test_cli_uses_pp_for_vllm_and_warns_for_llamacpp(capsys: pytest.CaptureFixture[str]) -> None:
    args = "estimate qwen2-72b --runtime vllm --gpu 8xrtx-4090 --tp 4 --pp 2 --ctx 8192"
    rc = main(args.split())
    out, err = capsys.readouterr()
    assert "does not use" not in err
    assert "pp=2" in out
    assert rc in (0, 4)
    rc = main(["estimate", "llama-3.1-8b", "--gpu", "rtx-4090", "--pp", "2"])
    _, err = capsys.readouterr()
    assert "does not use --pp" in err


def test_vllm_reports_the_smallest_stage_pool() -> None:
    """vLLM unifies the KV configs of all workers to the smallest block count."""
    gpus = [find_gpu("a100-80gb")] * 4
    hw = hardware_for(gpus, n_devices=4)
    s = InferenceSettings(runtime="vllm", ctx=8192, tp=2, pp=2)
    from oomkit.estimate.vllm import plan_vllm

    spec = find_model("llama-3.1-70b").spec()
    est = estimate_model(spec, s, hw)
    blocks = [
        plan_vllm(spec, s, gpus[0].to_device_target(), pp_rank=r).num_gpu_blocks for r in (0, 1)
    ]
    assert blocks[0] != blocks[1]
    assert est.runtime_details["num_gpu_blocks"] == min(b for b in blocks if b is not None)
