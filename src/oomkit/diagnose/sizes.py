"""Per-runtime unit tables: what each runtime *means* by the size label it prints.

Runtimes disagree about labels (oom-messages.md §0): PyTorch's MPS allocator prints ``GB`` for
1024**3, SGLang and vLLM's "took X GB" divide by ``1 << 30``, DeepSpeed's ``see_memory_usage`` too,
the Linux OOM killer prints pages as ``kB`` (KiB). Every number is converted here, exactly, from its
decimal text; nothing is converted through floats.

>>> to_bytes("18.13", "GB", "pytorch-mps") == to_bytes("18.13", "GiB", "pytorch")
True
>>> to_bytes("256", "bytes", "pytorch")
256
>>> to_bytes("-1.05", "GiB", "vllm") < 0
True
>>> to_bytes("1.5", "parsecs", "pytorch") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from oomkit.units import GB, KB, MB, TB, GiB, KiB, MiB, TiB

__all__ = [
    "RUNTIME_UNITS",
    "absurd_tactic_request",
    "decimal_to_bytes",
    "stated_request",
    "to_bytes",
    "to_float",
    "to_hex_int",
    "to_int",
]

_IEC: dict[str, int] = {
    "b": 1,
    "bytes": 1,
    "byte": 1,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": TiB,
}
# SI-looking labels that the runtime computes with binary divisors.
_BINARY_SI: dict[str, int] = {"kb": KiB, "mb": MiB, "gb": GiB, "tb": TiB}
_TRUE_SI: dict[str, int] = {"kb": KB, "mb": MB, "gb": GB, "tb": TB}

RUNTIME_UNITS: Mapping[str, Mapping[str, int]] = {
    # c10/cuda/CUDACachingAllocator.cpp format_size(): bytes / KiB / MiB / GiB, 1024**k.
    "pytorch": _IEC,
    # aten/src/ATen/mps/MPSAllocator.mm format_size(): labels KB/MB/GB over 1024**k
    # (newer builds print KiB/MiB/GiB; both are binary).
    "pytorch-mps": {**_IEC, **_BINARY_SI},
    # ggml: "%.2f MiB" (size/1024.0/1024.0) and raw %zu bytes; builds before Dec 2023 printed
    # the same size/1024.0/1024.0 labelled "MB" (e.g. "failed to allocate %.2f MB of pinned
    # memory"), so MB is binary here.
    "llama.cpp": {**_IEC, **_BINARY_SI},
    # ollama format/bytes.go HumanBytes2: B / KiB / MiB / GiB (binary).
    "ollama": {**_IEC, **_BINARY_SI},
    # vLLM GiB() helpers; "Loading model weights took X GB" divides by float(2**30).
    "vllm": {**_IEC, **_BINARY_SI},
    # SGLang get_available_gpu_memory() divides by 1 << 30 and labels it "GB".
    "sglang": {**_IEC, **_BINARY_SI},
    # DeepSpeed see_memory_usage: round(x / 1024**3, 2) labelled GB.
    "deepspeed": {**_IEC, **_BINARY_SI},
    # Linux mm/oom_kill.c K(x): pages -> kB (KiB).
    "linux": {**_IEC, "kb": KiB},
    # resource.Quantity's binary suffixes, as the kubelet prints memory (30Gi, 512Mi)
    "kubernetes": {**_IEC, "ki": KiB, "mi": MiB, "gi": GiB, "ti": TiB},
    # TF/XLA BFC allocator strings::HumanReadableNumBytes: KiB/MiB/GiB, raw "bytes".
    "tensorflow": _IEC,
    "jax": _IEC,
    "tensorrt-llm": _IEC,
    "tgi": _IEC,
    # Unknown runtime: take labels literally (SI stays SI).
    "generic": {**_IEC, **_TRUE_SI},
}

_MAX_DIGITS = 24


def decimal_to_bytes(number: str, scale: int) -> int | None:
    """Convert a decimal string times ``scale`` to an int, rounding half up, without floats.

    >>> decimal_to_bytes("7.06", 1 << 20)
    7402947
    >>> decimal_to_bytes("abc", 1) is None
    True
    """
    text = number.strip().replace(",", "")
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    whole, _, frac = text.partition(".")
    if not whole and not frac:
        return None  # "", "-", "." state no number
    if not whole:
        whole = "0"
    if (
        not whole.isdigit()
        or (frac and not frac.isdigit())
        or not whole.isascii()
        or not frac.isascii()
        or len(whole) + len(frac) > _MAX_DIGITS
    ):
        return None
    value = int(whole) * scale
    if frac:
        denom = 10 ** len(frac)
        value += (int(frac) * scale * 2 + denom) // (2 * denom)
    return -value if negative else value


def to_bytes(number: str, label: str, runtime: str) -> int | None:
    """Bytes for ``number`` printed with ``label`` by ``runtime``; ``None`` if either is unknown."""
    table = RUNTIME_UNITS.get(runtime, RUNTIME_UNITS["generic"])
    scale = table.get(label.strip().lower())
    if scale is None:
        return None
    return decimal_to_bytes(number, scale)


def to_int(text: str) -> int | None:
    """Parse a plain (possibly comma-grouped, possibly negative) integer; ``None`` if not one."""
    t = text.strip().replace(",", "")
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("-")
    if not t or len(t) > _MAX_DIGITS or not t.isascii() or not t.isdigit():
        return None
    return sign * int(t)


def to_hex_int(text: str) -> int | None:
    """Parse a ``0x``-prefixed hexadecimal byte count (Metal's assertions); ``None`` if not one."""
    t = text.strip()
    digits = t[2:] if t[:2].lower() == "0x" else ""
    if not digits or len(digits) > 16 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        return None
    return int(digits, 16)


def to_float(text: str) -> float | None:
    """Parse a short decimal (a fraction such as ``0.90``); ``None`` if not one."""
    t = text.strip()
    if not t or len(t) > _MAX_DIGITS or t.strip("0123456789.-"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


#: no device holds an EiB (as oomkit.validate.MAX_BYTES and parse_engines' ``_stated``)
_MAX_REQUEST = 1 << 60


def stated_request(text: str, what: str = "bytes requested") -> tuple[int | None, str | None]:
    """A stated byte request and, when it is no believable figure, the words that name it.

    revfix18e: a request of 0, none, or above 1 EiB is refused (``(None, "<text> <what>")``) so
    that the rules name it instead of sizing fixes by it: TensorRT prints its request as a
    ``size_t`` (``Requested amount of GPU memory (N bytes) could not be allocated``), so a
    negative size computed upstream reads as about 2**64 ("18446744065119617024 bytes" is
    -8 GiB wrapped), the same refusal as parse_engines' scratch-space form (docperf18).
    """
    x = to_int(text)
    if x is None or not 0 < x <= _MAX_REQUEST:
        return None, f"{text} {what}"
    return x, None


# TensorRT's builder warnings when it skips one tactic and builds on ([W]): "Tactic Device
# request: 17592186044415MB Available: 6030MB. Device memory is insufficient to use tactic.",
# "Skipping tactic 3 due to insufficient memory on requested size of 18446744073709551615"
_TACTIC_REQUEST = re.compile(
    r"Tactic Device request: (?P<mb>\d{1,24}) ?MB|requested size of (?P<b>\d{1,24}) detected"
)


def absurd_tactic_request(line: str) -> bool:
    """A TensorRT tactic-skip warning whose request no device holds: not an out-of-memory.

    revfix18e: the skip itself is a non-fatal builder warning (the build goes on with another
    tactic); a real-size request that does not fit still marks a device short of memory (the
    corpus' TensorRT-LLM and Jetson reports), but a request above 1 EiB (``SIZE_MAX``,
    18446744073709551615 bytes = 17592186044415 MiB: a tactic whose workspace query returned
    -1) is no shortage at all, and the warning alone is then no OOM.
    """
    m = _TACTIC_REQUEST.search(line)
    if m is None:
        return False
    n = to_int(m["mb"] or m["b"])
    return n is not None and n * (MiB if m["mb"] else 1) > _MAX_REQUEST
