"""The CUDA total of a card no public message gives: NVML's total less the driver's reserve.

The mechanism: the driver keeps part of the framebuffer for itself, and ``nvidia-smi -q``
shows it under "FB Memory Usage" as ``Reserved`` (NVML ``nvmlMemory_v2_t.reserved``, "device
memory reserved for system use (driver or firmware)"); ``cudaMemGetInfo``'s total, what
PyTorch prints as "total capacity", is ``Total - Reserved``. An RTX A6000 shows ``Total 49140
MiB, Reserved 569 MiB, Free 48571 MiB`` (ObrienlabsDev/machine-learning, driver 537.99) and
PyTorch prints "47.43 GiB total capacity" for that card on Linux (h17-GeoTransformer-119):
48571 MiB is 47.43 GiB. NVIDIA publishes no formula for the reserve: it grows with the
framebuffer and with the driver (RTX 3090: 0.30-0.46 GiB over 2022-2026), and Pascal and Volta
keep almost nothing (12-92 MiB on the six measured cards).

So a card without a figure takes, as a lower bound, the smallest reserve measured on the
cards of its class: the same architecture (one driver and firmware memory layout; Turing or
later, whose measured reserves are 0.2-0.9 GiB) and the same size band of NVML total. A class
needs at least :data:`MIN_MEASURED` measured cards; a card of a class with fewer, outside
every band, or of an older architecture, keeps NVML's total. The modelled total is an upper
bound on what CUDA reports for the class, so it never budgets below a measured card of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from oomkit.units import MiB

#: architectures whose driver reserve is measured in the hundreds of MiB
MODELLED_ARCHITECTURES = frozenset({"Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"})
#: size bands of NVML's total, (above, up to] in MiB: 8 GB, 10-12 GB, 16 GB, 20-24 GB,
#: 32-48 GB and larger cards; 6 GB and smaller Turing+ cards have no measured figure
SIZE_BANDS_MIB: tuple[tuple[int, int | None], ...] = (
    (6 * 1024, 8 * 1024),
    (8 * 1024, 12 * 1024),
    (12 * 1024, 16 * 1024),
    (16 * 1024, 24 * 1024),
    (24 * 1024, 48 * 1024),
    (48 * 1024, None),
)
#: a band models its cards only from this many measured cards (not from one)
MIN_MEASURED = 3


@dataclass(frozen=True)
class ReserveFloor:
    """The smallest driver reserve measured on a class of cards.

    Attributes:
        reserve_bytes: NVML total less CUDA total, the smallest over ``measured``.
        measured: keys of the class's cards with a measured CUDA total.
        band_mib: the size band (above, up to] of NVML's total, in MiB; ``None`` unbounded.
        architecture: the class's architecture.
    """

    reserve_bytes: int
    measured: tuple[str, ...]
    band_mib: tuple[int, int | None]
    architecture: str


def size_band(memory_bytes: int) -> tuple[int, int | None] | None:
    """The band of :data:`SIZE_BANDS_MIB` that holds ``memory_bytes``, else ``None``.

    >>> size_band(16376 * MiB)
    (12288, 16384)
    >>> size_band(6144 * MiB) is None
    True
    """
    for low, high in SIZE_BANDS_MIB:
        if memory_bytes > low * MiB and (high is None or memory_bytes <= high * MiB):
            return (low, high)
    return None


def _modellable(architecture: str, vendor: str, memory_bytes: int) -> bool:
    return (
        vendor == "nvidia"
        and architecture in MODELLED_ARCHITECTURES
        and size_band(memory_bytes) is not None
    )


def reserve_floor(
    architecture: str,
    vendor: str,
    memory_bytes: int,
    measured: Iterable[tuple[str, str, int, int]],
) -> ReserveFloor | None:
    """The reserve floor for a card of ``architecture`` with NVML total ``memory_bytes``.

    ``measured`` holds ``(key, architecture, memory_bytes, cuda_total_bytes)`` of every card
    with a measured CUDA total. ``None`` when the card is of no modelled class or its class
    has fewer than :data:`MIN_MEASURED` measured cards.
    """
    if not _modellable(architecture, vendor, memory_bytes):
        return None
    band = size_band(memory_bytes)
    rows = sorted(
        (total - cuda, key)
        for key, arch, total, cuda in measured
        if arch == architecture and size_band(total) == band
    )
    if len(rows) < MIN_MEASURED or band is None:
        return None
    return ReserveFloor(
        reserve_bytes=rows[0][0],
        measured=tuple(sorted(k for _, k in rows)),
        band_mib=band,
        architecture=architecture,
    )


def describe_floor(floor: ReserveFloor) -> str:
    """One line for ``cuda_total_source``-like output: the rule and the cards behind it."""
    low, high = floor.band_mib
    band = f"{low // 1024}-{high // 1024} GiB" if high is not None else f"over {low // 1024} GiB"
    return (
        f"modelled: NVML total less {floor.reserve_bytes // MiB} MiB, the smallest driver "
        f"reserve measured on the {len(floor.measured)} {floor.architecture} cards of {band} "
        f"({', '.join(floor.measured)})"
    )
