"""How the probe calls a model: its inputs, its forward, its loss, and the phase it records.

Shared by :mod:`oomkit.inprocess.probe` (the run) and :mod:`oomkit.inprocess.probe_step`
(the training step), which used to import these back from the probe module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from oomkit.errors import InvalidSettingError

if TYPE_CHECKING:
    import torch
    from torch import nn

    from oomkit.inprocess.probe_tracker import MemoryTracker

__all__ = [
    "accepts",
    "call_model",
    "enable_checkpointing",
    "fake_inputs",
    "loss_of",
    "output_cache",
    "phase",
    "tensors_in",
]


def tensors_in(obj: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """Tensors reachable from ``obj`` (model outputs, caches) by a shallow walk."""
    import torch

    if depth > 5 or obj is None:
        return
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from tensors_in(v, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from tensors_in(v, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        for v in vars(obj).values():
            yield from tensors_in(v, depth + 1)


def enable_checkpointing(model: nn.Module, name: str) -> None:
    """Non-reentrant activation checkpointing of every decoder layer (transformers' API)."""
    kwargs = {"use_reentrant": False}
    enable = getattr(model, "activation_checkpointing_enable", None)
    if callable(enable):  # transformers >= 5.x name
        enable(activation_checkpointing_kwargs=kwargs)
        return
    enable = getattr(model, "gradient_checkpointing_enable", None)
    if not callable(enable):
        raise InvalidSettingError(
            f"'{name}' has no gradient_checkpointing_enable(); checkpointing applies to "
            "transformers models.",
            setting="grad_checkpointing",
        )
    enable(gradient_checkpointing_kwargs=kwargs)


@contextlib.contextmanager
def phase(tracker: MemoryTracker, name: str) -> Iterator[None]:
    tracker.phase = name
    try:
        yield
    finally:
        tracker.phase = "idle"


def accepts(model: nn.Module, arg: str) -> bool:
    import inspect

    inner = getattr(model, "_fsdp_wrapped_module", model)  # FSDP1's wrapper: (*args, **kwargs)
    try:
        return arg in inspect.signature(inner.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


def call_model(model: nn.Module, inputs: Any, extra: Mapping[str, Any]) -> Any:
    if isinstance(inputs, Mapping):
        return model(**inputs, **extra)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs, **extra)
    return model(inputs, **extra)


def output_cache(out: Any) -> Any:
    """The KV cache a forward returned: ``out.cache`` where the output has that field
    (transformers 5.x renamed ``past_key_values``/``cache_params`` to ``cache``; reading an old
    name goes through ``ModelOutput``'s back-compat property, which logs "`past_key_values`/
    `cache_params` are deprecated. Use `cache` instead." on the user's terminal), else the
    old ``past_key_values`` of transformers 4.x."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(out)} if dataclasses.is_dataclass(out) else set()
    return out.cache if "cache" in names else getattr(out, "past_key_values", None)


def loss_of(out: Any) -> torch.Tensor:
    import torch

    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    if isinstance(out, Mapping) and isinstance(out.get("loss"), torch.Tensor):
        return out["loss"]  # type: ignore[no-any-return]
    first = next(tensors_in(out), None)
    if first is None:
        raise InvalidSettingError(
            "The model's forward returned no tensor to take a loss of.", setting="inputs"
        )
    return first.float().sum()


def fake_inputs(fake: Any, inputs: Any) -> Any:
    """Convert real tensors in ``inputs`` to fake ones (fake ones are kept)."""
    import torch
    from torch.utils._pytree import tree_map_only

    return tree_map_only(
        torch.Tensor, lambda t: t if fake.is_our_fake(t) else fake.from_tensor(t), inputs
    )
