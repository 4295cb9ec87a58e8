"""llama.cpp compute buffers: the reserve graph rebuilt tensor by tensor, then allocated.

``llama_context::graph_reserve`` (src/llama-context.cpp) builds the worst-case graph: a
micro-batch of ``n_tokens = min(n_ctx, n_ubatch)`` tokens, ``n_outputs = n_tokens``, over the full
KV cache (``n_kv`` = all cells of a stream), and asks the scheduler's graph allocator for the
buffer each backend needs. This module rebuilds that graph's tensors with their sizes following
the model builders in src/llama-model.cpp and the helpers in src/llama-graph.cpp
(``build_inp_embd``, ``build_norm``, ``build_attn`` / ``build_attn_mha``, ``build_ffn``,
``build_moe_ffn``, ``build_inp_out_ids``, output head), then runs
:func:`~oomkit.estimate.llamacpp_galloc.simulate_gallocr` on it. No constant is fitted: the
size is whatever the allocator would reach for this graph.

Multi-backend runs (partial offload, several GPUs) are modelled per device as the sub-graph of
the layers on that device, plus the scheduler's copies of graph inputs (``n_copies`` of them with
pipeline parallelism), plus, on the main GPU under partial offload, the staging copies of one CPU
layer's weights that ``op_offload`` sends to the GPU for large batches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq

from oomkit.estimate.llamacpp_cuda_fusion import GGML_CUDA_BACKENDS
from oomkit.estimate.llamacpp_galloc import GraphSim, simulate_gallocr
from oomkit.estimate.llamacpp_kv import KvPlan
from oomkit.estimate.llamacpp_moe_graph import F32, I32, moe_graph
from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.spec.model import (
    LAYER_FFN,
    LAYER_LINEAR,
    LAYER_MAMBA,
    LAYER_SLIDING,
    ModelSpec,
    TensorInfo,
)
from oomkit.spec.tensor_table import TensorTable

__all__ = [
    "GraphShape",
    "backend_graph_shape",
    "build_graph",
    "compute_buffer_bytes",
    "host_compute_bytes",
    "output_buffer_bytes",
]

F16 = 2
I64 = 8
#: GGML_KQ_MASK_PAD (ggml.h): mask rows are not padded (1) in late-2025 ggml (a 1-token
#: reserve graph shows a 1-row mask); older builds padded them to 64 (32 before that)
KQ_MASK_PAD = 1
_PLAIN_KV = frozenset({"F16", "F32", "BF16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphShape:
    """The numbers the reserve graph is built from."""

    n_tokens: int
    n_outputs: int
    n_stream: int
    n_kv: int  # cells per stream of the full-attention cache
    n_kv_swa: int | None  # cells per stream of the SWA cache
    flash_attn: bool
    mask_f16: bool = True  # f16 mask input under FA (False: f32 input + cast, older builds)
    #: quantized K / V caches: activations are multiplied by a head_dim x head_dim rotation
    #: before they are stored (llm_graph_input_attn_kv: attn_inp_k_rot / attn_inp_v_rot)
    k_rot: bool = False
    v_rot: bool = False
    set_rows: bool = True  # index inputs for the KV store (False: older builds)
    #: the graph runs on the CUDA backend, whose graph_optimize keeps the tensors of its fused
    #: MoE kernels alive longer (:mod:`oomkit.estimate.llamacpp_cuda_fusion`)
    moe_fusion_deps: bool = False
    #: builds before PR #6505: one mul_mat_id per selected-expert slot (:func:`_moe_slot_loop`)
    moe_slot_loop: bool = False
    #: builds before PR #4766 (ggml_backend_sched, 2024-01-12): one measure allocator over the
    #: whole graph (:func:`build_graph`: ``inp_embd`` is an ordinary node, no ``inp_out_ids``)
    legacy_alloc: bool = False
    #: llama-server's MTP draft context: the MTP head's input stage before its block
    mtp_head: bool = False


def graph_shape(params: LlamaCppParams, kv: KvPlan) -> GraphShape:
    n_tokens = min(params.n_ctx, params.n_ubatch)
    n_outputs = min(n_tokens, params.options.reserve_outputs or n_tokens)
    return GraphShape(
        n_tokens=n_tokens,
        n_outputs=n_outputs,
        n_stream=params.n_stream,
        n_kv=params.n_ctx_seq,
        n_kv_swa=kv.swa_cells,
        flash_attn=params.flash_attn,
        mask_f16=params.options.kq_mask_f16,
        # builds before PR #4766 stored K/V with ggml_cpy into cache views (llm_build_kv_store)
        set_rows=params.options.set_rows and params.options.sched_staging,
        k_rot=params.type_k not in _PLAIN_KV,
        v_rot=params.type_v not in _PLAIN_KV,
        moe_slot_loop=params.options.moe_slot_loop,
        legacy_alloc=not params.options.sched_staging,
        mtp_head=params.options.mtp_head,
    )


def backend_graph_shape(sh: GraphShape, params: LlamaCppParams, backend: str) -> GraphShape:
    """``sh`` as the scheduler hands it to ``backend``'s allocator (the CUDA MoE fusion deps,
    :mod:`oomkit.estimate.llamacpp_cuda_fusion`)."""
    if params.options.cuda_moe_fusion_deps and backend in GGML_CUDA_BACKENDS:
        return dataclasses.replace(sh, moe_fusion_deps=True)
    return sh


def _mask_bytes(n_kv: int, sh: GraphShape, elem: int = F32) -> int:
    rows = -(-(sh.n_tokens // sh.n_stream) // KQ_MASK_PAD) * KQ_MASK_PAD
    return n_kv * rows * sh.n_stream * elem


def build_graph(
    spec: ModelSpec,
    sh: GraphShape,
    *,
    layers: Sequence[int] | None = None,
    with_input: bool = True,
    with_output: bool = True,
) -> GraphSim:
    """The reserve graph of ``layers`` (all by default) as a list of sized tensors."""
    g = GraphSim(reuse_view_parents=sh.legacy_alloc)
    T = sh.n_tokens
    E = spec.hidden_size
    layer_ids = list(range(spec.num_hidden_layers)) if layers is None else list(layers)
    last_layer = spec.num_hidden_layers - 1
    # --- graph inputs (llm_graph_input_*), allocated first by ggml-alloc
    tokens = g.inp("inp_tokens", T * I32) if with_input else None
    pos = g.inp("inp_pos", T * I32)
    has_attn = any(
        spec.layer_types[i] not in (LAYER_LINEAR, LAYER_MAMBA, LAYER_FFN) for i in layer_ids
    )
    k_idxs = g.inp("k_idxs", T * I64) if has_attn and sh.set_rows else None
    v_dim = max((spec.layer_v_head_dim(i) * spec.kv_heads(i) for i in layer_ids), default=0)
    if spec.mla is not None:
        v_dim = spec.mla.kv_lora_rank
    v_idxs = None
    if has_attn and spec.mla is None and sh.set_rows:
        # non-FA stores V transposed: one index per element (build_input_v_idxs)
        v_idxs = g.inp("v_idxs", T * I64 * (1 if sh.flash_attn else v_dim))
    # the KQ masks are f16 inputs under flash attention, f32 otherwise (llm_graph_input_attn_kv)
    mb = F16 if sh.flash_attn and sh.mask_f16 else F32
    mask = g.inp("kq_mask", _mask_bytes(sh.n_kv, sh, mb)) if has_attn else None
    has_swa = sh.n_kv_swa is not None and any(
        spec.layer_types[i] == LAYER_SLIDING for i in layer_ids
    )
    mask_swa = g.inp("kq_mask_swa", _mask_bytes(sh.n_kv_swa or 0, sh, mb)) if has_swa else None
    # builds before PR #4766 had no inp_out_ids (every token's logits, PR #6122 came later)
    out_ids = (
        g.inp("inp_out_ids", sh.n_outputs * I32) if with_output and not sh.legacy_alloc else None
    )
    rot_k = rot_v = None
    if has_attn and spec.mla is None:
        if sh.k_rot:
            rot_k = g.inp("attn_inp_k_rot", spec.head_dim * spec.head_dim * F32)
        if sh.v_rot:
            rot_v = g.inp("attn_inp_v_rot", spec.v_head_dim * spec.v_head_dim * F32)
    mask_cnv = mask
    mask_swa_cnv = mask_swa
    if sh.flash_attn and not sh.mask_f16:
        # older builds: ggml_cast(self_kq_mask, F16) once, shared by all layers
        if mask is not None:
            mask_cnv = g.op("kq_mask_f16", _mask_bytes(sh.n_kv, sh, F16), mask)
        if mask_swa is not None:
            mask_swa_cnv = g.op("kq_mask_swa_f16", _mask_bytes(sh.n_kv_swa or 0, sh, F16), mask_swa)
    # --- input embeddings (build_inp_embd: get_rows from token_embd)
    if with_input:
        cur = g.op("inp_embd", E * T * F32, tokens)
    else:
        cur = g.inp("inp_embd_copy", E * T * F32)  # the previous device's hidden state
    # llama.cpp's inp_embd behaves as a graph input that is also kept to the end: the allocator
    # places it with the inputs (right after inp_tokens) and never frees it. Observed, not read
    # from the source: replaying this graph through ggml's own allocator
    # (benchmarks/oracle/ggml_alloc_replay.py) reproduces the real llama.cpp buffers to the
    # byte this way (e.g. 258.502 MiB for Llama-3.2-1B, n_ubatch 512), and is one tensor of
    # n_embd x n_tokens short when inp_embd is freed after the first layer.
    # On a GPU the embedding arrives as the scheduler's copy of a CPU result (an ordinary split
    # input, freed after its last use), which reproduces the GPU logs (RTX 3070, A6000, RTX 5070).
    # Before PR #4766 the measure allocator (ggml_allocr, ggml-alloc.c of llama-cpp-python
    # 0.2.24, ggml_tallocr_alloc_graph_impl) knew no graph inputs or outputs: get_rows(tok_embd,
    # inp_tokens) was freed after its last consumer like any node.
    if with_input and not sh.legacy_alloc:
        g.nodes[cur].is_input = True
        g.nodes[cur].is_output = True
    if sh.mtp_head and layer_ids and layer_ids[0] == 0:  # on the device of the head's block
        cur = _mtp_head_input(g, E, T, cur)
    inp_l = cur
    n_rows = T
    # some builders select the output rows after the last layer (llm_build_openai_moe)
    late_out_ids = spec.model_type in _LATE_OUT_IDS
    one_sublayer = LAYER_FFN in spec.layer_types  # Nemotron-H: a mixer OR an FFN per block
    for il in layer_ids:
        g.layer_starts.append(len(g.nodes))
        kind = spec.layer_types[il]
        inp_sa = inp_l
        x = g.op("attn_norm", E * n_rows * F32, inp_l, inplace=True)
        x = g.op("attn_norm_w", E * n_rows * F32, x, inplace=True)
        if kind == LAYER_FFN:  # Nemotron-H MLP/MoE block (src/models/nemotron-h.cpp)
            x = _ffn(g, spec, il, x, n_rows, sh)
        elif kind in (LAYER_MAMBA, LAYER_LINEAR):
            x = _recurrent_block(g, spec, x, n_rows)
        else:
            swa = kind == LAYER_SLIDING and mask_swa_cnv is not None
            n_kv = (sh.n_kv_swa or sh.n_kv) if swa else sh.n_kv
            m = mask_swa_cnv if swa else mask_cnv
            x = _attention(g, spec, sh, il, x, pos, k_idxs, v_idxs, m, n_kv, n_rows, (rot_k, rot_v))
        if il == last_layer and out_ids is not None and not late_out_ids:
            n_rows = sh.n_outputs
            x = g.op("get_rows_out", E * n_rows * F32, x, out_ids)
            inp_sa = g.op("get_rows_inpSA", E * n_rows * F32, inp_sa, out_ids)
        if one_sublayer and (kind == LAYER_FFN or not spec.has_ffn(il)):
            # llm_build_nemotron_h: one sublayer per block, cur = ggml_add(cur, inpL)
            inp_l = g.op("l_out", E * n_rows * F32, x, inp_sa, inplace=True)
            continue
        ffn_inp = g.op("ffn_inp", E * n_rows * F32, x, inp_sa, inplace=True)
        y = g.op("ffn_norm", E * n_rows * F32, ffn_inp, inplace=True)
        y = g.op("ffn_norm_w", E * n_rows * F32, y, inplace=True)
        y = _ffn(g, spec, il, y, n_rows, sh)
        if spec.model_type in _RESIDUAL_FIRST:  # add(residual, cur): reuses the residual
            inp_l = g.op("l_out", E * n_rows * F32, ffn_inp, y, inplace=True)
        else:  # add(cur, ffn_inp): reuses the FFN output
            inp_l = g.op("l_out", E * n_rows * F32, y, ffn_inp, inplace=True)
    if with_output and late_out_ids and out_ids is not None:
        n_rows = sh.n_outputs
        inp_l = g.op("get_rows_out", E * n_rows * F32, inp_l, out_ids)
    if with_output:
        y = g.op("result_norm", E * n_rows * F32, inp_l, inplace=True)
        y = g.op("result_norm_w", E * n_rows * F32, y, inplace=True)
        g.nodes[y].is_output = True
        logits = g.op("result_output", spec.vocab_size * n_rows * F32, y)
        g.nodes[logits].is_output = True
    return g


def _mtp_head_input(g: GraphSim, E: int, T: int, embd: int) -> int:
    """The MTP head's input stage (src/models/qwen35.cpp, qwen35moe.cpp MTP graph): the target's
    hidden state arrives as an f32 graph input ``[n_embd, n_tokens]``; both it and the token
    embedding are RMS-normed (``hnorm``, ``enorm``), concatenated to ``[2 n_embd, n_tokens]``
    and projected back by ``nextn.eh_proj``, whose output feeds the block."""
    h = g.inp("mtp_h_input", E * T * F32)
    h_norm = g.op("mtp_hnorm", E * T * F32, h)
    h_norm = g.op("mtp_hnorm_w", E * T * F32, h_norm, inplace=True)
    e_norm = g.op("mtp_enorm", E * T * F32, embd)
    e_norm = g.op("mtp_enorm_w", E * T * F32, e_norm, inplace=True)
    concat = g.op("mtp_concat", 2 * E * T * F32, e_norm, h_norm)
    return g.op("mtp_eh_proj", E * T * F32, concat)


def _attention(
    g: GraphSim,
    spec: ModelSpec,
    sh: GraphShape,
    il: int,
    x: int,
    pos: int,
    k_idxs: int | None,
    v_idxs: int | None,
    mask: int | None,
    n_kv: int,
    T: int,
    rot: tuple[int | None, int | None] = (None, None),
) -> int:
    E = spec.hidden_size
    n_head = spec.num_attention_heads
    n_kv_head = spec.kv_heads(il)
    rot_k, rot_v = rot
    if spec.mla is not None:
        return _mla_attention(g, spec, sh, x, pos, k_idxs, mask, n_kv, T)
    hd, hv = spec.layer_head_dim(il), spec.layer_v_head_dim(il)
    bias = spec.attention_bias
    fused = _has_tensor(spec, "attn_qkv.weight")
    qkv = None
    if fused:
        # one fused projection, Q/K/V are strided views of it (llm_build_phi3)
        qkv = g.op("wqkv", (n_head * hd + n_kv_head * (hd + hv)) * T * F32, x)
        if bias:
            qkv = g.op("wqkv_b", (n_head * hd + n_kv_head * (hd + hv)) * T * F32, qkv, inplace=True)
    # Q first (build_attn expands q_cur, v_cur, k_cur in that order)
    if qkv is not None:
        q = g.view(qkv, "Qcur_view")
    else:
        q = g.op("Qcur", n_head * hd * T * F32, x)
        if bias:
            q = g.op("Qcur_b", n_head * hd * T * F32, q, inplace=True)
        q = g.view(q, "Qcur_3d")
    if spec.qk_norm:
        q = g.op("Qcur_normed", n_head * hd * T * F32, q, inplace=True)
        q = g.op("Qcur_normed_w", n_head * hd * T * F32, q, inplace=True)
    q = g.op("Qcur_rope", n_head * hd * T * F32, q, pos, inplace=True)
    if rot_k is not None:
        q = g.op("Qcur_rot", n_head * hd * T * F32, rot_k, g.view(q))

    def make_v() -> int:
        if qkv is not None:
            return g.view(qkv, "Vcur_view")
        v = g.op("Vcur", n_kv_head * hv * T * F32, x)
        if bias:
            v = g.op("Vcur_b", n_kv_head * hv * T * F32, v, inplace=True)
        if rot_v is not None:
            v = g.op("Vcur_rot", n_kv_head * hv * T * F32, rot_v, g.view(v))
        return g.view(v, "Vcur_3d")

    def make_k() -> int:
        if qkv is not None:
            k = g.view(qkv, "Kcur_view")
        else:
            k = g.op("Kcur", n_kv_head * hd * T * F32, x)
            if bias:
                k = g.op("Kcur_b", n_kv_head * hd * T * F32, k, inplace=True)
            k = g.view(k, "Kcur_3d")
        if spec.qk_norm:
            k = g.op("Kcur_normed", n_kv_head * hd * T * F32, k, inplace=True)
            k = g.op("Kcur_normed_w", n_kv_head * hd * T * F32, k, inplace=True)
        k = g.op("Kcur_rope", n_kv_head * hd * T * F32, k, pos, inplace=True)
        if rot_k is not None:
            k = g.op("Kcur_rot", n_kv_head * hd * T * F32, rot_k, g.view(k))
        return k

    # build_attn expands q_cur, v_cur, k_cur in that order; some builders expand K first
    if spec.model_type in _K_BEFORE_V:
        k = make_k()
        v = make_v()
    else:
        v = make_v()
        k = make_k()
    g.ext("cpy_k", k, k_idxs)
    g.ext("cpy_v", g.view(v), v_idxs)
    qp = g.view(q, "q_perm")
    if sh.flash_attn:
        cur = g.op("fattn", hv * n_head * T * F32, qp, mask)
        cur = g.view(cur, "fattn_2d")
    else:
        kq = g.op("kq", n_kv * T * n_head * F32, qp)
        if spec.model_type == "gemma2":  # attention logit soft-capping: scale, tanh, scale
            for nm in ("kq_scaled", "kq_tanh", "kq_scaled_2"):
                kq = g.op(nm, n_kv * T * n_head * F32, kq, inplace=True)
        kq = g.op("kq_soft_max", n_kv * T * n_head * F32, kq, mask, inplace=True)
        kqv = g.op("kqv", hv * T * n_head * F32, kq)
        cur = g.op("kqv_out", hv * n_head * T * F32, g.view(kqv, "kqv_perm"))
    if rot_v is not None:  # undo the V rotation on the attention output
        cur = g.view(g.op("kqv_out_rot", hv * n_head * T * F32, rot_v, g.view(cur)))
    out = g.op("attn_out", E * T * F32, cur)
    if spec.attention_out_bias:
        out = g.op("attn_out_b", E * T * F32, out, inplace=True)
    if _post_norms(spec):
        out = g.op("attn_post_norm", E * T * F32, out, inplace=True)
        out = g.op("attn_post_norm_w", E * T * F32, out, inplace=True)
    return out


def _mla_attention(
    g: GraphSim,
    spec: ModelSpec,
    sh: GraphShape,
    x: int,
    pos: int,
    k_idxs: int | None,
    mask: int | None,
    n_kv: int,
    T: int,
) -> int:
    """DeepSeek-V2/V3 MLA as llm_build_deepseek2 runs it with the latent ("absorbed") cache."""
    mla = spec.mla
    assert mla is not None
    E = spec.hidden_size
    n_head = spec.num_attention_heads
    nope, rope, rank = mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.kv_lora_rank
    q_dim = n_head * (nope + rope)
    if mla.q_lora_rank:
        q = g.op("q_a", mla.q_lora_rank * T * F32, x)
        q = g.op("q_a_norm", mla.q_lora_rank * T * F32, q, inplace=True)
        q = g.op("q_a_norm_w", mla.q_lora_rank * T * F32, q, inplace=True)
        q = g.op("q_b", q_dim * T * F32, q)
    else:
        q = g.op("q", q_dim * T * F32, x)
    q_nope = g.view(q, "q_nope")
    q_pe = g.op("q_pe_rope", n_head * rope * T * F32, g.view(q, "q_pe"), pos)
    kv_cmpr_pe = g.op("kv_cmpr_pe", (rank + rope) * T * F32, x)
    k_pe = g.op("k_pe_rope", rope * T * F32, g.view(kv_cmpr_pe, "k_pe"), pos)
    kv_cmpr = g.op("kv_cmpr", rank * T * F32, g.view(kv_cmpr_pe, "kv_cmpr_v"))
    kv_cmpr = g.op("kv_cmpr_norm_w", rank * T * F32, kv_cmpr, inplace=True)
    # absorb W_UK into q: [rank, T, n_head]
    q_nope_absorbed = g.op("q_nope_absorbed", rank * T * n_head * F32, g.view(q_nope, "q_nope_p"))
    q_full = g.op("Qcur", (rank + rope) * n_head * T * F32, q_nope_absorbed, q_pe)
    k_full = g.op("Kcur", (rank + rope) * T * F32, kv_cmpr, k_pe)
    g.ext("cpy_k", k_full, k_idxs)
    if sh.flash_attn:
        cur = g.op("fattn", rank * n_head * T * F32, g.view(q_full), mask)
    else:
        kq = g.op("kq", n_kv * T * n_head * F32, g.view(q_full))
        kq = g.op("kq_soft_max", n_kv * T * n_head * F32, kq, mask, inplace=True)
        cur = g.op("kqv", rank * T * n_head * F32, kq)
    # decompress with W_UV: [v_head_dim, T, n_head], then merge heads
    cur = g.op("kqv_v_mla", mla.v_head_dim * T * n_head * F32, g.view(cur))
    cur = g.op("kqv_out", mla.v_head_dim * n_head * T * F32, g.view(cur, "kqv_perm"))
    return g.op("attn_out", E * T * F32, cur)


def _recurrent_block(g: GraphSim, spec: ModelSpec, x: int, T: int) -> int:
    """Mamba2 / gated-delta-net mixer: projections, conv, scan (llm_graph_context::build_rs)."""
    rec = spec.recurrent
    E = spec.hidden_size
    if rec is None:
        return g.op("mixer_out", E * T * F32, x)
    d_in = rec.d_inner
    conv_ch = rec.conv_state_elements // max(1, rec.d_conv - 1)
    proj = g.op("ssm_in", (2 * d_in + conv_ch - d_in + max(rec.n_heads, 1)) * T * F32, x)
    conv_x = g.op("conv_x", conv_ch * (T + rec.d_conv - 1) * F32, g.view(proj))
    conv = g.op("ssm_conv", conv_ch * T * F32, conv_x)
    conv = g.op("ssm_conv_silu", conv_ch * T * F32, conv, inplace=True)
    scan = g.op("ssm_scan", (d_in * T + rec.ssm_state_elements) * F32, g.view(conv), g.view(proj))
    y = g.op("ssm_y", d_in * T * F32, g.view(scan))
    y = g.op("ssm_gate", d_in * T * F32, y, g.view(proj), inplace=True)
    y = g.op("ssm_norm", d_in * T * F32, y, inplace=True)
    return g.op("ssm_out", E * T * F32, y)


_FUSED_ARCHS = frozenset({"phi3"})
_POST_NORM_ARCHS = frozenset({"gemma2", "gemma3", "gemma3_text", "gemma4", "gemma4_text", "glm4"})


#: (spec, {role: first layer-0 tensor of that role}) of the last spec asked about: the graph
#: builder asks per layer, and a scan of every tensor per layer is O(n^2) in the layer count
_LAYER0: list[tuple[ModelSpec, dict[str, TensorInfo]]] = []


def _layer0(spec: ModelSpec) -> dict[str, TensorInfo]:
    if _LAYER0 and _LAYER0[0][0] is spec:
        return _LAYER0[0][1]
    roles: dict[str, TensorInfo] = {}
    table = spec.tensors
    if isinstance(table, TensorTable):  # columns: build only layer 0's rows
        for i in compress(range(len(table)), map(eq, table.layers, repeat(0))):
            if table.roles[i] not in roles:
                roles[table.roles[i]] = table[i]
    elif table:
        for t in table:
            if t.layer == 0:
                roles.setdefault(t.role, t)
    _LAYER0[:] = [(spec, roles)]
    return roles


def _post_norms(spec: ModelSpec) -> bool:
    """Sandwich norms after attention and FFN (Gemma-2/3, GLM-4-0414)."""
    if spec.tensors:
        return "post_ffw_norm.weight" in _layer0(spec)
    return spec.model_type in _POST_NORM_ARCHS


_LATE_OUT_IDS = frozenset({"gpt_oss"})
#: builders that write the FFN residual as ggml_add(residual, cur) (llm_build_phi3)
_RESIDUAL_FIRST = frozenset({"phi3"})
#: builders whose graph computes K before V (llm_build_openai_moe)
_K_BEFORE_V = frozenset({"gpt_oss"})


def _has_tensor(spec: ModelSpec, role: str, *, rows: int | None = None) -> bool:
    """Whether layer 0 has tensor ``role`` (with ``rows`` output rows, when given)."""
    if spec.tensors:
        t = _layer0(spec).get(role)
        if t is None:
            return False
        return rows is None or (len(t.shape) >= 2 and t.shape[0] == rows)
    return spec.model_type in _FUSED_ARCHS


def _ffn(g: GraphSim, spec: ModelSpec, il: int, x: int, T: int, sh: GraphShape) -> int:
    E = spec.hidden_size
    moe = spec.moe
    if moe is not None and moe.num_experts > 0 and il not in moe.dense_layers:
        out = moe_graph(g, spec, x, T, sh.moe_fusion_deps, slot_loop=sh.moe_slot_loop)
        sff = moe.shared_expert_intermediate_size
        if sff:
            sh_out = _dense_ffn(g, spec, x, sff, T, sh.legacy_alloc)
            out = g.op("ffn_moe_out_shexp", E * T * F32, out, sh_out, inplace=True)
        return out
    ff = spec.intermediate_size
    if moe is not None and moe.num_experts == 0 and moe.shared_expert_intermediate_size:
        ff = moe.shared_expert_intermediate_size
    return _dense_ffn(g, spec, x, ff, T, sh.legacy_alloc)


def _dense_ffn(g: GraphSim, spec: ModelSpec, x: int, ff: int, T: int, legacy: bool) -> int:
    """build_ffn: gate and up projections, fused GLU (ggml_swiglu_split/geglu), down.

    ``legacy`` (builds before PR #4766): ``llm_build_ffn`` of llama-cpp-python 0.2.24's
    llama.cpp, line 3996) ran ``ggml_silu`` on the gate and ``ggml_mul(cur, tmp)`` with
    the up projection, both ops ggml-alloc runs in place, and the DFS order of
    ``ggml_build_forward_expand`` puts gate and silu before up."""
    E = spec.hidden_size
    if legacy and spec.mlp_gated and not _has_tensor(spec, "ffn_up.weight", rows=2 * ff):
        gate = g.op("ffn_gate", ff * T * F32, x)
        gate = g.op("ffn_silu", ff * T * F32, gate, inplace=True)
        up = g.op("ffn_up", ff * T * F32, x)
        h = g.op("ffn_gate_par", ff * T * F32, gate, up, inplace=True)
    elif spec.mlp_gated and _has_tensor(spec, "ffn_up.weight", rows=2 * ff):
        # fused gate+up projection, GLU over its two halves (ggml_swiglu)
        up = g.op("ffn_up", 2 * ff * T * F32, x)
        h = g.op("ffn_glu", ff * T * F32, up)
    elif spec.mlp_gated:
        gate = g.op("ffn_gate", ff * T * F32, x)
        up = g.op("ffn_up", ff * T * F32, x)
        h = g.op("ffn_glu", ff * T * F32, gate, up)
    else:
        h = g.op("ffn_up", ff * T * F32, x)
        h = g.op("ffn_act", ff * T * F32, h, inplace=True)
    out = g.op("ffn_down", E * T * F32, h)
    if _post_norms(spec):
        out = g.op("ffn_post_norm", E * T * F32, out, inplace=True)
        out = g.op("ffn_post_norm_w", E * T * F32, out, inplace=True)
    return out


def compute_buffer_bytes(graph: GraphSim, alignment: int) -> int:
    """Bytes of the compute buffer ggml-alloc reserves for ``graph``."""
    return simulate_gallocr(graph, alignment)


def host_compute_bytes(spec: ModelSpec, sh: GraphShape, *, alignment: int = 32) -> int:
    """The CPU-side buffer when every layer is offloaded: inputs and the embedding lookup.

    The scheduler keeps graph inputs on the CPU backend (``ggml_backend_sched``: inputs go to the
    last backend), and ``get_rows`` on the CPU-resident token embeddings produces ``inp_embd``.
    """
    g = GraphSim()
    T = sh.n_tokens
    parts = [T * I32, T * I32, sh.n_outputs * I32]
    has_attn = bool(spec.attention_layers())
    if has_attn:
        v_dim = max(spec.layer_v_head_dim(i) * spec.kv_heads(i) for i in spec.attention_layers())
        if sh.set_rows:
            parts.append(T * I64)
        if spec.mla is None and sh.set_rows:
            parts.append(T * I64 * (1 if sh.flash_attn else v_dim))
        mb = F16 if sh.flash_attn and sh.mask_f16 else F32
        parts.append(_mask_bytes(sh.n_kv, sh, mb))
        if sh.n_kv_swa is not None:
            parts.append(_mask_bytes(sh.n_kv_swa, sh, mb))
    ids = [g.inp(f"in{i}", p) for i, p in enumerate(parts)]
    emb = g.op("inp_embd", spec.hidden_size * T * F32, ids[0])
    g.nodes[emb].is_output = True
    for i in ids[1:]:
        g.nodes[i].is_output = True
    return simulate_gallocr(g, alignment)


def output_buffer_bytes(spec: ModelSpec, n_outputs_max: int) -> int:
    """Host output buffer: logits ``n_vocab x n_outputs_max`` f32 (llama_context::output_reserve).

    Embeddings are not reserved for a causal LM unless requested; the buffer is allocated in the
    CPU (or pinned host) buffer type and logged as ``output buffer size``.
    """
    return spec.vocab_size * n_outputs_max * F32
