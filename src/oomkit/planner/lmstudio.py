"""LM Studio's ``lms load`` line for a planned llama.cpp configuration.

``-r lmstudio`` is sized as llama.cpp (LM Studio runs llama.cpp through its C API:
:data:`oomkit.estimate.llamacpp_outputs.C_API_APPS`), but the command is LM Studio's own CLI,
not ``llama-server``. ``lms load [path] --context-length N --gpu <0-1|off|max>`` is what it takes
(lmstudio-ai/lms ``src/subcommands/load.ts``: ``--gpu <offload-ratio>`` parsed by
``gpuOptionParser``, "off" -> 0, "max" -> 1, else a number in [0, 1] passed as the SDK's
``gpu.ratio``; docs https://lmstudio.ai/docs/cli/load). ``[path]`` is fuzzy-matched against the
paths ``lms ls`` lists (``fuzzy.filter``), so the GGUF's file stem picks the planned file.
The ratio -> layer count rounding happens inside LM Studio's closed engine and is not
documented ("0 means that no layers are offloaded ... 1 means that all layers (that can be
offloaded)", the SDK's ``LLMLlamaAccelerationOffloadRatio``): a partial offload prints the
planned layers' share rounded *down* to 2 decimals (never more layers than the plan fitted) and
says so. ``lms load`` has no flag for flash attention, the KV cache types or parallel sessions:
they are load settings (``llm.load.llama.flashAttention``,
``llm.load.llama.kCacheQuantizationType`` / ``vCacheQuantizationType``,
``llm.load.numParallelSessions``: key names as LM Studio stores them in its per-model load
configs), so one comment line names the settings to change instead of a flag that does not
exist. ``lms`` is the same cross-platform binary on Windows, where ``#``
starts a PowerShell comment too.
"""

from __future__ import annotations

import math
import shlex

from oomkit.spec.settings import InferenceSettings

__all__ = ["LMSTUDIO_NAMES", "command_target", "lmstudio_command"]

#: the ``--runtime`` names whose commands are ``lms load`` (sized as llama.cpp)
LMSTUDIO_NAMES = frozenset({"lmstudio"})


def command_target(raw: str | None, runtime: str) -> str:
    """The command emitter's target: ``lmstudio`` / ``koboldcpp`` / ``llama-cpp-python`` for a
    llama.cpp plan asked as ``-r lmstudio`` / ``-r koboldcpp`` / ``-r llama-cpp-python``, else
    ``runtime`` (the normalized name the estimate used)."""
    from oomkit.estimate.llamacpp_python import NAMES as LLAMA_CPP_PYTHON_NAMES
    from oomkit.planner.koboldcpp import KOBOLDCPP_NAMES

    name = "" if raw is None else raw.strip().lower()
    if runtime == "llama.cpp" and name in LLAMA_CPP_PYTHON_NAMES:
        return "llama-cpp-python"
    if runtime == "llama.cpp" and name in LMSTUDIO_NAMES:
        return "lmstudio"
    if runtime == "llama.cpp" and name in KOBOLDCPP_NAMES:
        return "koboldcpp"
    return runtime


def gpu_ratio(n_gpu_layers: int | None, n_layers: int) -> str:
    """``--gpu``'s value: ``max`` (all layers), ``off`` (none) or the GPU's share of the
    ``n_layers`` offloadable layers (blocks + output), rounded down to 2 decimals.

    >>> gpu_ratio(None, 37), gpu_ratio(37, 37), gpu_ratio(0, 37), gpu_ratio(35, 81)
    ('max', 'max', 'off', '0.43')
    """
    if n_gpu_layers is None or n_gpu_layers >= n_layers:
        return "max"
    if n_gpu_layers <= 0:
        return "off"
    return f"{math.floor(100 * n_gpu_layers / n_layers) / 100:.2f}"


def lmstudio_command(settings: InferenceSettings, gguf: str, n_layers: int, flash: bool) -> str:
    """The lines that load ``settings`` in LM Studio: ``gguf`` is the planned file (a path to
    import first when it is one), ``n_layers`` the offloadable layer count, ``flash`` whether the
    estimate ran with flash attention."""
    lines: list[str] = []
    key = gguf.rsplit("/", 1)[-1].removesuffix(".gguf")
    if "/" in gguf or gguf.startswith((".", "~")):  # a file on disk: into LM Studio's models
        lines.append(f"lms import {shlex.quote(gguf)}")
    # flash attention is LM Studio's default from 0.3.31 (lmstudio-bug-tracker #1215/#1454,
    # oomkit.api's note): named only where the plan needs it off, or on for a quantized cache
    load: list[tuple[str, str]] = []
    quantized = bool(settings.cache_type_k and settings.cache_type_k != "f16")
    if quantized or not flash:
        load.append(
            (f"Flash Attention {'on' if flash else 'off'}", "llm.load.llama.flashAttention")
        )
    if quantized:
        k, v = settings.cache_type_k, settings.cache_type_v or "f16"
        load.append((f"K Cache Quantization Type {k}", "llm.load.llama.kCacheQuantizationType"))
        load.append((f"V Cache Quantization Type {v}", "llm.load.llama.vCacheQuantizationType"))
    if settings.parallel and settings.parallel > 1:
        load.append((f"Max Concurrent Predictions {settings.parallel}", "numParallelSessions"))
    if load:
        lines.append(
            "# lms load has no flag for these; set them first in LM Studio's model load "
            "settings: " + ", ".join(f"{ui} ({k})" for ui, k in load)
        )
    if settings.n_cpu_moe:
        lines.append(
            f"# experts of the first {settings.n_cpu_moe} layers on the CPU (llama.cpp "
            "--n-cpu-moe): no lms load flag; use LM Studio's MoE-experts-on-CPU load setting "
            "or run the llama-server plan (-r llama.cpp)"
        )
    ratio = gpu_ratio(settings.n_gpu_layers, n_layers)
    if ratio not in ("max", "off"):
        lines.append(
            f"# --gpu {ratio}: {settings.n_gpu_layers}/{n_layers} layers as a share, rounded "
            "down; LM Studio does not document how it rounds it to layers: check its load log"
        )
    parts = ["lms", "load", shlex.quote(key), "--context-length", str(settings.ctx)]
    parts += ["--gpu", ratio]
    lines.append(" ".join(parts))
    return "\n".join(lines)
