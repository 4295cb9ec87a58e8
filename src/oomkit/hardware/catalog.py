"""The GPU catalog: what each accelerator offers, looked up by any name people use for it.

Rows live in ``oomkit/data/gpus.json`` (one row per GPU with its source; what the figures mean
per family is in ``gpus.md`` beside it); this module holds the ``GpuModel`` type, the loader
and the lookups.

Names are matched after normalisation: lower case, every character that is not a letter or a
digit dropped, and leading brand words (``nvidia``, ``geforce``, ``tesla``, ``quadro``, ``amd``,
``radeon``, ``instinct``, ``intel``, ``apple``) removed. So ``"RTX 4090"``, ``"rtx-4090"``,
``"NVIDIA GeForce RTX 4090"`` and ``"rtx4090"`` are the same name.

Ambiguous short names resolve to one documented default variant (it carries the short name as
an alias; the tests check that no alias belongs to two rows):

* ``H100`` -> ``h100-sxm`` (the HGX part the clouds rent most), ``A100`` -> ``a100-80gb-sxm``,
  ``V100`` -> ``v100-16gb-sxm2`` (AWS p3), ``H200`` -> ``h200`` (SXM), ``GH200`` -> ``gh200-96gb``.
* Consumer cards sold with two memory sizes resolve to the *smaller* one, which is also the one
  sold most and the conservative answer for a "will it fit" tool: ``RTX 3080`` -> 10 GB,
  ``RTX 4060 Ti`` -> 8 GB, ``RTX 3060`` -> 12 GB (the 8 GB card is a later, rarer cut and is not
  in the catalog).
* An Apple chip name without a memory size resolves to its base configuration in the catalog:
  ``M3 Max`` -> ``m3-max-36gb``, ``M2 Ultra`` -> ``m2-ultra-64gb``.
* ``Jetson AGX Orin`` -> the 64 GB module (the developer kit's); ``Strix Halo`` ->
  ``ryzen-ai-max-395-128gb`` (the configuration people buy it for LLMs with).

>>> find_gpu("RTX 4090").key
'rtx-4090'
>>> find_gpu("NVIDIA H100 80GB HBM3").key
'h100-sxm'
>>> find_gpu("H100").memory_bytes // 2**20
81559
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from oomkit.errors import UnknownNameError, close_matches
from oomkit.spec.hardware import DeviceTarget
from oomkit.units import GiB, format_bytes

if TYPE_CHECKING:
    from collections.abc import Mapping

    from oomkit.hardware.reserve import ReserveFloor

__all__ = [
    "DTYPES",
    "SEGMENTS",
    "VENDORS",
    "AmbiguousGpuError",
    "GpuModel",
    "all_gpus",
    "find_gpu",
    "find_gpu_by_nvml_name",
    "gpu_alternatives",
    "gpu_note",
    "linux_cuda_total_bytes",
    "memory_is_nominal",
    "modelled_cuda_total_bytes",
    "modelled_cuda_total_source",
    "normalize_gpu_name",
    "runtime_capacity_bytes",
    "search_gpus",
]

VENDORS = ("nvidia", "amd", "apple", "intel")
SEGMENTS = ("consumer", "laptop", "workstation", "datacenter", "apple", "embedded")
DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "fp4")

_HINT = "Run 'oomkit gpus --catalog' to list known GPUs."
_BRANDS = ("nvidia", "geforce", "tesla", "quadro", "amd", "radeon", "instinct", "intel", "apple")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_BACKENDS = {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "xpu"}


def normalize_gpu_name(name: str) -> str:
    """Return the form names are compared in: lower-case letters and digits, brands removed.

    >>> normalize_gpu_name("NVIDIA GeForce RTX 4060 Ti")
    'rtx4060ti'
    >>> normalize_gpu_name("Tesla V100-SXM2-16GB")
    'v100sxm216gb'
    """
    words = [w for w in _NON_ALNUM.split(name.lower()) if w]
    while len(words) > 1 and words[0] in _BRANDS:
        words.pop(0)
    return "".join(words)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuModel:
    """One accelerator model as the catalog knows it.

    Attributes:
        key: canonical slug, e.g. ``"rtx-4090"``, ``"h100-sxm"``, ``"m3-max-128gb"``.
        name: full marketing name, e.g. ``"NVIDIA GeForce RTX 4090"``.
        aliases: other names that resolve to this row (short names, NVML product names).
        vendor: ``"nvidia"``, ``"amd"``, ``"apple"`` or ``"intel"``.
        segment: ``"consumer"``, ``"laptop"``, ``"workstation"``, ``"datacenter"``,
            ``"apple"`` or ``"embedded"`` (Jetson modules).
        architecture: e.g. ``"Ada Lovelace"``, ``"Hopper"``, ``"CDNA3"``, ``"Apple M3"``.
        compute_capability: CUDA compute capability (``"8.9"``), the gfx target for AMD
            (``"gfx942"``), ``None`` for Apple and Intel.
        memory_bytes: total memory in bytes as the driver reports it (NVML ``memory.total``),
            not the marketing number; for Apple the installed RAM.
        usable_memory_bytes: Apple only: the GPU working-set limit macOS recommends
            (Metal ``recommendedMaxWorkingSetSize``); ``None`` elsewhere.
        unified_memory: CPU and GPU share one memory pool (Apple, GH200/GB200 superchips are
            not marked: their GPU has its own HBM).
        bandwidth_bytes_per_s: peak memory bandwidth in bytes per second.
        fp16_tflops: dense (no sparsity) FP16 tensor throughput in TFLOPS; ``None`` if unknown.
        bf16_tflops: dense BF16 tensor throughput in TFLOPS; ``None`` if unsupported/unknown.
        fp8_tflops: dense FP8 tensor throughput in TFLOPS; ``None`` if unsupported/unknown.
        int8_tops: dense INT8 tensor throughput in TOPS; ``None`` if unsupported/unknown.
        native_dtypes: dtypes the hardware computes natively, a subset of :data:`DTYPES`.
        interconnect: host/peer link, e.g. ``"PCIe 4.0 x16"``, ``"SXM5 NVLink 900 GB/s"``.
        source: URL of the vendor spec page (and of the driver-reported memory figure).
        nvml_names: product names NVML/``nvidia-smi`` print for this model. Unlike aliases
            these may be shared (two memory sizes, one name); :func:`find_gpu_by_nvml_name`
            separates them by memory.
        cuda_total_bytes: NVIDIA only: the total CUDA reports on Linux (``cudaMemGetInfo``,
            what PyTorch prints as "total capacity" and vLLM as ``total_gpu_memory``), below
            ``memory_bytes`` by the framebuffer the driver reserves; the smallest figure a
            public Linux message shows for this card (newer drivers reserve more). ``None``
            where no message gives it (the NVML total is then used).
        cuda_total_source: the messages behind ``cuda_total_bytes``: their figures and the
            record ids of the development data they come from.
    """

    key: str
    name: str
    aliases: tuple[str, ...]
    vendor: str
    segment: str
    architecture: str
    compute_capability: str | None
    memory_bytes: int
    usable_memory_bytes: int | None
    unified_memory: bool
    bandwidth_bytes_per_s: int
    fp16_tflops: float | None
    bf16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    native_dtypes: tuple[str, ...]
    interconnect: str
    source: str
    nvml_names: tuple[str, ...] = ()
    cuda_total_bytes: int | None = None
    cuda_total_source: str | None = None

    @property
    def effective_memory_bytes(self) -> int:
        """Memory a process can plan with: the Apple GPU limit if set, else the total."""
        if self.usable_memory_bytes is not None:
            return self.usable_memory_bytes
        return self.memory_bytes

    def names(self) -> tuple[str, ...]:
        """Key, name and aliases: every name that resolves to this row."""
        return (self.key, self.name, *self.aliases)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (bytes as ints, tuples as lists) for ``--json`` and the web API."""
        return {
            "key": self.key,
            "name": self.name,
            "aliases": list(self.aliases),
            "vendor": self.vendor,
            "segment": self.segment,
            "architecture": self.architecture,
            "compute_capability": self.compute_capability,
            "memory_bytes": self.memory_bytes,
            "usable_memory_bytes": self.usable_memory_bytes,
            "effective_memory_bytes": self.effective_memory_bytes,
            "unified_memory": self.unified_memory,
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "fp16_tflops": self.fp16_tflops,
            "bf16_tflops": self.bf16_tflops,
            "fp8_tflops": self.fp8_tflops,
            "int8_tops": self.int8_tops,
            "native_dtypes": list(self.native_dtypes),
            "interconnect": self.interconnect,
            "source": self.source,
            "nvml_names": list(self.nvml_names),
            "cuda_total_bytes": self.cuda_total_bytes,
            "cuda_total_source": self.cuda_total_source,
            "modelled_cuda_total_bytes": modelled_cuda_total_bytes(self),
            "modelled_cuda_total_source": modelled_cuda_total_source(self),
            "runtime_capacity_bytes": runtime_capacity_bytes(self),
        }

    def to_device_target(self, *, os: str | None = None) -> DeviceTarget:
        """The estimator's view of one device of this model on ``os`` (None = unknown): its
        capacity is :func:`runtime_capacity_bytes`."""
        return DeviceTarget(
            name=self.name,
            key=self.key,
            backend=_BACKENDS[self.vendor],
            capacity_bytes=runtime_capacity_bytes(self, os=os),
            architecture=self.architecture,
            compute_capability=self.compute_capability,
            native_dtypes=self.native_dtypes,
            unified_memory=self.unified_memory,
        )


