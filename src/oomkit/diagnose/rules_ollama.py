"""Diagnosis of Ollama's own errors (system-memory pre-load check, runner exit, layout failure).

The llama.cpp lines an Ollama log also carries are read by :mod:`oomkit.diagnose.rules_llamacpp`;
this module reads the messages Ollama itself prints around its runner.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix, generic
from oomkit.diagnose.rules_llamacpp import _fb, _kv_fixes

__all__ = ["analyze_ollama"]


def _smaller_model(req: int | None, avail: int | None) -> Fix:
    if req and avail is not None and 0 < avail < req:
        pct = 100 * avail // req
        return Fix(
            title=f"Use a model/quantization at most {pct}% of this one's size",
            why=f"the RAM-resident part must shrink from {_fb(req)} to {_fb(avail)} "
            f"({pct}%); weights dominate it, so e.g. 4-bit instead of 8-bit halves them.",
            commands=("ollama pull <model>:<smaller tag, e.g. q4_K_M>",),
            expected_saving_bytes=req - avail,
        )
    return generic(
        "Pick a smaller model or quantization",
        "the weights are most of the requirement.",
        ("ollama pull <model>:<smaller tag, e.g. q4_K_M>",),
    )


def analyze_ollama(e: OomEvent, ctx: LogContext) -> Analysis:
    """Diagnose an Ollama error (system memory check, runner exit, layout failure)."""
    if e.kind == "host_oom":
        req, avail = e.requested_bytes, e.free_bytes
        short = req - avail if req is not None and avail is not None else None
        expl = "Ollama's pre-load check failed: the part of the model that stays in system RAM"
        if short is not None:
            expl += f" needs {_fb(req)} but only {_fb(avail)} is available (short by {_fb(short)})."
        else:
            expl += " does not fit in the RAM that is currently available."
        fixes = [
            Fix(
                title="Free system RAM (close apps, unload other models)",
                why=f"Ollama needs ~{_fb(short)} more available RAM; what closing apps or "
                "unloading models frees depends on what they hold (ollama ps lists the models)."
                if short
                else "other loaded models and apps hold the RAM Ollama needs.",
                commands=("ollama ps", "ollama stop <other model>", "OLLAMA_MAX_LOADED_MODELS=1"),
                # the shortfall is what it NEEDS, not what this fix frees (revfix19d's rule:
                # a saves figure is what the fix frees): unknown here
                expected_saving_bytes=None,
            ),
            _smaller_model(req, avail),
            # docpost18 (heldout37/38: Zed, Continue and Roo Code send the model's whole
            # context): Ollama's requirement counts the KV cache for num_ctx x
            # OLLAMA_NUM_PARALLEL (llm/memory.go EstimateGPULayers), so a client's large num_ctx
            # is what grows it; Continue's docs (PR #11864) give reducing contextLength as the fix
            *(
                _kv_fixes(ctx, ctx.ollama_required_kv_bytes, None, ollama=True, unsized=False)
                or [
                    generic(
                        "Load with a shorter context (num_ctx)",
                        "the requirement includes the KV cache for num_ctx x parallel requests; "
                        "clients (Zed, Continue, Roo Code) may ask for the model's maximum.",
                        ("/set parameter num_ctx 8192", "OLLAMA_NUM_PARALLEL=1"),
                    )
                ]
            ),
        ]
        return Analysis(cause="host_ram", confidence=0.9, explanation=expl, fixes=tuple(fixes))
    if e.kind == "killed":
        return Analysis(
            cause="host_ram",
            confidence=0.7,
            explanation=f"The runner was killed ({e.detail}): the Linux OOM killer or a container "
            "limit ended it when host RAM ran out.",
            fixes=(
                generic(
                    "Free host RAM or add swap",
                    "the runner's RAM use exceeded the limit.",
                    ("free -h", "dmesg | grep -i oom"),
                ),
            ),
        )
    est = ctx.ollama_required_full_bytes
    avail_list = ctx.ollama_available_bytes
    expl = f"The Ollama runner failed to allocate GPU memory ({e.detail or e.text[:120]})."
    layout: dict[str, dict[str, int]] = {}
    for b in ctx.buffers:
        layout.setdefault(b.name, {})[b.kind] = layout.get(b.name, {}).get(b.kind, 0) + b.size_bytes
    for name, kinds in layout.items():
        parts = ", ".join(f"{k} {_fb(v)}" for k, v in kinds.items())
        expl += f" Planned on {name}: {parts} = {_fb(sum(kinds.values()))}."
    kv_planned = sum(
        v for k, v in ctx.device_buffers("KV").items() if not k.upper().startswith("CPU")
    )
    if est is not None and avail_list:
        expl += (
            f" Ollama estimated {_fb(est)} for a full GPU load against "
            f"{_fb(sum(avail_list))} available (its estimate, not a measurement)."
        )
    fixes = [
        generic(
            "Put fewer layers on the GPU",
            "num_gpu is the number of layers Ollama offloads; fewer layers need less VRAM.",
            ("/set parameter num_gpu <fewer>", '"options": {"num_gpu": <fewer>}'),
        ),
        *_kv_fixes(
            ctx, kv_planned or ctx.ollama_required_kv_bytes, None, ollama=True, unsized=False
        ),
        generic(
            "Reserve headroom for the estimate's error",
            "OLLAMA_GPU_OVERHEAD (bytes) makes the scheduler leave memory free per GPU.",
            ("OLLAMA_GPU_OVERHEAD=1073741824 ollama serve",),
        ),
    ]
    if e.kind == "runner_terminated" and "failed to create context" in (e.detail or ""):
        # llama.cpp's loader says "error loading model" when the weights fail; "failed to create
        # context with model" comes after they loaded, from llama_new_context_with_model, whose
        # allocations are the KV cache and the compute buffers, both sized by num_ctx (times
        # OLLAMA_NUM_PARALLEL): the context is the lever
        return Analysis(
            cause="kv_cache_or_context",
            confidence=0.4,
            explanation=f"The runner exited while creating the context ({e.detail}): the weights "
            "had loaded, and what failed is the KV cache and compute buffers, sized by num_ctx "
            "(x OLLAMA_NUM_PARALLEL). The server log's KV cache and compute buffer lines would "
            "confirm it.",
            fixes=(
                *(
                    _kv_fixes(
                        ctx,
                        kv_planned or ctx.ollama_required_kv_bytes,
                        None,
                        ollama=True,
                        unsized=False,
                    )
                    or [
                        generic(
                            "Load with a shorter context",
                            "the KV cache is linear in num_ctx x parallel requests.",
                            ("/set parameter num_ctx 8192", "OLLAMA_NUM_PARALLEL=1"),
                        )
                    ]
                ),
                *fixes,
            ),
        )
    if e.kind == "runner_terminated":
        return Analysis(
            cause="unknown",
            confidence=0.2,
            open_question=False,  # a crash whose reason is not an OOM: no base rate applies
            explanation=(f"The runner exited ({e.detail}); " if e.detail else "The runner exited; ")
            + "the forwarded reason is not an OOM message. Check the server log above it.",
            fixes=tuple(fixes),
        )
    return Analysis(cause="model_too_large", confidence=0.5, explanation=expl, fixes=tuple(fixes))
