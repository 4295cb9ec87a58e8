"""llama.cpp's ``-c 0`` pasted into ``oomkit estimate``: which context that build runs.

``-c/--ctx-size N`` "size of the prompt context (default: ..., 0 = loaded from model)"
(common/arg.cpp). By build (:mod:`oomkit.estimate.flag_eras` rows ``ctx_zero`` and
``ctx_zero_kept``):

* before PR #3301 (2023-09-28) a context of 0 did not mean the trained one: refused;
* from PR #3301: ``llama_context`` takes ``n_ctx_train`` when ``n_ctx == 0``;
* from PR #16653 (``--fit``, December 2025: the generation's ``fit_params`` effect) ``0`` is
  also the default, and the fit lowered it like an unset context (issue #18376, build 7539:
  "-c0 ... is now defaulting to 4096") until
* PR #19070 (2026-01-24): an explicit ``-c 0`` sets ``fit_params_min_ctx = UINT32_MAX``, so the
  fit keeps the full trained context (it may still move layers off the GPU).

The C API (``--no-llama-server``: llama-cpp-python, LM Studio, koboldcpp) runs no fit: there
``0`` is always the trained context.
"""

from __future__ import annotations

__all__ = ["llamacpp_ctx_zero", "means_trained_context"]

#: the context flags whose 0 is llama.cpp's "loaded from model" (oomkit's own --ctx with it);
#: vLLM's --max-model-len and SGLang's --context-length have no such value: a 0 there is refused
_ZERO_FLAGS = ("-c", "--ctx-size", "--ctx")


def means_trained_context() -> bool:
    """Whether the context flag as typed reads ``0`` as llama.cpp's trained context: ``-c 0``
    yes, ``--max-model-len 0`` (a vLLM spelling pasted into a llama.cpp plan) no."""
    import sys

    click = sys.modules.get("click")  # the click-free estimate path must not import it
    ctx = click.get_current_context(silent=True) if click is not None else None
    if ctx is not None and any(p.name == "ctx" for p in ctx.command.params):
        from oomkit.cli.args_command import typed_flag

        return typed_flag(ctx, "ctx") in _ZERO_FLAGS
    from oomkit.cli.estimate_fast import TYPED

    return TYPED.get("ctx", "--ctx") in _ZERO_FLAGS


def llamacpp_ctx_zero(
    model: str, version: str | None, *, llama_server: bool | None, offline: bool
) -> tuple[int | None, str]:
    """``(ctx, note)`` for ``-c 0``: the model's trained context, or None (left to the fit)
    for a ``--fit`` build before PR #19070.

    Raises:
        InvalidSettingError: a build before PR #3301, or a model with no trained context.
    """
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.flag_eras import flag_available, flag_era

    if not flag_available("llama.cpp", "ctx_zero", version):
        row = flag_era("llama.cpp", "ctx_zero")
        raise InvalidSettingError(
            f"-c 0: llama.cpp {version} predates {row.source} ({row.first()}), which made a "
            "context of 0 mean the model's trained context; give -c N",
            setting="-c",
            value=0,
        )
    fit = llama_server is not False
    if fit and version is not None and version.strip():
        from oomkit.estimate.generations import resolve_generation

        fit = bool(resolve_generation("llama.cpp", version).effects.get("fit_params", True))
    if fit and not flag_available("llama.cpp", "ctx_zero_kept", version):
        return None, (
            f"-c 0: in llama.cpp {version} the same as leaving -c out (its --fit lowers it; "
            "an explicit -c 0 is kept from PR #19070, 2026-01-24)"
        )
    from oomkit.api import load_model

    spec = load_model(model, offline=True if offline else None)
    n_ctx_train = spec.max_position_embeddings
    if not n_ctx_train:
        raise InvalidSettingError(
            f"-c 0 asks for the model's trained context, and {model} states none; give -c N",
            setting="-c",
            value=0,
        )
    kept = " (an explicit -c 0 is never lowered by --fit: PR #19070)" if fit else ""
    return n_ctx_train, (
        f"-c 0: the model's trained context, {n_ctx_train} tokens ('0 = loaded from model', "
        f"llama.cpp PR #3301){kept}"
    )
