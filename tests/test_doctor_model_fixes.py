"""The doctor's model-aware fixes: savings are the estimators' own differences.

Every saving asserted here is recomputed through the public ``oomkit.estimate`` API from the
settings the log states, never hard-coded. Logs are the real/constructed texts in
``fixtures/oom_logs`` (see PROVENANCE.md there).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from oomkit.api import estimate, load_model
from oomkit.cli.doctor import doctor_command
from oomkit.diagnose.doctor import Diagnosis, diagnose_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES, EstimatedFix
from oomkit.diagnose.parse import parse_log
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.settings import InferenceSettings
from oomkit.units import GiB, ceil_div

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"
ENV = {"NO_COLOR": "1", "COLUMNS": "100"}


def _text(name: str) -> str:
    return (LOGS / f"{name}.txt").read_text(encoding="utf-8")


def _fix(d: Diagnosis, title: str) -> EstimatedFix:
    hits = [f for f in d.fixes if f.title == title]
    assert hits, [f.title for f in d.fixes]
    assert isinstance(hits[0], EstimatedFix), hits[0]
    return hits[0]


def _dev_total(settings: InferenceSettings, hw: Hardware, model: str, i: int = 0) -> int:
    return estimate(load_model(model), settings, hw).devices[i].total_bytes


def _ranked(d: Diagnosis) -> None:
    # hardware changes (more GPUs) come after everything the user can do now (issue 9)
    hw_at = [i for i, f in enumerate(d.fixes) if f.hardware]
    assert all(i >= len(d.fixes) - len(hw_at) for i in hw_at)
    soft = [f for f in d.fixes if not f.hardware]
    sized = [f for f in soft if f.expected_saving_bytes is not None]
    # changes that make it fit first (least intrusive first), then unknown, then not enough;
    # within the latter two by saving
    groups = [0 if f.fits else 2 if f.fits is False else 1 for f in sized]
    assert groups == sorted(groups)
    fitting = [(f.order or 0, -(f.expected_saving_bytes or 0)) for f in sized if f.fits]
    assert fitting == sorted(fitting)
    for g in (1, 2):  # by saving, a lever with a large speed cost (Fix.slow) after the others
        saved = [
            (f.slow, -(f.expected_saving_bytes or 0))
            for f, k in zip(sized, groups, strict=True)
            if k == g
        ]
        assert saved == sorted(saved)
    unsized_at = [i for i, f in enumerate(soft) if f.expected_saving_bytes is None]
    assert all(i >= len(sized) for i in unsized_at)  # unknown savings come last


# --- llama.cpp: the log names the model (general.name), no flags -----------------------------

# constructed-llamacpp-kv-fail: Llama 3.1 8B at n_ctx 131072, n_ubatch 512, flash_attn 0, 33/33
# layers offloaded; the 16 GiB KV buffer fails on CUDA0. No file type is printed (Q4_K_M assumed).
KV_FAIL = InferenceSettings(
    runtime="llama.cpp", ctx=131072, ubatch=512, flash_attn=False, n_gpu_layers=33
)
ONE_GPU = Hardware(devices=(DeviceTarget(name="CUDA0"),))


def test_llamacpp_log_model_resolved_without_flags() -> None:
    d = diagnose_text(_text("constructed-llamacpp-kv-fail"))
    base = _dev_total(KV_FAIL, ONE_GPU, "llama-3.1-8b")
    quarter = _fix(d, "Quarter the context: -c 32768")
    assert quarter.commands == ("-c 32768",)
    ctx_q = _dev_total(
        InferenceSettings(
            runtime="llama.cpp", ctx=32768, ubatch=512, flash_attn=False, n_gpu_layers=33
        ),
        ONE_GPU,
        "llama-3.1-8b",
    )
    assert quarter.expected_saving_bytes == base - ctx_q
    assert "KV cache at -c 131072 is 16.00 GiB; at -c 32768 it is 4.00 GiB" in quarter.why
    assert "llama-3.1-8b" in quarter.why
    assert "Q4_K_M assumed" in quarter.why
    fa = _fix(d, "Enable flash attention: -fa on")  # the rule's unsized one is replaced
    fa_on = InferenceSettings(
        runtime="llama.cpp", ctx=131072, ubatch=512, flash_attn=True, n_gpu_layers=33
    )
    assert fa.expected_saving_bytes == base - _dev_total(fa_on, ONE_GPU, "llama-3.1-8b")
    quant = _fix(d, "Use a smaller quantization: IQ4_XS")  # next below the assumed Q4_K_M
    iq4 = InferenceSettings(
        runtime="llama.cpp",
        quant="IQ4_XS",
        ctx=131072,
        ubatch=512,
        flash_attn=False,
        n_gpu_layers=33,
    )
    assert quant.expected_saving_bytes == base - _dev_total(iq4, ONE_GPU, "llama-3.1-8b")
    _ranked(d)


def test_measured_log_fix_keeps_its_saving_and_gains_the_estimate() -> None:
    # the rule sized "Halve the context" from the logged 16 GiB KV buffer; the estimator's
    # figure (KV + the compute buffer that also shrinks without flash attention) is appended
    d = diagnose_text(_text("constructed-llamacpp-kv-fail"))
    half = next(f for f in d.fixes if f.title == "Halve the context: -c 65536")
    assert half.expected_saving_bytes == 8 * GiB
    assert "model-aware estimate puts it at" in half.why
    assert sum(f.title == "Halve the context: -c 65536" for f in d.fixes) == 1


def test_vram_flag_gives_largest_ngl_and_context_that_fit() -> None:
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=24 * GiB),))
    d = diagnose_text(_text("constructed-llamacpp-kv-fail"), hardware=hw)
    ngl = next(f for f in d.fixes if f.title.startswith("Offload ") and "-ngl" in f.title)
    n = int(ngl.commands[0].split()[-1])

    def total(ctx: int = 131072, n_gpu_layers: int = 33) -> int:
        s = InferenceSettings(
            runtime="llama.cpp", ctx=ctx, ubatch=512, flash_attn=False, n_gpu_layers=n_gpu_layers
        )
        return _dev_total(s, hw, "llama-3.1-8b")

    assert (
        total(n_gpu_layers=n) + HEADROOM_BYTES
        <= 24 * GiB
        < total(n_gpu_layers=n + 1) + (HEADROOM_BYTES)
    )
    assert ngl.expected_saving_bytes == total() - total(n_gpu_layers=n)
    assert "left on cuda:0, fits" in ngl.why
    fit = next(f for f in d.fixes if f.title.startswith("Largest context that fits: -c "))
    c = int(fit.commands[0].split()[-1])
    assert c % 256 == 0
    assert total(ctx=c) + HEADROOM_BYTES <= 24 * GiB < total(ctx=c + 256) + HEADROOM_BYTES
    _ranked(d)


def test_model_flag_overrides_the_log() -> None:
    d = diagnose_text(_text("constructed-llamacpp-kv-fail"), model=load_model("qwen2.5-7b"))
    quarter = _fix(d, "Quarter the context: -c 32768")
    assert "qwen2.5-7b" in quarter.why
    assert "llama-3.1-8b" not in quarter.why
    ctx_q = InferenceSettings(
        runtime="llama.cpp", ctx=32768, ubatch=512, flash_attn=False, n_gpu_layers=33
    )
    assert quarter.expected_saving_bytes == _dev_total(KV_FAIL, ONE_GPU, "qwen2.5-7b") - _dev_total(
        ctx_q, ONE_GPU, "qwen2.5-7b"
    )


def test_runtime_and_quant_flags_win() -> None:
    # the same log as Ollama at Q8_0: commands in Ollama's terms, next quant below Q8_0
    d = diagnose_text(
        _text("constructed-llamacpp-kv-fail"),
        runtime="ollama",
        settings=InferenceSettings(quant="Q8_0"),
    )
    q = _fix(d, "Use a smaller quantization: Q6_K")
    assert q.commands == ("ollama pull <model>:<tag>-q6_K",)
    half = next(f for f in d.fixes if f.title == "Quarter the context: num_ctx 32768")
    assert "/set parameter num_ctx 32768" in half.commands


# --- llama.cpp: MoE on 15 GPUs, compute buffer failure ----------------------------------------


def test_moe_multi_gpu_n_cpu_moe_and_flash_attention() -> None:
    # DeepSeek R1 Q2_K on 15 RTX 3090s, n_ctx 32768, flash_attn 0: the 8.7 GiB compute buffer
    # fails on CUDA0. The estimate uses the log's per-GPU model buffers as the tensor split.
    text = _text("measured-iklcpp-p235-deepseek-r1-q2k-15x3090-32k-oom")
    d = diagnose_text(text)
    ctx = parse_log(text).context
    model = ctx.device_buffers("model")
    split = tuple(float(model[f"CUDA{i}"]) for i in range(15))
    from oomkit.hardware.catalog import find_gpu

    dev = find_gpu("rtx-3090").to_device_target()
    hw = Hardware(devices=(dev,) * 15)

    def s(**kw: object) -> InferenceSettings:
        base = {
            "runtime": "llama.cpp",
            "quant": "Q2_K",
            "ctx": 32768,
            "batch_size": 2048,
            "ubatch": 512,
            "flash_attn": False,
            "n_gpu_layers": 62,
            "tensor_split": split,
        }
        return InferenceSettings(**{**base, **kw})  # type: ignore[arg-type]

    base_total = _dev_total(s(), hw, "deepseek-r1")
    fa = _fix(d, "Enable flash attention: -fa on")
    assert fa.expected_saving_bytes == base_total - _dev_total(
        s(flash_attn=True), hw, "deepseek-r1"
    )
    moe = next(f for f in d.fixes if f.title.startswith("Keep the experts of "))
    n = int(moe.commands[0].split()[-1])
    assert moe.commands[0] == f"--n-cpu-moe {n}"
    assert moe.expected_saving_bytes == base_total - _dev_total(s(n_cpu_moe=n), hw, "deepseek-r1")
    est = estimate(load_model("deepseek-r1"), s(n_cpu_moe=n), hw)
    assert all(x.total_bytes + HEADROOM_BYTES <= (x.capacity_bytes or 0) for x in est.devices)
    _ranked(d)


def test_unresolvable_model_keeps_generic_fixes_flagged() -> None:
    # the 145 GiB weights failure names no model; with an unknown general.name nothing changes
    text = "llama_model_loader: - kv   2: general.name str = Frobnicator 9000 13B\n" + _text(
        "oom-lcpp-20431-weights-145gb"
    )
    d = diagnose_text(text)
    assert d.context.model_name == "Frobnicator 9000 13B"
    assert not any(isinstance(f, EstimatedFix) for f in d.fixes)
    generic = [f for f in d.fixes if f.generic]
    assert generic
    assert all(f.why.startswith("Generic advice") for f in generic)
    assert all(f.expected_saving_bytes is None for f in generic)
    # naming the model replaces the generic -ngl/quant advice with computed fixes
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=24 * GiB),))
    d2 = diagnose_text(text, model=load_model("llama-3.1-70b"), hardware=hw)
    titles = [f.title for f in d2.fixes]
    # the estimate disagrees with the 141 GiB the log failed to allocate, and says so
    assert any("failed weights allocation is 141.42 GiB" in f.why for f in d2.fixes)
    assert not any(t.startswith("Offload fewer layers") for t in titles), titles
    assert any(t.startswith("Offload ") and "-ngl" in t for t in titles), titles
    _ranked(d2)


def test_gallocr_failure_with_model_infers_context_from_kv() -> None:
    # llama-cpp-python log: the 144 MiB compute buffer (ggml_gallocr_reserve_n) fails on CUDA4,
    # KV self 5120 MiB f16, no n_ctx printed: with Llama 3.1 70B (320 KiB/token) that is 16384
    d = diagnose_text(
        _text("oom-llamacpppython-ollama6860-small-gpu"), model=load_model("llama-3.1-70b")
    )
    est = [f for f in d.fixes if isinstance(f, EstimatedFix)]
    assert est
    assert all("n_ctx 16384 inferred from the 5.00 GiB KV cache" in f.why for f in est)
    _ranked(d)


# --- Ollama --------------------------------------------------------------------------------------


def test_ollama_fixes_in_ollama_terms() -> None:
    # new-engine layout: 4.1 GiB weights, 1.0 GiB KV, 560 MiB graph on CUDA0; no num_ctx logged
    d = diagnose_text(_text("constructed-ollama-new-engine"), model=load_model("mistral:7b"))
    quarter = _fix(d, "Quarter the context: num_ctx 2048")
    assert quarter.commands[0] == "/set parameter num_ctx 2048"
    assert "n_ctx 8192 inferred from the 1.00 GiB KV cache" in quarter.why
    hw = Hardware(devices=(DeviceTarget(name="CUDA0"),))
    big = estimate(load_model("mistral:7b"), InferenceSettings(runtime="ollama", ctx=8192), hw)
    little = estimate(load_model("mistral:7b"), InferenceSettings(runtime="ollama", ctx=2048), hw)
    # the log's 560 MiB compute buffer on CUDA0 (llama.cpp prints the measured size) scales the
    # estimate's compute, so the saving is the KV difference plus the scaled compute difference
    assert "compute buffer 560.00 MiB as the log's CUDA0 compute buffer line states" in quarter.why
    a, b = big.devices[0], little.devices[0]
    scale = 560 * 2**20 / a.activations_bytes
    kv = a.kv_cache_bytes - b.kv_cache_bytes
    want = kv + (a.total_bytes - a.activations_bytes - b.total_bytes + b.activations_bytes - kv)
    want += round((a.activations_bytes - b.activations_bytes) * scale)
    assert quarter.expected_saving_bytes is not None
    assert abs(quarter.expected_saving_bytes - want) <= 2**20
    _ranked(d)
    # on a 4 GiB card: the largest num_gpu that keeps Ollama's 457 MiB reserve (and ours) free
    four = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=4 * GiB),))
    d4 = diagnose_text(
        _text("constructed-ollama-new-engine"), model=load_model("mistral:7b"), hardware=four
    )
    ngl = next(f for f in d4.fixes if f.title.startswith("Offload "))
    n = int(ngl.commands[0].split()[-1])
    assert ngl.commands[0] == f"/set parameter num_gpu {n}"
    hw4 = Hardware(devices=(DeviceTarget(name="CUDA0", capacity_bytes=4 * GiB),))

    def calibrated(layers: int) -> int:  # the device total with the logged compute buffer
        s = InferenceSettings(runtime="ollama", ctx=8192, n_gpu_layers=layers)
        dev = estimate(load_model("mistral:7b"), s, hw4).devices[0]
        return dev.total_bytes + round(dev.activations_bytes * (scale - 1))

    fit, over = calibrated(n), calibrated(n + 1)
    assert fit + HEADROOM_BYTES <= 4 * GiB < over + HEADROOM_BYTES
    assert not any(f.title == "Put fewer layers on the GPU" for f in d4.fixes)


# --- vLLM ----------------------------------------------------------------------------------------

# measured-vllm-10517: Llama 3.1 8B, max_model_len 29000, utilization 0.90 of a 23.58 GiB 3090;
# vLLM logged a 2.89 GiB KV cache (1478 blocks = 23648 tokens).


def _slack(settings: InferenceSettings, hw: Hardware) -> int:
    # one device per TP rank: oomkit refuses --tp N on fewer GPUs (issue 10)
    hw = Hardware(devices=hw.devices * (settings.tp or 1), host_ram_bytes=hw.host_ram_bytes)
    est = estimate(load_model("llama-3.1-8b"), settings, hw)
    rd: dict[str, int] = dict(est.runtime_details)  # type: ignore[arg-type]
    need = rd["kv_bytes_per_token_per_rank"] * ceil_div(rd["max_model_len"], 16) * 16
    return rd["available_kv_cache_bytes"] - need


def test_vllm_fixes_are_kv_slack_differences() -> None:
    text = _text("measured-vllm-10517-llama31-8b-3090-29k")
    d = diagnose_text(text, model=load_model("llama-3.1-8b"))
    total = parse_log(text).context.total_gpu_memory_bytes
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=total),))
    s0 = InferenceSettings(runtime="vllm", ctx=29000, gpu_memory_utilization=0.9)
    base = _slack(s0, hw)
    tp = _fix(d, "Hardware change: Shard over 2 GPUs: --tensor-parallel-size 2")
    assert tp.commands == ("--tensor-parallel-size 2",)
    assert (
        tp.expected_saving_bytes
        == _slack(
            InferenceSettings(runtime="vllm", ctx=29000, gpu_memory_utilization=0.9, tp=2), hw
        )
        - base
    )
    fp8 = _fix(d, "Store the KV cache in fp8: --kv-cache-dtype fp8")
    s_fp8 = InferenceSettings(
        runtime="vllm",
        ctx=29000,
        gpu_memory_utilization=0.9,
        cache_type_k="fp8",
        cache_type_v="fp8",
    )
    assert fp8.expected_saving_bytes == _slack(s_fp8, hw) - base
    assert "KV pool anchored on the 23648 KV tokens vLLM reported" in fp8.why
    eager = _fix(d, "Skip CUDA graphs: --enforce-eager")
    s_eager = InferenceSettings(
        runtime="vllm", ctx=29000, gpu_memory_utilization=0.9, enforce_eager=True
    )
    assert eager.expected_saving_bytes == _slack(s_eager, hw) - base
    # vLLM's own capacity figure names the length (same title as the log rule: merged)
    short = next(f for f in d.fixes if f.title == "Serve a shorter context: --max-model-len 23648")
    assert "model-aware estimate" in short.why
    util = next(f for f in d.fixes if f.title == "Raise --gpu-memory-utilization to 0.93")
    assert "the smallest utilization (from 0.90) whose pool holds the request" in util.why
    _ranked(d)
    # a 670 MiB shortfall: the serve settings that cover it lead, not fp8 weights (6.5 GiB
    # freed, first by saving alone); the merged rule fixes keep the estimate's "fits". The
    # utilization first: vLLM's error names it first and the request stays whole (review 15)
    assert [f.title for f in d.fixes[:2]] == [util.title, short.title]
    assert short.fits is True
    assert util.fits is True
    weights = _fix(d, "Quantize the weights to fp8: --quantization fp8")
    assert d.fixes.index(weights) > d.fixes.index(fp8)


def test_vllm_capacity_inferred_from_reported_kv() -> None:
    # no GPU total in the message: the capacity is set so the estimate's pool is the 9.57 GiB
    d = diagnose_text(_text("constructed-vllm-v1-kv"), model=load_model("llama-3.1-8b"))
    tp = _fix(d, "Hardware change: Shard over 2 GPUs: --tensor-parallel-size 2")
    assert "inferred" in tp.why
    assert "9.57 GiB" in tp.why
    assert any(f.title == "Serve a shorter context: --max-model-len 78336" for f in d.fixes)
    _ranked(d)


def test_vllm_log_without_model_stays_log_only() -> None:
    d = diagnose_text(_text("constructed-vllm-v1-kv"))
    assert d.fixes
    assert not any(isinstance(f, EstimatedFix) for f in d.fixes)


# --- transformers ------------------------------------------------------------


def test_transformers_fixes_with_explicit_model() -> None:
    # Llama-2-7B on an 11 GiB card (meta-llama/llama#82), loaded in fp32 with a batch of 4
    user = InferenceSettings(runtime="transformers", quant="fp32", parallel=4, ctx=512)
    d = diagnose_text(
        _text("oom-torch-llama-82-7b-11gb"), model=load_model("llama-2-7b"), settings=user
    )
    hw = Hardware(devices=(DeviceTarget(name="GPU"),))
    base = _dev_total(user, hw, "llama-2-7b")
    bf16 = _fix(d, "Load in bf16 instead of fp32")
    assert "torch.bfloat16" in bf16.commands[0]
    s_bf16 = InferenceSettings(runtime="transformers", quant="bf16", parallel=4, ctx=512)
    assert bf16.expected_saving_bytes == base - _dev_total(s_bf16, hw, "llama-2-7b")
    nf4 = _fix(d, "Load in 4-bit NF4 (bitsandbytes)")
    assert "load_in_4bit=True" in nf4.commands[0]
    assert not any(f.title.startswith("Load the weights quantized") for f in d.fixes)
    batch = _fix(d, "Halve the batch: batch size 2")
    s_b2 = InferenceSettings(runtime="transformers", quant="fp32", parallel=2, ctx=512)
    assert batch.expected_saving_bytes == base - _dev_total(s_b2, hw, "llama-2-7b")
    _ranked(d)


def test_training_step_gets_no_inference_fixes() -> None:
    # an OOM in loss.backward() is a training step: the inference estimate would not size it,
    # the training estimator does (tests/test_doctor_training.py)
    tb = 'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n'
    text = tb + "    loss.backward()\n" + _text("oom-torch-llama-82-7b-11gb")
    d = diagnose_text(text, model=load_model("llama-2-7b"))
    assert d.context.frame_phase == "backward"
    assert d.fixes
    sized = [f for f in d.fixes if isinstance(f, EstimatedFix)]
    assert sized
    assert all("training estimate" in f.why for f in sized)
    assert not any(f.title.startswith(("Load in", "Halve the batch")) for f in d.fixes)


def test_plain_pytorch_log_imports_no_estimator() -> None:
    code = (
        "import sys\nfrom oomkit.diagnose.doctor import diagnose_text\n"
        f"d = diagnose_text(open({str(LOGS / 'oom-torch-lerf-73.txt')!r}).read())\n"
        "assert d.oom_found\n"
        "print(sorted(m for m in sys.modules if m.startswith(('oomkit.estimate', "
        "'oomkit.catalog', 'oomkit.loaders', 'oomkit.api', 'torch'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"


# --- CLI ------------------------------------------------------------


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_cli_model_and_vram_flags(runner: CliRunner) -> None:
    log = str(LOGS / "constructed-llamacpp-kv-fail.txt")
    res = runner.invoke(
        doctor_command, ["--json", "--model", "qwen2.5-7b", "--vram", "12GiB", log], env=ENV
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    fixes = doc["fixes"]
    assert any("qwen2.5-7b" in f["why"] for f in fixes)
    assert any(f.get("estimated") is True for f in fixes)
    assert all("qwen2.5-7b" in f["why"] for f in fixes if f.get("estimated"))
    assert any(f["title"].startswith("Offload ") for f in fixes)
    sized = [f for f in fixes if f["expected_saving_bytes"] is not None and not f["hardware"]]
    # with a capacity (--vram) the estimate knows which make it fit: those first (the least
    # intrusive first: of the context cuts the smallest), then the unknown, then the
    # not-enough ones, by saving
    groups = [0 if f.get("fits") else 2 if f.get("fits") is False else 1 for f in sized]
    assert groups == sorted(groups)
    assert 0 in groups
    for g in (1, 2):
        saved = [f["expected_saving_bytes"] for f, k in zip(sized, groups, strict=True) if k == g]
        assert saved == sorted(saved, reverse=True)
    cut_titles = ("Halve the context", "Quarter the context", "Largest context that fits")
    ctx_cuts = [
        int(f["title"].rsplit(" ", 1)[1])
        for f, k in zip(sized, groups, strict=True)
        if k == 0 and f["title"].startswith(cut_titles)
    ]
    assert len(ctx_cuts) >= 2
    assert ctx_cuts == sorted(ctx_cuts, reverse=True)
    res = runner.invoke(doctor_command, ["--ctx", "32k", "--quant", "Q8_0", log], env=ENV)
    assert res.exit_code == 0
    assert "Q8_0" in res.stdout
    assert "-c 8192" in res.stdout  # a quarter of the given 32768


def test_cli_bad_names_exit_1(runner: CliRunner) -> None:
    log = str(LOGS / "constructed-llamacpp-kv-fail.txt")
    res = runner.invoke(doctor_command, ["--model", "no-such-model-xyz", log], env=ENV)
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: ")
    res = runner.invoke(doctor_command, ["--gpu", "rtx-9999", log], env=ENV)
    assert res.exit_code == 2  # a misspelt --gpu is a usage error, as in every command
    res = runner.invoke(doctor_command, ["--vram", "24", log], env=ENV)
    assert res.exit_code == 2  # a size needs a unit (click usage error)


def test_cli_bad_quant_is_reported_not_hidden(runner: CliRunner) -> None:
    log = str(LOGS / "constructed-llamacpp-kv-fail.txt")
    res = runner.invoke(doctor_command, ["--quant", "Q4KM", log], env=ENV)
    # refused up front like `estimate --quant Q4KM` (it was a warning under a diagnosis whose
    # fixes then ignored the user's quant), with the suggestion
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: Unknown llama.cpp file type 'Q4KM'")
    assert "Did you mean 'Q4_K_M'" in res.stderr
    assert res.stdout == ""


def test_kv_stage_failure_is_not_compared_with_the_weights() -> None:
    """A cudaMalloc the log ties to llama_kv_cache_init is the KV cache, not the weights."""
    log = (
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 16384.00 MiB on device 0: "
        "cudaMalloc failed: out of memory\n"
        "llama_kv_cache_init: failed to allocate buffer for kv cache\n"
    )
    hw = Hardware(devices=(DeviceTarget(name="NVIDIA GeForce RTX 4090", capacity_bytes=24 * GiB),))
    d = diagnose_text(
        log,
        model=load_model("llama-3.1-8b"),
        hardware=hw,
        settings=InferenceSettings(quant="Q4_K_M", ctx=131072),
    )
    assert d.cause == "kv_cache_or_context"
    assert d.fixes
    assert not any("failed weights allocation" in f.why for f in d.fixes)


def test_llamacpp_flash_attention_fix_in_the_logs_build_syntax() -> None:
    # the same log from build 4500 (Jan 2025): -fa was a bare flag until b6343 (PR #15434), so
    # "-fa on" would be refused there ("unknown argument: on")
    old = "build: 4500 (abc1234) with cc (GCC) 13.2.0 for x86_64-linux-gnu\n"
    d = diagnose_text(old + _text("constructed-llamacpp-kv-fail"))
    fa = _fix(d, "Enable flash attention: -fa")
    assert fa.title == "Enable flash attention: -fa"
    assert "-fa" in fa.commands


_OLLAMA_GPTOSS = (
    "time=2025-08-06T10:00:00.100Z level=INFO source=server.go:175 msg=offload library=cuda "
    'layers.requested=-1 layers.model=25 layers.offload=25 layers.split="" '
    'memory.available="[11.6 GiB]" memory.gpu_overhead="0 B" memory.required.full="10.9 GiB" '
    'memory.required.partial="10.9 GiB" memory.required.kv="300.0 MiB" '
    'memory.required.allocations="[10.9 GiB]" memory.weights.total="11.7 GiB" '
    'memory.weights.repeating="10.6 GiB" memory.weights.nonrepeating="1.1 GiB" '
    'memory.graph.full="1.0 GiB" memory.graph.partial="1.0 GiB"\n'
    'time=2025-08-06T10:00:01.000Z level=INFO source=server.go:438 msg="starting llama server" '
    'cmd="/usr/bin/ollama runner --ollama-engine --model /root/.ollama/models/blobs/sha256-abc '
    '--ctx-size 8192 --batch-size 512 --n-gpu-layers 25 --threads 8 --parallel 1 --port 1"\n'
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1536.00 MiB on device 0: cudaMalloc "
    "failed: out of memory\n"
    "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 1610612736\n"
    'time=2025-08-06T10:00:05.000Z level=ERROR source=sched.go:476 msg="error loading llama '
    'server" error="llama runner process has terminated: cudaMalloc failed: out of memory"'
)


def test_the_ggml_lines_of_an_ollama_runner_get_ollamas_fixes() -> None:
    """The first OOM line of an Ollama log is the runner's ggml line, so the fixes were sized by
    llama.cpp's estimator and written as llama-server flags (-ngl 22, --n-cpu-moe 2, -ub 256):
    the log's Ollama lines (msg=offload, the runner error) make them Ollama's."""
    from oomkit.api import load_model

    d = diagnose_text(_OLLAMA_GPTOSS, model=load_model("gpt-oss-20b", offline=True))
    sized = [f for f in d.fixes if f.expected_saving_bytes]
    assert sized
    commands = " ".join(c for f in sized for c in f.commands)
    assert "num_gpu" in commands or "num_ctx" in commands
    assert "-ngl" not in commands
    assert "--n-cpu-moe" not in commands
    assert "oomkit's ollama estimate" in sized[0].why
    assert "Q4_K_M assumed" not in sized[0].why


def test_fitting_llamacpp_fixes_least_intrusive_first() -> None:
    """The Fixes header promises the fitting ones least intrusive first: a quantized KV cache,
    then the smallest context cut ("Largest context that fits"), then halving, quartering, then
    fewer GPU layers; by saving alone "Quarter the context" led and the largest context that
    fits sat below "-ngl 23"."""
    hw = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=20 * GiB),))
    d = diagnose_text(_text("constructed-llamacpp-kv-fail"), hardware=hw)
    fitting = [f.title.split(":")[0] for f in d.fixes if f.fits]
    want = [
        "Quantize the KV cache to q8_0",
        "Largest context that fits",
        "Halve the context",
        "Quarter the context",
    ]
    assert [t for t in fitting if t in want] == want
    assert fitting.index("Quarter the context") < next(
        i for i, t in enumerate(fitting) if t.startswith("Offload ")
    )
    _ranked(d)


def test_moe_fix_on_a_build_before_n_cpu_moe_uses_override_tensor() -> None:
    """llama-server gained --n-cpu-moe in b6089 (PR #15077, 2025-08-04): a log of build 5500
    gets the -ot overrides that option stands for, not a flag its build rejects."""
    text = _text("measured-iklcpp-p235-deepseek-r1-q2k-15x3090-32k-oom")
    old = diagnose_text("build: 5500 (abc1234) with cc for x86_64\n" + text)
    moe = next(f for f in old.fixes if f.title.startswith("Keep the experts of "))
    n = int(moe.title.rsplit(" ", 1)[1])
    layers = "|".join(str(i) for i in range(n))
    assert moe.commands == (f"-ot 'blk\\.({layers})\\.ffn_(up|down|gate)_exps=CPU'",)
    new = diagnose_text("build: 7000 (abc1234) with cc for x86_64\n" + text)
    moe = next(f for f in new.fixes if f.title.startswith("Keep the experts of "))
    assert moe.commands[0].startswith("--n-cpu-moe ")


def test_fixes_of_a_run_that_already_fits_do_not_claim_to_make_it_fit() -> None:
    """Ollama's "unable to allocate CUDA0 buffer" with --model llama-3.1-8b on a 12 GB card:
    the estimate of the run as logged (5.2 GiB) fits already, so no fix may claim to be the
    one that makes it fit (they ranked first as such, the smallest micro-batch on top), and
    each says the settings do not explain the failure."""
    from oomkit.hardware.catalog import find_gpu

    text = (
        'time=2025-01-01T00:00:00.000Z level=ERROR source=sched.go:455 msg="error loading '
        'llama server" error="llama runner process has terminated: error loading model: '
        'unable to allocate CUDA0 buffer"'
    )
    hw = Hardware(devices=(find_gpu("rtx-3060").to_device_target(),))
    d = diagnose_text(text, model=load_model("llama-3.1-8b"), hardware=hw)
    est = [f for f in d.fixes if isinstance(f, EstimatedFix)]
    assert est
    assert all(f.fits is None for f in est)
    assert all("do not explain the failure" in f.why for f in est)
    _ranked(d)
