"""Replay an oomkit GraphSim through the *real* ggml graph allocator (ctypes, libggml-base).

Each simulated node becomes a ggml tensor whose op, flags, sources and view source are written
directly into the ``struct ggml_tensor`` (ggml.h) — no op is ever computed — and
``ggml_gallocr_reserve`` sizes the CPU compute buffer. Comparing the result with
``oomkit.estimate.llamacpp_galloc.simulate_gallocr`` on the same graph checks the allocator
simulation independently of how faithfully the graph itself follows llama.cpp.

    python benchmarks/oracle/ggml_alloc_replay.py     # a few oracle graphs, both allocators

``GGML_BASE_LIB=/path/libggml-base.so`` replays through that library instead of llama-cpp-python's
(e.g. ggml-base built from the vendored tree: ``cmake -S vendor/llama.cpp/ggml -DGGML_CPU=OFF
-DBUILD_SHARED_LIBS=ON``, ``ninja ggml-base``; ``ggml_backend_cpu_buffer_type`` lives there).
The CUDA backend's allocation-dependency nodes (``alloc_dep``,
:mod:`oomkit.estimate.llamacpp_cuda_fusion`) are replayed as ``ggml_backend_sched_split_graph``
makes them: ``ggml_view_tensor(keep[0])`` (op NONE) with the kept tensors as sources, appended
to the graph after the node they wait for.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import sys
from typing import Any

from oomkit.estimate.llamacpp_galloc import GraphSim

__all__ = ["real_gallocr_bytes"]

GGML_MAX_DIMS = 4
GGML_MAX_SRC = 10
GGML_MAX_NAME = 64
GGML_MAX_OP_PARAMS = 64
FLAG_INPUT = 1
FLAG_OUTPUT = 2
TYPE_I8 = 24


class _Tensor(ctypes.Structure):
    pass


_Tensor._fields_ = [
    ("type", ctypes.c_int),
    ("buffer", ctypes.c_void_p),
    ("ne", ctypes.c_int64 * GGML_MAX_DIMS),
    ("nb", ctypes.c_size_t * GGML_MAX_DIMS),
    ("op", ctypes.c_int),
    ("op_params", ctypes.c_int32 * (GGML_MAX_OP_PARAMS // 4)),
    ("flags", ctypes.c_int32),
    ("src", ctypes.POINTER(_Tensor) * GGML_MAX_SRC),
    ("view_src", ctypes.POINTER(_Tensor)),
    ("view_offs", ctypes.c_size_t),
    ("data", ctypes.c_void_p),
    ("name", ctypes.c_char * GGML_MAX_NAME),
    ("extra", ctypes.c_void_p),
    ("padding", ctypes.c_char * 8),
]


class _InitParams(ctypes.Structure):
    _fields_ = [
        ("mem_size", ctypes.c_size_t),
        ("mem_buffer", ctypes.c_void_p),
        ("no_alloc", ctypes.c_bool),
    ]


def _lib() -> Any:
    own = os.environ.get("GGML_BASE_LIB")
    if own:
        base = cpu = ctypes.CDLL(own, mode=ctypes.RTLD_GLOBAL)
    else:
        import llama_cpp

        d = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
        base = ctypes.CDLL(os.path.join(d, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        cpu = ctypes.CDLL(os.path.join(d, "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)
    base.ggml_init.restype = ctypes.c_void_p
    base.ggml_init.argtypes = [_InitParams]
    base.ggml_new_tensor_1d.restype = ctypes.POINTER(_Tensor)
    base.ggml_new_tensor_1d.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    base.ggml_new_graph_custom.restype = ctypes.c_void_p
    base.ggml_new_graph_custom.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_bool]
    base.ggml_build_forward_expand.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor)]
    base.ggml_graph_add_node.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Tensor)]
    base.ggml_op_name.restype = ctypes.c_char_p
    base.ggml_op_name.argtypes = [ctypes.c_int]
    base.ggml_gallocr_new.restype = ctypes.c_void_p
    base.ggml_gallocr_new.argtypes = [ctypes.c_void_p]
    base.ggml_gallocr_reserve.restype = ctypes.c_bool
    base.ggml_gallocr_reserve.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    base.ggml_gallocr_get_buffer_size.restype = ctypes.c_size_t
    base.ggml_gallocr_get_buffer_size.argtypes = [ctypes.c_void_p, ctypes.c_int]
    base.ggml_gallocr_free.argtypes = [ctypes.c_void_p]
    base.ggml_free.argtypes = [ctypes.c_void_p]
    cpu.ggml_backend_cpu_buffer_type.restype = ctypes.c_void_p
    return base, cpu


def _op_ids(base: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(200):
        name = base.ggml_op_name(i)
        if name is None:
            break
        out[name.decode()] = i
    return out


def real_gallocr_bytes(graph: GraphSim) -> int:
    """Compute-buffer size ggml's own allocator reserves for ``graph`` (CPU buffer type)."""
    base, cpu = _lib()
    ops = _op_ids(base)
    n = len(graph.nodes)
    ctx = base.ggml_init(
        _InitParams(mem_size=(n + 64) * 1024 + 4 * 1024 * 1024, mem_buffer=None, no_alloc=True)
    )
    fake = ctypes.c_void_p(0x1000)
    tensors: list[Any] = []
    for i, nd in enumerate(graph.nodes):
        size = nd.size
        if nd.view_src is not None:
            size = graph.nodes[nd.view_src].size
        dep = nd.name == "alloc_dep"
        if dep:  # ggml_view_tensor(keep[0]): keep[0]'s shape
            k0 = graph.nodes[nd.srcs[0]]
            size = graph.nodes[k0.view_src].size if k0.view_src is not None else k0.size
        t = base.ggml_new_tensor_1d(ctx, TYPE_I8, max(size, 1))
        tc = t.contents
        tc.name = f"n{i}".encode()
        if dep:
            tc.op = ops["NONE"]
            tc.view_src = tensors[nd.srcs[0]]
        elif nd.is_input and not nd.srcs:
            # an input node (not a leaf), placed where the graph first uses it
            tc.op = ops["DUP"]
            tc.flags |= FLAG_INPUT
        elif nd.is_input:
            tc.op = ops["GET_ROWS"]
            tc.flags |= FLAG_INPUT
        elif nd.view_src is not None:
            tc.op = ops["VIEW"]
            tc.view_src = tensors[nd.view_src]
        elif nd.external:
            tc.op = ops["SET_ROWS"]
            tc.data = fake
        else:
            tc.op = ops["ADD"] if nd.inplace else ops["MUL_MAT"]
        for j, s in enumerate(nd.srcs):
            tc.src[j] = tensors[s]
        if nd.is_output:
            tc.flags |= FLAG_OUTPUT
        tensors.append(t)
    gf = base.ggml_new_graph_custom(ctx, max(2048, 2 * n), False)
    for t, nd in zip(tensors, graph.nodes, strict=True):
        if nd.name == "alloc_dep":  # appended as the scheduler appends it to its graph copy
            base.ggml_graph_add_node(gf, t)
        elif not (nd.is_input and not nd.srcs):  # pure inputs join when first used
            base.ggml_build_forward_expand(gf, t)
    galloc = base.ggml_gallocr_new(cpu.ggml_backend_cpu_buffer_type())
    ok = base.ggml_gallocr_reserve(galloc, gf)
    size = int(base.ggml_gallocr_get_buffer_size(galloc, 0))
    base.ggml_gallocr_free(galloc)
    base.ggml_free(ctx)
    if not ok:
        raise RuntimeError("ggml_gallocr_reserve failed")
    return size


