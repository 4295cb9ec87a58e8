"""torch < 1.11's softmax saved set, traced by the probe (``StepOptions.softmax_saves_input``).

The expected extra is derived from the config's own shape (layers x batch x heads x seq x seq x
dtype bytes), never a recorded peak.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from oomkit.estimate.training_activations import layer_activations  # noqa: E402
from oomkit.inprocess.probe import probe  # noqa: E402
from oomkit.inprocess.probe_legacy import legacy_softmax  # noqa: E402
from oomkit.inprocess.probe_step import StepOptions  # noqa: E402

BERT: dict[str, Any] = {
    "architectures": ["BertForMaskedLM"],
    "model_type": "bert",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 512,
    "max_position_embeddings": 512,
}


def test_legacy_softmax_matches_torch_and_saves_its_input() -> None:
    original = torch.nn.functional.softmax
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, 5, dtype=torch.float64)
    want = torch.nn.functional.softmax(x, dim=-1)
    (want_grad,) = torch.autograd.grad(want, x, g)
    with legacy_softmax():
        got = torch.nn.functional.softmax(x, dim=-1)
        saved = got.grad_fn.saved_tensors  # type: ignore[union-attr]
    (got_grad,) = torch.autograd.grad(got, x, g)
    assert torch.allclose(got, want)
    assert torch.allclose(got_grad, want_grad)
    # torch < 1.11 SoftmaxBackward held self and result
    assert any(t.data_ptr() == x.data_ptr() for t in saved)
    assert any(t.data_ptr() == got.data_ptr() for t in saved)
    assert torch.nn.functional.softmax is original  # restored on exit
    with torch.no_grad(), legacy_softmax():  # nothing to save: the plain op runs
        assert torch.nn.functional.softmax(x, dim=-1).grad_fn is None
    assert torch.nn.functional.softmax is original


def _saves_input(x: Any) -> bool:
    """Whether softmax's backward node holds its input (today's SoftmaxBackward0 exposes its
    saved tensors as ``_saved_*`` attributes, a custom Function as ``saved_tensors``)."""
    fn = torch.nn.functional.softmax(x, dim=-1).grad_fn
    saved = getattr(fn, "saved_tensors", None)
    if saved is None:
        saved = [getattr(fn, a) for a in dir(fn) if a.startswith("_saved_")]
    return any(isinstance(t, torch.Tensor) and t.data_ptr() == x.data_ptr() for t in saved)


def test_legacy_softmax_nests_and_restores_the_original() -> None:
    original = torch.nn.functional.softmax
    x = torch.randn(2, 4, requires_grad=True)
    assert not _saves_input(x)
    with legacy_softmax():
        with legacy_softmax():
            assert _saves_input(x)
        assert _saves_input(x)  # the inner exit leaves the outer context active
        assert torch.nn.functional.softmax is not original
    assert torch.nn.functional.softmax is original
    assert not _saves_input(x)
    # exits in any order: the last one restores
    a, b = legacy_softmax(), legacy_softmax()
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    assert _saves_input(x)
    b.__exit__(None, None, None)
    assert torch.nn.functional.softmax is original
    # an exception inside restores too
    with pytest.raises(ValueError, match="boom"), legacy_softmax():
        raise ValueError("boom")
    assert torch.nn.functional.softmax is original


def test_legacy_softmax_is_per_thread() -> None:
    """Another thread tracing meanwhile keeps today's saved set."""
    import threading

    x = torch.randn(2, 4, requires_grad=True)
    inside, done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        inside.wait(10)
        seen.append(_saves_input(x))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with legacy_softmax():
        inside.set()
        assert done.wait(10)
        assert _saves_input(x)
    t.join()
    assert seen == [False]


@pytest.mark.parametrize(("dtype", "elem"), [("fp32", 4), ("fp16", 2)])
def test_eager_bert_keeps_one_more_score_tensor_per_layer(dtype: str, elem: int) -> None:
    batch, seq = 2, 128
    kw: dict[str, Any] = {
        "train": "full", "batch": batch, "seq": seq, "dtype": dtype,
        "mixed_precision": dtype != "fp32", "attn_implementation": "eager",
        "round_to_cuda_blocks": False,
    }  # fmt: skip
    today = probe(BERT, **kw, step=StepOptions())
    old = probe(BERT, **kw, step=StepOptions(softmax_saves_input=True))
    # fp32: the fp32 scores; fp16 autocast: _softmax(half_to_float) saves the fp16 scores
    per_layer = batch * BERT["num_attention_heads"] * seq * seq * elem
    extra = old.saved_activations_bytes - today.saved_activations_bytes
    assert extra == BERT["num_hidden_layers"] * per_layer
    assert old.peak_bytes > today.peak_bytes


def test_checkpointing_drops_the_legacy_input_too() -> None:
    kw: dict[str, Any] = {
        "train": "full", "seq": 128, "attn_implementation": "eager", "dtype": "fp32",
        "mixed_precision": False, "grad_checkpointing": True, "round_to_cuda_blocks": False,
    }  # fmt: skip
    today = probe(BERT, **kw, step=StepOptions())
    old = probe(BERT, **kw, step=StepOptions(softmax_saves_input=True))
    assert old.saved_activations_bytes == today.saved_activations_bytes


def test_estimator_counts_the_saved_input() -> None:
    import dataclasses

    from oomkit.api import load_model
    from oomkit.spec.settings import TrainingSettings

    spec = load_model("bert-large-uncased", offline=True)
    base = TrainingSettings(mixed_precision="no", micro_batch=4, seq=512,
                            attn_implementation="eager", dropout=0.1)  # fmt: skip
    old = dataclasses.replace(base, softmax_saves_input=True)
    a = layer_activations(spec, base, trainable_roles=None)
    b = layer_activations(spec, old, trainable_roles=None)
    heads = 16  # bert-large
    for x, y in zip(a, b, strict=True):
        assert y.saved_bytes - x.saved_bytes == 4 * heads * 512 * 512 * 4
        assert y.checkpoint_bytes == x.checkpoint_bytes
    # fp16 AMP over fp32 weights: the fp32 extended mask promoted the scores to fp32 (4 bytes);
    # pure 16-bit weights: the mask and the scores stay 16-bit (2 bytes)
    for master, elem in ((True, 4), (False, 2)):
        half = dataclasses.replace(base, mixed_precision="fp16", master_weights=master)
        a = layer_activations(spec, half, trainable_roles=None)
        b = layer_activations(spec, dataclasses.replace(half, softmax_saves_input=True),
                              trainable_roles=None)  # fmt: skip
        assert b[0].saved_bytes - a[0].saved_bytes == 4 * heads * 512 * 512 * elem
