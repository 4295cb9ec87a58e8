"""Runtime generations: every generation resolves and changes what the estimators compute."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import GENERATIONS, resolve_generation
from oomkit.estimate.verdict import Platform, verdict
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, MiB

HW = hardware_for(parse_gpu_list("rtx-4090"))


def _est(model: str, **kw: Any) -> Estimate:
    return estimate(model, InferenceSettings(**kw), HW)


@pytest.mark.parametrize(
    ("runtime", "version", "key"),
    [
        ("vllm", "0.2.5", "v0-2023"),
        ("vllm", "0.2.6", "v0-2023-no-record-stream"),
        ("vllm", "0.2.7", "v0-2023-len-check"),
        ("vllm", "0.4.2", "v0-2024-init-free"),
        # PR #9352 first shipped in 0.6.4: 0.6.3.post1's worker.py still charges init free - free
        ("vllm", "0.4.3", "v0-2024-init-free"),
        ("vllm", "0.5.0", "v0-2024-nccl-2.20"),
        ("vllm", "0.5.2", "v0-2024-nccl-2.20"),
        # PR #6666 (chunked prefill by default above 32K) is first in the 0.5.3 sdist
        ("vllm", "0.5.3", "v0-2024-long-chunked"),
        ("vllm", "0.6.3", "v0-2024-long-chunked"),
        ("vllm", "0.6.3.post1", "v0-2024-long-chunked"),
        ("vllm", "2024-11-01", "v0-2024-long-chunked"),
        ("vllm", "0.6.4", "v0-2024"),
        ("vllm", "2024-11-15", "v0-2024"),
        ("vllm", "v0.6.6.post1", "v0-2025"),
        ("vllm", "0.8.5", "v1-2025-global"),
        ("vllm", "0.9.2", "v1-2025"),
        ("vllm", "2025-12", "v1-0.11.1"),
        ("vllm", "0.14.1", "v1-0.11.1"),
        ("vllm", "0.11.0", "v1-0.11"),
        ("vllm", "0.21.0", "v1-0.21"),
        ("llama.cpp", "2024-06", "2024"),
        ("llama.cpp", "b4500", "2024-11-sycl-revert"),
        ("llama.cpp", "b3900", "2024-06-mmq"),
        ("llama.cpp", "b1412", "2023-mmq"),
        ("llama.cpp", "b1430", "2023-10-cublas"),
        ("llama.cpp", "2023-10-29", "2023-10-cublas"),
        ("llama.cpp", "b1428", "2023-10-batched-attn"),
        ("llama.cpp", "2023-11-15", "2023-11-batched-attn-tc"),
        ("llama.cpp", "2024-01-10", "2023-12-tensor-cores"),
        ("llama.cpp", "2024-01-11", "2024-01-moe-kquants"),
        ("llama.cpp", "2024-01-15", "2024-01-sched"),
        ("llama.cpp", "2024-02-23", "2024-01-q2k-2bit"),
        ("llama.cpp", "2023-06-12", "2023-06-metal-one-buffer"),
        ("llama.cpp", "2023-06-30", "2023-06-metal-views"),
        ("llama.cpp", "2023-08-01", "2023-07-graph-eval"),
        ("llama.cpp", "2023-08-25", "2023-08-q2k-3bit"),
        ("llama.cpp", "2024-03-15", "2024-03-ubatch"),
        ("llama.cpp", "2024-03-20", "2024-03-offload-splits"),
        ("llama.cpp", "2024-04", "2024-03-outputs"),
        ("llama.cpp", "b5274", "2025-04-mla"),
        ("llama.cpp", "2025-06-01", "2025-05-swa"),
        ("llama.cpp", "b6100", "2025-07-streams"),
        ("llama.cpp", "b6500", "2025-08-fa-auto"),
        ("llama.cpp", "4500", "2024-11-sycl-revert"),
        ("llama.cpp", "2025-12", "2025-11-pad256"),
        ("ollama", "0.1.44", "llama-runner-2k"),
        ("ollama", "0.1.45", "nvml-index-0.1.45"),
        ("ollama", "0.5.7", "nvml-uuid-0.4.0"),
        ("ollama", "0.6.6", "llama-runner-4k"),
        ("ollama", "0.7.0", "ctx-4k-0.6.7"),
        ("ollama", "0.9.0", "mm-worst-case-0.7.1"),
        ("ollama", "0.12.3", "engine-0.12"),
        ("ollama", "0.13.2", "vision-sdpa-0.13.2"),
        ("sglang", "0.2.13", "tp-table"),
        ("sglang", "0.4.4", "mm-0.95-listed"),
        ("sglang", "2025-04-10", "llama4-mm"),
        ("sglang", "0.4.6", "mm-disabled-models"),
        ("sglang", "2025-05-10", "frac-96g"),
        ("sglang", "0.4.8", "frac-reserved"),
        ("sglang", "0.5.4", "gpu-memory"),
        ("transformers", "4.30.2", "eager-attention"),
        ("transformers", "4.36.0", "full-logits"),
        ("transformers", "4.40.2", "full-logits"),
        ("transformers", "4.46", "logits-to-keep"),
    ],
)
def test_resolve(runtime: str, version: str, key: str) -> None:
    assert resolve_generation(runtime, version).key == key


def test_default_is_newest_and_every_row_cites_a_change() -> None:
    for runtime, gens in GENERATIONS.items():
        assert resolve_generation(runtime).key == gens[-1].key
        dates = [g.since for g in gens]
        assert dates == sorted(dates), runtime
        for g in gens:
            assert "PR #" in g.change or "release" in g.change or "memory.go" in g.change, g.key
            assert g.memory


def test_bad_version_is_a_one_line_error() -> None:
    with pytest.raises(InvalidSettingError, match="--runtime-version 'yesterday'"):
        resolve_generation("vllm", "yesterday")


@pytest.mark.parametrize(
    ("runtime", "text", "says"),
    [
        # a year or a date written another way is not release 2024 (the newest generation)
        ("vllm", "2024", "reads as a year or a date"),
        ("vllm", "20240615", "reads as a year or a date"),
        ("vllm", "2024-06-15T00", "give a release such as 0.6.3"),
        ("sglang", "2025", "reads as a year or a date"),
        ("llama.cpp", "20240615", "reads as a year or a date"),
        # llama.cpp has builds and dates, no dotted releases
        ("llama.cpp", "0.6.3", "llama.cpp has no release numbers"),
        ("llama.cpp", "v1.2.3", "give a llama.cpp build such as b4500"),
        ("vllm", "2024-13", "not a calendar date"),
    ],
)
def test_runtime_version_that_is_no_form_of_that_runtime_is_a_usage_error(
    runtime: str, text: str, says: str
) -> None:
    """Review3 finding 15: each is a one-line usage error naming the forms that runtime
    accepts, not a silent guess."""
    with pytest.raises(InvalidSettingError, match=f"--runtime-version '{text}' for {runtime}") as e:
        resolve_generation(runtime, text)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_vllm_build_number_error_suggests_releases_not_builds() -> None:
    with pytest.raises(InvalidSettingError) as e:
        resolve_generation("vllm", "b4500")
    assert "b4500 " not in str(e.value).replace("'b4500'", "")
    assert "0.6.3" in str(e.value)


@pytest.mark.parametrize(
    ("runtime", "pre", "release"),
    [
        ("vllm", "0.6.3rc1", "0.6.3"),  # was 0.6 + ".3rc1": the generation before 0.6.3
        ("vllm", "0.11.0rc1", "0.11.0"),
        ("vllm", "0.8.0rc2", "0.8.0"),
        ("vllm", "v0.9.1rc1", "0.9.1"),
        ("vllm", "0.6.5.dev12+g1a2b3c", "0.6.5"),
        ("vllm", "0.6.6.post1", "0.6.6"),
        ("ollama", "v0.6.4-rc0", "0.6.4"),
        ("sglang", "0.5.3rc0", "0.5.3"),
        ("transformers", "4.45.0.dev0", "4.45.0"),
    ],
)
def test_a_pre_release_resolves_as_its_release(runtime: str, pre: str, release: str) -> None:
    """An rc (or dev/post build) of X is X's generation, whatever the number of parts."""
    from oomkit.estimate.generations import parse_runtime_version

    assert parse_runtime_version(runtime, pre) == parse_runtime_version(runtime, release)
    assert resolve_generation(runtime, pre).key == resolve_generation(runtime, release).key


