"""One rank of an FSDP run, traced on fake tensors: PyTorch's own FSDP2 over a fake process group.

The probe (:func:`oomkit.inprocess.probe.probe` with ``fsdp=True, gpus=N``) builds the model
under ``FakeTensorMode`` as it always does, then shards it with the real
``torch.distributed.fsdp.fully_shard`` (FSDP2) over ``dist.init_process_group("fake", rank=0,
world_size=N)`` (``torch.testing._internal.distributed.fake_pg``: every collective returns at
once and touches no data, so rank 0's allocations are exactly what it allocates on a real run).
Units are sharded as torchtune's ``shard_model`` and HF accelerate's
``TRANSFORMER_BASED_WRAP`` do: every decoder layer (the classes in the transformers model's
``_no_split_modules``; for a model without them, every child of an ``nn.ModuleList``), then the
root (embeddings, final norm, output head). ``reshard_after_forward`` is True for
``FULL_SHARD`` and False for ``SHARD_GRAD_OP`` (the ``ShardingStrategy`` equivalents the FSDP2
docs give). Under mixed precision (fp32 trainable parameters, autocast) the units are gathered
in the compute dtype (``MixedPrecisionPolicy(param_dtype=dtype)``, what accelerate sets for
``mixed_precision: bf16``; gradients reduced in that dtype, FSDP2's default when
``reduce_dtype`` is None); pure 16-bit runs (torchtune ``dtype: bf16``) gather as stored.

What the trace therefore includes, because FSDP2's Python code runs for real and the tracker
sees every allocation it makes (:mod:`oomkit.inprocess.probe_tracker`, including the
``UntypedStorage.resize_`` FSDP2 frees all-gathered parameters with):

* each rank's shard of the parameters, gradients (reduce-scatter output) and optimizer states
  (``DTensor`` local shards, rounded up to a multiple of N rows by FSDP2's padding);
* per unit, the flat all-gather buffer (``world_size x`` the shard) and the per-parameter
  unsharded tensors it is copied out into; FSDP2 keeps the previous unit's all-gather result
  until the next unit's copy-out (``AllGatherState``), so two units' buffers overlap;
* the backward's explicit prefetch of the next unit (FSDP2 prefetches one unit ahead in the
  backward by default), the unsharded gradients of a unit and the reduce-scatter input/output
  buffers, held until the next reduce-scatter is issued (``ReduceScatterState``);
* the root unit stays gathered from its forward to its backward (FSDP2 never reshards the root
  after forward).

What it does not: the separate CUDA streams FSDP2 allocates its all-gather and reduce-scatter
buffers on (the caching allocator keeps per-stream pools, so a real reserved figure can be
higher than the single-pool replay), NCCL's own buffers, and the CPU-GPU timing (the trace's
order is the order the CPU issues work, which is the order the caching allocator sees).

FSDP1 vs FSDP2. The sharded runs of the published tables (torchtune 2024-05,
``lora_finetune_distributed`` / ``full_finetune_distributed``) used FSDP1
(``FullyShardedDataParallel``, ``FULL_SHARD``) with one ``FlatParameter`` per wrapped unit; the
probe traces FSDP2 (per-parameter ``DTensor`` shards), the API torch has today. Per rank the
sharded states are the same bytes up to padding (FSDP1 pads the flat parameter to a multiple
of N, FSDP2 each parameter's first dimension). The gathered unit is the same size (the whole
layer, in the gathered dtype); both prefetch one unit in the backward (FSDP1
``BackwardPrefetch.BACKWARD_PRE``) and keep the last unit's all-gather result alive while the
next one is issued (FSDP1 through the caching allocator's ``record_stream``, FSDP2 explicitly).
torchtune's FSDP1 LoRA wrap policy also wrapped every LoRA adapter as its own unit (a flat
parameter cannot mix trainable and frozen tensors); FSDP2 keeps them in the layer's unit, which
only moves a few MB of adapters between units.
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


def check_fsdp_options(*, gpus: object, fsdp: object, fsdp_strategy: object, train: object) -> None:
    """Check the sharding options before torch runs.

    Raises:
        InvalidSettingError: the message starts with the keyword's name (``gpus``, ``fsdp``,
            ``fsdp_strategy``).
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
    model: nn.Module, mesh: Any, *, strategy: str, param_dtype: torch.dtype | None
) -> int:
    """``fully_shard`` every decoder layer, then the root; returns the number of layer units.

    Call under the probe's ``FakeTensorMode`` (the shards are fake tensors too).

    Raises:
        InvalidSettingError: the model has no decoder layers to shard.
    """
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    reshard = strategy == "FULL_SHARD"
    kw: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": reshard}
    if param_dtype is not None:
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=param_dtype)
    units = _units(model)
    if not units:
        raise InvalidSettingError(
            f"fsdp: {type(model).__name__} has no decoder layers to shard (no "
            "_no_split_modules, no nn.ModuleList)",
            setting="fsdp",
        )
    for unit in units:
        fully_shard(unit, **kw)
    fully_shard(model, **kw)
    return len(units)
