"""A device's per-buffer limit: ggml-vulkan / ggml-sycl cannot create one buffer above it (pure).

ggml-vulkan (ggml/src/ggml-vulkan/ggml-vulkan.cpp, ``ggml_vk_get_device``) sets
``device->max_memory_allocation_size`` from ``GGML_VK_FORCE_MAX_ALLOCATION_SIZE`` when set, else
``min(maxMemoryAllocationSize, maxBufferSize)`` with VK_KHR_maintenance4, else
``maxMemoryAllocationSize``; ``ggml_vk_create_buffer`` throws ``vk::OutOfDeviceMemoryError(
"Requested buffer size exceeds device memory allocation limit")`` for any larger buffer (PR
#16354, Sep 2025, checks ``maxBufferSize`` instead: "exceeds device buffer size limit").
What the runtime asks for decides whether the limit bites:

* weights and KV: ``ggml_backend_alloc_ctx_tensors_from_buft`` packs tensors into buffers of at
  most ``ggml_backend_buft_get_max_size`` (Vulkan: ``suballocation_block_size``, 1 GiB by
  default, ``GGML_VK_SUBALLOCATION_BLOCK_SIZE``): only one tensor above the limit fails (it
  gets a buffer of its own, which ``ggml_vk_create_buffer`` refuses; older ggml-alloc refused it
  itself: "tensor ... is too large to fit in a Vulkan buffer");
* the compute buffer: ``ggml_gallocr`` reserved ONE buffer of the graph's high-water mark per
  backend ("There are no plans to support splitting the compute buffers allocated by
  ggml-alloc", slaren, llama.cpp#11332, Jan 2025) until PR #15815 (Acly, "ggml : split graph
  allocations according to backend max buffer size") gave ggml-alloc a ``vbuffer`` of up to
  16 chunks of at most the max size; a tensor larger than that still gets a chunk of its own
  size ("backends will either manage to allocate the larger size, or report an error",
  ``ggml_dyn_tallocr_new_chunk``), so one tensor above the device limit fails after it too.
  Without flash attention that tensor is the f32 KQ matrix of ``n_kv x n_ubatch x n_head``.

What devices report (Vulkan spec minimum for ``maxMemoryAllocationSize``: 1 GiB): Mesa RADV
``RADV_MAX_MEMORY_ALLOCATION_SIZE = 0xFFFFFFFC`` (src/amd/vulkan/radv_constants.h: "Our buffer
size fields allow only 2**32 - 1"), which is the 4 GB of llama.cpp#15009 ("That's a limitation
of the Vulkan API, we cannot allocate buffers larger than 4GB", 0cc4m, on a Strix Halo);
AMD's own drivers (AMDVLK, Windows) report 2 GiB (llama.cpp#15054, CrispASR#276); "the maximum
block size is typically around 4GB" (VulkanSceneGraph PR #1473). The default is RADV's value,
the most common Vulkan device llama.cpp users report; a device's own value (``vulkaninfo``
``maxMemoryAllocationSize``) goes in :attr:`DeviceTarget.max_allocation_bytes`. CUDA, ROCm/HIP
and Metal have no default here (no such check in their ggml backends is modelled).

SYCL (Intel GPUs, oomkit's backend ``xpu``): ``ggml_backend_sycl_buffer_type_alloc_buffer``
calls ``sycl::malloc_device``, which Level Zero refuses above 4 GB unless the allocation is
made with relaxed limits (intel/compute-runtime programmers-guide
ALLOCATIONS_GREATER_THAN_4GB.md; level_zero RELEASENOTES_CORE v1.1: "To use, the
``ze_relaxed_allocation_limits_exp_desc_t`` structure needs to be passed"; llama.cpp#5250 and
PR #5270, Feb 2024, which made the SYCL buffer type's ``get_max_size`` the device's
``max_mem_alloc_size``, so weights and KV are packed under it; PR #17566, Nov 2025, lets
``UR_L0_ENABLE_RELAXED_ALLOCATION_LIMITS=1`` lift it, off by default). The compute buffer is
one allocation until PR #15815, so a graph above 4 GiB fails ("failed to allocate SYCL0
buffer of size 7573604352", Arc A770, llama.cpp#10421). The default is 4 GiB; the driver's
exact ``max_mem_alloc_size`` goes in :attr:`DeviceTarget.max_allocation_bytes`.

Which Vulkan driver (:data:`VULKAN_DRIVER_MAX_ALLOCATION_BYTES`, :func:`vulkan_driver_limit`):
ggml-vulkan prints the driver's ``VkPhysicalDeviceDriverProperties::driverName`` on its device
line ("ggml_vulkan: 0 = Radeon 8060S Graphics (AMD open-source driver) | uma: 1", b6486), so a
log names it: ``radv`` (Mesa) reports ``0xFFFFFFFC``; AMDVLK ("AMD open-source driver") and
AMD's Windows driver ("AMD proprietary driver") report ``0x80000000`` (2 GiB: AMDVLK#413,
kyuz0, Aug 2025: maxMemoryAllocationSize 0x80000000 on a Strix Halo; llama.cpp#15054,
0cc4m: "This is 2GB on amdvlk and the proprietary AMD drivers, and 4GB on RADV"). The same
gemma-3-27b BF16 GGUF on the same Strix Halo dies on AMDVLK ("Device memory allocation of
size 2819260416 failed": its tied ``token_embd``, 262208 x 5376 x 2 bytes, duplicated as the
GPU's output weight) and runs on RADV (kyuz0/amd-strix-halo-toolboxes benchmark/results).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oomkit.errors import InvalidSettingError
from oomkit.estimate.llamacpp_compute import GraphShape, backend_graph_shape, build_graph
from oomkit.estimate.llamacpp_kv import KvPlan
from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.estimate.llamacpp_placement import Placement
from oomkit.estimate.llamacpp_stack import layer_signature
from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.spec.model import ModelSpec
from oomkit.units import format_bytes

__all__ = [
    "SYCL_MAX_ALLOCATION_BYTES",
    "VULKAN_DRIVER_MAX_ALLOCATION_BYTES",
    "VULKAN_MAX_ALLOCATION_BYTES",
    "device_blockers",
    "largest_graph_tensor",
    "max_allocation_blockers",
    "max_allocation_bytes",
    "vulkan_driver_limit",
]

#: Mesa RADV's maxMemoryAllocationSize (radv_constants.h RADV_MAX_MEMORY_ALLOCATION_SIZE)
VULKAN_MAX_ALLOCATION_BYTES = 0xFFFFFFFC

#: maxMemoryAllocationSize per Vulkan driver, keyed by oomkit's short name (see the module doc)
VULKAN_DRIVER_MAX_ALLOCATION_BYTES: Mapping[str, int] = {
    "radv": VULKAN_MAX_ALLOCATION_BYTES,
    "amdvlk": 2**31,
    "amd-proprietary": 2**31,
}

#: the driverName ggml-vulkan prints on its device line -> the short name
_DRIVER_NAMES: Mapping[str, str] = {
    "radv": "radv",
    "amd open-source driver": "amdvlk",
    "amd proprietary driver": "amd-proprietary",
}

#: Level Zero's default single-allocation limit (4 GB without relaxed allocation limits)
SYCL_MAX_ALLOCATION_BYTES = 4 * 2**30

_DEFAULTS: Mapping[str, int] = {
    "vulkan": VULKAN_MAX_ALLOCATION_BYTES,
    "xpu": SYCL_MAX_ALLOCATION_BYTES,
}

#: what each backend's allocator says when a buffer is above the limit
_FAILS: Mapping[str, str] = {
    "vulkan": "ggml-vulkan fails 'Requested buffer size exceeds device memory allocation limit'",
    "xpu": 'ggml-sycl fails "can\'t malloc ... Bytes memory on device" (Level Zero)',
}

SOURCE = (
    "ggml-vulkan.cpp ggml_vk_create_buffer (size > max_memory_allocation_size fails); "
    "ggml-alloc.c one compute buffer before llama.cpp PR #15815, chunks after; "
    "Mesa radv_constants.h RADV_MAX_MEMORY_ALLOCATION_SIZE; llama.cpp#15009; "
    "AMDVLK and AMD proprietary 2 GiB (AMDVLK#413, llama.cpp#15054); "
    "ggml-sycl.cpp sycl::malloc_device under Level Zero's 4 GB limit (compute-runtime "
    "ALLOCATIONS_GREATER_THAN_4GB.md, llama.cpp#5250, #10421)"
)


def max_allocation_bytes(dev: DeviceTarget) -> int | None:
    """The largest single buffer ``dev`` may hold: its own value, else its backend's default.

    >>> max_allocation_bytes(DeviceTarget(name="Radeon 8060S", backend="vulkan"))
    4294967292
    >>> max_allocation_bytes(DeviceTarget(name="Arc A770", backend="xpu"))
    4294967296
    >>> max_allocation_bytes(DeviceTarget(name="RTX 4090", backend="cuda")) is None
    True
    """
    if dev.max_allocation_bytes is not None:
        return dev.max_allocation_bytes
    return _DEFAULTS.get(dev.backend)


def vulkan_driver_limit(driver: str) -> int:
    """maxMemoryAllocationSize of a Vulkan ``driver``: a short name or the printed driverName.

    >>> vulkan_driver_limit("amdvlk")
    2147483648
    >>> vulkan_driver_limit("AMD open-source driver") == vulkan_driver_limit("amdvlk")
    True

    Raises:
        InvalidSettingError: a driver whose limit is not known here.
    """
    key = driver.strip().lower()
    key = _DRIVER_NAMES.get(key, key)
    if key not in VULKAN_DRIVER_MAX_ALLOCATION_BYTES:
        raise InvalidSettingError(
            f"unknown Vulkan driver {driver!r}; known: "
            + ", ".join(sorted(VULKAN_DRIVER_MAX_ALLOCATION_BYTES))
            + " (or give the device's maxMemoryAllocationSize as max_allocation_bytes)",
            setting="vulkan_driver",
            value=driver,
        )
    return VULKAN_DRIVER_MAX_ALLOCATION_BYTES[key]


def largest_graph_tensor(
    spec: ModelSpec, sh: GraphShape, layers: Sequence[int], with_output: bool
) -> tuple[str, int]:
    """(name, bytes) of the largest tensor the compute buffer of ``layers`` holds.

    One layer of each kind (:func:`oomkit.estimate.llamacpp_stack.layer_signature`) stands for
    all of its kind: a layer's tensors depend only on its kind.
    """
    seen: dict[object, int] = {}
    for il in layers:
        seen.setdefault(layer_signature(spec, il), il)
    ids = sorted(seen.values())
    if with_output and spec.num_hidden_layers - 1 not in ids and layers:
        ids.append(spec.num_hidden_layers - 1)
    if not ids:
        return "", 0
    g = build_graph(spec, sh, layers=ids, with_input=False, with_output=with_output)
    best = max((nd for nd in g.nodes if not nd.external), key=lambda nd: nd.size, default=None)
    return ("", 0) if best is None else (best.name, best.size)


#: what each kind of oversized tensor can be fixed with
_TENSOR_FIXES: Mapping[str, str] = {
    "weight": "keep it on the CPU (-ot) or use a quant with smaller tensors",
    "KV": "a smaller -c, a quantized KV cache (-ctk/-ctv) or fewer -np streams",
}


def max_allocation_blockers(
    devices: Sequence[tuple[str, DeviceTarget, int, Sequence[tuple[str, str, int]]]],
    *,
    compute_chunks: bool,
    flash_attn: bool,
    n_ubatch: int,
) -> list[str]:
    """Blockers for devices with a buffer above their allocation limit: one tensor (weight, KV
    or compute: any build), or the whole compute buffer (builds before PR #15815).

    ``devices``: (buffer name such as ``Vulkan0``, device, compute buffer bytes, the largest
    tensor of each kind as (kind ``weight``/``KV``/``compute``, tensor name, bytes)).
    """
    out: list[str] = []
    for buf, dev, compute_bytes, tensors in devices:
        limit = max_allocation_bytes(dev)
        if limit is None:
            continue
        lim = f"the device's largest allocation {format_bytes(limit)} ({limit} bytes)"
        compute_fixes = ["flash attention (-fa)"] if not flash_attn else []
        compute_fixes.append(f"a smaller -ub (now {n_ubatch})")
        fails = _FAILS.get(dev.backend, "the backend fails to allocate it")
        oversized = False
        for kind, name, n in tensors:
            if n <= limit:
                continue
            oversized = True
            fix = _TENSOR_FIXES.get(kind) or " or ".join(compute_fixes)
            out.append(
                f"{buf}: the {kind} tensor '{name}' of {format_bytes(n)} ({n} bytes) is larger "
                f"than {lim}: {fails} whatever the build; fix: {fix}"
            )
        if not oversized and not compute_chunks and compute_bytes > limit:
            out.append(
                f"{buf}: the compute buffer of {format_bytes(compute_bytes)} ({compute_bytes} "
                f"bytes) is one allocation larger than {lim} in builds before llama.cpp PR "
                "#15815 ('failed to allocate compute pp buffers'); fix: "
                + ", ".join(compute_fixes)
                + " or a build from 2025-10 on (compute buffer split into chunks)"
            )
    return out


def device_blockers(
    spec: ModelSpec,
    params: LlamaCppParams,
    sh: GraphShape,
    placement: Placement,
    kv: KvPlan,
    gpus: Sequence[DeviceTarget],
    names: Sequence[str],
    compute: Mapping[str, int],
) -> list[str]:
    """Devices with a per-buffer limit (Vulkan) holding a weight, KV or compute tensor above it,
    or a compute buffer above it (:mod:`oomkit.estimate.llamacpp_maxalloc`)."""
    todo = [(gi, g) for gi, g in enumerate(gpus) if max_allocation_bytes(g) is not None]
    if not todo:
        return []
    gpu_layers: dict[int, list[int]] = {}
    for il, d in enumerate(placement.layer_device):
        if d != "cpu":
            gpu_layers.setdefault(int(d.split(":")[1]), []).append(il)
    c = placement.columns
    out_dev = placement.output_device
    rows = []
    for gi, g in todo:
        label = device_label(g, gi)
        weights = [
            (n, b) for n, b, d in zip(c.names, c.n_bytes, c.devices, strict=True) if d == label
        ]
        tensors: list[tuple[str, str, int]] = []
        if weights:
            tensors.append(("weight", *max(weights, key=lambda t: t[1])))
        kv_rows = [r for r in kv.layers if placement.layer_device[r.layer] == label]
        if kv_rows:
            r = max(kv_rows, key=lambda r: max(r.k_bytes, r.v_bytes))
            k = r.k_bytes >= r.v_bytes
            tensors.append(
                ("KV", f"cache_{'k' if k else 'v'}_l{r.layer}", max(r.k_bytes, r.v_bytes))
            )
        with_output = out_dev != "cpu" and int(out_dev.split(":")[1]) == gi
        gsh = backend_graph_shape(sh, params, g.backend) if spec.moe is not None else sh
        if names[gi] in compute:
            tensors.append(
                ("compute", *largest_graph_tensor(spec, gsh, gpu_layers.get(gi, []), with_output))
            )
        rows.append((names[gi], g, compute.get(names[gi], 0), tensors))
    return max_allocation_blockers(
        rows,
        compute_chunks=params.options.compute_chunks,
        flash_attn=params.flash_attn,
        n_ubatch=params.n_ubatch,
    )
