"""Ollama 0.2.0-0.9.x: ``num_parallel`` chosen by the scheduler when OLLAMA_NUM_PARALLEL is unset.

From v0.2.0 to v0.9.x ``OLLAMA_NUM_PARALLEL`` defaulted to 0, "Autoselect" (envconfig; ollama
commit 17b7186cd "Enable concurrency by default", 2024-05-06, first in v0.1.49-rc1 / v0.2.0).
The scheduler then tries ``defaultParallel`` first and falls back to 1
(server/sched.go ``pickBestFitGPUs``, later ``pickBestFullFitByLibrary``: ``numParallelToTry =
[defaultParallel, 1]``): for each value it sets ``NumCtx = origNumCtx x p`` and asks
``llm.PredictServerFit`` (``llm/memory.go`` ``EstimateGPULayers``) whether **every** layer fits,
first on a single GPU (the one with the most free memory first, ``p`` outer), then on all GPUs of
the library; the first that fits wins, and a model that fits nowhere in full is loaded partially
with 1 (``pickBestPartialFitByLibrary``). A CPU-only load takes ``defaultParallel`` outright
("simplifying assumption of defaultParallel when in CPU mode"). So a model that fits with room
to spare runs with a context of ``num_ctx x 4``: four times the KV cache of ``num_parallel`` 1.

``defaultParallel``: 4 from v0.2.0; 2 from v0.6.7 (commit fe5b9bb21 "lower default num parallel
to 2", 2025-04-29); from v0.10.0 ``OLLAMA_NUM_PARALLEL`` defaults to 1 and nothing is chosen
(PR #11330, commit 20c3266e9 "Reduce default parallelism to 1", first in v0.9.7-rc0). Multimodal
models load with 1: every model with a projector until v0.4.0, only ``mllama`` from v0.4.1
(commit 6cd566872 "sched: Lift parallel restriction for multimodal models except mllama").

The fit test is ``memory.go``'s own layer count where oomkit models its ``GraphSize`` for the
architecture (:mod:`oomkit.estimate.ollama_memory_go`; plus the dense ``llama`` case here);
elsewhere llama.cpp's real layout with Ollama's per-GPU reserve kept free stands in for it.
A ``num_gpu`` below the layer count keeps 1: a log's partial layer count is what the partial
load (``pickBestPartialFitByLibrary``) picked, and that load runs with 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import date

from oomkit.estimate.breakdown import Estimate
from oomkit.estimate.generations import parse_runtime_version
from oomkit.estimate.llamacpp import estimate_llamacpp
from oomkit.estimate.llamacpp_params import LlamaCppOptions
from oomkit.estimate.ollama_layers import (
    OLLAMA_DEFAULT_NUM_BATCH,
    OLLAMA_DEFAULT_NUM_CTX,
    fits_with_reserve,
    memory_go_graph,
    memory_go_inputs,
    memory_go_modelled,
    ollama_free_memory,
)
from oomkit.estimate.ollama_memory_go import estimate_gpu_layers
from oomkit.estimate.ollama_nvml_order import llama_graph_partial
from oomkit.estimate.overhead import cuda_context_bytes
from oomkit.spec.hardware import DeviceTarget, Hardware
from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["AUTO_PARALLEL", "auto_parallel", "default_parallel", "ollama_llamacpp_layout"]

#: (first release, its date, defaultParallel from then on); before the first row and from the
#: last one OLLAMA_NUM_PARALLEL defaults to 1 and the scheduler chooses nothing
AUTO_PARALLEL: tuple[tuple[tuple[int, ...], date, int], ...] = (
    ((0, 1, 49), date(2024, 7, 7), 4),  # 17b7186cd, v0.1.49-rc1; v0.2.0 released 2024-07-07
    ((0, 6, 7), date(2025, 4, 30), 2),  # fe5b9bb21, v0.6.7
    ((0, 9, 7), date(2025, 7, 30), 1),  # 20c3266e9 (PR #11330), v0.9.7-rc0; v0.10.0 2025-07-30
)
_F16 = 2
#: v0.4.1: only mllama keeps num_parallel 1 (before it, every model with a projector)
_MLLAMA_ONLY = ((0, 4, 1), date(2024, 11, 8))


def _since(version: str | None, release: tuple[tuple[int, ...], date]) -> bool:
    """``version`` (an Ollama release or a date) is at or after ``release``."""
    if version is None or not version.strip():
        return True  # the newest release
    when = parse_runtime_version("ollama", version)
    return when >= release[0] if isinstance(when, tuple) else when >= release[1]


def default_parallel(version: str | None) -> int:
    """The ``defaultParallel`` Ollama ``version`` tries when OLLAMA_NUM_PARALLEL is unset (1:
    no choice, num_parallel is 1; None is the newest release).

    >>> default_parallel("0.1.48"), default_parallel("0.3.12"), default_parallel("0.7.1")
    (1, 4, 2)
    >>> default_parallel("0.9.7-rc0"), default_parallel("2024-11-15"), default_parallel(None)
    (1, 4, 1)
    """
    value = 1
    for first, when, p in AUTO_PARALLEL:
        if _since(version, (first, when)):
            value = p
    return value


def _single_parallel(spec: ModelSpec, version: str | None) -> bool:
    """Multimodal models the scheduler keeps at num_parallel 1 in ``version``."""
    mllama = spec.model_type.startswith("mllama")  # mllama / mllama_text_model
    if _since(version, _MLLAMA_ONLY):
        return mllama
    return spec.multimodal_params > 0 or mllama


def _llama_graph(spec: ModelSpec, ctx: int, batch: int, version: str | None) -> tuple[int, int]:
    """``GraphSize``'s dense ``llama`` case (llm/ggml.go, fs/ggml/ggml.go): (partial, full);
    ``full`` takes the logits term as a second bound from v0.4.0."""
    partial = llama_graph_partial(spec, ctx, batch) or 0
    e, heads, v = spec.hidden_size, spec.num_attention_heads, spec.vocab_size
    full = 4 * batch * (1 + 4 * e + ctx * (1 + heads))
    if _since(version, ((0, 4, 0), date(2024, 11, 5))):
        full = max(full, 4 * batch * (e + v))
    return partial, full


def _memory_go_fit(spec: ModelSpec, version: str | None) -> bool:
    """Whether memory.go's own count is modelled for ``spec``: its GraphSize case (or the
    fallback) per :func:`memory_go_modelled`, or the dense ``llama`` case here."""
    llama_dense = spec.model_type in ("llama", "mistral") and spec.moe is None
    return memory_go_modelled(spec, version) or llama_dense


def _fits_all_layers(
    spec: ModelSpec,
    mapped: InferenceSettings,
    hardware: Hardware,
    opts: LlamaCppOptions,
    version: str | None,
) -> bool:
    """``PredictServerFit`` on ``hardware``'s GPUs: every layer (or the user's ``num_gpu``)."""
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    minimum = max(cuda_context_bytes("ollama", d)[0] for d in gpus)
    ctx = mapped.ctx or OLLAMA_DEFAULT_NUM_CTX
    batch = min(ctx, mapped.batch_size or OLLAMA_DEFAULT_NUM_BATCH)
    if _memory_go_fit(spec, version):
        inputs = memory_go_inputs(spec, mapped, hardware, version)
        graph = (
            memory_go_graph(spec, ctx, batch, inputs.kv, version)
            if memory_go_modelled(spec, version)
            else _llama_graph(spec, ctx, batch, version)
        )
        plan = estimate_gpu_layers(
            inputs.blocks, inputs.output, inputs.kv, graph, ollama_free_memory(gpus), minimum
        )
        want = len(inputs.blocks) + 1 if mapped.n_gpu_layers is None else mapped.n_gpu_layers
        return plan.layers > 0 and plan.layers >= want
    est = ollama_llamacpp_layout(spec, mapped, hardware, opts)
    on_gpu = est.runtime_details.get("offloaded_layers")
    every = f"{spec.num_hidden_layers + 1}/{spec.num_hidden_layers + 1}"
    if mapped.n_gpu_layers is None and on_gpu != every:
        return False
    reserve = {
        u.device: cuda_context_bytes("ollama", d)[0]
        for u, d in zip(est.devices, gpus, strict=False)
    }
    if est.devices and spec.multimodal_params > 0:
        # memory.go puts the vision weights on the first GPU (llamaEngineProjectorWeights /
        # VisionGraphSize's v.* tensors, F16); its vision graph is not counted here
        first = est.devices[0].device
        reserve[first] = reserve.get(first, 0) + spec.multimodal_params * _F16
    return fits_with_reserve(est, reserve)


def auto_parallel(
    spec: ModelSpec,
    settings: InferenceSettings,
    hardware: Hardware,
    mapped_at: Callable[[int], InferenceSettings],
    opts: LlamaCppOptions,
) -> tuple[int, str] | None:
    """(num_parallel, note) the scheduler of ``settings.runtime_version`` picks when
    OLLAMA_NUM_PARALLEL is unset (``settings.parallel`` None); None where it picks nothing
    (num_parallel 1: before 0.2.0, from 0.10.0, no release given, a multimodal model the release
    keeps at 1) or where no GPU capacity is known. ``mapped_at(p)`` is the llama runner's
    settings with ``num_parallel`` p (its ``ctx`` is num_ctx x p)."""
    version = settings.runtime_version
    p_auto = default_parallel(version)
    if settings.parallel is not None or p_auto <= 1 or _single_parallel(spec, version):
        return None
    if settings.n_gpu_layers is not None and settings.n_gpu_layers <= spec.num_hidden_layers:
        # a partial layer count, as a log shows it, is the partial load's: with no full fit
        # pickBestPartialFitByLibrary sets 1 (a user's own num_gpu below the layer count would
        # let PredictServerFit pass at layerCount >= NumGPU: not assumed)
        return None
    gpus = [d for d in hardware.devices if d.backend != "cpu"]
    head = (
        f"OLLAMA_NUM_PARALLEL not set: Ollama {version} autoselects (server/sched.go "
        f"defaultParallel {p_auto}, ollama commits 17b7186cd / fe5b9bb21; 1 from v0.10.0)"
    )
    if not gpus:
        return p_auto, f"{head}: a CPU-only load takes {p_auto}, context num_ctx x {p_auto}"
    if any(d.capacity_bytes is None for d in gpus):
        return None
    order = sorted(gpus, key=lambda d: -(d.capacity_bytes or 0))
    tries: list[tuple[int, tuple[DeviceTarget, ...]]] = [
        (p, (g,)) for p in (p_auto, 1) for g in order
    ]
    if len(gpus) > 1:
        tries += [(p, tuple(gpus)) for p in (p_auto, 1)]
    how = (
        "llm/memory.go's estimate"
        if _memory_go_fit(spec, version)
        else "llama.cpp's layout with Ollama's reserve (memory.go's GraphSize case for "
        f"{spec.model_type} is not modelled)"
    )
    for p, devs in tries:
        sub = dataclasses.replace(hardware, devices=devs)
        if _fits_all_layers(spec, mapped_at(p), sub, opts, version):
            where = devs[0].name if len(devs) == 1 else f"all {len(devs)} GPUs"
            return p, (
                f"{head}: every layer fits {where} with num_parallel {p} by {how}, so the "
                f"context is num_ctx x {p}"
            )
    return 1, f"{head}: no full fit with {p_auto}, so num_parallel 1 (partial offload)"


def ollama_llamacpp_layout(
    spec: ModelSpec, mapped: InferenceSettings, hardware: Hardware, opts: LlamaCppOptions
) -> Estimate:
    """llama.cpp's own layout of the runner Ollama starts: its options, no SWA-full default
    (Ollama passes none), named as llama.cpp, without the vision note Ollama words itself."""
    return estimate_llamacpp(
        spec,
        mapped,
        hardware,
        options=opts,
        default_swa_full=False,
        runtime_name="llama.cpp",
        vision_note=False,
    )