#: systems whose CUDA runs on the WDDM driver (WSL 2 paravirtualises the Windows host's)
_WDDM_OS = frozenset({"windows", "wsl"})


def runtime_capacity_bytes(gpu: GpuModel, *, os: str | None = None) -> int:
    """The memory a runtime on ``gpu`` budgets against: the total CUDA reports.

    Every runtime oomkit models reads its capacity from CUDA, not from NVML: PyTorch's caching
    allocator and its OOM message (``cudaMemGetInfo``), vLLM's budget ``gpu_memory_utilization
    x torch.cuda.mem_get_info()[1]``, SGLang's ``--mem-fraction-static`` of the same total,
    llama.cpp's auto placement and Ollama's scheduler (``cudaMemGetInfo`` free/total). On Linux
    that total is below NVML's ``memory.total`` (the catalog's ``memory_bytes``) by the
    framebuffer the driver reserves (RTX 3090: 23.54-23.70 GiB of 24 GiB; H100 SXM 79.10-79.18
    of 79.65 GiB), so the row's ``cuda_total_bytes`` is the capacity where a message gives it.
    On Windows and WSL 2 (the WDDM driver) CUDA reports the NVML total (RTX 3090: "24.00 GiB
    total capacity", RTX 4090: 23.99 GiB, h12-dain-app-33, h8-samfast-110,
    h18-chatglm3_finetuning-13) and the OS's own reservation is the verdict's WDDM term, so
    there the NVML total is the capacity. Apple: the Metal working set
    (:attr:`GpuModel.effective_memory_bytes`). An unknown ``os`` takes the Linux figure, the
    smaller one.

    >>> runtime_capacity_bytes(find_gpu("rtx-3090")) // 2**20
    24105
    >>> runtime_capacity_bytes(find_gpu("rtx-3090"), os="windows") // 2**20
    24576
    """
    if gpu.usable_memory_bytes is not None:
        return gpu.usable_memory_bytes
    linux = linux_cuda_total_bytes(gpu)
    if linux is not None and (os or "").lower() not in _WDDM_OS:
        return linux
    return gpu.memory_bytes


