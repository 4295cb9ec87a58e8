"""planner23 item 4: inside fp8's shared tier (vLLM/SGLang, FP8 W8A8 GPUs, a typed context)
two candidates equal on the rank key are ordered by the KV pool the runtime allocates (more
tokens first) before the free margin, which a raised utilization leaves near 0 for both; and
a ``--tp`` refusal lists only the sizes the GPUs named can run, also when ``--tp`` equals
their count (``--gpu 3xNAME --tp 3`` listed every size up to the heads)."""

from __future__ import annotations

import pytest

from conftest import run_cli
from oomkit.planner.knobs import Candidate
from oomkit.planner.ranking import rank_key


def _key(c: Candidate, tier: dict[str, int], margin: int, tokens: int) -> tuple[float, ...]:
    return rank_key(
        c,
        prefer="quality",
        ladder=("bf16", "fp8", "awq"),
        kvs=("auto", "fp8"),
        target_ctx=32768,
        n_layer=80,
        ctx_asked=True,
        margin_bytes=margin,
        quant_tier=tier,
        kv_tokens=tokens,
    )


def test_more_kv_tokens_first_inside_the_shared_tier() -> None:
    a = Candidate("fp8", "auto", 32768, tp=2)
    b = Candidate("fp8", "auto", 32768, tp=4)
    # a has the larger margin, b the larger pool
    assert _key(b, {"fp8": 0}, 1 << 20, 900_000) < _key(a, {"fp8": 0}, 2 << 20, 400_000)
    # outside a shared tier the margin decides, as before
    assert _key(a, {}, 2 << 20, 400_000) < _key(b, {}, 1 << 20, 900_000)
    # the pool never outranks the exact quant or the sequence cap
    bf16 = Candidate("bf16", "auto", 32768)
    assert _key(bf16, {"fp8": 0}, 0, 1) < _key(b, {"fp8": 0}, 0, 900_000)
    capped = Candidate("bf16", "auto", 32768, max_num_seqs=59)
    assert _key(capped, {"fp8": 0}, 0, 1) < _key(b, {"fp8": 0}, 0, 900_000)


@pytest.mark.parametrize("command", ["plan", "estimate"])
def test_tp_sizes_capped_at_the_gpus_named(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = [command, "llama-3.1-70b", "-r", "vllm", "--ctx", "8k", "--tp", "3", "--offline"]
    code, _, err = run_cli(capsys, *argv, "--gpu", "3xh100-sxm")
    assert code == 2
    assert err.rstrip().endswith("valid sizes on the 3 GPUs given: 1, 2"), err
    # --vram makes one GPU per rank: no count was named, every size the model allows
    code, _, err = run_cli(capsys, *argv, "--vram", "80GiB")
    assert code == 2
    assert err.rstrip().endswith("valid sizes: 1, 2, 4, 8, 16, 32, 64"), err
