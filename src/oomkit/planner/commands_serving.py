"""``vllm serve`` and SGLang's ``launch_server`` lines for a planned configuration, and the
Hugging Face reference they (and the transformers snippet) load.

The lines are checked against ``FLAG_TABLES["vllm"]`` and ``FLAG_TABLES["sglang"]``
(:mod:`oomkit.planner.flag_tables`).
"""

from __future__ import annotations

import json
import re
import shlex

from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["hf_ref", "sglang_command", "speculative_flags", "vllm_command"]

#: vLLM's --kv-cache-dtype / SGLang's spelling of an 8-bit float KV cache
_SGLANG_FP8_KV = "fp8_e5m2"


def vllm_command(settings: InferenceSettings, spec: ModelSpec, model_ref: str) -> str:
    """The ``vllm serve`` line that runs ``settings``."""
    parts = ["vllm", "serve", _serving_ref(model_ref, spec, settings.quant)]
    parts += ["--max-model-len", str(settings.ctx)]
    util = settings.gpu_memory_utilization or 0.9
    parts += ["--gpu-memory-utilization", f"{util:g}"]
    if settings.tp and settings.tp > 1:
        parts += ["--tensor-parallel-size", str(settings.tp)]
    if settings.pp and settings.pp > 1:  # (the memory modelled is per stage)
        parts += ["--pipeline-parallel-size", str(settings.pp)]
    if settings.cpu_offload_bytes:  # GiB despite its name (cpu_offload_gb * 1024**3)
        parts += ["--cpu-offload-gb", f"{settings.cpu_offload_bytes / (1 << 30):g}"]
    if settings.enforce_eager:
        parts += ["--enforce-eager"]
    if settings.pooling:  # the estimate priced the pooler's profile run, not the sampler's
        parts += ["--runner", "pooling"]
    if settings.cache_type_k and settings.cache_type_k != "auto":
        parts += ["--kv-cache-dtype", settings.cache_type_k]
    if settings.quant in ("fp8", "awq", "gptq"):
        parts += ["--quantization", settings.quant]
    if settings.max_num_seqs or settings.parallel:
        parts += ["--max-num-seqs", str(settings.max_num_seqs or settings.parallel)]
    if settings.max_num_batched_tokens:  # pinned by plan --max-num-batched-tokens
        parts += ["--max-num-batched-tokens", str(settings.max_num_batched_tokens)]
    if settings.enable_lora:
        parts += _vllm_lora_flags(settings)
    parts += speculative_flags(settings, "vllm")
    return " ".join(parts)


def sglang_command(settings: InferenceSettings, spec: ModelSpec, model_ref: str) -> str:
    """The ``python -m sglang.launch_server`` line that runs ``settings``."""
    parts = ["python", "-m", "sglang.launch_server"]
    parts += ["--model-path", _serving_ref(model_ref, spec, settings.quant)]
    parts += ["--context-length", str(settings.ctx)]
    if settings.tp and settings.tp > 1:
        parts += ["--tp", str(settings.tp)]
    # pinned by plan (--pp-size, --mem-fraction-static, --enforce-eager): SGLang server_args.py
    # "--pipeline-parallel-size"/"--pp-size", "--mem-fraction-static", "--disable-cuda-graph"
    if settings.pp and settings.pp > 1:
        parts += ["--pp-size", str(settings.pp)]
    if settings.mem_fraction_static is not None:
        parts += ["--mem-fraction-static", f"{settings.mem_fraction_static:g}"]
    if settings.enforce_eager:
        parts += ["--disable-cuda-graph"]
    if settings.disable_hybrid_swa_memory:  # server_args.py: a store_true flag
        parts += ["--disable-hybrid-swa-memory"]
    if settings.cache_type_k and settings.cache_type_k != "auto":
        parts += ["--kv-cache-dtype", _SGLANG_FP8_KV]
    if settings.quant in ("fp8", "awq", "gptq"):
        parts += ["--quantization", settings.quant]
    if settings.max_num_seqs or settings.parallel:
        seqs = settings.max_num_seqs or settings.parallel
        parts += ["--max-running-requests", str(seqs)]
    parts += speculative_flags(settings, "sglang")
    return " ".join(parts)


