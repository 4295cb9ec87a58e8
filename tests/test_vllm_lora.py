"""vLLM ``--enable-lora`` (issue #13): the adapter slots from vLLM's own shapes, the graph sets,
the settings' boundary, the CLI flags and the real record that died with LoRA on an A30."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oomkit.catalog.models import find_model
from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.estimate.vllm import plan_vllm
from oomkit.estimate.vllm_engines import CUDAGRAPH_POOL_MAX
from oomkit.estimate.vllm_lora import (
    dense_lora_bytes,
    embedding_lora_bytes,
    moe_lora_bytes,
    punica_meta_bytes,
)
from oomkit.planner.commands import emit_command, parse_command
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.settings_lora import LORA_RANKS
from oomkit.units import GiB

ROOT = Path(__file__).resolve().parent.parent
QWEN3_4B = find_model("qwen3-4b").spec()
A30 = DeviceTarget(name="NVIDIA A30", capacity_bytes=24 * GiB)


def _record(rid: str) -> dict[str, object]:
    for line in (ROOT / "tests/fixtures/verdict_runs/heldout31.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["id"] == rid:
            return dict(rec)
    raise AssertionError(rid)


def _lora(**kw: object) -> InferenceSettings:
    base: dict[str, object] = {
        "runtime": "vllm",
        "quant": "bf16",
        "ctx": 4096,
        "gpu_memory_utilization": 0.8,
        "llm_class": True,
        "runtime_version": "0.19.1",
        "enable_lora": True,
    }
    return InferenceSettings(**{**base, **kw})  # type: ignore[arg-type]


def test_qwen3_4b_config_is_the_one_the_shapes_use() -> None:
    s = QWEN3_4B  # Qwen/Qwen3-4B config.json
    assert (s.hidden_size, s.intermediate_size, s.num_hidden_layers) == (2560, 9728, 36)
    assert (s.num_attention_heads, s.num_key_value_heads, s.head_dim) == (32, 8, 128)
    assert s.vocab_size == 151936


def test_linear_slots_are_vllms_stacked_a_and_b() -> None:
    """create_lora_weights: per slice A (max_loras, 1, rank, in), B (max_loras, 1, out, rank);
    qkv_proj 3 slices (q 4096, k 1024, v 1024) over hidden 2560, o_proj 4096 -> 2560,
    gate_up_proj 2 x 9728 over 2560, down_proj 9728 -> 2560."""
    r, h, q, kv, inter = 16, 2560, 32 * 128, 8 * 128, 9728
    a = r * (3 * h + q + 2 * h + inter)
    b = r * (q + 2 * kv + h + 2 * inter + h)
    per_layer = (a + b) * 2  # bf16 (lora_dtype auto = the model's)
    got = dense_lora_bytes(QWEN3_4B, layers=range(36), loras=1, rank=16, elem=2)
    assert got == 36 * per_layer == 66_060_288
    # max_loras and rank scale it linearly; fp32 is not a vLLM lora dtype, fp16 the same size
    assert dense_lora_bytes(QWEN3_4B, layers=range(36), loras=4, rank=64, elem=2) == 16 * got


def test_tensor_parallel_shards_what_vllm_shards() -> None:
    """Column layers keep the whole input and their output shard; row layers their input
    shard and the whole output; fully_sharded_loras also splits the column A's rank and the
    row B's output."""
    r, h, q, kv, inter, tp = 16, 2560, 4096, 1024, 9728, 2
    a = r * (3 * h + q // tp + 2 * h + inter // tp)
    b = r * ((q + 2 * kv) // tp + h + 2 * inter // tp + h)
    got = dense_lora_bytes(QWEN3_4B, layers=range(1), loras=1, rank=r, elem=2, tp=tp)
    assert got == (a + b) * 2
    fs = dense_lora_bytes(
        QWEN3_4B, layers=range(1), loras=1, rank=r, elem=2, tp=tp, fully_sharded=True
    )
    a_fs = (r // tp) * (3 * h + 2 * h) + r * (q // tp + inter // tp)
    b_fs = r * ((q + 2 * kv) // tp + h // tp + 2 * inter // tp + h // tp)
    assert fs == (a_fs + b_fs) * 2 < got


def test_embedding_and_extra_vocab() -> None:
    """VocabParallelEmbeddingWithLoRA: A (max_loras, vocab, rank), B (max_loras, 1, hidden,
    rank); before 0.12 the 256 extra tokens add rows to A and embeddings_tensors."""
    now = embedding_lora_bytes(QWEN3_4B, loras=1, rank=16, elem=2, extra_vocab=0)
    assert now == (151936 * 16 + 2560 * 16) * 2
    old = embedding_lora_bytes(QWEN3_4B, loras=1, rank=16, elem=2, extra_vocab=256)
    assert old - now == (256 * 16 + 256 * 2560) * 2


def test_moe_experts_get_slots_from_0_11_1() -> None:
    moe = find_model("qwen3-30b-a3b").spec()  # 128 experts of 768, hidden 2048, 48 layers
    per_layer = 128 * (2 * (16 * 2048 + 768 * 16) + 16 * 768 + 2048 * 16) * 2
    assert moe_lora_bytes(moe, layers=range(48), loras=1, rank=16, elem=2) == 48 * per_layer
    assert moe_lora_bytes(QWEN3_4B, layers=range(36), loras=1, rank=16, elem=2) == 0
    dev = DeviceTarget(name="NVIDIA H100 80GB HBM3", capacity_bytes=80 * GiB)
    new = plan_vllm(moe, _lora(runtime_version="0.11.1"), dev, engine="v1-0.11.1")
    old = plan_vllm(moe, _lora(runtime_version="0.11.0"), dev, engine="v1-0.11")
    assert new.lora is not None
    assert old.lora is not None
    assert new.lora.moe_bytes == 48 * per_layer
    assert old.lora.moe_bytes == 0


def test_punica_metadata_is_a_few_bytes_per_token() -> None:
    assert punica_meta_bytes(loras=1, batched=8192, seqs=256) == 8 * (
        3 * 8192 + 3 * 256
    ) + 2 * 4 * (2 * 8192 + 2 * 2 + 1 + 2)


def test_plan_adds_the_slots_to_the_weights_and_shrinks_the_pool() -> None:
    plain = plan_vllm(QWEN3_4B, _lora(enable_lora=None), A30, engine="v1-0.17")
    lora = plan_vllm(QWEN3_4B, _lora(), A30, engine="v1-0.17")
    assert plain.lora is None
    assert lora.lora is not None
    assert lora.weights_bytes - plain.weights_bytes == lora.lora.load_bytes
    assert lora.lora.load_bytes == 66_060_288 + 4_943_872 + lora.lora.meta_bytes
    assert plain.kv_pool_bytes is not None
    assert lora.kv_pool_bytes is not None
    assert lora.kv_pool_bytes < plain.kv_pool_bytes
    # cudagraph_specialize_lora (PR #25914, after 0.11.0): graphs with and without LoRA
    assert lora.lora.graph_sets == 2
    assert lora.cudagraph_bytes == 2 * plain.cudagraph_bytes > 0


@pytest.mark.parametrize(
    ("version", "engine", "extra", "sets"),
    [
        ("0.6.4", "v0-2024", {}, 1),
        ("0.11.0", "v1-0.11", {}, 1),
        ("0.11.1", "v1-0.11.1", {}, 2),
        ("0.19.1", "v1-0.17", {}, 2),
        ("0.19.1", "v1-0.17", {"cudagraph_specialize_lora": False}, 1),
        ("0.19.1", "v1-0.17", {"enforce_eager": True}, 1),
    ],
)
def test_graph_sets_follow_the_release(
    version: str, engine: str, extra: dict[str, object], sets: int
) -> None:
    p = plan_vllm(QWEN3_4B, _lora(runtime_version=version, **extra), A30, engine=engine)
    assert p.lora is not None
    assert p.lora.graph_sets == sets
    plain = plan_vllm(
        QWEN3_4B,
        _lora(runtime_version=version, enable_lora=None, enforce_eager=extra.get("enforce_eager")),
        A30,
        engine=engine,
    )
    assert p.cudagraph_bytes == plain.cudagraph_bytes * sets
    assert (p.cudagraph_bytes == 0) == bool(extra.get("enforce_eager"))


def test_more_loras_or_rank_never_needs_less() -> None:
    """Monotonic: more adapter slots or a larger rank never shrink what is needed, nor grow
    the KV pool."""
    prev_need: int | None = None
    prev_pool: int | None = None
    for loras in (1, 2, 4, 8, 32):
        for rank in LORA_RANKS:
            p = plan_vllm(QWEN3_4B, _lora(max_loras=loras, max_lora_rank=rank), A30)
            assert p.lora is not None
            assert p.kv_pool_bytes is not None
            need = p.weights_bytes + p.activation_bytes + p.cudagraph_bytes
            if prev_need is not None and prev_pool is not None and rank != LORA_RANKS[0]:
                assert need >= prev_need
                assert p.kv_pool_bytes <= prev_pool
            prev_need, prev_pool = need, p.kv_pool_bytes
        one = plan_vllm(QWEN3_4B, _lora(max_loras=loras, max_lora_rank=1), A30)
        assert one.lora is not None
    small = plan_vllm(QWEN3_4B, _lora(max_loras=1), A30)
    big = plan_vllm(QWEN3_4B, _lora(max_loras=8), A30)
    assert big.weights_bytes > small.weights_bytes


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"max_loras": 0}, "max_loras"),
        ({"max_lora_rank": 12}, "one of 1, 8, 16"),
        ({"max_lora_rank": 1024}, "max_lora_rank"),
        ({"max_loras": 4, "max_cpu_loras": 2}, "must be >= 'max_loras'"),
        ({"lora_dtype": "float32"}, "lora_dtype"),
        ({"enable_lora": "yes"}, "enable_lora"),
        ({"enable_lora": None, "max_loras": 2}, "'enable_lora' is not"),
    ],
)
def test_settings_refuse_what_vllm_refuses(kw: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidSettingError) as e:
        _lora(**kw)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--enable-lora", "--max-loras", "0"], "--max-loras"),
        (["--enable-lora", "--max-lora-rank", "12"], "--max-lora-rank must be one of"),
        (["--enable-lora", "--max-loras", "4", "--max-cpu-loras", "2"], ">= --max-loras"),
        (["--max-loras", "2"], "--enable-lora is not"),
        (["--enable-lora", "--lora-dtype", "float32"], "--lora-dtype"),
    ],
)
@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_cli_bad_values_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], command: str, extra: list[str], needle: str
) -> None:
    capsys.readouterr()
    code = main([command, "qwen3-4b", "-r", "vllm", "--gpu", "a30", "--offline", *extra])
    cap = capsys.readouterr()
    assert code == 2, cap.err
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("Error:")]
    assert len(lines) == 1, cap.err
    assert needle in lines[0], cap.err
    assert "Traceback" not in cap.err


