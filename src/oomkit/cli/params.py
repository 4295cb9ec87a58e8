"""Click parameter types: sizes with units, token counts, GPU lists. Parsing lives only here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click

from oomkit.cli.values import CTX_MAX, parse_context
from oomkit.errors import InvalidSettingError
from oomkit.units import parse_count, parse_size

if TYPE_CHECKING:
    from oomkit.hardware.catalog import GpuModel
    from oomkit.spec.hardware import DeviceTarget, Hardware

__all__ = [
    "CONTEXT",
    "COUNT",
    "CTX_MAX",
    "SIZE",
    "hardware_from_options",
    "parse_gpu_list",
    "split_gpu_count",
]


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
        if isinstance(value, int):
            return value
        try:
            return parse_context(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)


class _TrainSeq(_Count):
    """A training ``--seq``: a token count; ``max`` (read by ``--ctx``) refused in a line
    that says what to give: a training step has one length, and ``plan --train`` already
    names the largest ``--seq`` that fits when the asked one does not."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, str) and value.strip().lower() == "max":
            self.fail(
                "'max' is --ctx's (inference); training takes a length: give one (--seq 8192, "
                "32k). When it does not fit, `oomkit plan --train` names the largest --seq "
                "that fits, capped at the model's trained maximum",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


SIZE = _Size()
COUNT = _Count()
TRAIN_SEQ = _TrainSeq()
CONTEXT = _Context()

# "2x3090" / "2xrtx-3090" (count first) and "4090x2" / "4090 * 2" (count last); compiled on
# first use so that commands without --gpu do not pay for them.
_MULT_PREFIX = r"^\s*(\d+)\s*[x×*]\s*(.+)$"
_MULT_SUFFIX = r"^\s*(.*[\d\s])[x×*]\s*(\d+)\s*$"


def split_gpu_count(part: str) -> tuple[int, str]:
    """``"2x3090"``, ``"2xrtx-3090"``, ``"4090x2"``, ``"4090 * 2"`` -> (2, name); else (1, part).

    A part that is itself a catalog name is never split (``"7900xtx"``, ``"mi300x"``); of the
    two count positions the one whose remainder is a catalog name wins, so ``"4090x2"`` is two
    RTX 4090s, not 4090 cards named ``"2"``.
    """
    from oomkit.hardware.catalog import find_gpu

    def known(name: str) -> bool:
        try:
            find_gpu(name)
        except LookupError:
            return False
        return True

    if known(part):
        return 1, part
    prefix = re.match(_MULT_PREFIX, part, re.IGNORECASE)
    suffix = re.match(_MULT_SUFFIX, part, re.IGNORECASE)
    if prefix is not None and known(prefix.group(2)):
        return int(prefix.group(1)), prefix.group(2)
    if suffix is not None and known(suffix.group(1)):
        return int(suffix.group(2)), suffix.group(1).strip()
    if prefix is not None:  # "2xfoo": a count, and an unknown name the error will name
        return int(prefix.group(1)), prefix.group(2)
    return 1, part


def parse_gpu_list(text: str) -> tuple[GpuModel, ...]:
    """``"rtx-4090"``, ``"2xA100-80GB"``, ``"4090x2"``, ``"rtx-4090,rtx-3090"`` -> rows in order.

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
        count, name = split_gpu_count(part)
        if not 1 <= count <= 1024:
            raise InvalidSettingError(
                f"GPU count in '{part}' must be between 1 and 1024", setting="--gpu"
            )
        out.extend([find_gpu(name)] * count)
    if not out:
        raise InvalidSettingError(f"no GPU named in '{text}'", setting="--gpu")
    return tuple(out)


def hardware_from_options(
    gpus: tuple[str, ...],
    *,
    vram: int | None,
    ram: int | None,
    quiet: bool = False,
    n_devices: int | None = None,
    os: str | None = None,
) -> Hardware:
    """The target of a command with repeatable ``--gpu`` values (catalog names, ``2x3090``,
    ``auto`` for the GPUs in this machine), ``--vram`` and ``--ram``; the resolved GPUs are
    named on stderr unless ``quiet``. ``n_devices`` (``--tp``): how many ``--vram`` GPUs
    when no ``--gpu`` names them. ``os`` (``--os``): what a catalog card's runtime capacity
    is on that system (Windows' WDDM reserve).

    Raises:
        InvalidSettingError: no GPU named and no ``--vram``.
    """
    from oomkit.cli.gpu_choice import choose_hardware
    from oomkit.errors import InvalidSettingError
    from oomkit.spec.hardware import Hardware

    if not gpus and vram is None:
        raise InvalidSettingError(
            "name the GPU: --gpu NAME (e.g. rtx-4090, 2x3090, auto) or --vram SIZE",
            setting="--gpu",
        )
    if not gpus:
        return choose_hardware(
            None, vram_bytes=vram, host_ram_bytes=ram, n_devices=n_devices or 1, os=os
        ).hardware
    devices: list[DeviceTarget] = []
    for value in gpus:
        choice = choose_hardware(value, vram_bytes=vram, host_ram_bytes=ram, os=os)
        devices.extend(choice.hardware.devices)
        if not quiet:
            for line in choice.describe():
                click.echo(line, err=True)
    return Hardware(devices=tuple(devices), host_ram_bytes=ram, os=os)
