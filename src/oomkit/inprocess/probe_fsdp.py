"""One rank of an FSDP run, traced on fake tensors: PyTorch's own FSDP over a fake process group.

The probe (:func:`oomkit.inprocess.probe.probe` with ``fsdp=True, gpus=N``) builds the model
under ``FakeTensorMode`` as it always does, then shards it with the real FSDP code of the
installed torch over ``dist.init_process_group("fake", rank=0, world_size=N)``
(``torch.testing._internal.distributed.fake_pg``: every collective returns at once and touches
no data, so what rank 0 allocates is what it allocates on a real run). Units are the decoder
layers (the classes in the transformers model's ``_no_split_modules``; for a model without
them, every child of an ``nn.ModuleList``), then the root (embeddings, final norm, output
head), as torchtune's ``shard_model`` and HF accelerate's ``TRANSFORMER_BASED_WRAP`` do.

* ``version=2`` (default): FSDP2 ``fully_shard`` per unit, ``reshard_after_forward`` True for
  ``FULL_SHARD`` and False for ``SHARD_GRAD_OP`` (the equivalents the FSDP2 docs give);
* ``version=1``: FSDP1 ``FullyShardedDataParallel`` with one ``FlatParameter`` per unit
  (``use_orig_params=False``), ``ShardingStrategy[strategy]``, FSDP1's defaults
  (``BackwardPrefetch.BACKWARD_PRE``, no forward prefetch), and the wrap policies of torchtune's
  2024 recipes: ``ModuleWrapPolicy`` over the decoder layers, and with a frozen base
  ``lora_fsdp_wrap_policy`` (each leaf with a trainable ``weight``, the LoRA A/B matrices, is
  its own unit: a flat parameter cannot mix trainable and frozen tensors).

Under mixed precision (fp32 trainable parameters, autocast) the units are gathered in the compute
dtype (FSDP2 ``MixedPrecisionPolicy(param_dtype=dtype)``, FSDP1 ``MixedPrecision(param_dtype=
dtype, reduce_dtype=dtype)``: what accelerate sets for ``mixed_precision: bf16``); pure 16-bit
runs (torchtune ``dtype: bf16``, ``mixed_precision=None``) gather as stored.

What the trace includes, because FSDP's Python code runs for real and the tracker sees every
allocation it makes (:mod:`oomkit.inprocess.probe_tracker`, including the
``UntypedStorage.resize_`` both versions free and re-allocate gathered parameters with):
each rank's shard of the parameters, gradients and optimizer states (padded as each version
pads); every all-gather buffer at the moment FSDP issues it and until FSDP drops or resizes
it; the backward prefetch of the next unit; the unsharded gradients of a unit until its
reduce-scatter; the root kept gathered from its forward to its backward. On a steady-state
FSDP2 step the probe's peak equals, to the byte, that of PyTorch's own
``torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker`` on the same fake run
(``tests/test_probe_fsdp.py``); without the ``resize_`` accounting it would be 18% higher.

FSDP1 vs FSDP2, as traced (``tests/test_probe_fsdp.py``):

* FSDP1 all-gathers a unit straight into its padded unsharded flat parameter; FSDP2 all-gathers
  into a flat buffer and copies it out into per-parameter tensors, and keeps the flat buffer
  until the next unit's copy-out (``AllGatherState``, to avoid ``record_stream``), so up to two
  copies of a gathered unit are alive: with a root unit larger than the layers (a 128k
  vocabulary on a 2-layer cut) FSDP2's peak is ~1.45x FSDP1's;
* FSDP1's root flat parameter (embeddings + head) holds one unsharded gradient from the head's
  backward to the end of the backward;
* the sharded states are the same bytes up to padding.

Streams: FSDP allocates its all-gather buffers (and FSDP1 its low-precision shards, both its
reduce-scatter outputs) inside ``device_handle.stream(s)`` on streams of its own; the tracker
records each allocation's stream (on the CPU, ``torch.cpu.stream``) and the allocator replay
keeps a pool per stream, as the caching allocator does, so a segment cached for one stream never
serves another (the "inter-stream fragmentation" FSDP2's comments name). Not modelled: the
allocator's ``release_cached_blocks`` when a ``cudaMalloc`` fails at the device's capacity (the
replay has no capacity, so a replayed reserved figure can exceed what the card holds), NCCL's own
buffers, and CPU-GPU timing (the trace's order is the order the CPU issues work, which is the
order the caching allocator sees; FSDP1's ``limit_all_gathers`` rate limiter waits on CUDA
events that do not exist here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from oomkit.errors import InvalidSettingError
from oomkit.validate import MAX_DIM

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = [
    "FSDP_PROBE_STRATEGIES",
    "check_fsdp_options",
    "fake_process_group",
    "require_fsdp",
    "shard_model",
]

#: the ``TrainingSettings.fsdp_strategy`` values the probe traces (one process group; HYBRID_SHARD
#: needs a 2-D mesh over nodes, NO_SHARD is DDP)
FSDP_PROBE_STRATEGIES: tuple[str, ...] = ("FULL_SHARD", "SHARD_GRAD_OP")


def check_fsdp_options(
    *, gpus: object, fsdp: object, fsdp_strategy: object, train: object, version: object = 2
) -> None:
    """Check the sharding options before torch runs.

    Raises:
        InvalidSettingError: the message starts with the keyword's name (``gpus``, ``fsdp``,
            ``fsdp_strategy``, ``fsdp_version``).
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_DIM:
        raise InvalidSettingError(
            f"gpus must be an integer in [1, {MAX_DIM}], got {gpus!r}", setting="gpus", value=gpus
        )
    if not fsdp:
        if gpus > 1:
            raise InvalidSettingError(
                f"gpus {gpus} needs fsdp: the probe traces one rank of an FSDP run (DDP and "
                "DeepSpeed ZeRO are not traced; use oomkit estimate for them)",
                setting="gpus",
                value=gpus,
            )
        return
    if train is None:
        raise InvalidSettingError(
            "fsdp needs a training step (train full, lora or qlora)", setting="fsdp", value=fsdp
        )
    if fsdp_strategy not in FSDP_PROBE_STRATEGIES:
        raise InvalidSettingError(
            f"fsdp_strategy {fsdp_strategy!r} is not traced: use "
            f"{' or '.join(FSDP_PROBE_STRATEGIES)} (HYBRID_SHARD and NO_SHARD: oomkit estimate)",
            setting="fsdp_strategy",
            value=fsdp_strategy,
        )
    if version == 1 and train == "qlora":
        raise InvalidSettingError(
            "fsdp_version 1 cannot shard the qlora base: FSDP1 flattens only floating-point "
            "tensors and the NF4 store is uint8 (bitsandbytes' bnb_4bit_quant_storage workaround "
            "is not modelled); use fsdp_version 2",
            setting="fsdp_version",
            value=version,
        )
    if version not in (1, 2) or isinstance(version, bool):
        raise InvalidSettingError(
            f"fsdp_version must be 1 (FullyShardedDataParallel) or 2 (fully_shard), "
            f"got {version!r}",
            setting="fsdp_version",
            value=version,
        )


