"""vLLM and SGLang speculative decoding: the draft's weights, KV cache and per-step extras.

What each runtime allocates for a draft (read in the runtimes' sources; llama.cpp's ``-md`` is
:mod:`oomkit.estimate.llamacpp_draft`):

* **Weights.** vLLM loads the drafter inside ``GPUModelRunner.load_model`` (vllm/v1/worker/
  gpu_model_runner.py: ``self.drafter.load_model(self.model)``), before the memory profile, so
  its weights are part of ``model_memory_usage``. ``draft_tensor_parallel_size`` "can only be 1
  or the same as the target model's tensor parallel size" (vllm/config/speculative.py
  ``SpeculativeConfig``) and defaults to the target's: the draft is sharded like the target.
  ``EagleProposer.load_model`` (vllm/v1/spec_decode/eagle.py) shares the target's
  ``embed_tokens`` with EAGLE/EAGLE-3/MTP drafts and its ``lm_head`` with EAGLE and MTP (EAGLE-3
  keeps its own head over ``draft_vocab_size``). SGLang's ``EAGLEWorker`` does the same
  (python/sglang/srt/speculative/eagle_worker.py ``set_embed_and_head``), but loads the draft
  AFTER the target's KV pool, from the ``1 - mem_fraction_static`` rest; that is why
  ``ServerArgs._handle_gpu_memory_settings`` (server_args.py) reserves 2 GiB more for
  EAGLE/EAGLE3/NEXTN ("eagle draft models and cuda graphs") and 6 GiB more for STANDALONE
  (none for NGRAM) when it picks the default ``mem_fraction_static``.
* **MTP/NextN.** The draft is the target checkpoint's own ``num_nextn_predict_layers`` blocks
  (vLLM ``method: "mtp"``, SGLang ``NEXTN``): one decoder block of the last layer's kind plus
  ``enorm``/``hnorm``/``eh_proj``/``shared_head.norm`` per layer (:func:`oomkit.spec.tensors.
  mtp_params`; the ``embed_tokens``/``shared_head.head`` copies are shared with the target).
* **KV cache.** vLLM: the drafter's attention layers register in the same forward context, so
  ``get_kv_cache_spec`` lists them with the target's and they share one block budget
  (vllm/v1/core/kv_cache_utils.py ``get_kv_cache_config``): every block holds the draft layers'
  KV too, so fewer tokens fit. SGLang: a separate draft token-to-KV pool with the target's
  ``max_total_num_tokens``; the target budgets it by scaling its cell size by
  ``1 + draft_layers / target_layers`` (python/sglang/srt/model_executor/pool_configurator.py
  ``DefaultPoolConfigurator.__init__``, "EAGLE/STANDALONE: scale cell_size to account for draft
  model KV cache"), so the pool holds fewer tokens. NGRAM has no draft model: no weights, no KV.
* **Per step.** vLLM captures CUDA graphs for ``1 + num_speculative_tokens`` tokens per
  sequence: ``max_cudagraph_capture_size = min(max_num_seqs x decode_query_len x 2, 512)``
  with ``decode_query_len = 1 + num_speculative_tokens`` (vllm/config/vllm.py
  ``VllmConfig._set_cudagraph_sizes``), and the drafter's layers are captured with them. The
  profile's ``_dummy_sampler_run`` also runs the rejection sampler over ``num_reqs +
  num_reqs`` rows of fp32 logits (one dummy draft token per request; gpu_model_runner.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.estimate.breakdown import Component
from oomkit.estimate.hf_kv import KvLayer, kv_bytes_per_token, kv_layers
from oomkit.estimate.speculative_keys import unpriced_note
from oomkit.spec.settings import InferenceSettings
from oomkit.units import MiB

if TYPE_CHECKING:
    from oomkit.spec.model import ModelSpec

__all__ = [
    "SGLANG_ALGORITHMS",
    "DraftTerms",
    "draft_terms",
    "draft_weights_component",
    "rejection_sampler_bytes",
    "sglang_cell_size",
    "sglang_reserve_bytes",
    "spoken_method",
]

#: SGLang ``--speculative-algorithm`` -> the method in vLLM's spelling (server_args.py
#: ``choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]``)
SGLANG_ALGORITHMS = {
    "EAGLE": "eagle",
    "EAGLE3": "eagle3",
    "NEXTN": "mtp",
    "STANDALONE": "draft_model",
    "NGRAM": "ngram",
}
_SGLANG_SPELLING = {v: k for k, v in SGLANG_ALGORITHMS.items()}

#: SGLang's defaults when the user names an algorithm but not its shape (server_args.py: with
#: ``speculative_eagle_topk == 1``, ``num_draft_tokens = num_steps + 1``)
SGLANG_DEFAULT_STEPS = 3
SGLANG_DEFAULT_TOPK = 1

SRC_VLLM = "vllm/v1/spec_decode/eagle.py EagleProposer.load_model; gpu_model_runner.py load_model"
SRC_SGLANG = "sglang/srt/speculative/eagle_worker.py EAGLEWorker (draft ModelRunner)"


#: how each runtime's estimate words the draft-weights line: (what an MTP draft is, what a
#: method with no draft model is called (None: the method), when the draft loads, the
#: speculative-tokens input's name, the source)
_DRAFT_WEIGHTS_LINE: dict[str, tuple[str, str | None, str, str, str]] = {
    "vllm": (
        "MTP layers",
        None,
        "loaded with the target before the profile",
        "num_speculative_tokens",
        SRC_VLLM,
    ),
    "sglang": (
        "NextN layers",
        "no model",
        "loaded after the target's KV pool, out of the 1 - mem_fraction_static rest",
        "num_steps",
        SRC_SGLANG,
    ),
}


def draft_weights_component(draft: DraftTerms, runtime: str, *, tp: int) -> Component:
    """The draft's weights line of ``runtime``'s (vllm | sglang) estimate, one rank's bytes."""
    mtp, no_model, loaded, steps, source = _DRAFT_WEIGHTS_LINE[runtime]
    method = spoken_method(draft.method, runtime)
    what = draft.model or (mtp if draft.method == "mtp" else no_model or draft.method)
    return Component(
        category="weights",
        label=(
            f"speculative decoding: {method} (no draft weights)"
            if draft.method == "ngram"
            else f"draft model weights ({method}: {what})"
        ),
        n_bytes=draft.weights_bytes,
        formula=f"{draft.weights_formula}; {loaded}",
        inputs={"tp": tp, steps: draft.k},
        source=source,
    )


