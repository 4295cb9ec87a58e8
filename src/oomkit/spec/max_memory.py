"""``--max-memory``: accelerate's per-device weight caps, as text, to bytes per GPU.

accelerate's ``max_memory`` is a dict from device to a size (``{0: "24000MiB", 1: "24000MiB",
"cpu": "99GiB"}``; text-generation-webui's ``--gpu-memory 24000MiB 24000MiB`` builds one,
modules/models.py). oomkit takes ``24000MiB`` (every GPU) or ``0=24000MiB,1=22GiB`` (GPU i in
the order of ``--gpu``, every GPU of the run from 0 up, as accelerate ignores a GPU the dict
does not name). Sizes go through :func:`oomkit.units.parse_size` (GiB/MiB binary, GB decimal,
as accelerate's ``convert_file_size_to_int``).
"""

from __future__ import annotations

from oomkit.errors import InvalidSettingError
from oomkit.units import parse_size
from oomkit.validate import MAX_DEVICES

__all__ = ["parse_max_memory"]

_FLAG = "--max-memory"


def _size(text: str, whole: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise InvalidSettingError(
            f"{_FLAG}: {e} (in {whole[:80]!r})", setting=_FLAG, value=whole
        ) from None


def parse_max_memory(text: str | None) -> tuple[int, ...] | None:
    """``"24000MiB"`` -> ``(bytes,)`` (every GPU); ``"0=24000MiB,1=22GiB"`` -> one per GPU.

    Raises:
        InvalidSettingError: one line naming ``--max-memory`` and what is wrong.
    """
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(not p for p in parts):
        raise InvalidSettingError(
            f"{_FLAG} must be a size (24000MiB) or DEVICE=SIZE pairs separated by commas "
            f"(0=24000MiB,1=24000MiB), got {text[:80]!r}",
            setting=_FLAG,
            value=text,
        )
    if len(parts) == 1 and "=" not in parts[0]:
        return (_size(parts[0], text),)
    caps: dict[int, int] = {}
    for p in parts:
        key, eq, size = p.partition("=")
        key = key.strip()
        if not eq or not key.isdigit() or int(key) >= MAX_DEVICES:
            raise InvalidSettingError(
                f"{_FLAG}: {p[:40]!r} is not DEVICE=SIZE with a GPU index 0..{MAX_DEVICES - 1} "
                "(e.g. 0=24000MiB)",
                setting=_FLAG,
                value=text,
            )
        if int(key) in caps:
            raise InvalidSettingError(
                f"{_FLAG}: GPU {int(key)} is given twice in {text[:80]!r}",
                setting=_FLAG,
                value=text,
            )
        caps[int(key)] = _size(size.strip(), text)
    if sorted(caps) != list(range(len(caps))):
        raise InvalidSettingError(
            f"{_FLAG}: name every GPU of the run from 0 up (0=...,1=...), got {text[:80]!r}",
            setting=_FLAG,
            value=text,
        )
    if not any(caps.values()):
        raise InvalidSettingError(
            f"{_FLAG} gives no GPU any memory: {text[:80]!r}", setting=_FLAG, value=text
        )
    return tuple(caps[i] for i in range(len(caps)))
