"""llama-server's command line for a planned configuration: the ``.gguf`` it loads, flash
attention and MoE experts on the CPU as the build reads them, and the draft model's flags.

The lines are checked against ``FLAG_TABLES["llama.cpp"]`` (:mod:`oomkit.planner.flag_tables`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from oomkit.planner.prepare import prepare_checkpoint
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = [
    "ALL_LAYERS",
    "command_ngl",
    "gguf_name",
    "llamacpp_command",
    "llamacpp_cpu_moe_flags",
    "llamacpp_fa_flags",
    "n_cpu_moe_spelled",
]

#: the ``-ngl`` a command writes for "every layer": llama.cpp clamps it to the model's layers + 1
#: (``llama_model::load_tensors``: ``i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0)``)
ALL_LAYERS = 99


def command_ngl(settings: InferenceSettings) -> int:
    """The ``-ngl`` value :func:`llamacpp_command` writes (``ALL_LAYERS`` when unset)."""
    ngl = settings.n_gpu_layers
    return ALL_LAYERS if ngl is None else ngl


def llamacpp_command(
    settings: InferenceSettings, spec: ModelSpec, model_ref: str, device_kind: str = "cuda"
) -> str:
    """The ``llama-server`` line that runs ``settings`` (``device_kind`` names ggml's devices),
    spelled as the build of ``settings.runtime_version`` takes it
    (:mod:`oomkit.estimate.flag_eras`)."""
    q = shlex.quote
    from oomkit.estimate.flag_eras import llamacpp_server_binary

    binary = llamacpp_server_binary(settings.runtime_version)  # `server` before PR #7809
    parts = [binary, "-m", q(gguf_name(model_ref, spec, settings.quant or "Q4_K_M"))]
    parts += ["-c", str(settings.ctx)]
    parts += ["-ngl", str(command_ngl(settings))]
    parts += llamacpp_fa_flags(settings)
    if settings.split_mode is not None:  # pinned by plan -sm / -ts (common/arg.cpp)
        parts += ["-sm", settings.split_mode]
    if settings.tensor_split:
        parts += ["-ts", ",".join(f"{x:g}" for x in settings.tensor_split)]
    if settings.cache_type_k:
        parts += ["-ctk", settings.cache_type_k, "-ctv", settings.cache_type_v or "f16"]
    if settings.n_cpu_moe:
        parts += llamacpp_cpu_moe_flags(
            settings.n_cpu_moe, settings.runtime_version, settings.override_tensor
        )
    if settings.parallel:
        parts += ["-np", str(settings.parallel)]
        if settings.kv_unified and settings.parallel > 1:
            parts += ["-kvu"]  # the slots share the -c cells (the plan counted it so)
    if settings.draft_model:  # llama-server speculative decoding (estimate.llamacpp_draft)
        parts += _draft_flags(settings, device_kind)
    if settings.speculative_method == "mtp":  # the model's own MTP head (estimate.llamacpp_mtp)
        parts += ["--spec-type", "draft-mtp"]
        if settings.num_speculative_tokens is not None:
            parts += ["--spec-draft-n-max", str(settings.num_speculative_tokens)]
    return " ".join(parts)


def gguf_name(model_ref: str, spec: ModelSpec, quant: str) -> str:
    """The ``.gguf`` file a llama.cpp-family command loads: the file given, the one
    :func:`oomkit.planner.commands.prepare_lines` writes from a checkpoint directory, or
    ``NAME-QUANT.gguf`` for a catalog name."""
    if model_ref.lower().endswith(".gguf"):
        return model_ref
    prep = prepare_checkpoint("llama.cpp", model_ref, spec.source, quant, spec.torch_dtype)
    if prep is not None:  # a checkpoint directory: the file prepare_lines() writes
        return prep.target
    base = spec.name.rsplit("/", 1)[-1]
    return f"{base}-{quant}.gguf"


#: oomkit's device kind -> the prefix of ggml's device names that ``--device-draft`` takes
_GGML_DEVICE_PREFIX = {
    "cuda": "CUDA",
    "rocm": "ROCm",
    "vulkan": "Vulkan",
    "mps": "MTL",
    "metal": "MTL",
}


def _draft_flags(settings: InferenceSettings, device_kind: str = "cuda") -> list[str]:
    """llama-server's draft-model flags: ``-md`` (a catalog name becomes ``NAME-QUANT.gguf``
    as the main model's does), ``-ngld`` (only when given: unset, llama.cpp's own default for
    the build applies, which is what the estimate modelled), ``-cd``, ``-ctkd``/``-ctvd``,
    ``-devd`` (ggml's device names: ``CUDA1``, ``ROCm1``, ``Vulkan1``, ``MTL0``)."""
    ref = str(settings.draft_model)
    name = (
        ref if ref.lower().endswith(".gguf") else f"{ref}-{settings.draft_quant or 'Q4_K_M'}.gguf"
    )
    parts = ["-md", shlex.quote(name)]
    ngl = settings.draft_n_gpu_layers
    if ngl is not None:
        parts += ["-ngld", str(99 if ngl < 0 else ngl)]
    if settings.draft_ctx:
        parts += ["-cd", str(settings.draft_ctx)]
    if settings.draft_cache_type_k:
        parts += ["-ctkd", settings.draft_cache_type_k]
    if settings.draft_cache_type_v:
        parts += ["-ctvd", settings.draft_cache_type_v]
    if settings.draft_devices:
        prefix = _GGML_DEVICE_PREFIX.get(device_kind, device_kind.upper())
        # -devd names backend devices: GPU i of the target is backend index device_ordinals[i]
        order = settings.device_ordinals or ()
        names = (f"{prefix}{order[i] if i < len(order) else i}" for i in settings.draft_devices)
        parts += ["-devd", ",".join(names)]
    return parts


def llamacpp_fa_flags(settings: InferenceSettings) -> list[str]:
    """``-fa`` as the build of ``settings.runtime_version`` reads it, for the flash attention
    the estimate used.

    Builds since PR #15434 (2025-08-30: "the type of flash attention is changed from bool to
    string"; :mod:`oomkit.estimate.flag_eras`' ``fa_valued`` row, the table the refusals use)
    take ``-fa on|off|auto`` and default to auto (oomkit: on); older builds take a bare ``-fa``
    and run without flash attention unless it is given.

    >>> from oomkit.spec.settings import InferenceSettings as S
    >>> [llamacpp_fa_flags(S(runtime_version=v, flash_attn=True)) for v in ("b5000", None)]
    [['-fa'], ['-fa', 'on']]
    """
    from oomkit.estimate.flag_eras import flag_available

    valued = flag_available("llama.cpp", "fa_valued", settings.runtime_version)
    fa = valued if settings.flash_attn is None else settings.flash_attn
    if valued:
        return ["-fa", "on" if fa else "off"]
    return ["-fa"] if fa else []


def n_cpu_moe_spelled(runtime_version: str | None) -> bool:
    """Whether the build takes ``--n-cpu-moe`` (ggml-org/llama.cpp PR #15077, first in b6089:
    :mod:`oomkit.estimate.flag_eras`, a build compared as a build number, a date as a date).

    >>> [n_cpu_moe_spelled(v) for v in (None, "b6088", "b6089", "2025-08-03")]
    [True, False, True, False]
    """
    from oomkit.estimate.flag_eras import flag_available

    return flag_available("llama.cpp", "n_cpu_moe", runtime_version)


def llamacpp_cpu_moe_flags(
    n_cpu_moe: int, runtime_version: str | None, override_tensor: Sequence[str] | None = None
) -> list[str]:
    r"""The experts of the first ``n_cpu_moe`` layers on the CPU, as the build takes it.

    ``override_tensor`` rules that move only some expert tensors of each layer are printed
    as themselves, ``-ot 'RULES'`` (:func:`oomkit.planner.cpu_experts.partial_expert_rules`,
    shared with koboldcpp's ``--overridetensors``): ``--n-cpu-moe`` would move all three.

    ``--n-cpu-moe N`` exists from PR #15077 (b6089, 2025-08-04); it only adds the tensor
    overrides ``blk\.{i}\.ffn_(up|down|gate)_exps`` -> CPU for ``i < N`` (``common/common.h``
    ``llm_ffn_exps_block_regex``, its pattern of that day: the ``gate_up``/``chexps`` expert
    tensors came later), so an older build gets the same overrides through
    ``-ot``/``--override-tensor`` (PR #11397), which the newer option is a shorthand for: an
    older llama-server rejects ``--n-cpu-moe`` ("error: invalid argument").

    >>> llamacpp_cpu_moe_flags(3, None)
    ['--n-cpu-moe', '3']
    >>> llamacpp_cpu_moe_flags(3, "b5500")
    ['-ot', "'blk\\.(0|1|2)\\.ffn_(up|down|gate)_exps=CPU'"]
    >>> llamacpp_cpu_moe_flags(48, None, ("ffn_(up|down)_exps=CPU",))
    ['-ot', "'ffn_(up|down)_exps=CPU'"]
    """
    from oomkit.planner.cpu_experts import partial_expert_rules

    rules = partial_expert_rules(override_tensor)
    if rules is not None:
        return ["-ot", shlex.quote(rules)]
    if not n_cpu_moe_spelled(runtime_version):
        layers = "|".join(str(i) for i in range(n_cpu_moe))
        return ["-ot", shlex.quote(f"blk\\.({layers})\\.ffn_(up|down|gate)_exps=CPU")]
    return ["--n-cpu-moe", str(n_cpu_moe)]