def spoken_method(method: str, runtime: str) -> str:
    """``method`` as the runtime spells it (``mtp`` -> SGLang ``NEXTN``)."""
    if runtime == "sglang":
        return _SGLANG_SPELLING.get(method, method.upper())
    return method


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftTerms:
    """One rank's draft: its weights, its KV layers and the speculative tokens per step."""

    method: str  # vLLM's spelling (settings.speculative_method)
    k: int  # speculative tokens per step (vLLM num_speculative_tokens; SGLang num_steps)
    model: str | None  # the draft model's name ("" for MTP and ngram)
    weights_bytes: int  # per rank
    weights_formula: str
    layers: tuple[KvLayer, ...]  # per rank, numbered after the target's layers
    kv_bytes_per_token: int  # per rank, summed over the draft layers
    notes: tuple[str, ...]

    @property
    def n_layers(self) -> int:
        """Draft layers that hold KV."""
        return len(self.layers)


def _refuse(message: str, setting: str, value: object = None) -> InvalidSettingError:
    return InvalidSettingError(message, setting=setting, value=value)


def _mtp_terms(
    spec: ModelSpec, target_bytes: int, target_layers: tuple[KvLayer, ...], tp: int, runtime: str
) -> tuple[int, str, tuple[KvLayer, ...]]:
    from oomkit.spec.tensors import count_params, mtp_params

    n = spec.num_nextn_predict_layers
    if n <= 0:
        raise _refuse(
            f"speculative method {spoken_method('mtp', runtime)}: {spec.name} has no MTP/NextN "
            "layers in its config (num_nextn_predict_layers is 0); name a draft model "
            "(eagle/draft_model) or drop the speculative config",
            "speculative_method",
            "mtp",
        )
    # the embed_tokens and shared_head.head copies are the target's (shared, not loaded twice)
    params = mtp_params(spec) - n * 2 * spec.vocab_size * spec.hidden_size
    total = count_params(spec) - spec.multimodal_params  # the text tensors target_bytes prices
    per_param = target_bytes * tp / total if total > 0 else 2.0
    weights = int(params * per_param) // tp
    attn = [lay for lay in target_layers if lay.kind in ("full", "mla", "sliding")]
    template = attn[-1] if attn else None
    base = spec.num_hidden_layers
    layers = (
        tuple(
            KvLayer(
                layer=base + i,
                kind=template.kind if template.kind != "sliding" else "full",
                bytes_per_token=template.bytes_per_token,
            )
            for i in range(n)
        )
        if template is not None
        else ()
    )
    formula = (
        f"{n} MTP layer(s) x (decoder block + enorm, hnorm, eh_proj [H, 2H]) at the checkpoint's "
        "mean bytes per parameter / tp (embed_tokens and lm_head shared with the target)"
    )
    return weights, formula, layers


