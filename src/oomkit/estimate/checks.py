"""Cross-checks of one run (model x settings x hardware) before an estimator sees it.

Each rule is the runtime's own start-up check, so oomkit refuses what the runtime refuses:

* vLLM ``ModelConfig.verify_with_parallel_config``: "Total number of attention heads (N) must be
  divisible by tensor parallel size (T)"; ``QKVParallelLinear`` then ``divide()``s the KV heads
  by T (T <= KV heads) or T by the KV heads (replication, T > KV heads). SGLang shards the same
  way (``sglang/srt/layers/linear.py``).
* device count: T x P ranks need T x P GPUs; oomkit never invents GPUs the user did not name.
* vLLM ``_get_and_verify_max_len``: a ``max_model_len`` above the model's
  ``max_position_embeddings`` is an error unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``
  (rope-scaled models derive a longer limit, so those are only noted); SGLang's
  ``ModelConfig`` refuses a longer ``--context-length`` the same way unless
  ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1``.
* vLLM and SGLang have no Apple (Metal) backend, and vLLM's wheels no kernels below compute
  capability 7.0 (:mod:`oomkit.estimate.runtime_hardware`).
* vLLM releases that do not register the model's architecture refuse to start
  (:mod:`oomkit.estimate.vllm_support`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import NoReturn

from oomkit.errors import InvalidSettingError
from oomkit.estimate.llamacpp_placement import EXPERT_KINDS
from oomkit.estimate.runtime_hardware import (
    VLLM_MIN_COMPUTE_CAPABILITY as VLLM_MIN_COMPUTE_CAPABILITY,
)
from oomkit.estimate.runtime_hardware import check_runtime_hardware
from oomkit.estimate.runtime_hardware import (
    runtime_hardware_refusal as runtime_hardware_refusal,
)
from oomkit.estimate.runtime_hardware import vllm_kernel_caveat as vllm_kernel_caveat
from oomkit.spec.hardware import Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings
from oomkit.spec.settings_lora import LORA_FIELDS

__all__ = [
    "RUNTIME_SETTINGS",
    "check_run",
    "check_tp",
    "expert_rules_settings",
    "gpus_counted",
    "ignored_settings",
    "tp_refusal",
    "valid_tp_sizes",
    "vllm_len_cap",
    "vllm_max_model_len",
]

#: InferenceSettings fields each estimator reads (everything else is ignored by that runtime)
#: vLLM --speculative-config / SGLang --speculative-* (oomkit.estimate.speculative)
SPECULATIVE_FIELDS = (
    "speculative_method",
    "speculative_model",
    "num_speculative_tokens",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)

RUNTIME_SETTINGS: dict[str, frozenset[str]] = {
    "llama.cpp": frozenset(
        {
            "quant",
            "ctx",
            "parallel",
            "batch_size",
            "ubatch",
            "cache_type_k",
            "cache_type_v",
            "kv_unified",
            "swa_full",
            "flash_attn",
            "n_gpu_layers",
            "tensor_split",
            "split_mode",
            "n_cpu_moe",
            "mmap",
            "overhead_bytes",
            "override_tensor",
            "draft_model",
            "draft_quant",
            "draft_n_gpu_layers",
            "draft_ctx",
            "draft_cache_type_k",
            "draft_cache_type_v",
            "draft_devices",
            "device_ordinals",
            "llama_server",
            # --spec-type draft-mtp / --spec-draft-n-max (oomkit.estimate.llamacpp_mtp)
            "speculative_method",
            "num_speculative_tokens",
        }
    ),
    "ollama": frozenset(
        {
            "quant",
            "ctx",
            "parallel",
            "batch_size",
            "ubatch",
            "flash_attn",
            "kv_unified",
            "overhead_bytes",
            # OLLAMA_KV_CACHE_TYPE (one type for K and V), num_gpu, use_mmap
            "cache_type_k",
            "cache_type_v",
            "n_gpu_layers",
            "mmap",
        }
    ),
    "vllm": frozenset(
        {
            "quant",
            "ctx",
            "cache_type_k",
            "cache_type_v",
            "tp",
            "pp",
            "gpu_memory_utilization",
            "max_num_seqs",
            "max_num_batched_tokens",
            "enforce_eager",
            "prompt_logprobs",
            "llm_class",
            "pooling",
            "cpu_offload_bytes",
            "block_size",
            "overhead_bytes",
            # --enable-lora and its slots (oomkit.estimate.vllm_lora); max_cpu_loras is the
            # host-side adapter cache: validated against max_loras, no GPU bytes
            *LORA_FIELDS,
            *SPECULATIVE_FIELDS,  # oomkit.estimate.speculative
            "speculative_extra",  # carried into the command (oomkit.estimate.speculative_keys)
        }
    ),
    "sglang": frozenset(
        {
            "quant",
            "ctx",
            "cache_type_k",
            "cache_type_v",
            "tp",
            "pp",
            "mem_fraction_static",
            "max_num_seqs",
            "enforce_eager",  # --disable-cuda-graph: no CUDA-graph attention tables
            "disable_hybrid_swa_memory",  # one uniform token pool (sglang_swa)
            "overhead_bytes",
            *SPECULATIVE_FIELDS,  # oomkit.estimate.speculative
        }
    ),
    "transformers": frozenset(
        {
            "quant",
            "ctx",
            "parallel",
            "max_new_tokens",
            "attn_implementation",
            "cache_implementation",
            "device_map",
            "max_memory_bytes",
            "offload_folder",
            "overhead_bytes",
        }
    ),
}


def ignored_settings(settings: InferenceSettings, runtime: str) -> tuple[str, ...]:
    """Fields set (not None) that ``runtime``'s estimator does not read, in declaration order."""
    used = RUNTIME_SETTINGS.get(runtime)
    if used is None:
        return ()
    out = []
    for f in dataclasses.fields(settings):
        if f.name in ("runtime", "runtime_version") or f.name in used:
            # runtime_version picks the generation of every runtime listed here
            # (oomkit.estimate.generations), so no runtime ignores it
            continue
        if getattr(settings, f.name) is not None:
            out.append(f.name)
    return tuple(out)


