"""The llama.cpp rows of the runtime generations table.

Oldest first; every row cites the change that starts it. The 2023 and 2024 rows live in
:mod:`oomkit.estimate.generation_rows_llamacpp_2023` and
:mod:`oomkit.estimate.generation_rows_llamacpp_2024`; this module holds the rows from 2025 on
(per-architecture caches: MLA, SWA, KV streams, flash attention by default, compute chunks,
server slots, ``--fit``, ...) and gathers all of them in :data:`LLAMACPP_ROWS`, which
:data:`oomkit.estimate.generation_table.ROWS` reads; the row layout is
:data:`oomkit.estimate.generation_row.Row`.
"""

from __future__ import annotations

from oomkit.estimate.generation_row import Row
from oomkit.estimate.generation_row import row as _g
from oomkit.estimate.generation_rows_llamacpp_2023 import LLAMACPP_2023_ROWS, OLD_EFFECTS
from oomkit.estimate.generation_rows_llamacpp_2024 import LLAMACPP_2024_ROWS

__all__ = ["LLAMACPP_ROWS"]

#: Oldest first. Every row cites the change that starts it.
LLAMACPP_ROWS: tuple[Row, ...] = (
    *LLAMACPP_2023_ROWS,
    *LLAMACPP_2024_ROWS,
    _g(
        "llama.cpp",
        "2025-04-mla",
        "llama.cpp 2025-04 (MLA latent cache, full SWA)",
        "2025-04-15",
        None,
        "ggml-org/llama.cpp PR #12801 (DeepSeek V2/V3 MLA implementation)",
        "MLA models cache the latent c^KV + rope key (576) as K and the latent again as "
        "V; Gemma-2/3 sliding-window layers still cache the whole context",
        **{**OLD_EFFECTS, "mla_cache": True},
    ),
    _g(
        "llama.cpp",
        "2025-05-swa",
        "llama.cpp 2025-05 (SWA cache)",
        "2025-05-09",
        None,
        "ggml-org/llama.cpp PR #13194 (kv-cache: add SWA support)",
        "sliding-window layers cache pad(n_swa x n_seq + n_batch) cells instead of "
        "n_ctx (Gemma-3: ~5/6 of the KV gone)",
        **{**OLD_EFFECTS, "mla_cache": True, "swa_cache": True},
    ),
    _g(
        "llama.cpp",
        "2025-07-streams",
        "llama.cpp 2025-07 (per-sequence KV streams)",
        "2025-07-16",
        None,
        "ggml-org/llama.cpp PR #14363 (high-throughput mode, kv_unified)",
        "without --kv-unified each of -np sequences gets its own stream of n_ctx/np "
        "cells (padded per stream); SWA cells are per stream",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        flash_attn_default=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        compute_chunks=False,
        fit_params=False,
        server_auto_slots=False,
    ),
    _g(
        "llama.cpp",
        "2025-08-fa-auto",
        "llama.cpp 2025-08 (flash attention on by default)",
        "2025-08-30",
        None,
        "ggml-org/llama.cpp PR #15434 (use FA + max. GPU layers by default)",
        "-fa auto: no n_head x n_ubatch x n_ctx f32 KQ matrix in the compute buffer "
        "when the backend supports FA (before: FA off unless -fa)",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        compute_chunks=False,
        fit_params=False,
        server_auto_slots=False,
    ),
    _g(
        "llama.cpp",
        "2025-10-compute-chunks",
        "llama.cpp 2025-10 (compute buffers in chunks)",
        # PR opened 2025-09-05; the latest dated comment seen in its thread is the
        # author's of 2025-10-02. The merge day is not in the threads read: dated at that
        # comment, so runs in between are modelled as the older, single-buffer builds
        "2025-10-02",
        None,
        "ggml-org/llama.cpp PR #15815 (ggml : split graph allocations according to "
        "backend max buffer size; ggml-alloc vbuffer of up to 16 chunks)",
        "the compute buffer is several backend buffers of at most the backend's max size "
        "(Vulkan: no single >4 GiB compute buffer any more); one tensor larger than the "
        "device's allocation limit still fails",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        fit_params=False,
        server_auto_slots=False,
    ),
    _g(
        "llama.cpp",
        "2025-11-server-slots",
        "llama.cpp 2025-11 (llama-server: 4 slots on a unified KV cache)",
        # PR opened 2025-10-23; its review discussion r2483744206 is of about 2025-11-01 and
        # build 7079 (issue #17300, 2025-11-16) starts 4 slots. Dated at that discussion
        "2025-11-01",
        None,
        "ggml-org/llama.cpp PR #16736 (server : support unified cache across slots; "
        "tools/server/server.cpp: 'n_parallel is set to auto, using n_parallel = 4 and "
        "kv_unified = true'; -np default -1, PR #17997's help text)",
        "llama-server without -np: 4 slots on one unified cache of n_ctx cells (the KV of "
        "one sequence for full-attention layers; sliding-window layers keep 4 x n_swa cells, "
        "recurrent models 4 states); llama-cli and the C API keep one sequence",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        n_ctx_pad_no_fa=32,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        fit_params=False,
    ),
    _g(
        "llama.cpp",
        "2025-11-pad256",
        "llama.cpp 2025-11 (cells padded to 256)",
        "2025-11-06",
        None,
        "ggml-org/llama.cpp PR #16812 then PR #17046 (KV size padded to 256)",
        "KV cells padded to 256 with or without flash attention",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
        fit_params=False,
    ),
    _g(
        "llama.cpp",
        "2025-12-fit",
        "llama.cpp 2025-12+ (--fit: unset -c/-ngl fitted to free memory)",
        # PR #18070 of 2025-12-15 fixes the already merged PR; issue #18097 of 2025-12-16
        # names build 7437 and the fit commit b1f3a6e5d as its first bad commit
        "2025-12-15",
        None,
        "ggml-org/llama.cpp PR #16653 (llama_params_fit, today common_fit_params in "
        "common/fit.cpp; -fit on by default, -fitt 1024 MiB, -fitc 4096; common_params.n_ctx "
        "0 = the model's trained context)",
        "llama-server/llama-cli: with -c unset the context is the model's trained context, "
        "lowered (not below 4096) until 1 GiB stays free per device; with -ngl unset too, "
        "layers (MoE: expert tensors first) leave the GPU until it does "
        "(:mod:`oomkit.estimate.llamacpp_fit`); before: -c 4096 and every layer",
        mla_v_cache=True,
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
    ),
    _g(
        "llama.cpp",
        "2026-01-vless",
        "llama.cpp 2026-01+ (V-less MLA cache)",
        "2026-01-24",
        None,
        "ggml-org/llama.cpp PR #19067 (kv-cache: support V-less cache)",
        "MLA models keep only the K latent: about half the KV of the previous builds; "
        "-ctv sets nothing there (V is a view of K), so a K type other than V's is accepted",
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
        server_outputs=False,
    ),
    _g(
        "llama.cpp",
        "2026-06-server-outputs",
        "llama.cpp 2026-06+ (llama-server reserves -np outputs)",
        "2026-06-01",
        None,
        "ggml-org/llama.cpp PR #23861 (llama: limit max outputs of llama_context; "
        "llama_context_params.n_outputs_max, set by tools/server/server-context.cpp)",
        "llama-server only: the reserve graph holds n_parallel output rows instead of the "
        "micro-batch's (logits n_vocab x n_ubatch f32, and an output layer left on the CPU "
        "is no longer staged on the GPU for a 512-row matmul); llama-bench / llama-cli "
        "keep n_outputs_max = n_batch",
        mla_kv_types_equal=False,
        cuda_moe_fusion_deps=False,
    ),
    _g(
        "llama.cpp",
        "2026-07-mla-kv-types",
        "llama.cpp 2026-07+ (MLA: one type for K and V)",
        # PR opened and approved 2026-07-18; build 10216 (876a43211, llama.cpp#26382 of
        # 2026-07-31) refuses GLM-5.2 at -ctk q5_1 with V f16. Dated at the PR
        "2026-07-18",
        None,
        "ggml-org/llama.cpp PR #25871 (llama : enforce the same K and V cache types for "
        "DeepSeek V4; extended in review to every hparams.is_mla() model, whose V cache is "
        "a view of K)",
        "no memory change: an MLA model with -ctk other than -ctv no longer starts "
        "('model does not support different K (...) and V (...) cache types')",
        cuda_moe_fusion_deps=False,
    ),
    _g(
        "llama.cpp",
        "2026-09-moe-fusion-deps",
        "llama.cpp 2026-09+ (CUDA MoE fusion keeps its inputs)",
        "2026-09-02",
        None,
        "ggml-org/llama.cpp PR #25952 (commit 3466812d: cuda: fuse MoE weighted expert "
        "reduction, using add_alloc_dep of PR #27301)",
        "CUDA/HIP compute buffer of MoE models: the expert outputs stay allocated until "
        "the weighted sum is done, so the weighted copy no longer reuses them (+ n_embd x "
        "n_expert_used x n_ubatch x 4 bytes)",
    ),
)