def _model_terms(
    settings: InferenceSettings, method: str, *, tp: int, kv_elem: int, elem: int, base: int
) -> tuple[str, int, str, tuple[KvLayer, ...]]:
    from oomkit.estimate.hf_weights import dtype_bytes, plan_weights
    from oomkit.loaders.source import resolve_model
    from oomkit.spec.tensors import model_tensors

    name = settings.speculative_model
    assert name is not None
    # the caller (oomkit.api.estimate_model) resolved it first with the user's offline rule
    draft = resolve_model(name, offline=True)
    plan = plan_weights(draft, model_tensors(draft), quant=None, tp=tp)
    weights = plan.bytes_per_rank
    d_elem = dtype_bytes(draft.torch_dtype or "bf16")
    d_elem = 2 if d_elem == 4 else d_elem
    table = draft.vocab_size * draft.hidden_size * d_elem // tp
    formula = f"the draft checkpoint's tensors / tp ({draft.name})"
    if method in ("eagle", "eagle3"):
        weights -= table  # embed_tokens shared with the target (EagleProposer.load_model)
        formula += " - embed_tokens (shared with the target)"
        if method == "eagle" and not draft.tie_word_embeddings:
            weights -= table  # EAGLE-1 shares lm_head too; EAGLE-3 keeps its draft-vocab head
            formula += " - lm_head (shared)"
    layers = tuple(
        dataclasses.replace(lay, layer=base + i)
        for i, lay in enumerate(
            kv_layers(draft, kv_elem_bytes=kv_elem, state_elem_bytes=elem, tp=tp)
        )
    )
    return draft.name, max(0, weights), formula, layers


