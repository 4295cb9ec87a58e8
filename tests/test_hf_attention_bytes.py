"""Attention bytes a transformers ``generate()`` prefill materialises per architecture
(``oomkit.estimate.hf_attention_bytes``): Falcon's multi-query SDPA call on the math backend,
eager softmax in the model dtype (GPT-2 and others), and the installed sources they rest on."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from oomkit.catalog.models import find_model
from oomkit.estimate.hf_attention_bytes import (
    EAGER_SCORES_IN_DTYPE,
    SDPA_MATH_BYTES_PER_SCORE,
    eager_scores_in_dtype,
    sdpa_math_extra_bytes,
    sdpa_runs_math,
)
from oomkit.estimate.transformers_prefill import prefill_activation_bytes
from oomkit.estimate.transformers_requests import largest_request_bytes
from oomkit.spec.model import ModelSpec

GiB = 1 << 30


def _spec(name: str) -> ModelSpec:
    return find_model(name).spec()


def test_falcon_multi_query_sdpa_runs_the_math_backend() -> None:
    falcon = _spec("falcon-7b")
    assert (falcon.num_attention_heads, falcon.num_key_value_heads) == (71, 1)
    assert sdpa_runs_math(falcon)
    # new_decoder_architecture broadcasts K/V to every query head before the call
    assert not sdpa_runs_math(dataclasses.replace(falcon, new_decoder_architecture=True))
    # the shared sdpa_attention_forward passes enable_gqa or repeats K/V: fused kernels
    assert not sdpa_runs_math(_spec("llama-3.1-8b"))


def test_math_backend_bytes_follow_the_source_shapes() -> None:
    """Falcon-7B b4 p2000: fp32 scores + fp32 softmax + the isneginf bool, B x 71 x L x L x 9
    (8.46 GiB of fp32 and the 1.06 GiB bool the H100 run died asking for), two fp32 query
    copies, fp32 K and V, the additive bf16 mask and transformers' bool one."""
    falcon = _spec("falcon-7b")
    b, L = 4, 2000
    n = sdpa_math_extra_bytes(falcon, batch=b, q_len=L, kv_len=L, elem=2)
    scores = b * 71 * L * L
    assert SDPA_MATH_BYTES_PER_SCORE == 9
    assert n == scores * 9 + 2 * b * 71 * L * 64 * 4 + 2 * b * 1 * L * 64 * 4 + b * L * L * 3
    assert scores == 1_136_000_000  # "Tried to allocate 1.06 GiB": the bool tensor
    sdpa, _ = prefill_activation_bytes(falcon, batch=b, seq=L, elem=2, attn_impl="sdpa")
    assert sdpa > n  # on top of the layer's stream and q/k/v
    assert largest_request_bytes(falcon, batch=b, seq=L, elem=2, attn_impl="sdpa") == scores * 4


def test_in_dtype_eager_softmax_holds_two_score_tensors_for_gpt2() -> None:
    """GPT-2 XL b16 p960 eager: ``softmax(w, dim=-1)`` in bf16, no fp32 copy: 2 x e per score
    where the Llama-style upcast holds e + 8 (oomkit was +26% on the H100 run)."""
    gpt2 = _spec("gpt2-xl")
    assert eager_scores_in_dtype(gpt2) == 2
    kw = {"batch": 16, "seq": 960, "elem": 2}
    eager, _ = prefill_activation_bytes(gpt2, attn_impl="eager", **kw)  # type: ignore[arg-type]
    upcast = dataclasses.replace(gpt2, model_type="llama")
    llama_style, _ = prefill_activation_bytes(upcast, attn_impl="eager", **kw)  # type: ignore[arg-type]
    scores = 16 * gpt2.num_attention_heads * 960 * 960
    assert llama_style - eager == scores * (10 - 4)
    req = largest_request_bytes(gpt2, attn_impl="eager", **kw)  # type: ignore[arg-type]
    assert req >= scores * 2
    assert req < scores * 4


def test_gpt2_eager_attention_peak_traced_on_fake_tensors() -> None:
    """transformers' own ``eager_attention_forward`` of GPT-2 traced with FakeTensors: the
    scores' peak is two bf16 score tensors (plus the output), as modelled."""
    torch = pytest.importorskip("torch")
    gpt2_mod = pytest.importorskip("transformers.models.gpt2.modeling_gpt2")
    from torch._subclasses.fake_tensor import FakeTensorMode

    from oomkit.inprocess.probe_tracker import MemoryTracker

    b, a, s, d = 2, 4, 256, 64
    with FakeTensorMode():
        q, k, v = (torch.empty(b, a, s, d, dtype=torch.bfloat16) for _ in range(3))
        mask = torch.empty(b, 1, s, s, dtype=torch.bfloat16)
        module = torch.nn.Module()
        module.eval()
        with MemoryTracker(round_to_cuda_blocks=False) as t:
            t.track_all([q, k, v, mask], "inputs")
            base = t.live_bytes
            gpt2_mod.eager_attention_forward(module, q, k, v, mask, scaling=d**-0.5)
    assert t.peak_bytes - base == 2 * b * a * s * s * 2


def _eager_softmax_line(path: str) -> str:
    src = Path(path).read_text()
    body = src[src.index("def eager_attention_forward") :]
    line = re.search(r"softmax\(.*\)", body)
    assert line is not None
    return line.group(0)


@pytest.mark.parametrize("model_type", ["gpt2", "llama4", "llama", "qwen2"])
def test_installed_transformers_eager_softmax_dtype(model_type: str) -> None:
    """The families listed as in-dtype really call ``softmax`` without ``dtype=float32`` in the
    installed transformers; the Llama-style ones upcast."""
    mod = pytest.importorskip(f"transformers.models.{model_type}.modeling_{model_type}")
    line = _eager_softmax_line(inspect.getfile(mod))
    in_dtype = {"llama4": "llama4_text"}.get(model_type, model_type) in EAGER_SCORES_IN_DTYPE
    assert ("float32" not in line) is in_dtype, line


def test_installed_falcon_calls_sdpa_without_enable_gqa() -> None:
    mod = pytest.importorskip("transformers.models.falcon.modeling_falcon")
    src = inspect.getsource(mod.FalconAttention.forward)
    assert "scaled_dot_product_attention(" in src
    assert "enable_gqa" not in src
    assert "repeat_kv" not in src
    full = inspect.getsource(mod)
    assert "allow_is_causal_skip=False" in full  # the 4-D bool mask is always built
