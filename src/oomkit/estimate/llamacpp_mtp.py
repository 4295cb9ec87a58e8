"""llama-server's built-in MTP speculative decoding (``--spec-type draft-mtp``): what it allocates.

Qwen3.5/3.6/3.8 GGUFs (``qwen35``, ``qwen35moe``) carry their multi-token-prediction head as
``{arch}.nextn_predict_layers`` extra blocks (``blk.{n_layer}``: one decoder block of the full-
attention kind plus ``nextn.eh_proj``/``enorm``/``hnorm``/``shared_head_norm``), counted in
``block_count`` but not in the model's layers. With ``--spec-type draft-mtp`` and no ``-md``
llama-server (tools/server/server-context.cpp ``load_model``, ggml-org/llama.cpp PR #22673 "llama +
spec: MTP Support", first release b9180, May 2026; ``ctx_other`` from PR #25679) does three things
that cost memory:

1. **A second context on the loaded model.** ``cparams_mtp = common_context_params_to_llama(
   params_base)`` with ``ctx_type = LLAMA_CONTEXT_TYPE_MTP``, ``type_k``/``type_v`` =
   ``speculative.draft.cache_type_k/v`` (``-ctkd``/``-ctvd``, **f16** by default: the main
   ``-ctk``/``-ctv`` never apply; the server logs ``cache_k=f16, cache_v=f16``), ``n_rs_seq = 0``
   and ``n_outputs_max = n_parallel``; so its ``n_ctx``, ``n_batch``, ``n_ubatch``, ``n_seq_max``
   and ``kv_unified`` are the main context's. ``llama_model::create_memory`` gives an MTP context
   a plain KV cache **filtered to the nextn layers** (``il >= hparams.n_layer()``) for qwen35 /
   qwen35moe, so it holds ``nextn`` layers of ``n_ctx`` cells; its compute buffer is the reserve
   graph of the MTP head (``eh_proj`` over ``[embd, hidden]``, one full-attention block, the
   shared output head) at ``n_ubatch`` tokens over the full KV. Built **once**, not per slot.
   llama-server prices exactly these two (``measure_model_bytes = false``: "MTP draft context
   lives on the target model, only context+compute are new") and logs their sum as ``[spec]
   estimated memory usage of MTP context is N MiB``.
2. **The nextn block's weights.** They load only when MTP is on (without it llama.cpp logs
   ``model has unused tensor blk.N... -- ignoring``; a Qwen3.8-27B Q2_K_XL log shows the model
   buffer 334.74 MiB larger with the head in use). ``hp_ngl += n_layer_nextn``: the block counts as
   one more layer after the trunk, so ``-ngl 99`` puts it on the GPU and ``--n-cpu-moe N`` (which
   names ``blk.0..N-1``) leaves its experts there.
3. **Recurrent-state rollback snapshots in the main context.** ``common_context_params_to_llama``
   sets ``cparams.n_rs_seq = params.speculative.need_n_rs_seq()`` (common/common.h: ``draft.n_max``
   when a ``DRAFT_MTP`` type is on) and ``llama_memory_recurrent`` widens its conv/SSM tensors to
   ``(1 + n_rs_seq)`` groups per sequence (llama-memory-recurrent.h), for archs with
   ``llm_arch_supports_rs_rollback`` (qwen35, qwen35moe). Logs agree: 149.62 MiB per sequence for
   Qwen3.8-27B becomes 598.50 at ``n_max`` 3 and 1197.00 at 7.

The MTP context is estimated with the llama.cpp estimator itself on the nextn block as a
one-layer full-attention model of the same shape (its KV plan and simulated reserve graph), at
the main context's ``-c``/``-np``/``-b``/``-ub``/``-fa`` and the draft cache types. Checked
against llama-server's own figure in ``tests/test_llamacpp_mtp.py`` (``LOGGED``). Not modelled:
``-ngl`` below the trunk (the nextn block is then placed with the output layer), the nextn block
on the last GPU of a layer split (priced on the device of the main model's output layer), an
MTP head shipped as a separate ``-md`` GGUF (refused).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Component, DeviceUsage, Estimate
from oomkit.spec.model import LAYER_FULL

if TYPE_CHECKING:
    from datetime import date

    from oomkit.spec.hardware import Hardware
    from oomkit.spec.model import ModelSpec
    from oomkit.spec.settings import InferenceSettings

__all__ = [
    "DEFAULT_N_MAX",
    "MTP_ARCHS",
    "MTP_SINCE_BUILD",
    "check_mtp",
    "mtp_enabled",
    "with_mtp",
]

#: GGUF architectures whose llama.cpp graph has an MTP head and whose create_memory filters the
#: MTP context's KV to the nextn layers (src/models/qwen35.cpp, qwen35moe.cpp)
MTP_ARCHS = ("qwen35", "qwen35moe")
#: the first release with ``--spec-type draft-mtp`` (PR #22673; lmstudio-bug-tracker #1924:
#: "release version b9180", 2026-05-17)
MTP_SINCE_BUILD = 9180
#: common/common.h ``common_params_speculative_draft::n_max`` default
DEFAULT_N_MAX = 3
SRC = (
    "llama.cpp tools/server/server-context.cpp load_model (cparams_mtp, ctx_type = "
    "LLAMA_CONTEXT_TYPE_MTP); src/llama-model.cpp create_memory (nextn-layer KV filter)"
)
SRC_RS = (
    "llama.cpp common/common.h need_n_rs_seq (= draft.n_max with draft-mtp); "
    "src/llama-memory-recurrent.cpp (tensors widened to 1 + n_rs_seq groups)"
)


def mtp_enabled(settings: InferenceSettings) -> bool:
    """``--spec-type draft-mtp`` (``speculative_method`` "mtp") for llama.cpp."""
    return settings.speculative_method == "mtp"


def _since() -> date:
    from oomkit.estimate.generation_builds import build_date

    return build_date(MTP_SINCE_BUILD)


def check_mtp(spec: ModelSpec, settings: InferenceSettings) -> int:
    """``n_max`` of a draft-mtp run, after llama-server's own preconditions.

    Raises:
        InvalidSettingError: a build before draft-mtp, a model without an MTP head, a draft
            model given as well, or an ``--spec-draft-n-max`` outside 1..n_batch - 1.
    """
    from oomkit.estimate.generations import parse_runtime_version
    from oomkit.estimate.llamacpp import gguf_arch, llamacpp_view

    first = f"b{MTP_SINCE_BUILD}"
    when = (
        parse_runtime_version("llama.cpp", settings.runtime_version)
        if settings.runtime_version
        else None
    )
    from datetime import date

    if isinstance(when, date) and when < _since():
        raise InvalidSettingError(
            f"--spec-type draft-mtp: llama.cpp {settings.runtime_version} has no draft-mtp (it "
            f"arrived in {first}, PR #22673); name a later build",
            setting="speculative_method",
            value="mtp",
        )
    arch = gguf_arch(llamacpp_view(spec))
    if arch not in MTP_ARCHS or spec.num_nextn_predict_layers < 1:
        why = (
            "its GGUF has no nextn layers (nextn_predict_layers 0: a quant without the MTP head)"
            if arch in MTP_ARCHS
            else f"llama.cpp has no MTP graph for architecture '{arch}' (only "
            f"{', '.join(MTP_ARCHS)})"
        )
        raise InvalidSettingError(
            f"--spec-type draft-mtp: '{spec.name}' cannot draft with MTP: {why}",
            setting="speculative_method",
            value="mtp",
        )
    if settings.draft_model is not None:
        raise InvalidSettingError(
            "--spec-type draft-mtp with -md: an MTP head in a separate GGUF is not modelled; "
            "drop -md to use the model's own nextn layers",
            setting="draft_model",
            value=settings.draft_model,
        )
    n_max = settings.num_speculative_tokens
    n_max = DEFAULT_N_MAX if n_max is None else n_max
    n_batch = settings.batch_size or 2048  # llama.cpp's default -b
    if isinstance(n_max, bool) or not 1 <= n_max < n_batch:
        raise InvalidSettingError(
            f"--spec-draft-n-max {n_max}: must be 1 to {n_batch - 1} (llama.cpp asserts on 0; "
            f"the verify batch of n_max + 1 tokens must fit -b {n_batch})",
            setting="num_speculative_tokens",
            value=n_max,
        )
    return n_max


def _nextn_spec(spec: ModelSpec) -> ModelSpec:
    """The nextn block(s) as llama.cpp's MTP context sees them: a model of ``nextn`` full-
    attention layers of the trunk's shape (recurrent layers and per-layer tables dropped)."""
    n = spec.num_nextn_predict_layers
    last = spec.num_hidden_layers - 1
    return dataclasses.replace(
        spec,
        num_hidden_layers=n,
        layer_types=(LAYER_FULL,) * n,
        kv_heads_per_layer=None if spec.kv_heads_per_layer is None else (spec.kv_heads(last),) * n,
        head_dim_per_layer=None,
        recurrent=None,
        tensors=None,
        num_nextn_predict_layers=0,
        multimodal_params=0,
        vision_tower=None,
        declared_params=None,
    )


