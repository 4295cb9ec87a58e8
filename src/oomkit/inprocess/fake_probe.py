"""FakeTensor probe: trace a real PyTorch model's memory without allocating it (extra ``torch``).

The model is built and run under ``torch._subclasses.fake_tensor.FakeTensorMode``: every tensor
has its real shape, dtype and storage size but no data, so an 8B model instantiates in about a
second and a 4k-token forward takes seconds on a CPU. PyTorch's own
``torch.distributed._tools.mem_tracker.MemTracker`` (a ``TorchDispatchMode``) follows every
storage from creation to release and files it as parameter, buffer, gradient, activation,
temporary or optimizer state, per module; its peak snapshot is the report.

For a GPU the sizes are rounded as the CUDA caching allocator rounds each allocation
(``c10/cuda/CUDACachingAllocator.cpp`` ``round_size``: multiples of 512 bytes, the rule
``MemTracker`` applies to CUDA tensors); fake tensors are built on the CPU device because fake
CUDA tensors cannot be initialised on a CPU-only build, so that rule is applied to them here.

Training runs two steps (forward, backward, ``optimizer.step()``, ``zero_grad(set_to_none=True)``)
so the second step's peak includes the optimizer states created lazily in the first.

Entry points: :func:`probe` for any ``nn.Module`` factory, :func:`probe_hf` for a Hugging Face
``config.json`` (built with ``transformers``; no weights are read).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from oomkit.errors import ProbeUnavailableError, UnsupportedModelError

__all__ = ["PROBE_CATEGORIES", "ProbeReport", "ProbeUnavailableError", "probe", "probe_hf"]

#: MemTracker reference types -> oomkit's names
PROBE_CATEGORIES: Mapping[str, str] = {
    "Parameter": "parameters",
    "Buffer": "buffers",
    "Gradient": "gradients",
    "Activation": "activations",
    "Temp": "temporaries",
    "Optstate": "optimizer",
    "Other": "other",
}
_MIN_BLOCK = 512  # CUDACachingAllocator kMinBlockSize


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeReport:
    """Peak tensor memory of one traced run (bytes)."""

    peak_bytes: int
    categories: Mapping[str, int]  # at the peak, PROBE_CATEGORIES values
    #: (module name, bytes it adds at its peak over the memory at its pre-forward), largest first
    top_modules: tuple[tuple[str, int], ...]
    train: bool
    rounded_for_gpu: bool
    wall_s: float
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "peak_bytes": self.peak_bytes,
            "categories": dict(self.categories),
            "top_modules": [{"module": m, "peak_bytes": b} for m, b in self.top_modules],
            "train": self.train,
            "rounded_for_gpu": self.rounded_for_gpu,
            "wall_s": self.wall_s,
            "details": dict(self.details),
        }


def _import_torch() -> Any:
    try:
        import torch
        from torch.distributed._tools import mem_tracker
    except ImportError as e:
        raise ProbeUnavailableError(
            "Probe failed: torch is not installed (or lacks torch.distributed._tools). "
            "Install the extra: pip install 'oomkit[torch]'."
        ) from e
    del mem_tracker
    return torch


@contextlib.contextmanager
def _gpu_rounding(enabled: bool) -> Iterator[None]:
    """Apply MemTracker's CUDA rounding rule to the (CPU) fake tensors while probing."""
    from torch.distributed._tools import mem_tracker

    if not enabled:
        yield
        return
    info = mem_tracker._WeakRefInfo
    original = info._calculate_mem_consumed

    def rounded(self: Any) -> int:
        mem = int(self.size * self.element_size)
        return -(-mem // _MIN_BLOCK) * _MIN_BLOCK

    info._calculate_mem_consumed = rounded  # type: ignore[method-assign]
    try:
        yield
    finally:
        info._calculate_mem_consumed = original  # type: ignore[method-assign]


def _make_optimizer(torch: Any, params: list[Any], name: str) -> Any:
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3)
    if name == "sgd_momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    raise ProbeUnavailableError(
        f"Probe failed for optimizer '{name}': the probe runs torch.optim only "
        "(adamw, sgd, sgd_momentum)."
    )


