"""Click parameter types: sizes with units, token counts, GPU lists. Parsing lives only here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click

from oomkit.units import parse_count, parse_size

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel
    from oomkit.spec.hardware import Hardware

__all__ = ["CONTEXT", "COUNT", "CTX_MAX", "SIZE", "hardware_from_options", "parse_gpu_list"]


class _Size(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.5
    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


class _Count(click.ParamType):  # type: ignore[type-arg]
    name = "N"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_count(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


class _Context(_Count):
    """A token count, or ``max`` (the largest context that fits)."""

    name = "N|max"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, str) and value.strip().lower() == "max":
            return CTX_MAX
        return super().convert(value, param, ctx)


#: what ``--ctx max`` converts to (no real context is negative)
CTX_MAX = -1
SIZE = _Size()
COUNT = _Count()
CONTEXT = _Context()

_MULT_RE = re.compile(r"^\s*(\d+)\s*[x×*]\s*(.+)$", re.IGNORECASE)


def parse_gpu_list(text: str) -> tuple[GpuModel, ...]:
    """``"rtx-4090"``, ``"2xA100-80GB"``, ``"rtx-4090,rtx-3090"`` -> catalog rows in order.

    Raises:
        UnknownNameError: a name is not in the GPU catalog (with suggestions).
        ValueError: a count is zero or absurd.
    """
    from oomkit.hardware.catalog import find_gpu

    out: list[GpuModel] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = _MULT_RE.match(part)
        count, name = (int(m.group(1)), m.group(2)) if m else (1, part)
        if not 1 <= count <= 1024:
            raise ValueError(f"GPU count in '{part}' must be between 1 and 1024")
        out.extend([find_gpu(name)] * count)
    if not out:
        raise ValueError(f"no GPU named in '{text}'")
    return tuple(out)


def hardware_from_options(
    gpus: tuple[str, ...], *, vram: int | None, ram: int | None, n_devices: int = 1
) -> Hardware:
    """The target of a command with repeatable ``--gpu`` values, ``--vram`` and ``--ram``.

    Raises:
        InvalidSettingError: no GPU named and no ``--vram``.
    """
    from oomkit.errors import InvalidSettingError
    from oomkit.hardware.targets import hardware_for

    rows: list[GpuModel] = []
    for value in gpus:
        rows.extend(parse_gpu_list(value))
    if not rows and vram is None:
        raise InvalidSettingError(
            "name the GPU: --gpu NAME (e.g. rtx-4090, 2x3090) or --vram SIZE", setting="--gpu"
        )
    return hardware_for(rows, vram_bytes=vram, host_ram_bytes=ram, n_devices=n_devices)
