"""vLLM's offline ``LLM`` class: V1's batch defaults for ``UsageContext.LLM_CLASS``.

The real run: lm-evaluation-harness#2815 (2025-03-19), a Llama-3-8B fine-tune in fp16 on one A100
80GB, ``lm-eval --model vllm --model_args ...,gpu_memory_utilization=0.9 --tasks leaderboard``:
lm-eval builds ``vllm.LLM(**model_args)``, so vLLM 0.8.x's V1 engine batches 8192 tokens per
step (``EngineArgs._set_default_args_v1``: LLM_CLASS 8192 on a GPU other than H100/H200, the
server 2048); the loglikelihood requests' prompt log-probs over such a step died ("Tried to
allocate 7.83 GiB" right when the loglikelihood requests began).
"""

from __future__ import annotations

import json

import pytest

from oomkit.api import estimate
from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.checks import ignored_settings
from oomkit.estimate.verdict import Platform, verdict
from oomkit.estimate.vllm_engines import v1_batch_defaults
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

LMEVAL_2815: dict[str, object] = {
    "quant": "fp16",
    "ctx": 8192,
    "gpu_memory_utilization": 0.9,
    "prompt_logprobs": True,
    "runtime_version": "2025-03-19",
}


def _vllm(model: str, gpu: str, **kw: object) -> Estimate:
    s = InferenceSettings(runtime="vllm", **kw)  # type: ignore[arg-type]
    return estimate(model, s, hardware_for(parse_gpu_list(gpu), n_devices=s.tp or 1), offline=True)


def test_lm_eval_2815_is_not_called_fits() -> None:
    server = _vllm("llama-3-8b", "a100-80gb-sxm", **LMEVAL_2815)
    assert server.runtime_details["max_num_batched_tokens"] == 2048  # vllm serve's default
    assert verdict(server, Platform(display=False)).level == "fits"
    est = _vllm("llama-3-8b", "a100-80gb-sxm", llm_class=True, **LMEVAL_2815)
    assert est.runtime_details["engine"] == "v1-0.8.0"  # 0.8.0-0.8.3
    assert est.runtime_details["max_num_batched_tokens"] == 8192
    vocab = find_model("llama-3-8b").spec().vocab_size
    # V1: one request's rows at a time, up to min(8192, max_model_len): fp16 logits, the fp32
    # log-softmax and the bool rank mask on the one rank
    assert est.runtime_details["prompt_logprobs_bytes"] == {"cuda:0": 8192 * vocab * 7}
    assert verdict(est, Platform(display=False)).level == "tight"
    assert est.settings["llm_class"] is True
    assert "llm_class" not in server.settings


def test_defaults_by_usage_context() -> None:
    # vllm/engine/arg_utils.py (0.8.1 _set_default_args_v1, 0.11.0 get_batch_defaults)
    assert v1_batch_defaults(big=False, llm_class=True) == (256, 8192)
    assert v1_batch_defaults(big=False, llm_class=False) == (256, 2048)
    assert v1_batch_defaults(big=True, llm_class=True) == (1024, 16384)
    assert v1_batch_defaults(big=True, llm_class=False) == (1024, 8192)
    h100 = _vllm("qwen2.5-7b", "h100", ctx=4096, runtime_version="0.11.0", llm_class=True)
    assert h100.runtime_details["max_num_batched_tokens"] == 16384
    given = _vllm(
        "qwen2.5-7b",
        "h100",
        ctx=4096,
        runtime_version="0.11.0",
        llm_class=True,
        max_num_batched_tokens=4096,
    )
    assert given.runtime_details["max_num_batched_tokens"] == 4096  # a given value wins


def test_v0_engines_have_no_usage_context_default() -> None:
    # V0 (0.6.5-0.9 with VLLM_USE_V1=0 or before 0.8): max(max_model_len, 2048) either way
    kw: dict[str, object] = {"ctx": 4096, "runtime_version": "0.7.3"}
    a = _vllm("qwen2.5-7b", "a10g", **kw)
    b = _vllm("qwen2.5-7b", "a10g", llm_class=True, **kw)
    assert a.runtime_details["max_num_batched_tokens"] == 4096
    assert [d.total_bytes for d in a.devices] == [d.total_bytes for d in b.devices]


def test_batchlocallm_olmo2_4080_pool_moves_toward_its_log() -> None:
    # zisaacson/BatchLocaLLM: LLM(model="allenai/OLMo-2-1124-7B-Instruct",
    # gpu_memory_utilization=0.85, max_num_seqs=16), vLLM 0.11.0 on an RTX 4080 16GB: "Available
    # KV cache memory: -3.44 GiB". The offline class's 8192-token profile batch makes the
    # modelled pool more negative than the server's 2048 would.
    kw: dict[str, object] = {
        "ctx": 4096,
        "gpu_memory_utilization": 0.85,
        "max_num_seqs": 16,
        "runtime_version": "0.11.0",
    }
    server = _vllm("olmo-2-7b", "rtx-4080", **kw)
    offline = _vllm("olmo-2-7b", "rtx-4080", llm_class=True, **kw)
    assert offline.runtime_details["max_num_batched_tokens"] == 8192
    a = int(server.runtime_details["activation_peak_bytes"])  # type: ignore[call-overload]
    b = int(offline.runtime_details["activation_peak_bytes"])  # type: ignore[call-overload]
    assert b > a


@pytest.mark.parametrize("runtime", ["llama.cpp", "sglang", "transformers"])
def test_other_runtimes_ignore_it(runtime: str) -> None:
    assert "llm_class" in ignored_settings(
        InferenceSettings(runtime=runtime, llm_class=True), runtime
    )
    assert "llm_class" not in ignored_settings(
        InferenceSettings(runtime="vllm", llm_class=True), "vllm"
    )


def test_cli_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "llama-3-8b", "--runtime", "vllm", "--gpu", "a100-80gb-sxm"]
    args += ["--quant", "fp16", "--ctx", "8192", "--gpu-memory-utilization", "0.9"]
    args += ["--runtime-version", "2025-03-19", "--prompt-logprobs", "--offline", "--json"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "fits"
    assert main([*args, "--llm-class"]) == 4  # tight
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "tight"
    assert doc["settings"]["llm_class"] is True
    assert doc["settings"]["max_num_batched_tokens"] == 8192


def test_setting_is_validated() -> None:
    with pytest.raises(InvalidSettingError, match="llm_class"):
        InferenceSettings(runtime="vllm", llm_class="yes")  # type: ignore[arg-type]