#: vLLM ``DEFAULT_VOCAB_PADDING_SIZE``: ``VocabParallelEmbedding``/``ParallelLMHead`` pad the
#: vocabulary to a multiple of it, then ``divide()`` the padded size by the TP size
#: (vllm/model_executor/layers/vocab_parallel_embedding.py ``pad_vocab_size``,
#: ``vocab_range_from_global_vocab_size``); SGLang's copy of the layer pads the same way
_VOCAB_PAD = 64


def tp_refusal(spec: ModelSpec, tp: int) -> str | None:
    """Why vLLM/SGLang would refuse tensor-parallel size ``tp`` for ``spec`` (None: accepted).

    The one rule behind every TP check (``check_tp``, ``check_run``, the planner's search and
    the "valid sizes" list), each clause a start-up check of vLLM's:

    * attention heads: ``ModelConfig.verify_with_parallel_config`` (vllm/config/model.py)
      raises "Total number of attention heads (N) must be divisible by tensor parallel size";
    * KV heads: ``QKVParallelLinear.__init__`` (vllm/model_executor/layers/linear.py)
      ``divide(total_num_kv_heads, tp)`` when tp < KV heads, else replicates them with
      ``divide(tp, total_num_kv_heads)`` (``divide`` asserts exact division);
    * MLP: ``MergedColumnParallelLinear``/``RowParallelLinear`` ``divide()`` the dense
      ``intermediate_size`` by tp;
    * vocabulary: the embedding and LM head ``divide()`` the vocabulary padded to 64 by tp.

    MLA (one latent KV head) and per-layer KV head counts skip the KV clause; MoE models skip
    the dense-MLP clause (their experts are split by ``FusedMoE``, not ``divide()``).
    """
    heads = spec.num_attention_heads
    if tp == 1 or heads == 0:
        return None
    if heads % tp:
        return f"the attention heads ({heads}) must be divisible by the tensor-parallel size"
    kv = spec.num_key_value_heads
    uniform_kv = spec.mla is None and spec.kv_heads_per_layer is None and kv
    if uniform_kv and (kv % tp if tp <= kv else tp % kv):
        return (
            f"the {kv} KV heads are split across ranks (tp divides {kv}) or replicated "
            f"(tp a multiple of {kv})"
        )
    if spec.moe is None and spec.intermediate_size and spec.intermediate_size % tp:
        return f"the MLP's intermediate size ({spec.intermediate_size}) must divide by tp"
    padded = -(-spec.vocab_size // _VOCAB_PAD) * _VOCAB_PAD
    if padded and padded % tp:
        return f"the vocabulary padded to {padded} rows must divide by tp"
    return None


def valid_tp_sizes(spec: ModelSpec, limit: int = 64) -> list[int]:
    """Every tensor-parallel size up to ``limit`` that :func:`tp_refusal` accepts."""
    top = min(spec.num_attention_heads or 1, limit)
    return [t for t in range(1, top + 1) if tp_refusal(spec, t) is None]


def _tp_divides(
    spec: ModelSpec, tp: int, runtime: str, gpus: int = 0, pp: int = 1, *, implied: bool = False
) -> None:
    """``tp`` as :func:`tp_refusal` checks it; the sizes listed stop at ``gpus // pp`` when the
    GPUs were counted (``--gpu 4xNAME``: one GPU per rank, tp x pp ranks, so a larger size
    cannot run there; 0: no count named, as ``--vram`` with the count taken from ``--tp``).
    ``implied``: no ``--tp`` was typed and ``tp`` is the GPU count oomkit assumed, so the
    message names the GPUs, not a flag the user never gave (review22)."""
    why = tp_refusal(spec, tp)
    if why is not None:
        sizes = valid_tp_sizes(spec, max(1, gpus // pp)) if gpus else valid_tp_sizes(spec)
        where = f" on the {gpus} GPU{'s' * (gpus > 1)} given" if gpus else ""
        where += f" with --pp {pp}" if gpus and pp > 1 else ""
        said = (
            f"{tp} GPUs given: tensor parallel {tp} across them (no --tp given), which "
            f"{runtime} refuses"
            if implied
            else f"--tp {tp}: {runtime} refuses it"
        )
        raise InvalidSettingError(
            f"{said} ({why}); valid sizes{where}: " + ", ".join(map(str, sizes)),
            setting="tp",
            value=tp,
        )


#: rope types whose ``max_position_embeddings`` already is the scaled length: vLLM's
#: ``_get_and_verify_max_len`` skips the factor for them (``rope_type not in ("su",
#: "longrope", "llama3")``)
_ROPE_UNSCALED_LEN = frozenset({"su", "longrope", "llama3"})


def vllm_max_model_len(spec: ModelSpec) -> int | None:
    """The longest ``--max-model-len`` vLLM accepts for ``spec`` without
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``, or None when oomkit cannot tell.

    vLLM ``_get_and_verify_max_len`` (vllm/config.py): the config's ``max_position_embeddings``;
    with a ``rope_scaling`` other than su/longrope/llama3 (and not Gemma 3, whose 128K is
    already scaled) that times ``rope_scaling.get("factor", 1.0)``, YaRN starting from
    ``original_max_position_embeddings`` instead. None: no ``max_position_embeddings``, or a
    scaled type whose factor (YaRN: original length) the spec does not hold (a GGUF file).
    """
    limit = spec.max_position_embeddings
    kind = spec.rope_scaling_type
    if not limit:
        return None
    if kind is None or kind in _ROPE_UNSCALED_LEN or "gemma3" in spec.model_type:
        return limit
    factor = spec.rope_scaling_factor
    if factor is None:
        # M-RoPE carries no factor (1.0); linear/dynamic/YaRN always do, so none here means
        # a source that dropped it
        return limit if kind == "mrope" else None
    if kind in ("yarn", "deepseek_yarn"):
        if spec.rope_original_max_position_embeddings is None:
            return None
        limit = spec.rope_original_max_position_embeddings
    return int(limit * factor)


#: the longest max_model_len the vLLM estimator searches when the model's own is unknown
_SEARCH_LEN = 1 << 22


def vllm_len_cap(spec: ModelSpec, max_len: int) -> tuple[int, str | None]:
    """(the longest ``max_model_len`` worth reporting as "fits", the note that says so when
    the KV pool would hold more): vLLM's own limit (:func:`vllm_max_model_len`), or the
    asked ``max_len`` when that is longer (``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` or a rope-scaled
    model's note in :func:`check_run`); with that variable set, no model limit."""
    longest = vllm_max_model_len(spec)
    allow = os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").lower() in ("1", "true")
    if longest is None or allow or max_len > longest:
        return max(max_len, _SEARCH_LEN if longest is None or allow else longest), None
    return longest, (
        f"largest max_model_len that fits capped at {longest}, the model's maximum (vLLM "
        "refuses a longer --max-model-len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1); the KV "
        "pool holds more"
    )


def _too_few_gpus(spec: ModelSpec, tp: int, pp: int, n_gpus: int, runtime: str) -> NoReturn:
    """Refuse ``tp x pp`` ranks on ``n_gpus`` GPUs: the count first (what the user fixes
    first), and when the size is refused at any count too, that in the same line."""
    ranks = f"--tp {tp} x --pp {pp}" if pp > 1 else f"--tp {tp}"
    # the lever that exceeds: --pp alone when --tp is 1, the product when both are set
    lever = "--tp" if pp == 1 else "--pp" if tp == 1 else "--tp x --pp"
    msg = (
        f"{ranks} needs {tp * pp} GPUs but the target has {n_gpus}; name them all "
        f"(e.g. --gpu {tp * pp}x<name>) or lower {lever}"
    )
    why = tp_refusal(spec, tp)
    if why is not None:
        sizes = ", ".join(map(str, valid_tp_sizes(spec, max(1, n_gpus // pp))))
        where = f"the {n_gpus} GPU{'s' * (n_gpus > 1)} given" + (
            f" with --pp {pp}" if pp > 1 else ""
        )
        msg += f"; {runtime} refuses --tp {tp} anyway ({why}): valid sizes on {where}: {sizes}"
    raise InvalidSettingError(msg, setting="tp", value=tp)


def check_ranks(spec: ModelSpec, tp: int, pp: int, n_gpus: int, runtime: str) -> None:
    """A pinned ``--tp x --pp`` against the GPUs named, as :func:`check_run` checks it for the
    estimate (vLLM's world size is ``tp x pp``, ``ParallelConfig.world_size``; one GPU per
    rank, never invented): the one check estimate and plan share.

    Raises:
        InvalidSettingError: the target has fewer GPUs than ``tp x pp``.
    """
    if n_gpus and tp * pp > n_gpus:
        _too_few_gpus(spec, tp, pp, n_gpus, runtime)


def gpus_counted(hardware: Hardware) -> bool:
    """Whether the GPUs' count was named (``--gpu 3xNAME``, ``--gpu auto``) rather than made
    from ``--tp`` (``--vram SIZE --tp N``: N bare devices, no catalog key, no measured compute
    capability): only a named count caps the ``--tp`` sizes a refusal lists."""
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    return any(d.key is not None or d.compute_capability is not None for d in gpus)


def check_tp(spec: ModelSpec, tp: int, n_gpus: int, runtime: str, *, counted: bool = False) -> None:
    """An explicit ``--tp`` as vLLM/SGLang check it at start-up (heads divisible by it) and
    the ranks it needs (one GPU each; oomkit never invents GPUs the user did not name).

    Raises:
        InvalidSettingError: the runtime would refuse it, or the target has too few GPUs.
    """
    # the GPU count first: on one GPU "--tp 3" is refused for the two GPUs missing, not for
    # the heads (what the user fixes first; the divisibility is checked on the GPUs named)
    if n_gpus and tp > n_gpus:
        _too_few_gpus(spec, tp, 1, n_gpus, runtime)
    # (the count caps the sizes listed unless --tp made it: --vram names one GPU per rank;
    # ``counted``: the GPUs were named, :func:`gpus_counted`, so --gpu 3xNAME --tp 3 lists 1, 2)
    _tp_divides(spec, tp, runtime, n_gpus if counted or n_gpus != tp else 0)


def _override_to_n_cpu_moe(
    spec: ModelSpec, settings: InferenceSettings
) -> tuple[InferenceSettings, str]:
    """``-ot PATTERN=CPU`` rules -> ``n_cpu_moe`` (what the placement model supports).

    llama.cpp (common/arg.cpp ``--override-tensor``) regex-searches each tensor name; its own
    ``--n-cpu-moe N`` is the rule ``blk\\.(0..N-1)\\.ffn_(up|down|gate)_exps=CPU``. oomkit models a
    rule set that moves the expert tensors of layers 0..N-1 (or of all layers) to the CPU.
    """
    rules = settings.override_tensor or ()
    n = spec.num_hidden_layers
    moved: set[int] = set()
    kinds_of: dict[int, frozenset[str]] = {}
    for rule in rules:
        pattern, _, buffer = rule.rpartition("=")
        if buffer.strip().upper() != "CPU":
            raise InvalidSettingError(
                f"--override-tensor '{rule}': only PATTERN=CPU rules are modelled "
                "(per-GPU buffers are not)",
                setting="override_tensor",
                value=rule,
            )
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise InvalidSettingError(
                f"--override-tensor '{rule}': bad regular expression ({e})",
                setting="override_tensor",
                value=rule,
            ) from e
        for other in ("token_embd.weight", "output.weight", "blk.0.attn_q.weight",
                      "blk.0.ffn_up.weight", "blk.0.attn_norm.weight"):  # fmt: skip
            if rx.search(other):
                raise InvalidSettingError(
                    f"--override-tensor '{rule}' also matches '{other}'; only rules that move "
                    "expert tensors (…_exps) to the CPU are modelled",
                    setting="override_tensor",
                    value=rule,
                )
        for i in range(n):
            hit = frozenset(k for k in EXPERT_KINDS if rx.search(f"blk.{i}.ffn_{k}_exps.weight"))
            if hit:
                moved.add(i)
                kinds_of[i] = kinds_of.get(i, frozenset()) | hit
    if spec.moe is None:
        return settings, f"--override-tensor: '{spec.name}' has no expert tensors; no effect"
    count = len(moved)
    if moved and moved != set(range(count)):
        raise InvalidSettingError(
            "--override-tensor moves the experts of layers "
            f"{sorted(moved)[:8]}…; only the first N layers (as --n-cpu-moe N) are modelled",
            setting="override_tensor",
            value=rules,
        )
    kinds = frozenset(EXPERT_KINDS) if not moved else kinds_of[0]
    if any(kinds_of[i] != kinds for i in moved):
        raise InvalidSettingError(
            "--override-tensor moves different expert tensors in different layers; only one "
            "set of ffn_{up,down,gate}_exps per layer is modelled",
            setting="override_tensor",
            value=rules,
        )
    if kinds != frozenset(EXPERT_KINDS):
        # e.g. ".ffn_(up|down)_exps=CPU": the gate experts stay on the GPU with their layer.
        # The rules stay in the settings: the placement reads which kinds they move
        if (settings.n_cpu_moe or 0) > count:
            raise InvalidSettingError(
                "--override-tensor moving some expert tensors with a larger --n-cpu-moe is "
                "not modelled",
                setting="override_tensor",
                value=rules,
            )
        names = ", ".join(f"ffn_{k}_exps" for k in EXPERT_KINDS if k in kinds)
        kept = ", ".join(f"ffn_{k}_exps" for k in EXPERT_KINDS if k not in kinds)
        settings = dataclasses.replace(settings, n_cpu_moe=count)
        return settings, (
            f"--override-tensor: {names} of the first {count} layers on the CPU; {kept} stay "
            "with their layer's device"
        )
    n_cpu_moe = max(count, settings.n_cpu_moe or 0)
    settings = dataclasses.replace(settings, n_cpu_moe=n_cpu_moe, override_tensor=None)
    return settings, f"--override-tensor: expert tensors of the first {count} layers on the CPU"


def expert_rules_settings(spec: ModelSpec, settings: InferenceSettings) -> InferenceSettings:
    """``settings`` with their ``-ot PATTERN=CPU`` rules as the estimate reads them (what a
    printed command must then start): rules that move whole layers' experts become
    ``n_cpu_moe`` (``override_tensor`` None); rules that move only some expert tensors stay,
    with ``n_cpu_moe`` the layers they reach. Unchanged without rules.

    Raises:
        InvalidSettingError: rules the placement model does not cover (as :func:`check_run`).
    """
    if not settings.override_tensor:
        return settings
    return _override_to_n_cpu_moe(spec, settings)[0]


def check_run(
    spec: ModelSpec, settings: InferenceSettings, hardware: Hardware, runtime: str
) -> tuple[InferenceSettings, tuple[str, ...]]:
    """Apply the runtime's start-up checks; return settings with defaults made explicit + notes.

    Raises:
        InvalidSettingError: the runtime would refuse this configuration (one line, the rule).
    """
    if settings.runtime_version is not None:
        # a flag newer than the --runtime-version asked; the table (and its ``datetime``) is
        # loaded only when a version is given, off the default command's start-up path
        from oomkit.estimate.flag_eras import check_flag_eras

        check_flag_eras(settings, runtime)
        # a llama.cpp build older than the model's architecture fails to load it
        from oomkit.estimate.llamacpp_support import check_llamacpp_support

        check_llamacpp_support(spec, runtime, settings.runtime_version)
    notes: list[str] = []
    if runtime == "llama.cpp" and settings.override_tensor:
        settings, note = _override_to_n_cpu_moe(spec, settings)
        return settings, (note,)
    if runtime not in ("vllm", "sglang"):
        return settings, ()
    name = "vLLM" if runtime == "vllm" else "SGLang"
    n_gpus, hardware_notes = check_runtime_hardware(hardware, runtime)
    notes.extend(hardware_notes)
    if runtime == "vllm":
        # a release that does not register the architecture fails before sizing memory
        from oomkit.estimate.vllm_support import vllm_model_version

        version, why = vllm_model_version(spec, settings.runtime_version)
        if version != settings.runtime_version:
            settings = dataclasses.replace(settings, runtime_version=version)
        notes.extend(why)
    tp, pp = settings.tp, settings.pp or 1
    if tp is None and n_gpus > 1 and pp == 1:
        # `vllm serve` defaults to --tensor-parallel-size 1 (one GPU); naming several GPUs
        # says the user means to use them, so oomkit shards across all of them and says so
        _tp_divides(spec, n_gpus, runtime, n_gpus, implied=True)
        tp = n_gpus
        settings = dataclasses.replace(settings, tp=tp)
        notes.append(
            f"{n_gpus} GPUs named and no --tp: assumed --tp {n_gpus} ({name}'s own default is "
            "--tensor-parallel-size 1, one GPU)"
        )
    # the GPUs' count caps the sizes listed, unless --tp made it (--vram: one GPU per rank)
    named = gpus_counted(hardware) or settings.tp is None or n_gpus != settings.tp * pp
    counted = n_gpus if named else 0
    tp = tp or 1
    check_ranks(spec, tp, pp, n_gpus, runtime)  # before the divisibility (check_tp)
    _tp_divides(spec, tp, runtime, counted, pp)
    limit = spec.max_position_embeddings
    if settings.ctx is not None and limit and settings.ctx > limit:
        # vLLM _get_and_verify_max_len; SGLang ModelConfig: "User-specified context_length (X)
        # is greater than the derived context_length (Y)" unless the override variable is set
        env = (
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
            if runtime == "vllm"
            else "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
        )
        allow = os.environ.get(env, "").lower() in ("1", "true")
        # vLLM's own limit where the spec holds the rope_scaling factor (vllm_max_model_len);
        # SGLang's derived context_length (get_context_length: x the factor unless llama3/YaRN)
        longest = vllm_max_model_len(spec) if runtime == "vllm" else None
        if runtime == "sglang":
            from oomkit.estimate.sglang import sglang_context_len

            longest = sglang_context_len(spec)
        what = f"max_position_embeddings ({limit})"
        if longest is not None and longest > limit:
            what = f"maximum ({longest}: max_position_embeddings x the rope_scaling factor)"
        if longest is not None and settings.ctx <= longest:
            notes.append(
                f"--ctx {settings.ctx} is above max_position_embeddings {limit}; {name} "
                f"multiplies that by the {spec.rope_scaling_type} rope_scaling factor "
                f"(up to {longest})"
            )
        elif longest is None and spec.rope_scaling_type in ("yarn", "linear", "dynamic"):
            notes.append(
                f"--ctx {settings.ctx} is above max_position_embeddings {limit}; {name} "
                f"multiplies that by the {spec.rope_scaling_type} rope_scaling factor"
            )
        elif allow:
            notes.append(
                f"--ctx {settings.ctx} above the model's {what} ({env} is set: {name} only warns)"
            )
        else:
            raise InvalidSettingError(
                f"--ctx {settings.ctx} is greater than the model's {what}; {name} refuses "
                f"this unless {env}=1",
                setting="ctx",
                value=settings.ctx,
            )
    return settings, tuple(notes)
