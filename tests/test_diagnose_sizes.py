"""Unit tables and small helpers of the doctor: exact decimal conversion, bounded parsing."""

from __future__ import annotations

import pytest

from oomkit.diagnose.fixes import Fix, floor_to, generic, kv_type_ratio, mib, rank, size_text
from oomkit.diagnose.parse import parse_log
from oomkit.diagnose.sizes import decimal_to_bytes, to_bytes, to_float, to_int
from oomkit.units import GiB, KiB, MiB


@pytest.mark.parametrize(
    ("number", "label", "runtime", "expected"),
    [
        ("18.13", "GB", "pytorch-mps", round(18.13 * GiB)),  # MPS "GB" is GiB
        ("63.12", "GB", "sglang", round(63.12 * GiB)),  # SGLang divides by 1 << 30
        ("14.9888", "GB", "vllm", round(14.9888 * GiB)),  # "Loading model weights took X GB"
        ("1.08", "GB", "deepspeed", round(1.08 * GiB)),
        ("31451456", "kB", "linux", 31451456 * KiB),  # oom_kill.c K(x) is KiB
        ("1.5", "GB", "generic", 1_500_000_000),  # unknown runtime: SI stays SI
        ("0", "bytes", "pytorch", 0),
        ("-1.05", "GiB", "vllm", -round(1.05 * GiB)),
        ("1,024", "MiB", "pytorch", 1024 * MiB),
    ],
)
def test_unit_tables(number: str, label: str, runtime: str, expected: int) -> None:
    assert to_bytes(number, label, runtime) == expected


@pytest.mark.parametrize("bad", ["", "-", ".", "1.2.3", "1e9", "nan", "١٢", "9" * 30])
def test_decimal_rejects_junk(bad: str) -> None:
    assert decimal_to_bytes(bad, 1) is None


def test_int_and_float() -> None:
    assert to_int("178,880") == 178880
    assert to_int("-15") == -15
    assert to_int("abc") is None
    assert to_int("9" * 30) is None
    assert to_float("0.90") == 0.9
    assert to_float("1e309") is None
    assert to_float("") is None
    assert to_float("--") is None
    assert to_bytes("1", "parsec", "pytorch") is None


def test_fix_helpers() -> None:
    assert floor_to(81537, 16) == 81536
    assert floor_to(3, 16) == 16
    assert kv_type_ratio(None, "q8_0") is None
    assert kv_type_ratio("f16", "q4_0") == 18 / 32 / 2
    assert kv_type_ratio("f16", "weird") is None
    assert mib(MiB + 1) == 2
    assert size_text(None) == "?"
    assert size_text(5) == "5 bytes"
    assert size_text(-3 * GiB) == "-3.00 GiB"
    assert size_text(1 << 100).endswith("bytes")
    a = Fix(title="a", why="", commands=(), expected_saving_bytes=1)
    b = Fix(title="b", why="", commands=(), expected_saving_bytes=9)
    g = generic("g", "x", ())
    assert [f.title for f in rank([g, a, b, a])] == ["b", "a", "g"]
    assert g.to_dict()["generic"] is True


def test_many_events_are_capped() -> None:
    text = "ERROR: process exited with code 137\n" * 500
    log = parse_log(text)
    assert len(log.events) == 200
    assert log.events[0].line == 1
    assert log.events[-1].line == 500
    assert any("left out" in n for n in log.context.notes)


def test_command_line_flags_and_ollama_split() -> None:
    text = (
        "./llama-server -m x.gguf -c 8192 -ngl 20 -ub 256 -ts 3,1 -ctk q8_0 -ctv q8_0 -np 4\n"
        "msg=offload library=cuda layers.requested=-1 layers.model=65 layers.offload=65 "
        'layers.split=17,16,16,16 memory.available="[14.5 GiB 14.5 GiB]"\n'
        "vllm serve m --max-model-len 8192 -tp 2 --gpu-memory-utilization 0.85\n"
        "mem_fraction_static=0.88\n"
    )
    ctx = parse_log(text).context
    assert (ctx.n_ctx, ctx.n_gpu_layers, ctx.n_ubatch, ctx.n_seq) == (8192, 20, 256, 4)
    assert (ctx.type_k, ctx.type_v) == ("q8_0", "q8_0")
    assert ctx.tensor_split == "17,16,16,16"  # Ollama's own split line wins over the flag
    assert ctx.ollama_available_bytes == (round(14.5 * GiB),) * 2
    assert ctx.max_model_len == 8192
    assert ctx.tensor_parallel_size == 2
    assert ctx.gpu_memory_utilization == 0.85
    assert ctx.mem_fraction_static == 0.88
