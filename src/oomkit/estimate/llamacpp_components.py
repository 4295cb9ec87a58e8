"""The llama.cpp estimate's components per device, each with its formula and source."""

from __future__ import annotations

from oomkit.estimate.breakdown import Component, InputValue
from oomkit.estimate.llamacpp_compute import GraphShape
from oomkit.estimate.llamacpp_kv import KvPlan
from oomkit.estimate.llamacpp_params import LlamaCppParams
from oomkit.estimate.llamacpp_placement import Placement
from oomkit.spec.model import ModelSpec

SRC_LOAD = "llama.cpp src/llama-model.cpp llama_model::load_tensors"
SRC_KV = "llama.cpp src/llama-kv-cache.cpp llama_kv_cache (+ -iswa, llama-memory-recurrent)"
SRC_COMPUTE = (
    "llama.cpp src/llama-context.cpp graph_reserve + ggml/src/ggml-alloc.c "
    "ggml_gallocr_alloc_graph_impl (simulated)"
)


def _weights_component(n_bytes: int, dev: str, placement: Placement, source: str) -> Component:
    bufs = {n: b for n, b in placement.buffers.items() if placement.buffer_device[n] == dev}
    n_t = placement.tensor_counts.get(dev, 0)
    inputs: dict[str, InputValue] = {"tensors": n_t, **bufs}
    if dev != "cpu":
        inputs["offloaded"] = f"{placement.n_offloaded} layers incl. output"
    return Component(
        category="weights",
        label="model buffers",
        n_bytes=n_bytes,
        formula="sum of tensor bytes per buffer (padded to the buffer alignment); a CPU_Mapped "
        "buffer counts its own tensors (llama.cpp logs the file range they span)",
        inputs=inputs,
        source=f"{SRC_LOAD}; {source}",
    )


def _kv_components(
    kv: KvPlan, params: LlamaCppParams, dev: str, kv_bytes: int, rs_bytes: int
) -> list[Component]:
    out: list[Component] = []
    if kv_bytes:
        inputs: dict[str, InputValue] = {
            "n_ctx_seq": params.n_ctx_seq,
            "n_stream": params.n_stream,
            "type_k": params.type_k.lower(),
            "type_v": params.type_v.lower(),
        }
        if kv.swa_cells is not None:
            inputs["swa_cells"] = kv.swa_cells
            inputs["n_swa"] = kv.n_swa
        out.append(
            Component(
                category="kv_cache",
                label=f"KV buffer (K {params.type_k.lower()}, V {params.type_v.lower()})",
                n_bytes=kv_bytes,
                formula="sum over this device's layers of row_size(type, n_embd_k/v_gqa) * cells"
                " * n_stream; SWA layers: cells = pad256(min(n_ctx_seq, n_swa + n_ubatch))",
                inputs=inputs,
                source=SRC_KV,
            )
        )
    if rs_bytes:
        out.append(
            Component(
                category="kv_cache",
                label="RS buffer (recurrent state, f32)",
                n_bytes=rs_bytes,
                formula="sum over recurrent layers of (n_embd_r + n_embd_s) * 4"
                " * max(1, n_seq_max)",
                inputs={"n_seq_max": params.n_seq_max},
                source=SRC_KV,
            )
        )
    return out


def _compute_component(
    n_bytes: int, sh: GraphShape, params: LlamaCppParams, spec: ModelSpec
) -> Component:
    rows = params.options.reserve_outputs
    # llama-server from PR #23861 reserves min(n_batch, n_seq_max) output rows
    # (llamacpp_outputs.server_outputs); the C API and older builds one per micro-batch token
    outputs = "n_outputs = n_tokens" if rows is None else f"n_outputs = {rows} (the server's)"
    return Component(
        category="activations",
        label="compute buffer",
        n_bytes=n_bytes,
        formula="peak (high-water mark) of ggml-alloc over the reserve graph's tensors "
        f"(n_tokens = n_ubatch, {outputs}, full KV)",
        inputs={
            "n_tokens": sh.n_tokens,
            "n_outputs": sh.n_tokens if rows is None else rows,
            "n_kv": sh.n_kv,
            "flash_attn": sh.flash_attn,
            "n_vocab": spec.vocab_size,
            "n_embd": spec.hidden_size,
            "n_head": spec.num_attention_heads,
        },
        source=SRC_COMPUTE,
    )