def draft_terms(
    spec: ModelSpec,
    settings: InferenceSettings,
    *,
    target_weights_bytes: int,
    target_layers: tuple[KvLayer, ...],
    tp: int,
    kv_elem: int,
    elem: int,
) -> DraftTerms | None:
    """The draft of ``settings`` for one rank (None without speculative decoding).

    ``target_weights_bytes``: the target's weights per rank (MTP layers are priced at the
    checkpoint's mean bytes per parameter). ``target_layers``: the target's KV layers per rank.

    Raises:
        InvalidSettingError: MTP on a model without MTP layers, a method that needs a draft
            model without one, a draft model with ngram/MTP, or pipeline parallelism.
    """
    method = settings.speculative_method
    if method is None:
        return None
    runtime = "sglang" if settings.runtime.lower() == "sglang" else "vllm"
    said = spoken_method(method, runtime)
    if (settings.pp or 1) > 1:
        raise _refuse(
            f"speculative decoding ({said}) with pipeline parallelism is not modelled by "
            "oomkit; drop --pp or the speculative config",
            "pp",
            settings.pp,
        )
    notes: list[str] = []
    unpriced = unpriced_note(settings.speculative_extra)
    if unpriced is not None:  # kv_cache_dtype, quantization, ... of the draft, carried only
        notes.append(unpriced)
    if runtime == "sglang":
        k = settings.num_speculative_tokens or SGLANG_DEFAULT_STEPS
        if settings.num_speculative_tokens is None and method != "ngram":
            notes.append(
                f"--speculative-num-steps not given: {SGLANG_DEFAULT_STEPS} assumed "
                f"(topk {SGLANG_DEFAULT_TOPK}, {SGLANG_DEFAULT_STEPS + 1} draft tokens)"
            )
    elif settings.num_speculative_tokens is not None:
        k = settings.num_speculative_tokens
    elif method == "mtp" and spec.num_nextn_predict_layers > 0:
        # vllm/config/speculative.py: num_speculative_tokens defaults to the draft config's
        # n_predict, which the MTP configs set to num_nextn_predict_layers
        k = spec.num_nextn_predict_layers
        notes.append(f"num_speculative_tokens not given: {k} (the model's MTP layers, as vLLM)")
    else:
        raise _refuse(
            f"speculative method {said} needs num_speculative_tokens (vLLM: 'num_speculative_"
            "tokens' in --speculative-config, or --num-speculative-tokens)",
            "num_speculative_tokens",
        )
    base = spec.num_hidden_layers
    model: str | None = None
    layers: tuple[KvLayer, ...]
    if method == "ngram":
        if settings.speculative_model is not None:
            raise _refuse(
                f"speculative method {said} proposes from the prompt and takes no draft model "
                f"(got {settings.speculative_model!r}); drop the model or pick another method",
                "speculative_model",
                settings.speculative_model,
            )
        weights, formula, layers = 0, "n-gram lookup in the prompt: no draft weights", ()
    elif (
        method == "eagle"
        and settings.speculative_model is None
        and runtime == "sglang"
        and spec.num_nextn_predict_layers > 0
    ):
        # SGLang runs NEXTN as EAGLE; without --speculative-draft-model-path the draft is the
        # target's native MTP layer(s) (model_runner.py: eagle_draft_num_layers from
        # mtp_num_hidden_layers / num_nextn_predict_layers)
        weights, formula, layers = _mtp_terms(
            spec, target_weights_bytes, target_layers, tp, runtime
        )
        notes.append("EAGLE without a draft path: the target's own MTP layer(s) draft (NEXTN)")
    elif method == "mtp" and settings.speculative_model is None:
        weights, formula, layers = _mtp_terms(
            spec, target_weights_bytes, target_layers, tp, runtime
        )
    elif method == "mtp":
        # SGLang NEXTN with --speculative-draft-model-path (a NextN checkpoint of the target)
        # and vLLM MTP naming the target: the layers are the target's own
        weights, formula, layers = _mtp_terms(
            spec, target_weights_bytes, target_layers, tp, runtime
        )
        notes.append(
            f"MTP draft {settings.speculative_model!r} priced as {spec.name}'s own "
            f"{spec.num_nextn_predict_layers} MTP layer(s)"
        )
    else:
        if settings.speculative_model is None:
            raise _refuse(
                f"speculative method {said} needs its draft model (vLLM: 'model' in "
                "--speculative-config or --speculative-model; SGLang: "
                "--speculative-draft-model-path)",
                "speculative_model",
            )
        model, weights, formula, layers = _model_terms(
            settings, method, tp=tp, kv_elem=kv_elem, elem=elem, base=base
        )
    return DraftTerms(
        method=method,
        k=k,
        model=model,
        weights_bytes=weights,
        weights_formula=formula,
        layers=layers,
        kv_bytes_per_token=kv_bytes_per_token(layers),
        notes=tuple(notes),
    )


def rejection_sampler_bytes(rows: int, vocab: int) -> int:
    """The profile's rejection-sampler dummy logits: ``num_tokens + num_reqs`` rows (one dummy
    draft token per request) x vocab x fp32 (gpu_model_runner.py ``_dummy_sampler_run``)."""
    return 2 * rows * vocab * 4


def sglang_reserve_bytes(method: str | None) -> int:
    """The extra memory SGLang's default ``mem_fraction_static`` leaves outside the pool
    (server_args.py ``_handle_gpu_memory_settings``): STANDALONE 6 GiB, NGRAM none, the
    EAGLE family 2 GiB."""
    if method is None or method == "ngram":
        return 0
    return (6 if method == "draft_model" else 2) * 1024 * MiB


def sglang_cell_size(cell: int, target_layers: int, draft: DraftTerms | None) -> int:
    """The target's per-token cost with the draft pool budgeted in: ``int(cell x (1 +
    draft_layers / target_layers))`` (pool_configurator.py ``DefaultPoolConfigurator``)."""
    if draft is None or draft.n_layers == 0 or target_layers <= 0:
        return cell
    return int(cell * (1 + draft.n_layers / target_layers))