def test_cli_estimate_reports_each_term(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["estimate", "qwen3-4b", "-r", "vllm", "-q", "bf16", "-c", "4096", "--gpu", "a30"]
    argv += ["--gpu-memory-utilization", "0.8", "--llm-class", "--runtime-version", "0.19.1"]
    capsys.readouterr()
    assert main([*argv, "--offline", "--json"]) == 0  # without LoRA: fits (the old verdict)
    capsys.readouterr()
    code = main([*argv, "--enable-lora", "--max-loras", "2", "--offline", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 4
    assert doc["verdict"] == "tight"
    rd = doc["runtime_details"]
    assert rd["cudagraph_sets"] == 2
    assert rd["lora_max_loras"] == 2
    assert rd["lora_max_rank"] == 16
    assert rd["lora_slot_bytes"] == 2 * (66_060_288 + 4_943_872)
    labels = {c["label"] for c in doc["devices"][0]["components"]}
    assert {"LoRA slots (linear layers)", "LoRA slots (embedding)", "Punica LoRA metadata"} <= (
        labels
    )
    assert doc["settings"]["enable_lora"] is True


def test_other_runtimes_say_they_ignore_it(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    main(["estimate", "qwen3-4b", "--gpu", "a30", "--enable-lora", "--offline"])
    assert "--enable-lora" in capsys.readouterr().err


def test_emitted_vllm_command_carries_the_lora_flags() -> None:
    s = _lora(max_loras=4, max_lora_rank=64, cudagraph_specialize_lora=False)
    cmd = emit_command("vllm", s, QWEN3_4B, "qwen3-4b")
    flags = parse_command("vllm", cmd)
    assert flags["--enable-lora"] == []
    assert flags["--max-loras"] == ["4"]
    assert flags["--max-lora-rank"] == ["64"]
    assert flags["--compilation-config"] == ['{"cudagraph_specialize_lora": false}']
    plain = emit_command("vllm", _lora(enable_lora=None), QWEN3_4B, "qwen3-4b")
    assert "lora" not in plain


def test_plan_keeps_the_lora_flags(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    argv = ["plan", "qwen3-4b", "-r", "vllm", "--gpu", "a30", "-c", "4096", "--enable-lora"]
    code = main([*argv, "--max-loras", "2", "--offline", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["plans"]
    for p in doc["plans"]:
        assert parse_command("vllm", p["command"])["--max-loras"] == ["2"]
    code = main(["plan", "qwen3-4b", "--gpu", "a30", "--enable-lora", "--offline"])
    assert code == 2
    assert "is a vLLM option" in capsys.readouterr().err


def test_the_a30_lora_death_is_no_longer_fits() -> None:
    """heldout31 151B (vLLM 0.19.1, Qwen3-4B bf16, LLM class, util 0.8, enable_lora, A30):
    'Model loading took 7.68 GiB', 'Estimated CUDA graph memory: 4.79 GiB total' (graphs
    'PIECEWISE=102, FULL=70': twice 51 / 35), 'Available KV cache memory: 0.85 GiB', then
    CUDA OOM while capturing the graphs in the 1 - util headroom. Without the LoRA setting
    oomkit said "fits" (+4.30 GiB); with it the graph sets double and the verdict is tight."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from verdict_accuracy import judge

    rec = _record("log-151b-vllm0191-qwen3-4b-bf16-lora-a30-u08-oom")
    assert rec["settings"] == {
        "gpu_memory_utilization": 0.8,
        "tp": 1,
        "llm_class": True,
        "enable_lora": True,
    }
    level, _ = judge(rec)
    assert level != "fits"
    without = {**rec, "settings": {k: v for k, v in rec["settings"].items() if k != "enable_lora"}}  # type: ignore[union-attr]
    assert judge(without)[0] == "fits"
    p = plan_vllm(QWEN3_4B, _lora(), A30, engine="v1-0.17")
    assert p.lora is not None
    assert p.kv_pool_bytes is not None
    loading = p.weights_bytes + p.rope_cache_bytes  # the "Model loading took" figure
    assert 7.5 * GiB < loading < 7.68 * GiB  # 7.57 GiB: 0.11 GiB short of the log
    assert 1 * GiB < p.cudagraph_bytes < 4.79 * GiB <= CUDAGRAPH_POOL_MAX * 2  # 2 x 0.67 GiB


def test_v0_keeps_chunked_prefill_off_with_lora() -> None:
    """V0 EngineArgs turned chunked prefill on above 32K only 'and not self.enable_lora'
    (0.5-0.10): with LoRA the profile batch is the whole max_model_len (vllm#11251's 40000)."""
    llama = find_model("llama-3.1-8b").spec()
    v100 = DeviceTarget(name="Tesla V100-SXM2-16GB", capacity_bytes=16 * GiB)
    base = {"runtime": "vllm", "ctx": 40000, "tp": 2}
    plain = plan_vllm(llama, InferenceSettings(**base), v100, engine="v0-2024")  # type: ignore[arg-type]
    lora = plan_vllm(llama, InferenceSettings(**base, enable_lora=True), v100, engine="v0-2024")  # type: ignore[arg-type]
    assert plain.max_num_batched_tokens == 2048
    assert lora.max_num_batched_tokens == 40000