def linux_cuda_total_bytes(gpu: GpuModel) -> int | None:
    """The total CUDA reports for ``gpu`` on Linux: the measured ``cuda_total_bytes``, else
    the modelled one (:func:`modelled_cuda_total_bytes`), else ``None``."""
    if gpu.cuda_total_bytes is not None:
        return gpu.cuda_total_bytes
    return modelled_cuda_total_bytes(gpu)


@cache
def _reserve_floor(gpu: GpuModel) -> ReserveFloor | None:
    """The driver-reserve floor of ``gpu``'s class (:mod:`oomkit.hardware.reserve`); ``None``
    for a measured card, a nominal memory figure, unified memory or a Jetson module."""
    from oomkit.hardware.reserve import reserve_floor

    if (
        gpu.cuda_total_bytes is not None
        or gpu.usable_memory_bytes is not None
        or gpu.unified_memory
        or gpu.segment == "embedded"
        or memory_is_nominal(gpu)
    ):
        return None
    measured = tuple(
        (g.key, g.architecture, g.memory_bytes, g.cuda_total_bytes)
        for g in all_gpus()
        if g.cuda_total_bytes is not None
    )
    return reserve_floor(gpu.architecture, gpu.vendor, gpu.memory_bytes, measured)


def modelled_cuda_total_bytes(gpu: GpuModel) -> int | None:
    """NVML's total less the smallest driver reserve measured on ``gpu``'s class (same
    architecture, Turing or later, same size band, at least three measured cards), for a
    card no message gives a CUDA total for; ``None`` where there is no such class or the card
    has a measured figure.

    >>> modelled_cuda_total_bytes(find_gpu("rtx-4070-ti-super")) // 2**20
    16067
    >>> modelled_cuda_total_bytes(find_gpu("rtx-4090")) is None
    True
    """
    floor = _reserve_floor(gpu)
    return None if floor is None else gpu.memory_bytes - floor.reserve_bytes