@pytest.mark.parametrize(
    ("runtime", "short", "full"),
    [
        ("vllm", "0.8", "0.8.0"),
        ("vllm", "0.11", "0.11.0"),
        ("vllm", "v0.9", "0.9.0"),
        ("vllm", "0.7", "0.7.0"),
        ("sglang", "0.4", "0.4.0"),
        ("transformers", "4.45", "4.45.0"),
    ],
)
def test_two_part_version_is_its_dot_zero_release(runtime: str, short: str, full: str) -> None:
    """ "0.8" is 0.8.0 (compared as padded numeric tuples), not the generation before 0.8.0."""
    assert resolve_generation(runtime, short) == resolve_generation(runtime, full)


def test_two_part_vllm_versions_pick_the_right_engine_generation() -> None:
    assert resolve_generation("vllm", "0.8").label == "vLLM V1 (0.8.0-0.8.3)"
    assert resolve_generation("vllm", "0.11").label == "vLLM V1 (0.11.0)"
    assert resolve_generation("vllm", "0.21").label == "vLLM V1 (0.21)"
    assert resolve_generation("vllm", "0.10").key == resolve_generation("vllm", "0.10.0").key
    assert resolve_generation("vllm", "0.10").key != resolve_generation("vllm", "0.11").key


def test_version_before_every_generation_is_noted() -> None:
    from oomkit.estimate.generations import predates_generations

    assert predates_generations("vllm", "0.0.1")
    assert predates_generations("llama.cpp", "2020-01")
    assert not predates_generations("vllm", "0.2.5")
    assert not predates_generations("vllm", None)
    old = _est("qwen2.5-0.5b", runtime="vllm", runtime_version="0.0.1")
    oldest = GENERATIONS["vllm"][0]
    assert old.runtime_details["generation"]["key"] == oldest.key
    assert any("0.0.1 predates every modelled vllm release" in a for a in old.assumptions)
    ok = _est("qwen2.5-0.5b", runtime="vllm", runtime_version="0.2.5")
    assert not any("predates" in a for a in ok.assumptions)