def _nextn_weight_bytes(spec: ModelSpec, est: Estimate) -> int:
    """Bytes of the nextn block when the spec's tensors do not list it (a config/catalog spec):
    one decoder block of the last layer's kind plus ``eh_proj [H, 2H]`` and three norms, at the
    main model's bytes per parameter. 0 when the GGUF's own ``blk.{n_layer}`` tensors are
    already priced (oomkit places them with layer 0)."""
    from oomkit.spec.tensor_table import TensorTable
    from oomkit.spec.tensors import count_params
    from oomkit.spec.tensors_blocks import Builder, decoder_layer

    if spec.tensors is not None:
        t = spec.tensors
        layers = t.layers if isinstance(t, TensorTable) else tuple(x.layer for x in t)
        if any(il is not None and il >= spec.num_hidden_layers for il in layers):
            return 0
    b = Builder()
    decoder_layer(b, spec, spec.num_hidden_layers - 1)
    h = spec.hidden_size
    params = sum(x.n_params for x in b.tensors) + 2 * h * h + 3 * h
    file_bytes = est.runtime_details.get("weights_file_bytes")
    total = count_params(spec)
    if not isinstance(file_bytes, int) or not total:
        return 0
    return spec.num_nextn_predict_layers * params * file_bytes // total


def _sum(dev: DeviceUsage, category: str, label: str) -> int:
    return sum(
        c.n_bytes for c in dev.components if c.category == category and c.label.startswith(label)
    )