def main() -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from oracle_cases import record_inputs

    from oomkit.estimate.llamacpp import llamacpp_view
    from oomkit.estimate.llamacpp_compute import build_graph, graph_shape
    from oomkit.estimate.llamacpp_galloc import simulate_gallocr
    from oomkit.estimate.llamacpp_kv import plan_kv
    from oomkit.estimate.llamacpp_params import resolve_llamacpp_params

    for key, ftype, ctx, fa in (
        ("llama-3.2-1b", "F16", 4096, True),
        ("llama-3.2-1b", "F16", 4096, False),
        ("qwen2.5-7b", "Q4_K_M", 4096, True),
        ("mixtral-8x7b", "Q4_0", 4096, False),
        ("deepseek-v2-lite", "Q4_K_M", 8192, True),
        ("qwen3-30b-a3b", "Q4_K_M", 8192, True),
    ):
        rec = {
            "catalog_key": key,
            "ftype": ftype,
            "settings": {
                "n_ctx": ctx,
                "n_ubatch": 512,
                "n_batch": 512,
                "flash_attn": fa,
                "type_k": "f16",
                "type_v": "f16",
                "n_seq": 1,
                "kv_unified": False,
                "swa_full": True,
            },
        }
        spec, settings = record_inputs(rec)
        spec = llamacpp_view(spec)
        p = resolve_llamacpp_params(settings, n_layer=spec.num_hidden_layers, has_gpu=False)
        sh = graph_shape(p, plan_kv(spec, p))
        for deps in (False, True) if spec.moe is not None else (False,):
            g = build_graph(spec, dataclasses.replace(sh, moe_fusion_deps=deps))
            mine = simulate_gallocr(g, 32)
            real = real_gallocr_bytes(g)
            print(
                f"{key:<14} fa={int(fa)} cuda_deps={int(deps)} sim {mine / 2**20:10.3f} MiB  "
                f"ggml {real / 2**20:10.3f} MiB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
