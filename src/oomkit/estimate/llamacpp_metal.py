"""Metal builds of June 2023: the whole model is ONE Metal buffer, capped by maxBufferLength (pure).

llama.cpp's first Metal backend (PR #1642, "llama : Metal inference", early June 2023) hands
ggml-metal the memory it must see as a few named buffers (``ggml_metal_add_buffer`` in
llama.cpp's ``llama_init_from_file``): ``data`` (the whole mmap'd model file), ``eval``,
``kv``, ``scr0`` and ``scr1``. Each became ONE ``MTLBuffer``
(``newBufferWithBytesNoCopy:length:``), and Metal creates no buffer longer than the device's
``maxBufferLength``; PR #1706 (spencersutton, 2023-06-05) made that explicit:
``ggml_metal_add_buffer: buffer 'data' size N is larger than buffer maximum of M`` then
``llama_init_from_file: failed to add buffer`` (before it, the nil buffer gave "buffer is nil"
errors at every step). PR #1826 (ggerganov, "metal : handle buffers larger than device's
maxBufferLength", merged 2023-06-18) split a larger buffer into overlapping views of at most
``maxBufferLength`` (the overlap is the largest tensor, so every tensor lies whole in one
view): from then on only the working set limits a model (:mod:`oomkit.estimate.verdict`).

``maxBufferLength`` of the Apple-silicon Macs of that time is half the installed memory:
"MTLDevice.maxBufferLength always returns 1/2 the size of total RAM ... on my Mac mini with a
measly 8GB total RAM, the buffer maximum is 4294967296" (madhatter215 in PR #1706, 2023-06-08);
17179869184 on a 32 GB M2 (llama.cpp#1815) and 8589934592 on a 16 GB M2 Pro
(llama-cpp-python#438). (Later macOS releases report more on larger Macs: the 36 GB M3 Pro of
meta-llama/llama#964, Dec 2023, splits into views of 20736 MiB; only the builds before PR
#1826 are limited by it, and those mostly ran on macOS 13.) macOS 14 reports 9/16 of the
installed memory (0.75 x recommendedMaxWorkingSetSize: 20736 MiB of 36 GB above; "~27 GB" on a
48 GB M4 Pro, exo-explore/exo#1048), and the macOS 14 developer beta shipped on 2023-06-05,
inside this window: philipturner ran LLaMA-30B Q4_0 (a 17.09 GiB ``data`` buffer) with build
623 on a 32 GB M1 Max under "macOS 14 Developer Beta" (llama.cpp PR #1642, 2023-06-06), which
the 18 GiB limit of macOS 14 holds. The 9/16 applies only where the run's OS is stated as
macOS 14 or later (``Hardware.os`` such as ``"macos-14"``, :func:`macos_major`); unstated, macOS
13's half is kept (the 32 GB Macs of llama.cpp#1815 and PR #1826's thread died at 17-18 GB).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.units import format_bytes

__all__ = [
    "METAL_MAX_BUFFER_FRACTION",
    "METAL_MAX_BUFFER_FRACTION_14",
    "macos_major",
    "metal_blockers",
    "metal_max_buffer_bytes",
    "metal_scratch_compute",
    "metal_single_buffer_blockers",
    "scratch_buffer_bytes",
]

#: maxBufferLength as a fraction of the installed memory (PR #1706 thread; #1815; lcpp-py#438)
METAL_MAX_BUFFER_FRACTION = 0.5
#: macOS 14+: 9/16 of the installed memory (meta-llama/llama#964: 20736 MiB views on a 36 GB M3
#: Pro; exo-explore/exo#1048: "~27 GB" on a 48 GB M4 Pro)
METAL_MAX_BUFFER_FRACTION_14 = 9 / 16
#: the page the buffers are rounded up to (``getpagesize()`` on Apple silicon: 16 KiB)
_PAGE = 16384

SOURCE = (
    "llama.cpp PR #1642 (ggml_metal_add_buffer: data/eval/kv/scr0/scr1, one MTLBuffer each), "
    "PR #1706 (buffer larger than maxBufferLength refused), PR #1826 (views, 2023-06-18)"
)


def macos_major(os: str | None) -> int | None:
    """The macOS major release an OS string names (``"macos-14"``, ``"macOS 14.2"``), else None.

    >>> macos_major("macOS 14 beta"), macos_major("macos"), macos_major("linux")
    (14, None, None)
    """
    m = re.match(r"\s*mac\s*os\s*[-_ ]?\s*(\d+)", (os or "").lower())
    return int(m.group(1)) if m else None


def metal_max_buffer_bytes(dev: DeviceTarget, os: str | None = None) -> int | None:
    """``maxBufferLength`` of an Apple GPU from the catalog: half its installed memory, 9/16 on
    a stated macOS 14 or later; None for other devices or an Apple device the catalog does not
    know.

    >>> metal_max_buffer_bytes(DeviceTarget(name="M2 Pro", key="m2-pro-16gb", backend="metal"))
    8589934592
    >>> metal_max_buffer_bytes(DeviceTarget(name="M2 Pro", key="m2-pro-16gb", backend="metal"),
    ...     "macos-14")
    9663676416
    """
    if dev.backend != "metal" or dev.key is None:
        return None
    from oomkit.hardware.catalog import find_gpu

    g = find_gpu(dev.key)
    if g.vendor != "apple":
        return None
    newer = (macos_major(os) or 0) >= 14
    return int(
        g.memory_bytes * (METAL_MAX_BUFFER_FRACTION_14 if newer else METAL_MAX_BUFFER_FRACTION)
    )


def _aligned(n: int) -> int:
    return -(-n // _PAGE) * _PAGE


def metal_single_buffer_blockers(
    gpus: Sequence[DeviceTarget],
    names: Sequence[str],
    file_bytes: int,
    offloaded: Sequence[bool],
    buffers: Mapping[str, Sequence[tuple[str, int]]],
    os: str | None = None,
) -> list[str]:
    """Blockers of a build before PR #1826: a Metal buffer larger than ``maxBufferLength``.

    ``file_bytes``: the model file, which the ``data`` buffer maps whole whenever a layer runs
    on Metal (``offloaded[i]``); ``buffers``: per buffer name, the other buffers of that device
    as (name, bytes), e.g. the KV cache and the compute buffer.
    """
    out: list[str] = []
    share = "9/16 of" if (macos_major(os) or 0) >= 14 else "half"
    for gi, g in enumerate(gpus):
        limit = metal_max_buffer_bytes(g, os)
        if limit is None or not offloaded[gi]:
            continue
        rows = [("data", file_bytes), *buffers.get(names[gi], ())]
        for what, n in rows:
            if _aligned(n) <= limit:
                continue
            fix = (
                "a smaller quant or model, or a build from 2023-06-18 on (PR #1826 splits the "
                "model into views)"
                if what == "data"
                else "a smaller context or batch"
            )
            out.append(
                f"{names[gi]}: the Metal '{what}' buffer of {format_bytes(n)} ({n} bytes) is "
                f"larger than the device's maxBufferLength {format_bytes(limit)} ({limit} "
                f"bytes, {share} the installed memory): builds before llama.cpp PR #1826 make it "
                "ONE Metal buffer and fail 'ggml_metal_add_buffer: buffer ... is larger than "
                f"buffer maximum'; fix: {fix}"
            )
    return out


#: June-July 2023 buffers by model size (n_layer -> (eval, scr0, scr1) in MiB): llama.cpp's
#: MEM_REQ_EVAL / MEM_REQ_SCRATCH0 / MEM_REQ_SCRATCH1 tables (PR #473; 3B scratch 256 MiB from
#: PR #1698), model type read from n_layer (26: 3B, 32: 7B, 40: 13B, 60: 30B, 80: 65B)
_SCRATCH_MIB: Mapping[int, tuple[int, int, int]] = {
    26: (512, 256, 256),
    32: (768, 512, 512),
    40: (1024, 512, 512),
    60: (1280, 512, 512),
    80: (1536, 1024, 1024),
}

SCRATCH_SOURCE = (
    "llama.cpp MEM_REQ_EVAL/MEM_REQ_SCRATCH0/MEM_REQ_SCRATCH1 by model type (PR #473; SCRATCH0 "
    "as in PR #2019's diff of 2023-06-27), each a Metal buffer ('eval', 'scr0', 'scr1'); "
    "MEM_REQ_EVAL dropped by PR #2325 (2023-07-22)"
)


def scratch_buffer_bytes(n_layer: int) -> int | None:
    """The 'eval' + 'scr0' + 'scr1' Metal buffers of a June-July 2023 build for a LLaMA of
    ``n_layer`` layers; None for a layer count the tables do not name (the modern compute
    buffer stands in).

    >>> scratch_buffer_bytes(40) // 2**20
    2048
    """
    sizes = _SCRATCH_MIB.get(n_layer)
    return None if sizes is None else sum(sizes) * 2**20


def metal_scratch_compute(
    n_layer: int,
    gpus: Sequence[DeviceTarget],
    names: Sequence[str],
    compute: Mapping[str, int],
) -> tuple[dict[str, int], list[str]]:
    """``compute`` with the Metal devices' buffers replaced by the June-July 2023 fixed
    'eval'/'scr0'/'scr1' buffers (builds before PR #2325), and a note; unchanged otherwise."""
    out = dict(compute)
    if not any(g.backend == "metal" for g in gpus):
        return out, []
    size = scratch_buffer_bytes(n_layer)
    if size is None:
        return out, []
    hit = False
    for g, name in zip(gpus, names, strict=False):
        if g.backend == "metal" and name in out:
            out[name] = size
            hit = True
    if not hit:
        return out, []
    return out, [
        f"Metal compute: the fixed 'eval' + 'scr0' + 'scr1' buffers of builds before llama.cpp "
        f"PR #2325 (2023-07-22), {size // 2**20} MiB for a {n_layer}-layer LLaMA, not a "
        "measured compute graph"
    ]


def metal_blockers(
    views: bool,
    devices: tuple[Sequence[DeviceTarget], Sequence[str], Sequence[str]],
    file_bytes: int,
    kv_by_dev: Mapping[str, int],
    compute: Mapping[str, int],
    os: str | None = None,
) -> list[str]:
    """:func:`metal_single_buffer_blockers` for an estimate: ``views`` False (builds before PR
    #1826); ``devices`` = (GPUs, their buffer names, each repeating layer's device label);
    ``kv_by_dev`` KV bytes per device label, ``compute`` compute bytes per buffer name."""
    gpus, names, layer_device = devices
    if views or not any(g.backend == "metal" for g in gpus):
        return []
    labels = [device_label(g, i) for i, g in enumerate(gpus)]
    offloaded = [lab in layer_device for lab in labels]
    others = {
        names[i]: (("kv", kv_by_dev.get(lab, 0)), ("compute", compute.get(names[i], 0)))
        for i, lab in enumerate(labels)
    }
    return metal_single_buffer_blockers(gpus, names, file_bytes, offloaded, others, os)
