"""The context levers of a llama.cpp / Ollama KV-cache failure (rules_llamacpp._kv_fixes)."""

from __future__ import annotations

from oomkit.diagnose.events import LogContext
from oomkit.diagnose.fixes import Fix, generic, size_text
from oomkit.diagnose.model_fixes import HEADROOM_BYTES

__all__ = ["compute_reserve", "half_context_unknown"]


def half_context_unknown(kv: int | None, ollama: bool) -> Fix:
    """The context lever when the log does not print n_ctx: ``-c <N>``, N half the context in use.

    The KV cache is n_ctx x n_layer x (n_embd_k_gqa + n_embd_v_gqa) x the cache type's bytes
    (llama.cpp src/llama-kv-cache.cpp, ``llama_kv_cache`` constructor: per layer
    ``ggml_new_tensor_3d(ctx, type_k, n_embd_k_gqa, kv_size, n_stream)`` and the same for V,
    ``kv_size`` = n_ctx), so half the context frees half of it whatever n_ctx was: sized from
    the KV cache alone, it ranks as the sized "Halve the context" does.
    """
    if ollama:  # the runner's n_ctx is num_ctx x num_parallel: halving num_ctx halves it
        flag, said = (
            "num_ctx <N>",
            "the log does not print the context: N is half the num_ctx you run",
        )
        cmds: tuple[str, ...] = ("/set parameter num_ctx <N>", '"options": {"num_ctx": <N>}')
    else:
        flag, said = "-c <N>", "the log does not print n_ctx: N is half the context you run (-c)"
        cmds = ("-c <N>",)
    title = f"Halve the context: {flag}"
    if kv is None:
        return generic(title, f"{said}; the KV cache is linear in n_ctx.", cmds)
    return Fix(
        title=title,
        why=f"{said}; the KV cache ({size_text(kv)}) is linear in n_ctx, so half the context frees "
        f"{size_text(kv - kv // 2)}.",
        commands=cmds,
        expected_saving_bytes=kv - kv // 2,
    )


def compute_reserve(ctx: LogContext, compute_failed: bool) -> tuple[int, str]:
    """Room a context that fits must leave after its KV cache, and the words for it.

    llama.cpp allocates the compute buffer right after the KV cache (src/llama-context.cpp:
    the ``llama_context`` constructor reserves the worst-case graph with
    ``ggml_backend_sched_reserve`` -> ``ggml_gallocr_reserve_n``), and without flash attention
    it grows with n_ctx (the n_ctx x n_ubatch x n_head f32 KQ scores). When the compute buffer
    is what failed, its request (at the failing n_ctx, so at least the one at a shorter context)
    is already in the shortfall; when the KV cache failed, the log stops before the compute
    buffer. Either way the doctor's headroom (:data:`~oomkit.diagnose.model_fixes.HEADROOM_BYTES`,
    the margin the estimator-sized fixes keep) is left on top; in the second case it is all the
    room kept for the compute buffer.
    """
    if compute_failed:
        return HEADROOM_BYTES, (
            f"the compute buffer's request is in that shortfall, with {size_text(HEADROOM_BYTES)} "
            "headroom kept on top"
        )
    return HEADROOM_BYTES, (
        f"{size_text(HEADROOM_BYTES)} is kept for the compute buffer llama.cpp allocates after the "
        "KV cache (the log stops before it"
        + ("; without flash attention it grows with n_ctx" if ctx.flash_attn is not True else "")
        + ")"
    )
