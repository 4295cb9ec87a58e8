"""The swapfile a host-RAM fix suggests, sized to what it is meant to cover (revfix19d).

A fixed ``fallocate -l 32G`` beside a fix that "saves ~60 GiB" promised room the command does not
make. The size here is the whole GiB count at or above what the swap must hold (the failing host
allocation, or what the killed process held), at least :data:`MIN_SWAP_GIB`; the fix's saving is
that size (the room the swap adds), never more.
"""

from __future__ import annotations

__all__ = ["MIN_SWAP_GIB", "swap_command", "swap_gib"]

#: the smallest swapfile suggested (a smaller one is not worth the setup)
MIN_SWAP_GIB = 8
_GIB = 1 << 30


def swap_gib(cover: int | None, default: int) -> int:
    """Whole GiB of swap that hold ``cover`` bytes (``default`` when unknown), at least
    :data:`MIN_SWAP_GIB`.

    >>> swap_gib(60 * 2**30 + 1, 32), swap_gib(None, 32), swap_gib(2**30, 16)
    (61, 32, 8)
    """
    if cover is None or cover <= 0:
        return default
    return max(MIN_SWAP_GIB, -(-cover // _GIB))


def swap_command(gib: int, *, chmod: bool = True) -> str:
    """The Linux commands that create and enable a ``gib`` GiB swapfile."""
    mode = " && sudo chmod 600 /swapfile" if chmod else ""
    return (
        f"sudo fallocate -l {gib}G /swapfile{mode} && sudo mkswap /swapfile && sudo swapon "
        "/swapfile"
    )
