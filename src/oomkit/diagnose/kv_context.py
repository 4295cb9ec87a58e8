"""The context lever of a llama.cpp / Ollama KV-cache failure whose log prints no n_ctx."""

from __future__ import annotations

from oomkit.diagnose.fixes import Fix, generic, size_text

__all__ = ["half_context_unknown"]


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
