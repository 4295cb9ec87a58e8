"""A server's command line pasted into ``oomkit plan`` or ``oomkit estimate``: one reading for both.

The memory-neutral server flags are taken out of argv (:func:`oomkit.cli.pasted_flags.
strip_ignored`, which reads ``plan`` too) and named in one note and the JSON's
``ignored_flags``; llama.cpp's ``-c 0`` is the context its build gives it
(:func:`oomkit.cli.ctx_zero.llamacpp_ctx_zero`: the trained context, or the default the
build's ``--fit`` lowers, which the plan then aims for as for no ``-c``); vLLM/SGLang
``--dtype`` is the weights' format the plan starts from
(:func:`oomkit.cli.pasted_flags.dtype_quant`). Each says so in one of the plan's notes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PastedPlanInputs", "pasted_plan_inputs"]


@dataclass(frozen=True, slots=True)
class PastedPlanInputs:
    """What a pasted line made of ``-c``/``--quant``, the notes that say so, and the ignored
    flags (as typed)."""

    ctx: int | None
    quant: str | None
    notes: tuple[str, ...]
    ignored: tuple[str, ...]


def pasted_plan_inputs(
    runtime: str,
    model: str,
    *,
    ctx: int | None,
    dtype: str | None,
    quant: str | None,
    runtime_version: str | None,
    llama_server: bool | None,
    offline: bool,
    normalize: bool = False,
) -> PastedPlanInputs:
    """``runtime``: the normalized runtime (or ``any``); with ``normalize`` (``estimate``: the
    runtime as typed) it is normalized where it is first needed, so an unknown ``--runtime``
    is refused at the same point as before this reading was shared.

    Raises:
        InvalidSettingError: ``-c 0`` that the llama.cpp build or the model cannot read, or a
            ``--dtype`` :func:`~oomkit.cli.pasted_flags.dtype_quant` refuses.
    """
    from oomkit.cli.pasted_flags import dtype_quant, ignored_note, last_ignored

    def canonical() -> str:
        if not normalize:
            return runtime
        from oomkit.estimate.registry import normalize_runtime

        return normalize_runtime(runtime)

    notes: list[str] = []
    if ctx == 0 and _zero_is_trained() and canonical() == "llama.cpp":
        from oomkit.cli.ctx_zero import llamacpp_ctx_zero

        ctx, zero_note = llamacpp_ctx_zero(
            model, runtime_version, llama_server=llama_server, offline=offline
        )
        notes.append(zero_note)
    if dtype is not None:
        quant, dtype_note = dtype_quant(canonical(), dtype, quant)
        notes.extend([dtype_note] if dtype_note else [])
    ignored = last_ignored()
    notes.extend([ignored_note(ignored)] if ignored else [])
    return PastedPlanInputs(ctx=ctx, quant=quant, notes=tuple(notes), ignored=ignored)


def _zero_is_trained() -> bool:
    from oomkit.cli.ctx_zero import means_trained_context

    return means_trained_context()
