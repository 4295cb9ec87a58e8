"""GPTQ-for-LLaMa's ``--benchmark N`` as a transformers record: one token per step, N in all.

qwopqwop200/GPTQ-for-LLaMa llama.py ``benchmark(model, input_ids)`` (README at f3a4df5, the
2023-05 tables): ``for i in range(input_ids.numel()): out = model(input_ids[:, i:i+1],
past_key_values=cache['past'], ...)`` with ``cache['past'] = list(out.past_key_values)``, and
a forward hook per layer (``clear_past``) dropping that layer's old past once it has run. So
the first forward is a one-token prompt and the other N - 1 steps are cached steps: N tokens of
KV at the end, never an N-token prefill. oomkit reads a transformers record's ``ctx`` as the
prompt and adds ``max_new_tokens``; the records carry ``ctx`` 1 and ``max_new_tokens`` N - 1
(they carried ``ctx`` N, which modelled 2N - 1 tokens and an N-token eager prefill).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from oomkit.api import estimate
from oomkit.cli.params import parse_gpu_list
from oomkit.hardware.targets import hardware_for
from oomkit.spec.settings import InferenceSettings

ROOT = Path(__file__).resolve().parents[1]
PART = ROOT / "tests" / "fixtures" / "verdict_runs" / "heldout37.jsonl"


def _records() -> list[dict[str, object]]:
    lines = PART.read_text().splitlines()
    recs = [json.loads(ln) for ln in lines if ln.strip()]
    return [r for r in recs if str(r["id"]).startswith("gptqforllama-")]


def _kv_final(ctx: int, new: int) -> int:
    s = InferenceSettings(
        runtime="transformers",
        quant="gptq",
        ctx=ctx,
        max_new_tokens=new,
        parallel=1,
        attn_implementation="eager",
        device_map="none",
        runtime_version="4.28.0",
    )
    hw = hardware_for(parse_gpu_list("rtx-3090"), n_devices=1)
    kv = estimate("llama-33b", s, hw, offline=True).runtime_details["kv_cache_bytes_final"]
    assert isinstance(kv, int)
    return kv


def test_the_benchmark_sequence_is_n_tokens_of_kv() -> None:
    """ctx 1 + 2047 new tokens: the KV at the end covers 2048 tokens, half of what the old
    encoding (a 2048-token prompt + 2047 new) modelled."""
    one_step = _kv_final(1, 2047)
    old = _kv_final(2048, 2047)
    assert one_step * 4095 == old * 2048


def test_records_encode_the_benchmark_length() -> None:
    """Every GPTQ-for-LLaMa record ran ``--benchmark 2048``: prompt + new tokens = 2048."""
    recs = _records()
    assert len(recs) == 4
    for r in recs:
        settings = r["settings"]
        assert isinstance(settings, dict)
        assert r["ctx"] == 1
        assert settings["max_new_tokens"] == 2047
        assert "--benchmark 2048" in str(r["evidence"])


def test_levels_of_the_gptq_for_llama_records() -> None:
    """33B GPTQ 4-bit on the 3090 (19,493 MiB allocated at peak): no longer "does not fit";
    the deaths (13B fp16, 65B GPTQ 4-bit) stay "does not fit"."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from verdict_accuracy import judge

    levels = {str(r["id"]): (r["outcome"], judge(r)[0]) for r in _records()}
    for rid, (outcome, level) in levels.items():
        if outcome == "oom":
            assert level == "does_not_fit", rid
        else:
            assert level != "does_not_fit", rid
    assert levels["gptqforllama-llama33b-gptq4-rtx3090-2048-ok"][1] == "fits"