def _loss_of(torch: Any, out: Any) -> Any:
    loss = getattr(out, "loss", None)
    if loss is not None:
        return loss
    if isinstance(out, torch.Tensor):
        return out.float().sum()
    if isinstance(out, tuple | list) and out and isinstance(out[0], torch.Tensor):
        return out[0].float().sum()
    logits = getattr(out, "logits", None)
    if logits is not None:
        return logits.float().sum()
    raise ProbeUnavailableError(
        "Probe failed: cannot find a loss in the model output; return a tensor or an object "
        "with .loss."
    )


def probe(
    model_factory: Callable[[], Any],
    inputs: Callable[[], Any] | Mapping[str, Any] | tuple[Any, ...],
    *,
    train: bool = False,
    optimizer: str = "adamw",
    rounded_for_gpu: bool = True,
    top: int = 10,
) -> ProbeReport:
    """Trace ``model_factory()`` on ``inputs`` under FakeTensorMode and report the peak.

    Args:
        model_factory: builds the ``nn.Module`` (called inside FakeTensorMode: no memory used).
        inputs: keyword arguments (mapping), positional arguments (tuple), or a callable that
            builds them inside FakeTensorMode.
        train: forward + backward + optimizer step (two steps) instead of a no-grad forward.
        optimizer: ``adamw`` (foreach), ``sgd`` or ``sgd_momentum`` when training.
        rounded_for_gpu: round each allocation to 512 bytes like the CUDA caching allocator.
        top: how many modules to list.

    Returns:
        The peak by category and the modules with the largest local peaks (bytes).

    Raises:
        ProbeUnavailableError: torch missing, or no loss found in the output when training.
    """
    torch = _import_torch()
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker

    t0 = time.perf_counter()
    with FakeTensorMode(), _gpu_rounding(rounded_for_gpu):
        model = model_factory()
        args = inputs() if callable(inputs) else inputs
        tracker = MemTracker()
        optim: Any = None
        if train:
            model.train()
            params = [p for p in model.parameters() if p.requires_grad]
            optim = _make_optimizer(torch, params, optimizer)
            tracker.track_external(model, optim)
        else:
            model.eval()
            tracker.track_external(model)
        with tracker:
            if train:
                for step in range(2):
                    if step:
                        tracker.reset_mod_stats()  # module stats are per iteration
                    out = model(**args) if isinstance(args, Mapping) else model(*args)
                    loss = _loss_of(torch, out)
                    del out  # like HF Trainer: only the loss outlives the forward
                    loss.backward()
                    del loss
                    optim.step()
                    optim.zero_grad(set_to_none=True)
            else:
                with torch.no_grad():
                    out = model(**args) if isinstance(args, Mapping) else model(*args)
                    del out
        snapshot = tracker.get_tracker_snapshot("peak")
        modules = _top_modules(tracker, top)
    categories: dict[str, int] = dict.fromkeys(PROBE_CATEGORIES.values(), 0)
    total = 0
    for per_device in snapshot.values():
        for key, value in per_device.items():
            if key == "Total":
                total += int(value)
            else:
                name = PROBE_CATEGORIES.get(getattr(key, "value", str(key)), "other")
                categories[name] += int(value)
    return ProbeReport(
        peak_bytes=total,
        categories=categories,
        top_modules=modules,
        train=train,
        rounded_for_gpu=rounded_for_gpu,
        wall_s=round(time.perf_counter() - t0, 3),
    )