def require_fsdp() -> None:
    """Raise a one-line error when this torch has no FSDP2 or no fake process group."""
    from oomkit.inprocess.probe import TorchMissingError

    try:
        import torch.distributed as dist

        if not dist.is_available():
            raise ImportError("torch.distributed")
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: F401
    except ImportError:
        raise TorchMissingError(
            "The FSDP probe needs torch.distributed with FSDP2 (fully_shard) and the fake "
            "process group: torch >= 2.6 built with distributed support."
        ) from None


@contextlib.contextmanager
def fake_process_group(world_size: int) -> Iterator[Any]:
    """A fake process group of ``world_size`` ranks (this process is rank 0) and its 1-D CPU
    device mesh; destroyed on exit.

    Raises:
        InvalidSettingError: a process group already exists in this process.
    """
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        raise InvalidSettingError(
            "fsdp: this process already has a torch.distributed process group; the probe "
            "traces its own fake one (run it outside a distributed job)",
            setting="fsdp",
        )
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        yield init_device_mesh("cpu", (world_size,))
    finally:
        dist.destroy_process_group()


def _units(model: nn.Module) -> list[nn.Module]:
    """The modules sharded as units before the root: the decoder layers."""
    from torch import nn

    names = set(getattr(model, "_no_split_modules", None) or ())
    if names:
        found = [m for m in model.modules() if type(m).__name__ in names and m is not model]
        if found:
            return found
    return [child for m in model.modules() if isinstance(m, nn.ModuleList) for child in m]


def shard_model(
    model: nn.Module, mesh: Any, *, strategy: str, param_dtype: torch.dtype | None,
    version: int = 2,
) -> tuple[nn.Module, int]:  # fmt: skip
    """Shard every decoder layer, then the root; returns the model to run and its layer units.

    ``version`` 2: ``fully_shard`` (FSDP2) in place. ``version`` 1: the model wrapped in
    ``FullyShardedDataParallel`` (FSDP1, flat parameters, ``use_orig_params=False``) with the
    wrap policy of the torchtune recipes of 2024 (``ModuleWrapPolicy`` over the decoder layers;
    with a frozen base, ``lora_fsdp_wrap_policy``: every leaf whose ``weight`` is trainable,
    the LoRA A/B matrices, is its own unit, since a flat parameter cannot mix trainable and
    frozen tensors); FSDP1's defaults otherwise (``BackwardPrefetch.BACKWARD_PRE``, no forward
    prefetch). Call under the probe's ``FakeTensorMode`` (the shards are fake tensors too).

    Raises:
        InvalidSettingError: the model has no decoder layers to shard.
    """
    units = _units(model)
    if not units:
        raise InvalidSettingError(
            f"fsdp: {type(model).__name__} has no decoder layers to shard (no "
            "_no_split_modules, no nn.ModuleList)",
            setting="fsdp",
        )
    if version == 1:
        return _fsdp1(model, units, strategy=strategy, param_dtype=param_dtype), len(units)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    reshard = strategy == "FULL_SHARD"
    kw: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": reshard}
    if param_dtype is not None:
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=param_dtype)
    for unit in units:
        fully_shard(unit, **kw)
    fully_shard(model, **kw)
    return model, len(units)


def _fsdp1(
    model: nn.Module, units: list[nn.Module], *, strategy: str, param_dtype: torch.dtype | None
) -> nn.Module:
    import torch
    from torch import nn
    from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy

    classes = tuple({type(u) for u in units})
    frozen = any(not p.requires_grad for p in model.parameters())

    def policy(module: nn.Module, recurse: bool, nonwrapped_numel: int) -> bool:
        del nonwrapped_numel
        if recurse:
            return True
        if isinstance(module, classes):
            return True
        weight = getattr(module, "weight", None)
        return frozen and isinstance(weight, nn.Parameter) and weight.requires_grad

    mp = None
    if param_dtype is not None:
        mp = MixedPrecision(param_dtype=param_dtype, reduce_dtype=param_dtype)
    import warnings

    with warnings.catch_warnings():  # FSDP1 is deprecated in favour of fully_shard
        warnings.simplefilter("ignore")
        wrapped: nn.Module = FullyShardedDataParallel(
            model, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy[strategy],
            mixed_precision=mp, device_id=torch.device("cpu"), use_orig_params=False,
        )  # fmt: skip
    return wrapped
