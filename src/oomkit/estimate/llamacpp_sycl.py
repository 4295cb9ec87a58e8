"""llama.cpp b4069-b4126 on SYCL: the KQ product on the CPU, held twice by the GPU (pure).

llama.cpp PR #10257 (b4069, commit 2e82ffa4a, 2024-11-13, "sycl : Fixes to broken builds and
test-backend-ops") made ``ggml_backend_sycl_device_supports_op`` (ggml/src/ggml-sycl.cpp) return
false for a ``GGML_OP_MUL_MAT`` whose operand ``ggml_is_permuted``; PR #10385 (b4127, commit
557924f22, 2024-11-19, "sycl: Revert MUL_MAT_OP support changes") removed the check again.

Without flash attention (ggml-sycl had none then) ``llm_build_kqv`` (src/llama.cpp at b4069)
multiplies ``k = ggml_view_3d(kv.k_l[il], n_embd_head_k, n_kv, n_head_kv, row(n_embd_k_gqa),
row(n_embd_head_k))`` by ``q = ggml_permute(q_cur, 0, 2, 1, 3)``: ``q`` is permuted whenever
there is more than one head, so on those builds ``ggml_backend_sched`` runs every layer's KQ on
the CPU backend and copies the f32 ``[n_kv, n_tokens, n_head]`` result back into the SYCL
split that applies the mask and soft-max. The SYCL compute buffer then holds a second tensor
of the KQ's size (the CPU's holds the product itself).

What shows it: llama.cpp#10421 (Arc A770 16 GB, Windows, Qwen2.5-3B Q4_1, ``-c 112000 -np
48``): "version: 4069 (2e82ffa4)" fails ``ggml_gallocr_reserve_n: failed to allocate SYCL0
buffer of size 7573604352`` (the ``can't malloc 3278637056 Bytes`` beside it is the same size
printed with ``%lu``, 32 bits on Windows: 7573604352 - 2^32), "command line works fine on
builds < b4069" and "i have to lower context all the way to 60k with b4069". The modelled
compute buffer of b4068 plus one KQ (112000 x 512 x 16 x 4 = 3670016000 bytes) is
7587241984 bytes, 0.2% above the logged one. The 7.05 GiB buffer is not too large for the
16 GiB card: it is one allocation above Level Zero's 4 GiB default limit
(:data:`oomkit.estimate.llamacpp_maxalloc.SYCL_MAX_ALLOCATION_BYTES`), which b4068's
3.65 GiB and b4069's 60000-context 3.6 GiB stay under.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oomkit.estimate.llamacpp_compute import GraphShape
from oomkit.spec.hardware import DeviceTarget, device_label
from oomkit.spec.model import ModelSpec

__all__ = ["SOURCE", "SYCL_BACKEND", "kq_bytes", "sycl_kq_on_cpu_compute"]

#: oomkit's backend name for llama.cpp's SYCL build (Intel GPUs; PyTorch's device type)
SYCL_BACKEND = "xpu"

SOURCE = (
    "llama.cpp PR #10257 (b4069, ggml-sycl.cpp supports_op: permuted MUL_MAT unsupported) until "
    "PR #10385 (b4127, reverted); src/llama.cpp llm_build_kqv; llama.cpp#10421"
)

_F32 = 4


def kq_bytes(spec: ModelSpec, sh: GraphShape) -> int:
    """Bytes of one layer's f32 KQ product ``[n_kv, n_tokens, n_head]`` in the reserve graph."""
    return sh.n_kv * sh.n_tokens * spec.num_attention_heads * _F32


def sycl_kq_on_cpu_compute(
    spec: ModelSpec,
    sh: GraphShape,
    layer_device: Sequence[str],
    gpus: Sequence[DeviceTarget],
    names: Sequence[str],
    compute: Mapping[str, int],
    compute_where: Mapping[str, str],
) -> tuple[dict[str, int], list[str]]:
    """``compute`` with one more KQ tensor in each SYCL device's buffer that holds attention
    layers, and the KQ product in the host compute buffer, plus a note; unchanged under flash
    attention or without a SYCL device holding a layer.

    Call it only for the builds of the ``sycl_kq_on_cpu`` generation (b4069-b4126).
    """
    out = dict(compute)
    if sh.flash_attn:
        return out, []
    labels = set(layer_device)
    kq = kq_bytes(spec, sh)
    hit = False
    for gi, (g, name) in enumerate(zip(gpus, names, strict=False)):
        if g.backend != SYCL_BACKEND or name not in out:
            continue
        if device_label(g, gi) not in labels:
            continue
        out[name] += kq
        hit = True
    if not hit:
        return out, []
    host = next((n for n, w in compute_where.items() if w == "cpu"), None)
    if host is not None and host in out:
        out[host] += kq
    return out, [
        "llama.cpp b4069-b4126 on SYCL: a permuted MUL_MAT is unsupported (PR #10257, reverted "
        "by PR #10385), so each layer's KQ product runs on the CPU and the SYCL compute buffer "
        f"holds a second KQ tensor of {kq} bytes"
    ]