def speculative_flags(settings: InferenceSettings, runtime: str) -> list[str]:
    """The pinned speculative decoding in the runtime's spelling: vLLM's
    ``--speculative-config`` JSON, SGLang's ``--speculative-*`` flags (none without it)."""
    method = settings.speculative_method
    if method is None:
        return []
    draft = settings.speculative_model
    if draft is not None:  # a catalog name becomes its Hugging Face repo, as the target
        draft = _draft_ref(draft)
    if runtime == "vllm":
        config: dict[str, object] = {"method": method}
        if draft is not None:
            config["model"] = draft
        if settings.num_speculative_tokens is not None:
            config["num_speculative_tokens"] = settings.num_speculative_tokens
        if settings.speculative_extra:  # the user's other keys, as given (speculative_keys)
            config.update(json.loads(settings.speculative_extra))
        return ["--speculative-config", shlex.quote(json.dumps(config, separators=(",", ":")))]
    from oomkit.estimate.speculative import spoken_method

    parts = ["--speculative-algorithm", spoken_method(method, "sglang")]
    for flag, value in (
        ("--speculative-draft-model-path", draft),
        ("--speculative-num-steps", settings.num_speculative_tokens),
        ("--speculative-eagle-topk", settings.speculative_eagle_topk),
        ("--speculative-num-draft-tokens", settings.speculative_num_draft_tokens),
    ):
        if value is not None:
            parts += [flag, shlex.quote(str(value))]
    return parts


def _draft_ref(name: str) -> str:
    """The draft model's reference as :func:`hf_ref` gives the target's: a path or repo id as
    given, a catalog name's repo, else the name."""
    if "/" in name or name.startswith((".", "~")):
        return name
    try:
        from oomkit.catalog.models import find_model

        repo = find_model(name).hf_repo
    except Exception:  # not in the catalog: the name as given
        repo = None
    return repo or name


def hf_ref(model_ref: str, spec: ModelSpec) -> str:
    """The Hugging Face repo (or path) a command loads: a path or ``org/repo`` as given, a
    catalog name's repo, else the spec's name."""
    if "/" in model_ref or model_ref.startswith((".", "~")):
        return model_ref
    try:
        from oomkit.catalog.models import find_model

        repo = find_model(model_ref).hf_repo
    except Exception:  # not in the catalog: the name the user gave is the best reference
        repo = None
    return repo or spec.name


def _serving_ref(model_ref: str, spec: ModelSpec, quant: str | None) -> str:
    """The checkpoint a vLLM/SGLang command serves, shell-quoted. AWQ and GPTQ are weights
    quantized offline: ``--quantization awq`` on the 16-bit repo fails at load (vLLM
    ``model_loader/weight_utils.py`` ``get_quant_config``: "Cannot find the config file for
    awq" when the repo has no ``quantization_config`` nor quant config file), so a plan that
    switches to one names a
    placeholder for such a checkpoint, as Ollama's ``"${OLLAMA_TAG:?...}"`` does, instead of a
    command that cannot run: ``"${AWQ_CHECKPOINT:?set AWQ_CHECKPOINT to an AWQ checkpoint of
    REPO}"``, one shell word that runs once the variable names the checkpoint and otherwise
    stops with that sentence (review 22: a bare ``<AWQ-checkpoint-of-REPO>`` is an input
    redirection to bash, "No such file or directory"). fp8 quantizes a 16-bit checkpoint at
    load and keeps the repo."""
    repo = hf_ref(model_ref, spec)
    method = quant.lower() if quant else None
    shipped = spec.quantization.method.lower() if spec.quantization is not None else None
    if method in ("awq", "gptq") and shipped != method:
        var = f"{method.upper()}_CHECKPOINT"
        article = "an" if method == "awq" else "a"
        # only the message: characters the shell would expand or end the word on become "_"
        named = re.sub(r"[^A-Za-z0-9._/~+-]", "_", repo)
        # one shell word (parse_command), as commands_ollama's OLLAMA_TAG placeholder
        return f'"${{{var}:?set {var} to {article} {method.upper()} checkpoint of {named}}}"'
    return shlex.quote(repo)


def _vllm_lora_flags(settings: InferenceSettings) -> list[str]:
    """``vllm serve``'s LoRA flags for the slots the estimate sized (oomkit.estimate.vllm_lora);
    ``cudagraph_specialize_lora`` is a compilation-config key, not a flag of its own."""
    parts = ["--enable-lora"]
    for flag, value in (
        ("--max-loras", settings.max_loras),
        ("--max-lora-rank", settings.max_lora_rank),
        ("--max-cpu-loras", settings.max_cpu_loras),
        ("--lora-dtype", settings.lora_dtype),
    ):
        if value is not None:
            parts += [flag, str(value)]
    if settings.fully_sharded_loras:
        parts += ["--fully-sharded-loras"]
    if settings.cudagraph_specialize_lora is not None:
        on = "true" if settings.cudagraph_specialize_lora else "false"
        parts += ["--compilation-config", shlex.quote(f'{{"cudagraph_specialize_lora": {on}}}')]
    return parts
