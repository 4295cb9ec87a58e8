"""``TrainingSettings.compiled`` / ``compiled_loss``: what torch.compile keeps for backward.

Relational: compile never needs more activation or loss memory than eager, and leaves the model
states alone. Mechanism: the per-layer formula equals what AOTAutograd's real min-cut partitioner
saves for transformers' ``LlamaDecoderLayer`` (when torch + transformers are installed), and the
compiled cross-entropy keeps its input and per-row reductions only.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import pytest

from oomkit.cli import main
from oomkit.errors import InvalidSettingError
from oomkit.estimate.training import estimate_training
from oomkit.estimate.training_activations import layer_activations, loss_activations
from oomkit.estimate.training_states import lora_target_roles
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec, MoESpec
from oomkit.spec.settings import TrainingSettings
from oomkit.units import GiB

# Llama-shaped toy (GQA 4/2 heads, SwiGLU), the dims the partitioner test traces
TINY = ModelSpec(
    name="tiny",
    architecture="LlamaForCausalLM",
    model_type="llama",
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    v_head_dim=16,
    intermediate_size=176,
    vocab_size=1000,
)
MOE = dataclasses.replace(
    TINY,
    name="tiny-moe",
    architecture="MixtralForCausalLM",
    model_type="mixtral",
    moe=MoESpec(num_experts=4, num_experts_per_tok=2, expert_intermediate_size=96),
)
HW = Hardware(devices=(DeviceTarget(name="GPU", capacity_bytes=80 * GiB),))

_VARIANTS: list[dict[str, Any]] = [
    {"method": "full", "master_weights": False},
    {"method": "full"},  # fp32 master weights + autocast (fp32 residual stream)
    {"method": "full", "mixed_precision": "no"},
    {"method": "lora", "lora_targets": ("q_proj", "v_proj")},
    {"method": "qlora"},
    {"method": "full", "master_weights": False, "attn_implementation": "eager", "dropout": 0.1},
    {"method": "full", "master_weights": False, "grad_checkpointing": "full"},
    {"method": "full", "master_weights": False, "grad_checkpointing": "selective"},
]
_LOSSES: list[dict[str, Any]] = [
    {"loss": "standard"},
    {"loss": "chunked"},
    {"loss": "fused"},
    {"loss": "standard", "held_logits": "fp32"},
    {"loss": "chunked", "held_logits": "compute"},
]


def _pair(spec: ModelSpec, **kw: Any) -> tuple[TrainingSettings, TrainingSettings]:
    base = TrainingSettings(micro_batch=2, seq=64, **kw)
    return base, dataclasses.replace(base, compiled=True, compiled_loss=True)


@pytest.mark.parametrize("spec", [TINY, MOE], ids=lambda s: s.name)
@pytest.mark.parametrize("variant", _VARIANTS, ids=str)
def test_compiled_layers_never_keep_more_than_eager(
    spec: ModelSpec, variant: dict[str, Any]
) -> None:
    eager, comp = _pair(spec, **variant)
    roles = None if eager.method == "full" else lora_target_roles(spec, eager.lora_targets)
    e_layers = layer_activations(spec, eager, trainable_roles=roles)
    c_layers = layer_activations(spec, comp, trainable_roles=roles)
    for e, c in zip(e_layers, c_layers, strict=True):
        assert c.saved_bytes <= e.saved_bytes
        assert c.selective_bytes <= e.selective_bytes
        assert c.checkpoint_bytes == e.checkpoint_bytes  # the layer input either way
        assert c.backward_working_bytes == e.backward_working_bytes
    # RMSNorm + SwiGLU: something really is recomputed
    assert sum(c.saved_bytes for c in c_layers) < sum(e.saved_bytes for e in e_layers)


@pytest.mark.parametrize("variant", _LOSSES, ids=str)
@pytest.mark.parametrize("precision", ["bf16", "no"])
def test_compiled_loss_never_needs_more_than_eager(variant: dict[str, Any], precision: str) -> None:
    eager, comp = _pair(TINY, mixed_precision=precision, **variant)
    le, lc = loss_activations(TINY, eager), loss_activations(TINY, comp)
    assert (
        lc.saved_bytes + lc.forward_transient_bytes <= le.saved_bytes + le.forward_transient_bytes
    )
    assert (
        lc.saved_bytes + lc.backward_transient_bytes <= le.saved_bytes + le.backward_transient_bytes
    )


def test_compiled_chunked_loss_keeps_the_bf16_chunks_and_row_reductions() -> None:
    _, comp = _pair(TINY, loss="chunked", master_weights=False)
    tokens, v = 2 * 64, TINY.vocab_size
    got = loss_activations(TINY, comp)
    assert got.saved_bytes == 2 * tokens * v + 8 * tokens  # bf16 input + fp32 amax, lse
    assert got.forward_transient_bytes == 0  # the upcast is fused into the reductions
    assert got.backward_transient_bytes == 2 * tokens * v // 8  # one chunk's bf16 gradient


@pytest.mark.parametrize("variant", _VARIANTS[:5], ids=str)
def test_compile_changes_activations_not_model_states(variant: dict[str, Any]) -> None:
    eager, comp = _pair(TINY, **variant)
    est_e, est_c = estimate_training(TINY, eager, HW), estimate_training(TINY, comp, HW)

    # the step phase holds the model states only (weights, gradients, optimizer, temporaries)
    phases_e, phases_c = est_e.runtime_details["phases"], est_c.runtime_details["phases"]
    assert phases_e["optimizer_step"] == phases_c["optimizer_step"]
    for cat in ("weights", "optimizer"):
        assert est_e.devices[0].category_bytes(cat) == est_c.devices[0].category_bytes(cat)
    assert (
        est_c.runtime_details["peak_allocated_bytes"]
        <= (est_e.runtime_details["peak_allocated_bytes"])
    )


def test_compile_settings_are_validated() -> None:
    with pytest.raises(InvalidSettingError, match="compiled"):
        TrainingSettings(compiled="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidSettingError, match="compiled_loss"):
        TrainingSettings(compiled_loss=1)  # type: ignore[arg-type]


def test_cli_compile_flags(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    def settings(*extra: str) -> dict[str, Any]:
        code = main(["estimate", "llama-3.2-3b", "--train", "full", "--gpu", "a100-80gb",
                     "--micro-batch", "2", "--seq", "4096", "--json", *extra])  # fmt: skip
        out, err = capsys.readouterr()
        assert code in (0, 3, 4), err  # 4: tight
        doc: dict[str, Any] = json.loads(out)
        return doc

    eager, comp = settings(), settings("--compile")
    layers_only = settings("--compile", "--no-compile-loss")
    assert comp["settings"]["compiled"] is True
    assert comp["settings"]["compiled_loss"] is True
    assert layers_only["settings"]["compiled_loss"] is False
    peak = [d["runtime_details"]["peak_allocated_bytes"] for d in (eager, layers_only, comp)]
    assert peak[0] > peak[1] > peak[2]


def _partitioner_saved_bytes(trainable: bool) -> tuple[int, int]:
    """(saved bytes, tokens) that AOTAutograd's min-cut partitioner keeps for one real layer."""
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    cfg = LlamaConfig(hidden_size=64, intermediate_size=176, num_attention_heads=4,
                      num_key_value_heads=2, num_hidden_layers=1, vocab_size=100)  # fmt: skip
    cfg._attn_implementation = "sdpa"
    layer = LlamaDecoderLayer(cfg, 0).to(torch.bfloat16)
    for p in layer.parameters():
        p.requires_grad_(trainable)
    b, s = 2, 24  # B·S = 48: no activation shares a weight's shape
    x = torch.randn(b, s, 64, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(s)[None]
    cos, sin = LlamaRotaryEmbedding(cfg)(x, pos)
    found: dict[str, list[Any]] = {}

    def fw(gm: Any, example_inputs: list[Any]) -> Any:
        (outputs,) = (n.args[0] for n in gm.graph.nodes if n.op == "output")
        found["vals"] = [n.meta.get("val") for n in outputs if hasattr(n, "meta")]
        return make_boxed_func(gm)

    backend = aot_autograd(fw_compiler=fw, bw_compiler=lambda gm, _: make_boxed_func(gm),
                           partition_fn=min_cut_rematerialization_partition,
                           decompositions=select_decomp_table())  # fmt: skip

    def run(t: Any) -> Any:
        out = layer(t, position_embeddings=(cos, sin), attention_mask=None, position_ids=pos)
        return out[0] if isinstance(out, tuple) else out

    torch._dynamo.reset()
    y = torch.compile(run, backend=backend)(x)
    y.float().sum().backward()
    vals = [v for v in found["vals"] if isinstance(v, torch.Tensor)]
    # graph inputs that are parameters or the shared cos/sin cost nothing per token
    free_shapes = {tuple(p.shape) for p in layer.parameters()} | {tuple(cos.shape)}
    saved = vals[1:]  # the first output is the layer's own output
    per_token = [v for v in saved if tuple(v.shape) not in free_shapes]
    return sum(v.numel() * v.element_size() for v in per_token), b * s


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="torch / transformers not installed (probe extra)",
)
@pytest.mark.parametrize("trainable", [True, False], ids=["full", "frozen"])
def test_formula_matches_the_real_min_cut_partition(trainable: bool) -> None:
    saved, tokens = _partitioner_saved_bytes(trainable)
    spec = dataclasses.replace(TINY, num_hidden_layers=1, layer_types=TINY.layer_types[:1])
    settings = TrainingSettings(micro_batch=2, seq=24, master_weights=False, compiled=True)
    roles = None if trainable else frozenset[str]()
    (layer,) = layer_activations(spec, settings, trainable_roles=roles)
    rsqrt = 2 * 4 * tokens  # the two norms' fp32 rsqrt per token, left out of the formula
    assert layer.saved_bytes == saved - rsqrt