def test_cli_bad_runtime_version_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from oomkit.cli import main

    rc = main(["estimate", "qwen2.5-0.5b", "--runtime", "vllm", "--runtime-version", "abc"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--runtime-version 'abc'" in err
    assert "'runtime_version'" not in err


def test_llamacpp_pre_mla_deepseek_caches_full_kv() -> None:
    kw = {"runtime": "llama.cpp", "quant": "Q4_K_M", "ctx": 8192}
    old = _est("deepseek-v2-lite", runtime_version="2024-10", **kw)
    mla = _est("deepseek-v2-lite", runtime_version="2025-05-01", **kw)
    now = _est("deepseek-v2-lite", **kw)
    kv_old, kv_mla, kv_now = (e.devices[0].kv_cache_bytes for e in (old, mla, now))
    # 27 layers x 8192 cells x f16: 16 heads x (128 + 64) K + 16 x 128 V; then 576 + 512; then 576
    assert kv_old == 27 * 8192 * 2 * (16 * 192 + 16 * 128)
    assert kv_mla == 27 * 8192 * 2 * (576 + 512)
    assert kv_now == 27 * 8192 * 2 * 576
    assert kv_old > 8 * kv_now


def test_llamacpp_before_swa_cache_gemma3_caches_every_layer() -> None:
    kw = {"runtime": "llama.cpp", "quant": "Q4_K_M", "ctx": 32768}
    old = _est("gemma-3-27b", runtime_version="2025-03", **kw)
    new = _est("gemma-3-27b", runtime_version="2025-06", **kw)
    assert old.devices[0].kv_cache_bytes > 4 * new.devices[0].kv_cache_bytes


def test_llamacpp_streams_and_padding() -> None:
    kw = {
        "runtime": "llama.cpp",
        "quant": "Q4_K_M",
        "ctx": 5000,
        "parallel": 3,
        "flash_attn": False,
    }
    old = _est("llama-3.1-8b", runtime_version="2025-06", **kw)  # one stream, pad 32
    mid = _est("llama-3.1-8b", runtime_version="2025-08", **kw)  # 3 streams, pad 32
    new = _est("llama-3.1-8b", runtime_version="2025-12", **kw)  # 3 streams, pad 256
    per_cell = 32 * 2 * 8 * 128 * 2  # layers x (K+V) x kv heads x head dim x f16
    assert old.devices[0].kv_cache_bytes == 5024 * per_cell
    assert mid.devices[0].kv_cache_bytes == 3 * 1696 * per_cell
    assert new.devices[0].kv_cache_bytes == 3 * 1792 * per_cell


def test_ollama_old_runner_defaults() -> None:
    old = _est("deepseek-v2-lite", runtime="ollama", runtime_version="0.5.7")
    # 0.6.4/0.6.5 still vendored d7cfe1f (Feb 2025, before the MLA cache of PR #12801):
    # 0.9.0's llama.cpp (de4c07f, May 2025) has it
    mid = _est("deepseek-v2-lite", runtime="ollama", runtime_version="0.9.0")
    assert old.runtime_details["ollama"]["num_ctx"] == 2048
    assert mid.runtime_details["ollama"]["num_ctx"] == 4096
    # old vendored llama.cpp: full K/V at 2048 cells beats the MLA latent (+V) at 4096
    assert old.devices[0].kv_cache_bytes > mid.devices[0].kv_cache_bytes
    q = _est("qwen2.5-7b", runtime="ollama", runtime_version="0.5.7")
    assert q.runtime_details["ollama"]["flash_attention"] is False
    assert q.runtime_details["ollama"]["engine"] == "llama runner"


def test_vllm_generations_change_the_kv_pool() -> None:
    kw = {"runtime": "vllm", "ctx": 8192}
    # Llama 3 (not 3.1: its 'llama3' rope_scaling needs vLLM 0.5.3.post1, oomkit.estimate.
    # vllm_rope), so that 0.4.2 loads it
    blocks = {
        v: _est("llama-3-8b", runtime_version=v, **kw).runtime_details["num_gpu_blocks"]
        for v in ("0.4.2", "0.6.4", "0.7.0", "0.8.5", "0.11.0")
    }
    engines = {
        v: _est("llama-3-8b", runtime_version=v, **kw).runtime_details["engine"]
        for v in ("0.6.4", "0.8.5")
    }
    assert engines == {"0.6.4": "v0-2024", "0.8.5": "v1-2025-global"}
    # 0.6.4 charges the CUDA context to the budget: fewer blocks than 0.6.5+
    assert blocks["0.6.4"] < blocks["0.7.0"]
    assert len(set(blocks.values())) >= 4


def test_sglang_tp_table_before_pr_10975() -> None:
    old = _est("llama-3.1-8b", runtime="sglang", ctx=8192, runtime_version="0.4.6")
    new = _est("llama-3.1-8b", runtime="sglang", ctx=8192)
    assert old.runtime_details["mem_fraction_static"] == 0.88
    assert new.runtime_details["mem_fraction_static"] != 0.88


def test_transformers_full_logits_before_4_45() -> None:
    kw = {"runtime": "transformers", "ctx": 4096}
    old = _est("llama-3.1-8b", runtime_version="4.40", **kw)
    new = _est("llama-3.1-8b", runtime_version="4.46", **kw)
    diff = old.devices[0].activations_bytes - new.devices[0].activations_bytes
    assert diff > 2000 * MiB  # 4096 x 128256 x (2 + 4) bytes of logits


def test_transformers_sliding_layers_hold_the_prompt_from_4_56() -> None:
    """transformers 4.56+ (PR #40039): a DynamicSlidingWindowLayer keeps a view of the whole
    prefill's K/V, so at the prefill's peak Gemma-3-1B's sliding layers hold the 8192-token
    prompt, not their 512-token window: 22 sliding layers x 8192 tokens and 4 global ones x
    (8192 + 16), x 2 (K, V) x 8 sequences x 256 x 2 bytes (1.625 GiB, what the FakeTensor probe
    of transformers 5.24 shows). On an H100 (session 10's held-out
    run, benchmarks/gpu/results/verdict_boundary_holdout_h100.json) oomkit's windowed figure
    was 22% under max_memory_allocated and said "fits" on a card the run died on."""
    kw = {"runtime": "transformers", "ctx": 8192, "parallel": 8, "max_new_tokens": 16}
    old = _est("gemma-3-1b", runtime_version="4.55", **kw).devices[0].kv_cache_bytes
    new = _est("gemma-3-1b", runtime_version="4.56", **kw).devices[0].kv_cache_bytes
    assert new == 2 * 8 * 256 * 2 * (22 * 8192 + 4 * (8192 + 16))
    assert old < new // 3  # windowed sliding layers, full global ones
    # a prompt inside the window: nothing changes
    short = {**kw, "ctx": 256}
    assert (
        _est("gemma-3-1b", runtime_version="4.55", **short).devices[0].kv_cache_bytes
        == _est("gemma-3-1b", runtime_version="4.56", **short).devices[0].kv_cache_bytes
    )
    # a static cache is preallocated at the window: no view of the prefill is kept
    static = _est("gemma-3-1b", runtime_version="4.56", cache_implementation="static", **kw)
    assert static.devices[0].kv_cache_bytes == old


def test_generation_is_echoed() -> None:
    e = _est("llama-3.1-8b", runtime="vllm", ctx=8192, runtime_version="0.8.5")
    gen = e.runtime_details["generation"]
    assert isinstance(gen, dict)
    assert gen["label"] == "vLLM V1 (0.8.4-0.9.0)"
    assert gen["requested"] == "0.8.5"


def test_doctor_reads_the_version_line() -> None:
    from oomkit.diagnose.doctor import diagnose_text
    from oomkit.diagnose.version import runtime_version_from_log

    assert runtime_version_from_log("ollama version is 0.5.7") == ("ollama", "0.5.7")
    assert runtime_version_from_log("no version here") is None
    log = (
        "INFO 10-14 vLLM API server version 0.6.3\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 23.64 GiB of which 1.2 GiB is free."
    )
    assert (
        "modelled: vLLM V0 (0.5.3-0.6.3, NCCL 2.20) (runtime version 0.6.3)"
        in diagnose_text(log).notes
    )
    # the user's own version wins over the log's
    user = InferenceSettings(runtime="vllm", runtime_version="0.8.5")
    notes = diagnose_text(log, settings=user).notes
    assert any("vLLM V1 (0.8.4-0.9.0)" in n for n in notes)


def test_vllm_before_mla_caches_deepseek_as_full_heads() -> None:
    kw: dict[str, Any] = {"runtime": "vllm", "ctx": 8192}
    old = _est("deepseek-v2-lite", runtime_version="0.6.6", **kw)
    new = _est("deepseek-v2-lite", runtime_version="0.7.2", **kw)
    # 27 layers x 16 heads x (256 K + 256 V) x 2 bytes vs 27 x 576 x 2
    assert old.runtime_details["kv_bytes_per_token_per_rank"] == 27 * 16 * 512 * 2
    assert new.runtime_details["kv_bytes_per_token_per_rank"] == 27 * 576 * 2


def test_llamacpp_flash_attention_off_by_default_before_pr_15434() -> None:
    kw: dict[str, Any] = {"runtime": "llama.cpp", "quant": "Q4_K_M", "ctx": 32768}
    old = _est("llama-3.1-8b", runtime_version="2025-06", **kw)
    new = _est("llama-3.1-8b", runtime_version="2025-09", **kw)
    assert old.devices[0].activations_bytes > new.devices[0].activations_bytes + 1000 * MiB
    assert any("PR #15434" in a for a in old.assumptions)


def test_vllm_record_stream_pinning_only_before_0_2_6() -> None:
    kw: dict[str, Any] = {"runtime": "vllm", "ctx": 4096, "tp": 4}
    hw4 = hardware_for(parse_gpu_list("4xa100-80gb-sxm"))
    old = estimate("llama-2-70b", InferenceSettings(runtime_version="0.2.5", **kw), hw4)
    new = estimate("llama-2-70b", InferenceSettings(runtime_version="0.4.2", **kw), hw4)
    # (2 x 80 + 1) all-reduced [4096, 8192] fp16 inputs held until the NCCL stream syncs
    pinned = (2 * 80 + 1) * 4096 * 8192 * 2
    diff = (
        old.runtime_details["activation_peak_bytes"] - new.runtime_details["activation_peak_bytes"]
    )
    assert diff == pinned


def test_ollama_engine_generation_uses_ollamarunner_and_flash_attention() -> None:
    # qwen3 is in v0.12.3's OllamaEngineRequired (fs/ggml/ggml.go); qwen2 never was
    old = _est("qwen3-8b", runtime="ollama", ctx=8192, runtime_version="0.9.0")
    new = _est("qwen3-8b", runtime="ollama", ctx=8192, runtime_version="0.12.3")
    assert old.runtime_details["ollama"]["engine"] == "llama runner"
    assert new.runtime_details["ollama"]["engine"] == "ollamarunner"
    qwen2 = _est("qwen2.5-7b", runtime="ollama", ctx=8192, runtime_version="0.12.3")
    assert qwen2.runtime_details["ollama"]["engine"] == "llama runner"
    assert qwen2.runtime_details["ollama"]["flash_attention"] is False
    assert old.runtime_details["ollama"]["flash_attention"] is False
    assert new.runtime_details["ollama"]["flash_attention"] is True
    # without flash attention the compute buffer holds the n_ctx-wide KQ matrix
    assert old.devices[0].activations_bytes > new.devices[0].activations_bytes


def test_every_generation_has_evidence_that_resolves() -> None:
    """Each generation names a test comparing it with its neighbour, a real run of the verdict
    set whose outcome turns on it, or a public log; every test and run reference exists."""
    root = Path(__file__).parents[1]
    runs = {
        json.loads(ln)["id"]
        # heldout9, heldout13, heldout33: scored once, then retired to development
        for part in ("dev", "dev2", "heldout9", "heldout13", "heldout33")
        for ln in (root / "tests/fixtures/verdict_runs" / f"{part}.jsonl").read_text().splitlines()
        if ln.strip()
    }
    for rt, gens in GENERATIONS.items():
        for gen in gens:
            assert gen.evidence, f"{rt} {gen.key}: no log or test shows the difference"
            for ref in gen.evidence:
                kind, _, what = ref.partition(":")
                if kind == "test":
                    path, _, func = what.partition("::")
                    assert f"def {func}(" in (root / path).read_text(), ref
                elif kind == "run":
                    assert what in runs, ref
                else:
                    assert kind == "log", ref
                    assert what.startswith("https://github.com/"), ref


def test_vllm_current_charges_its_graph_estimate() -> None:
    """PR #30515 (default from 0.20.0, PR #38284): the CUDA-graph estimate is subtracted from
    ceil(total x 0.92); 0.9.1-0.10 captured graphs afterwards in the headroom of total x 0.9."""
    kw: dict[str, Any] = {"runtime": "vllm", "ctx": 8192}
    old = _est("llama-3.1-8b", runtime_version="0.10.1", **kw)
    new = _est("llama-3.1-8b", runtime_version="0.21.0", **kw)
    ro, rn = old.runtime_details, new.runtime_details
    assert (ro["engine"], rn["engine"]) == ("v1-2025", "current")
    assert (ro["cudagraph_charged"], rn["cudagraph_charged"]) == (False, True)
    cap = HW.devices[0].capacity_bytes
    assert cap is not None
    budget = math.ceil(cap * 0.92) - int(cap * 0.9)
    act = rn["activation_peak_bytes"] - ro["activation_peak_bytes"]  # FlashInfer sampler
    expected = budget - rn["cudagraph_bytes"] - act
    assert rn["available_kv_cache_bytes"] - ro["available_kv_cache_bytes"] == expected


def test_vllm_graphs_in_the_headroom_until_0_21() -> None:
    """0.11-0.19 size the KV cache to the whole ceil(total x util) budget and capture the graphs
    afterwards in the 1 - util headroom; 0.20+ (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by
    default) take them out of the KV budget. vllm#33155: gpt-oss-120b on one H100 at util 0.97
    died on 0.14.1: 2.4 GiB of headroom against a capture vLLM puts at 1~3 GiB."""
    hw = hardware_for(parse_gpu_list("h100-sxm"))
    kw: dict[str, Any] = {
        "runtime": "vllm",
        "quant": "mxfp4",
        "ctx": 5120,
        "gpu_memory_utilization": 0.97,
        "max_num_seqs": 1,
    }
    old = estimate("gpt-oss-120b", InferenceSettings(runtime_version="0.14.1", **kw), hw)
    new = estimate("gpt-oss-120b", InferenceSettings(runtime_version="0.21.0", **kw), hw)
    ro, rn = old.runtime_details, new.runtime_details
    assert (ro["engine"], rn["engine"]) == ("v1-0.11.1", "current")
    assert (ro["cudagraph_charged"], rn["cudagraph_charged"]) == (False, True)
    graphs = rn["cudagraph_bytes"]
    assert graphs > 0
    assert graphs == ro["cudagraph_bytes"]
    # the same budget: the KV cache gives the graphs up only when they are charged (0.14.1's
    # sort sampler, see test_vllm_sort_sampler_from_0_11_1_until_flashinfer_returns, takes the
    # difference of the two torch peaks out of it too)
    sampler = ro["activation_peak_bytes"] - rn["activation_peak_bytes"]
    assert sampler >= 0  # one sequence: the forward live set may set both peaks
    assert ro["available_kv_cache_bytes"] - rn["available_kv_cache_bytes"] == graphs - sampler
    # so the device total grows by the graphs on 0.14.1: they sit in the headroom
    assert old.devices[0].total_bytes - new.devices[0].total_bytes == graphs
    assert verdict(old, Platform()).level != "fits"
    assert verdict(new, Platform()).level == "fits"


def test_vllm_sort_sampler_from_0_11_1_until_flashinfer_returns() -> None:
    """PR #26859 (after v0.11.0) made FlashInfer's top-k/top-p sampler opt-in until PR #40376:
    0.11.1-0.16 profile ``_dummy_sampler_run`` through the PyTorch sort over [max_num_seqs,
    vocab] fp32 logits. llm-d-benchmark's H100 logs (vllm-openai:latest, Jan 2026) show a
    5.64 GiB torch peak for Qwen3-32B at 1024 sequences x 151936 vocab, where FlashInfer's
    working set is about a third: at --max-model-len 32000 the pool no longer holds a request
    (FAILED in that table), at 16000 it does (SUCCESS, 4.45 GiB of KV). 0.17-0.20 mask through
    a Triton kernel instead (tests/test_vllm_triton_sampler.py)."""
    hw = hardware_for(parse_gpu_list("h100-sxm"))
    kw: dict[str, Any] = {
        "runtime": "vllm",
        "quant": "bf16",
        "gpu_memory_utilization": 0.9,
        "block_size": 128,
    }

    def run(version: str, ctx: int) -> Any:
        return estimate("qwen3-32b", InferenceSettings(runtime_version=version, ctx=ctx, **kw), hw)

    fi, sort = run("0.11.0", 32000), run("0.14.1", 32000)
    back = run("0.21.0", 32000)
    pf, ps = fi.runtime_details, sort.runtime_details
    assert (pf["engine"], ps["engine"]) == ("v1-0.11", "v1-0.11.1")
    # the same rows and vocabulary: only the per-entry working set differs (36 vs 12 B)
    rows, vocab = ps["max_num_seqs"], 151936
    grown = ps["activation_peak_bytes"] - pf["activation_peak_bytes"]
    assert grown == rows * vocab * (36 - 12)
    assert back.runtime_details["activation_peak_bytes"] == pf["activation_peak_bytes"]
    assert 5.3 * GiB < ps["activation_peak_bytes"] < 6.0 * GiB  # log: 5.64 GiB
    assert pf["available_kv_cache_bytes"] - ps["available_kv_cache_bytes"] == grown
    # at the H100's CUDA total (79.10 GiB) the FlashInfer pool still holds a request, inside
    # the band ("fits" against NVML's 79.65 GiB); the sort's pool does not
    assert verdict(fi, Platform()).level in ("fits", "tight")
    assert not fi.blockers
    assert verdict(sort, Platform()).level == "does_not_fit"
    assert verdict(run("0.14.1", 16000), Platform()).level == "fits"


def test_runtime_version_is_not_reported_as_ignored() -> None:
    """Every runtime with generations reads --runtime-version: no 'ignored by' note for it."""
    for rt, version in (("vllm", "0.8.5"), ("llama.cpp", "b4500"), ("ollama", "0.5.7")):
        e = _est("qwen2.5-7b", runtime=rt, runtime_version=version)
        assert not any("runtime_version" in a for a in e.assumptions), rt


def test_vllm_before_pr_2863_charges_all_gpu_memory() -> None:
    """0.2.5-0.3.0 charged total - free after profiling (the CUDA context too, PR #2031); from
    PR #2863 (0.3.1) the free memory at init is the baseline: more KV blocks, by the context."""
    kw: dict[str, Any] = {"runtime": "vllm", "ctx": 4096}
    old = _est("llama-2-7b", runtime_version="0.3.0", **kw).runtime_details
    new = _est("llama-2-7b", runtime_version="0.3.1", **kw).runtime_details
    assert old["charges_other_processes"] is True
    assert new["charges_other_processes"] is False
    assert old["non_torch_bytes"] > new["non_torch_bytes"]
    freed = old["non_torch_bytes"] - new["non_torch_bytes"]
    assert new["available_kv_cache_bytes"] - old["available_kv_cache_bytes"] == freed


def test_details_without_a_version_read_from_the_text_match_the_dated_table() -> None:
    """``generation_details`` echoes the newest generation from the rows' text (no datetime on
    the plain estimate path): the same as the Generation objects say, for every runtime."""
    from oomkit.estimate.generations import LLAMACPP_BUILD_DATES, generation_details

    for runtime, gens in GENERATIONS.items():
        newest = gens[-1]
        for version in (None, "", "  "):
            assert generation_details(runtime, version) == {
                "key": newest.key,
                "label": newest.label,
                "requested": version,
                "since": newest.since.isoformat(),
                "change": newest.change,
                "memory": newest.memory,
            }
        oldest = generation_details(runtime, "2000-01")
        assert oldest is not None
        assert oldest["key"] == gens[0].key
        assert oldest["since"] == gens[0].since.isoformat()
    assert generation_details("no-such-runtime", None) is None
    builds = [b for b, _ in LLAMACPP_BUILD_DATES]
    assert builds == sorted(builds)
    assert dict(LLAMACPP_BUILD_DATES)[5274].isoformat() == "2025-05-03"  # b5274's log


def test_docs_name_every_generation_effect_and_the_ollama_layer_choice() -> None:
    """Review3 finding 21: the module docstring lists every effect key the table uses, and the
    README says how Ollama's llm/memory.go layer choice and the version forms are modelled."""
    import oomkit.estimate.generations as generations

    doc = generations.__doc__ or ""
    keys = {k for rows in generations._ROWS.values() for row in rows for k in row[7]}
    assert keys >= {"cublas_pool", "all_logits", "attn_pool", "ubatch_split", "llamacpp_date"}
    for key in keys:
        assert f"``{key}``" in doc, key
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert "`llm/memory.go` picks" in readme
    assert "`0.6.3rc1` is 0.6.3" in readme
    assert "ollama_vendored.py" in readme


def test_vllm_awq_split_k_buffer_only_before_pr_2566() -> None:
    """Before PR #2566 (0.3.1) ``awq_gemm`` held 8 split-K fp16 copies of its output: the
    profile peak of an AWQ model grows by ``8 x tokens x widest output x 2``; from 0.3.1 a
    large batch dequantizes instead, and fp16 models never took that path."""
    from oomkit.catalog.models import find_model
    from oomkit.estimate.vllm_awq import awq_split_k_bytes

    kw: dict[str, Any] = {"runtime": "vllm", "ctx": 4096, "max_num_batched_tokens": 4096}
    old = _est("llama-2-7b", quant="awq", runtime_version="0.2.7", **kw).runtime_details
    new = _est("llama-2-7b", quant="awq", runtime_version="0.3.1", **kw).runtime_details
    # llama-2-7b: merged gate_up_proj 2 x 11008 wide is the widest AWQ linear
    assert awq_split_k_bytes(find_model("llama-2-7b").spec(), tokens=4096, tp=1) == (
        8 * 4096 * 2 * 11008 * 2
    )
    grown = old["activation_peak_bytes"] - new["activation_peak_bytes"]
    assert grown == 8 * 4096 * 2 * 11008 * 2
    fp16 = _est("llama-2-7b", runtime_version="0.2.7", **kw).runtime_details
    assert fp16["activation_peak_bytes"] == new["activation_peak_bytes"]
    # quantized Mixtral ran as QuantMixtral: every expert's w1 is a full-width ReplicatedLinear
    mixtral = find_model("mixtral-8x7b").spec()
    assert awq_split_k_bytes(mixtral, tokens=32768, tp=2) == 8 * 32768 * 14336 * 2


def test_vllm_before_pr_2031_charges_only_torch_allocations() -> None:
    """0.1.0-0.2.4 sized the KV cache with ``torch.cuda.max_memory_allocated()``: no CUDA
    context, NCCL buffers or record_stream'd reserve; PR #2031 (0.2.5) charged total - free."""
    hw = hardware_for(parse_gpu_list("2xa100-80gb-sxm"))
    kw: dict[str, Any] = {"runtime": "vllm", "ctx": 4096, "tp": 2}
    old = estimate("llama-2-70b", InferenceSettings(runtime_version="0.2.0", **kw), hw)
    new = estimate("llama-2-70b", InferenceSettings(runtime_version="0.2.5", **kw), hw)
    assert resolve_generation("vllm", "0.2.4").key == "v0-2023-allocated"
    o, n = old.runtime_details, new.runtime_details
    assert o["non_torch_bytes"] == 0
    assert n["non_torch_bytes"] > 0
    charged = n["non_torch_bytes"] + n["activation_peak_bytes"] - o["activation_peak_bytes"]
    assert charged > 0
    assert o["available_kv_cache_bytes"] - n["available_kv_cache_bytes"] == charged


def test_llamacpp_metal_one_buffer_until_pr_1826() -> None:
    """llama.cpp#1815 (2023-06-12): LLaMA-33B Q4_0 (18300780544 bytes) on a 32 GB M2 fails
    'buffer 'data' size 18300780544 is larger than buffer maximum of 17179869184' though it is
    well inside the 21.3 GiB working set; PR #1826 (2023-06-18) splits it into views. The
    Q3_K_M file (14.76 GB) of PR #1826's test loads on the same 32 GB M1 Max either way."""
    from oomkit.estimate.llamacpp_metal import metal_max_buffer_bytes

    def est(quant: str, version: str, gpu: str = "m2-pro-32gb") -> Estimate:
        hw = hardware_for(parse_gpu_list(gpu))
        s = InferenceSettings(runtime="llama.cpp", quant=quant, ctx=512, runtime_version=version)
        return estimate("llama-33b", s, hw)

    assert resolve_generation("llama.cpp", "2023-06-12").key == "2023-06-metal-one-buffer"
    assert resolve_generation("llama.cpp", "2023-06-18").key == "2023-06-metal-views"
    assert metal_max_buffer_bytes(hardware_for(parse_gpu_list("m2-pro-32gb")).devices[0]) == (
        17179869184
    )
    old = est("Q4_0", "2023-06-12")
    assert any("larger than the device's maxBufferLength" in b for b in old.blockers)
    assert verdict(old, Platform(os="macos")).level == "does_not_fit"
    # the same run a week later (views): no buffer limit, the same device total; today: none
    views = est("Q4_0", "2023-06-18")
    assert not views.blockers
    assert views.devices[0].total_bytes == old.devices[0].total_bytes
    assert not estimate(
        "llama-33b",
        InferenceSettings(quant="Q4_0", ctx=512),
        hardware_for(parse_gpu_list("m2-pro-32gb")),
    ).blockers
    # Q3_K_M (the file of 14.76 GB) is under the 16 GiB maxBufferLength: it loads in June 2023
    assert not est("Q3_K_M", "2023-06-17", "m1-max-32gb").blockers
    # a CUDA device has no such limit in the same build
    cuda = estimate(
        "llama-33b",
        InferenceSettings(quant="Q4_0", ctx=512, runtime_version="2023-06-12"),
        hardware_for(parse_gpu_list("a100-40gb")),
    )
    assert not cuda.blockers


def test_llamacpp_metal_max_buffer_on_macos_14() -> None:
    """macOS 14 reports maxBufferLength as 9/16 of the installed memory (meta-llama/llama#964:
    20736 MiB views on a 36 GB M3 Pro). philipturner's LLaMA-30B Q4_0 run on a 32 GB M1 Max
    under "macOS 14 Developer Beta" (llama.cpp PR #1642, build 623, heldout12 lcpp-1642-*): the
    17.09 GiB 'data' buffer is under 18 GiB there, over macOS 13's 16 GiB."""
    from oomkit.estimate.llamacpp_metal import macos_major, metal_max_buffer_bytes

    dev = hardware_for(parse_gpu_list("m1-max-32gb")).devices[0]
    assert metal_max_buffer_bytes(dev, "macos-14") == 18 * 2**30
    assert metal_max_buffer_bytes(dev, "macos") == metal_max_buffer_bytes(dev) == 16 * 2**30
    assert macos_major("macOS 13.4") == 13
    s = InferenceSettings(runtime="llama.cpp", quant="Q4_0", ctx=2048, runtime_version="b623")
    on13 = estimate("llama-33b", s, hardware_for(parse_gpu_list("m1-max-32gb")))
    on14 = estimate("llama-33b", s, hardware_for(parse_gpu_list("m1-max-32gb"), os="macos-14"))
    assert any("maxBufferLength" in b for b in on13.blockers)
    assert not on14.blockers


def test_llamacpp_metal_scratch_buffers_until_pr_2325() -> None:
    """llama-cpp-python#438 (2023-06-30): LLaMA-13B q5_1 (9763717120 bytes) on a 16 GB M2 Pro,
    whose Metal working set is 10.67 GiB. The weights and the 400 MiB KV cache fit it, but
    builds before PR #2325 also gave Metal the fixed 'eval' (1024 MiB) + 'scr0' + 'scr1' (512
    MiB each) buffers of a 13B: 2 GiB of compute memory, which puts the run over the working
    set. From PR #2325 (build 879, 2023-07-22) the compute memory follows the graph again."""

    def est(version: str, gpu: str = "m2-pro-16gb") -> Estimate:
        hw = hardware_for(parse_gpu_list(gpu))
        s = InferenceSettings(quant="Q5_1", ctx=512, runtime_version=version)
        return estimate("llama-13b", s, hw)

    def compute(e: Estimate) -> int:
        return sum(c.n_bytes for c in e.devices[0].components if c.category == "activations")

    old, new = est("2023-06-30"), est("2023-07-22")
    assert resolve_generation("llama.cpp", "b878").key == "2023-06-metal-views"
    assert resolve_generation("llama.cpp", "b879").key == "2023-07-graph-eval"
    assert resolve_generation("llama.cpp", "b665").key == "2023-06-metal-one-buffer"
    assert compute(old) == 2048 * MiB
    assert compute(new) < 512 * MiB
    cap = old.devices[0].capacity_bytes
    assert cap is not None
    assert old.devices[0].total_bytes > cap > new.devices[0].total_bytes
    assert verdict(old, Platform(os="macos")).level != "fits"
    # a layer count the 2023 tables do not name keeps the graph's compute buffer
    qwen = estimate(
        "qwen2.5-0.5b",
        InferenceSettings(quant="Q8_0", ctx=512, runtime_version="2023-06-30"),
        hardware_for(parse_gpu_list("m2-pro-16gb")),
    )
    assert compute(qwen) < 512 * MiB
    # CUDA devices keep their modelled compute buffer in the same build
    cuda = estimate(
        "llama-13b",
        InferenceSettings(quant="Q5_1", ctx=512, runtime_version="2023-06-30"),
        hardware_for(parse_gpu_list("rtx-4090")),
    )
    assert compute(cuda) < 512 * MiB


def test_llamacpp_q2k_file_is_the_mix_of_its_day() -> None:
    """meta-llama/llama#964 (2023-12-14): Ollama's llama2:70b Q2_K on a 36 GB M3 Pro maps a
    28133.67 MiB data buffer (views of 20736 + 7391.97 MiB), over the 27648 MiB working set.
    That Q2_K is the mix of PR #2707 (Aug 2023 - Jan 2024: Q3_K but for attn_q/attn_k), 27.27
    GiB for LLaMA-v2-70B (PR #2807), not today's 2-bit 23.71 GiB (PR #5060)."""
    from oomkit.quant.llamacpp_q2k_legacy import legacy_q2k_type

    def file_bytes(model: str, version: str, quant: str = "Q2_K") -> int:
        s = InferenceSettings(quant=quant, ctx=512, runtime_version=version)
        e = estimate(model, s, hardware_for(parse_gpu_list("a100-80gb")))
        return int(e.runtime_details["weights_file_bytes"])

    assert resolve_generation("llama.cpp", "2023-12-14").effects["q2k_mix"] == "3bit-2023-08"
    assert "q2k_mix" not in resolve_generation("llama.cpp", "2024-01-21").effects
    old, new = file_bytes("llama-2-70b", "2023-12-14"), file_bytes("llama-2-70b", "2024-02-01")
    assert old == 29278486528  # 27.27 GiB, PR #2807's Q2_K of LLaMA-v2-70B
    assert round(new / GiB, 2) == 23.71  # PR #5060's new Q2_K
    assert file_bytes("llama-2-70b", "2024-02-01") == file_bytes("llama-2-70b", "2026-01-01")
    # the June 2023 k-quants mix: Q4_K attn_v and ffn_down, Q2_K for the rest (PR #1684)
    assert legacy_q2k_type("k-quants-2023-06", "ffn_down", arch="llama", n_layer=32, n_gqa=1) == (
        "Q4_K"
    )
    assert legacy_q2k_type("k-quants-2023-06", "ffn_up", arch="llama", n_layer=32, n_gqa=1) == (
        "Q2_K"
    )
    # other file types are not re-typed; a MoE file of 2023 is the pre-#4872 mix instead
    # (tests/test_llamacpp_moe_legacy_mix.py: PR #4872's 'Q2_K (Master)' 14.57 GiB)
    assert file_bytes("llama-2-70b", "2023-12-14", "Q4_K_M") == file_bytes(
        "llama-2-70b", "2024-02-01", "Q4_K_M"
    )
    assert round(file_bytes("mixtral-8x7b", "2023-12-14") / GiB, 2) == 14.57
    # the run itself: over the Metal working set with the file of its day (never "fits")
    run = estimate(
        "llama-2-70b",
        InferenceSettings(
            runtime="ollama",
            quant="Q2_K",
            ctx=4096,
            n_gpu_layers=99,  # Ollama of 2023 ran every layer on Metal (the log's buffers)
            runtime_version="2023-12-14",
        ),
        hardware_for(parse_gpu_list("m3-pro-36gb")),
    )
    dev = run.devices[0]
    assert dev.capacity_bytes is not None
    assert dev.total_bytes > dev.capacity_bytes
    assert verdict(run, Platform(os="macos")).level != "fits"