def with_mtp(
    est: Estimate, spec: ModelSpec, settings: InferenceSettings, hardware: Hardware
) -> Estimate:
    """``est`` (the main model's llama.cpp estimate) plus what ``--spec-type draft-mtp`` adds.

    Raises:
        InvalidSettingError: see :func:`check_mtp`.
    """
    from oomkit.estimate.llamacpp import estimate_llamacpp
    from oomkit.estimate.llamacpp_params import LlamaCppOptions

    n_max = check_mtp(spec, settings)
    p = est.settings
    ctx, parallel = p.get("ctx"), p.get("parallel")
    ngl = p.get("n_gpu_layers")
    # the nextn block sits after the trunk (hp_ngl += nextn): on a GPU when the output layer is
    type_k = settings.draft_cache_type_k or "f16"
    type_v = settings.draft_cache_type_v or "f16"
    mtp_settings = dataclasses.replace(
        settings,
        ctx=ctx if isinstance(ctx, int) else settings.ctx,
        parallel=parallel if isinstance(parallel, int) else settings.parallel,
        cache_type_k=type_k,
        cache_type_v=type_v,
        n_gpu_layers=None
        if ngl is None or (isinstance(ngl, int) and ngl > spec.num_hidden_layers)
        else 0,
        n_cpu_moe=None,
        override_tensor=None,
        speculative_method=None,
        num_speculative_tokens=None,
        draft_cache_type_k=None,
        draft_cache_type_v=None,
        overhead_bytes=0,
    )
    m_est = estimate_llamacpp(
        _nextn_spec(spec),
        mtp_settings,
        hardware,
        options=LlamaCppOptions(mtp_head=True),
        vision_note=False,
    )
    m_by = {d.device: d for d in m_est.devices}
    m_by["cpu"] = m_est.host
    w_bytes = _nextn_weight_bytes(spec, est)
    out_dev = next(
        (d.device for d in m_est.devices if _sum(d, "kv_cache", "KV buffer")),
        "cpu",
    )
    n_ctx = m_est.runtime_details.get("n_ctx")
    ub = m_est.runtime_details.get("n_ubatch")

    def extra(dev: DeviceUsage) -> list[Component]:
        out: list[Component] = []
        m_dev = m_by.get(dev.device)
        if m_dev is not None:
            kv = _sum(m_dev, "kv_cache", "KV buffer")
            if kv:
                out.append(
                    Component(
                        category="kv_cache",
                        label=f"MTP draft context KV (K {type_k}, V {type_v})",
                        n_bytes=kv,
                        formula="nextn layers x row_size(type, n_embd_k/v_gqa) x n_ctx cells "
                        "(one context, the main -c/-np/--kv-unified; -ctkd/-ctvd, f16 default)",
                        inputs={
                            "nextn_layers": spec.num_nextn_predict_layers,
                            "n_ctx": n_ctx if isinstance(n_ctx, int) else None,
                            "type_k": type_k,
                            "type_v": type_v,
                        },
                        source=SRC,
                    )
                )
            cb = _sum(m_dev, "activations", "compute buffer")
            if cb:
                out.append(
                    Component(
                        category="activations",
                        label="MTP draft context compute buffer",
                        n_bytes=cb,
                        formula="peak of the MTP head's reserve graph (eh_proj, one full-"
                        "attention block, output head) at n_ubatch tokens over the full KV",
                        inputs={"n_ubatch": ub if isinstance(ub, int) else None},
                        source=SRC + "; src/llama-context.cpp graph_reserve",
                    )
                )
        if w_bytes and dev.device == out_dev:
            out.append(
                Component(
                    category="weights",
                    label="MTP nextn block weights",
                    n_bytes=w_bytes,
                    formula="one decoder block + eh_proj [H, 2H] + 3 norms per nextn layer, at "
                    "the model's bytes per parameter (loaded only with draft-mtp)",
                    inputs={"nextn_layers": spec.num_nextn_predict_layers},
                    source="llama.cpp src/llama-model.cpp load_tensors (nextn tensors skipped "
                    "unless MTP is on; hp_ngl += n_layer_nextn)",
                )
            )
        rs = _sum(dev, "kv_cache", "RS buffer")
        if rs:
            out.append(
                Component(
                    category="kv_cache",
                    label=f"RS rollback snapshots (n_rs_seq = n_max {n_max})",
                    n_bytes=rs * n_max,
                    formula="n_rs_seq x the recurrent state (conv + SSM, f32) of every sequence",
                    inputs={"n_rs_seq": n_max, "rs_bytes": rs},
                    source=SRC_RS,
                )
            )
        return out

    devices = tuple(
        dataclasses.replace(d, components=(*d.components, *extra(d))) for d in est.devices
    )
    host = dataclasses.replace(est.host, components=(*est.host.components, *extra(est.host)))
    added = {
        d.device: sum(c.n_bytes for c in d.components if c.label.startswith("MTP draft context"))
        for d in (*devices, host)
    }
    logged = sum(added.values())
    rd = dict(est.runtime_details)
    rd["mtp"] = {
        "n_max": n_max,
        "nextn_layers": spec.num_nextn_predict_layers,
        "type_k": type_k,
        "type_v": type_v,
        "context_bytes": logged,
    }
    s = dict(est.settings)
    s.update(speculative_method="mtp", num_speculative_tokens=n_max)
    note = (
        f"--spec-type draft-mtp (n_max {n_max}): one MTP context on the loaded model "
        f"({spec.num_nextn_predict_layers} nextn layer(s), KV {type_k}/{type_v}, "
        f"{logged / 2**20:.2f} MiB: llama-server logs this as 'estimated memory usage of MTP "
        f"context'), the nextn block's weights, and the recurrent state widened to 1 + {n_max} "
        "snapshots"
    )
    return dataclasses.replace(
        est,
        devices=devices,
        host=host,
        settings=s,
        runtime_details=rd,
        assumptions=(*est.assumptions, note),
    )
