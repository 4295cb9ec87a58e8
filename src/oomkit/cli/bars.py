"""One-line memory bars per device: weights / KV / compute / overhead against capacity.

Colour only on a terminal without ``NO_COLOR`` (https://no-color.org); otherwise each category
has its own letter, so the bar reads the same in a log file or a screen reader:
``[WWWWWWWWKKKCO.......|..]`` — ``|`` marks where the headroom starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from oomkit.estimate.breakdown import DeviceUsage
from oomkit.spec.hardware import DeviceTarget
from oomkit.units import format_bytes

__all__ = ["device_bar", "device_list", "use_color"]

_CATS = (
    ("weights", "W", "34"),  # blue
    ("kv_cache", "K", "35"),  # magenta
    ("activations", "C", "33"),  # yellow
    ("overhead", "O", "36"),  # cyan
    ("gradients", "G", "32"),
    ("optimizer", "P", "31"),
)


def use_color() -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (any value)."""
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def device_bar(
    d: DeviceUsage, *, headroom_bytes: int = 0, width: int = 40, color: bool = False
) -> str:
    """``[WWWWKKC....|.] 21.3 GiB / 23.99 GiB`` for one device (capacity known)."""
    cap = d.capacity_bytes
    if cap is None or cap <= 0:
        return f"{format_bytes(d.total_bytes)} (capacity unknown)"
    scale = max(cap, d.total_bytes)
    cells: list[str] = []
    for cat, letter, code in _CATS:
        n = round(d.category_bytes(cat) * width / scale)
        if n:
            cells.append(f"\x1b[{code}m{'█' * n}\x1b[0m" if color else letter * n)
    used = sum(round(d.category_bytes(c) * width / scale) for c, _, _ in _CATS)
    free_cells = max(0, width - used)
    mark = round(max(0, cap - headroom_bytes) * width / scale)
    tail = ["." for _ in range(free_cells)]
    if headroom_bytes and used <= mark < width:
        tail[mark - used] = "|"
    over = d.total_bytes > cap
    text = "".join(cells) + "".join(tail)
    suffix = f" {format_bytes(d.total_bytes)} / {format_bytes(cap)}"
    if over:
        suffix += f"  OVER by {format_bytes(d.total_bytes - cap)}"
    return f"[{text}]{suffix}"


def device_list(devices: Iterable[DeviceTarget]) -> str:
    """The devices as a header names them, each kind once with its count and capacity:
    "2 x NVIDIA GeForce RTX 3090 (24.00 GiB)", not the name twice ("" for none)."""
    counts: dict[str, int] = {}
    for target in devices:
        cap = target.capacity_bytes
        label = f"{target.name} ({format_bytes(cap)})" if cap else target.name
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{n} x {label}" if n > 1 else label for label, n in counts.items())