def modelled_cuda_total_source(gpu: GpuModel) -> str | None:
    """How :func:`modelled_cuda_total_bytes` was modelled for ``gpu``: the rule and the
    measured cards behind it; ``None`` where it is not modelled."""
    from oomkit.hardware.reserve import describe_floor

    floor = _reserve_floor(gpu)
    return None if floor is None else describe_floor(floor)


_TUPLE_FIELDS = ("aliases", "native_dtypes", "nvml_names")
_ROW_EXTRAS = ("note",)  # documentation only: says what a figure is when not the convention


def _row(raw: dict[str, Any]) -> GpuModel:
    """One ``gpus.json`` row -> a :class:`GpuModel` (lists become tuples, ``note`` is dropped)."""
    fields = {k: v for k, v in raw.items() if k not in _ROW_EXTRAS}
    for name in _TUPLE_FIELDS:
        if name in fields:
            fields[name] = tuple(fields[name])
    return GpuModel(**fields)


@cache
def _load() -> tuple[tuple[GpuModel, ...], Mapping[str, str]]:
    """Rows and their notes, read once from ``oomkit/data/gpus.json``."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "data" / "gpus.json"
    raws = json.loads(path.read_text(encoding="utf-8"))["gpus"]
    notes = {raw["key"]: raw["note"] for raw in raws if raw.get("note")}
    return tuple(_row(raw) for raw in raws), notes


def all_gpus() -> tuple[GpuModel, ...]:
    """Every catalog row, in catalog order (read once from ``oomkit/data/gpus.json``)."""
    return _load()[0]


def gpu_note(key: str) -> str | None:
    """The row's ``note`` in ``gpus.json`` (what a figure is when not the family's
    convention, e.g. ``"nominal; driver figure not found"``), or ``None``."""
    return _load()[1].get(key)


def memory_is_nominal(gpu: GpuModel) -> bool:
    """Whether ``gpu.memory_bytes`` is the nominal size, not a driver-reported figure."""
    note = gpu_note(gpu.key) or ""
    return "nominal" in note and "not found" in note  # "nominal; driver figure not found"


@cache
def _index() -> Mapping[str, GpuModel]:
    """Normalised name -> row. The first row to claim a name keeps it (tests forbid clashes)."""
    out: dict[str, GpuModel] = {}
    for gpu in all_gpus():
        for name in gpu.names():
            out.setdefault(normalize_gpu_name(name), gpu)
    return out


def _suggestions(name: str) -> tuple[str, ...]:
    index = _index()
    hits = close_matches(normalize_gpu_name(name), index, n=8)
    keys = dict.fromkeys(index[h].key for h in hits)
    return tuple(keys)[:3]


def find_gpu(name: str) -> GpuModel:
    """Look up a GPU by key, name or alias, ignoring case, spaces, dashes and brand words.

    Args:
        name: e.g. ``"rtx-4090"``, ``"RTX 4090"``, ``"4090"``, ``"H100"``, ``"A100-80GB"``,
            ``"NVIDIA H100 80GB HBM3"`` (the NVML product name). A trailing memory size that
            matches the card (``"RTX 3090 24GB"``) is accepted.

    Returns:
        The catalog row (see the module docstring for which variant a short name picks).

    Raises:
        UnknownNameError: no row has that name (a typo, or a GPU the catalog lacks); it
            carries up to three close matches as ``suggestions``.
    """
    gpu = _index().get(normalize_gpu_name(name)) or _with_memory_suffix(name)
    if gpu is None:
        family = _family_matches(name)
        if len(family) == 1:
            return family[0]
        if family:
            raise AmbiguousGpuError(name, family)
        raise UnknownNameError(kind="GPU", name=name, suggestions=_suggestions(name), hint=_HINT)
    return gpu


class AmbiguousGpuError(UnknownNameError):
    """A GPU name that several catalog rows fit equally and none is the default for.

    ``candidates`` holds the rows; the message lists their keys and memory on one line.
    """

    def __init__(self, name: str, candidates: tuple[GpuModel, ...]) -> None:
        listed = ", ".join(f"{g.key} ({format_bytes(g.memory_bytes)})" for g in candidates)
        super().__init__(kind="GPU", name=name, suggestions=tuple(g.key for g in candidates))
        self.candidates = candidates
        self.args = (f"GPU '{name}' is ambiguous: it matches {listed}; pass one of these names.",)


# Words that name a variant of one GPU rather than another GPU: board form factors. Together
# with memory sizes ("80gb") they are what tells the rows of one family apart.
_FORM_FACTORS = frozenset(
    ("sxm", "sxm2", "sxm4", "sxm5", "sxm6", "pcie", "nvl", "oam", "hbm3", "hbm3e")
)
_MEMORY_WORD = re.compile(r"^\d+(?:gb|gib|g)$")


def _family_names(gpu: GpuModel) -> frozenset[str]:
    """Every name of ``gpu`` normalised with and without its form-factor and memory words."""
    out: set[str] = set()
    for name in gpu.names():
        words = [w for w in _NON_ALNUM.split(name.lower()) if w]
        while len(words) > 1 and words[0] in _BRANDS:
            words.pop(0)
        no_ff = [w for w in words if w not in _FORM_FACTORS]
        no_mem = [w for w in words if not _MEMORY_WORD.match(w)]
        bare = [w for w in no_ff if not _MEMORY_WORD.match(w)]
        out.update("".join(ws) for ws in (words, no_ff, no_mem, bare) if ws)
    return frozenset(out)


@cache
def _families() -> tuple[tuple[GpuModel, frozenset[str]], ...]:
    return tuple((g, _family_names(g)) for g in all_gpus())


def _family_matches(name: str) -> tuple[GpuModel, ...]:
    wanted = normalize_gpu_name(name)
    if not wanted:
        return ()
    return tuple(g for g, names in _families() if wanted in names)


def gpu_alternatives(name: str) -> tuple[GpuModel, ...]:
    """Other rows that ``name`` also fits, besides the one :func:`find_gpu` picks.

    ``"a100"`` picks the documented default ``a100-80gb-sxm`` and also fits the 40 GB and PCIe
    rows; ``"rtx-4060-ti"`` picks the 8 GB card and also fits the 16 GB one. A name fits a row
    when it equals one of the row's names with its form-factor words (SXM, PCIe, NVL) and/or
    its memory size left out. Empty for an exact, unambiguous name (``"a100-40gb-sxm"``).

    Raises:
        UnknownNameError: as :func:`find_gpu`.
    """
    chosen = find_gpu(name)
    return tuple(g for g in _family_matches(name) if g is not chosen)


_MEMORY_SUFFIX = re.compile(r"^(?P<base>.*\S)[\s_-]+(?P<size>\d+)\s*(?:gb|gib|g)$")


def _with_memory_suffix(name: str) -> GpuModel | None:
    """``"rtx 3090 24gb"`` -> the RTX 3090, if that row really has about 24 GiB (within 10%).

    A size that does not match (``"h100 40gb"``) finds nothing rather than a wrong card.
    """
    m = _MEMORY_SUFFIX.match(name.strip().lower())
    if m is None:
        return None
    gpu = _index().get(normalize_gpu_name(m.group("base")))
    if gpu is None:
        return None
    size_bytes = int(m.group("size")) * GiB
    if abs(gpu.memory_bytes - size_bytes) > size_bytes // 10:
        return None
    return gpu


def _sort_key(gpu: GpuModel) -> tuple[str, int, str]:
    return (gpu.vendor, gpu.memory_bytes, gpu.key)


def _haystack(gpu: GpuModel) -> str:
    parts = (*gpu.names(), *gpu.nvml_names, gpu.vendor, gpu.segment, gpu.architecture)
    return " ".join(normalize_gpu_name(p) for p in parts)


def search_gpus(query: str | None = None) -> tuple[GpuModel, ...]:
    """Filter the catalog for listing, sorted by vendor, then memory, then key.

    The normalised query must occur in a row's key, name, aliases, NVML names, vendor, segment
    or architecture (``"rtx 40"`` lists the RTX 40 series, ``"hopper"`` the Hopper parts); if
    no row has it whole, rows holding every whitespace-separated word match (``"apple max"``
    lists the Max chips). When still nothing matches, rows whose names are close to the query
    are returned instead, so a typo still lists something useful.

    Args:
        query: the filter; ``None`` or blank lists everything.

    Returns:
        Matching rows (possibly empty).
    """
    rows = all_gpus()
    words = [normalize_gpu_name(w) for w in (query or "").split()]
    words = [w for w in words if w]
    if words:
        joined = "".join(words)
        hits = [g for g in rows if joined in _haystack(g)]
        if not hits:
            hits = [g for g in rows if all(w in _haystack(g) for w in words)]
        if not hits:
            wanted = set(_suggestions(query or ""))
            hits = [g for g in rows if g.key in wanted]
        rows = tuple(hits)
    return tuple(sorted(rows, key=_sort_key))


def find_gpu_by_nvml_name(
    product_name: str, memory_total_bytes: int | None = None
) -> GpuModel | None:
    """Match a live device (NVML ``nvmlDeviceGetName`` + ``memory.total``) to a catalog row.

    NVML names one product for several memory sizes (``"NVIDIA GeForce RTX 4060 Ti"`` is the
    8 GB and the 16 GB card), so when several rows carry the name the one whose driver-reported
    memory is closest to ``memory_total_bytes`` wins; without a memory figure the default
    variant (the one :func:`find_gpu` returns for that name) wins.

    Args:
        product_name: the name as NVML or ``nvidia-smi --query-gpu=name`` prints it; a MIG
            instance name (``"... MIG 3g.40gb"``) matches its parent GPU.
        memory_total_bytes: NVML ``memory.total`` in bytes, or ``None`` when unknown.

    Returns:
        The matching row, or ``None`` when the catalog has no GPU of that name (the live view
        then shows the device without catalog facts).
    """
    # A MIG instance is named after its parent ("NVIDIA A100-SXM4-80GB MIG 3g.40gb").
    parent, _, _ = product_name.partition(" MIG ")
    wanted = normalize_gpu_name(parent)
    candidates = [g for g in all_gpus() if wanted in {normalize_gpu_name(n) for n in g.nvml_names}]
    default = _index().get(wanted)
    if default is not None and default not in candidates:
        candidates.append(default)
    if not candidates:
        return None
    if memory_total_bytes is None or len(candidates) == 1:
        return default if default is not None else candidates[0]
    return min(candidates, key=lambda g: abs(g.memory_bytes - memory_total_bytes))