def _top_modules(tracker: Any, top: int) -> tuple[tuple[str, int], ...]:
    """Modules by what they add while they run: local peak minus memory at their pre-forward."""
    from torch.distributed._tools.mem_tracker import _ModState

    rows = []
    for stats in tracker.memory_tracking.values():
        peak = sum(int(v) for v in stats.local_peak.values())
        pre = stats.snapshots.get(_ModState.PRE_FW) or []
        start = sum(int(d.get("Total", 0)) for d in pre[0].values()) if pre else 0
        rows.append((stats.mod_fqn, max(0, peak - start)))
    rows.sort(key=lambda r: r[1], reverse=True)
    return tuple(rows[:top])


_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def probe_hf(
    config: Mapping[str, Any],
    *,
    batch: int = 1,
    seq: int = 2048,
    train: bool = False,
    dtype: str = "bf16",
    grad_checkpointing: bool = False,
    attn_implementation: str = "sdpa",
    optimizer: str = "adamw",
    rounded_for_gpu: bool = True,
    top: int = 10,
) -> ProbeReport:
    """Build the ``transformers`` model of ``config`` (random init, fake tensors) and probe it.

    Training is pure ``dtype`` training (parameters, gradients and AdamW states in ``dtype``, as
    torchtune's ``dtype: bf16``), with ``labels`` so the model computes its own loss. Inference
    is a no-grad forward of ``batch x seq`` tokens with ``use_cache=False`` and
    ``logits_to_keep=1`` (what ``generate`` does at prefill).

    Raises:
        ProbeUnavailableError: transformers missing, or the config names an architecture
            transformers does not ship (remote code is never run).
    """
    torch = _import_torch()
    try:
        import transformers
    except ImportError as e:
        raise ProbeUnavailableError(
            "Probe failed: transformers is not installed. Install it: pip install transformers."
        ) from e
    cfg = json.loads(json.dumps(config, default=dict))  # plain dicts (catalog mappings)
    model_type = cfg.pop("model_type", None)
    if cfg.get("auto_map"):
        raise UnsupportedModelError(
            f"Probe failed for '{model_type}': the config needs remote code (auto_map), which "
            "oomkit never runs.",
            architecture=str((cfg.get("architectures") or ["?"])[0]),
            feature="remote code",
        )
    try:
        hf_config = transformers.AutoConfig.for_model(model_type, **cfg)
    except (ValueError, KeyError, TypeError) as e:
        raise ProbeUnavailableError(
            f"Probe failed for model_type '{model_type}': transformers "
            f"{transformers.__version__} cannot build it ({e})."
        ) from e
    torch_dtype = getattr(torch, _DTYPES[dtype])
    ids_shape = (batch, seq)
    vocab = int(hf_config.vocab_size)

    def factory() -> Any:
        model = transformers.AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
            hf_config, dtype=torch_dtype, attn_implementation=attn_implementation
        )
        if train and grad_checkpointing:
            # transformers 5 renamed it activation_checkpointing_enable (the old name warns)
            ckpt_kwargs = {"use_reentrant": False}
            if hasattr(model, "activation_checkpointing_enable"):
                model.activation_checkpointing_enable(activation_checkpointing_kwargs=ckpt_kwargs)
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=ckpt_kwargs)
        return model

    def inputs() -> dict[str, Any]:
        ids = torch.randint(0, vocab, ids_shape)
        if train:
            return {"input_ids": ids, "labels": ids, "use_cache": False}
        return {"input_ids": ids, "use_cache": False, "logits_to_keep": 1}

    report = probe(
        factory,
        inputs,
        train=train,
        optimizer=optimizer,
        rounded_for_gpu=rounded_for_gpu,
        top=top,
    )
    details = {
        "model_type": model_type,
        "batch": batch,
        "seq": seq,
        "dtype": dtype,
        "grad_checkpointing": grad_checkpointing,
        "attn_implementation": attn_implementation,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    return ProbeReport(
        peak_bytes=report.peak_bytes,
        categories=report.categories,
        top_modules=report.top_modules,
        train=train,
        rounded_for_gpu=rounded_for_gpu,
        wall_s=report.wall_s,
        details=details,
    )
