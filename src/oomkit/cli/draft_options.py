"""llama-server's draft-model options for ``oomkit plan`` (speculative decoding, ``-md``).

The same flags as ``oomkit estimate`` (:mod:`oomkit.cli.estimate`), read the same way
(:func:`oomkit.cli.estimate_args.check_count_options`, ``parse_draft_devices``), so that the plan
and its command carry the draft as ``estimate`` models it (:mod:`oomkit.estimate.llamacpp_draft`):
every candidate the planner tries keeps the draft, and its ``llama-server`` line has the
``-md/-ngld/-cd/-ctkd/-ctvd/-devd`` flags (:mod:`oomkit.planner.commands`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from oomkit.cli.params import COUNT
from oomkit.errors import InvalidSettingError

__all__ = ["DRAFT_PARAMS", "draft_options", "draft_settings"]

F = TypeVar("F", bound=Callable[..., Any])

#: the click parameter names :func:`draft_options` adds
DRAFT_PARAMS = (
    "draft_model",
    "draft_quant",
    "draft_ngl",
    "draft_ctx",
    "draft_cache_type_k",
    "draft_cache_type_v",
    "draft_device",
)


def draft_options(f: F) -> F:
    """Add the draft-model options (``estimate``'s flags and help) to a command."""
    options = [
        click.option(
            "--draft-model",
            "--model-draft",
            "-md",
            "draft_model",
            help="llama.cpp speculative decoding: the draft model (catalog name or .gguf), as -md",
        ),
        click.option(
            "--draft-quant", help="GGUF type of the draft model when it is a catalog name"
        ),
        click.option(
            "--draft-ngl",
            "--gpu-layers-draft",
            "-ngld",
            "draft_ngl",
            type=int,
            help="Draft layers on the GPU (-ngld; default: llama.cpp's)",
        ),
        click.option(
            "--draft-ctx",
            "--ctx-size-draft",
            "-cd",
            "draft_ctx",
            type=COUNT,
            help="Draft context per slot (-cd; default: the main context per slot)",
        ),
        click.option(
            "--cache-type-k-draft", "-ctkd", "draft_cache_type_k", help="Draft KV type for K"
        ),
        click.option(
            "--cache-type-v-draft", "-ctvd", "draft_cache_type_v", help="Draft KV type for V"
        ),
        click.option(
            "--device-draft",
            "-devd",
            "draft_device",
            help="GPUs of the draft as 0-based indices of --gpu, e.g. 1 or 0,1 (default: all)",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def draft_settings(runtime: str, values: dict[str, Any]) -> dict[str, Any]:
    """The ``InferenceSettings`` draft fields for the options in ``values`` (click names).

    Raises:
        InvalidSettingError: a draft option without ``--draft-model``, a draft with a runtime
            other than llama.cpp, or a value out of range (named by its flag).
    """
    from oomkit.cli.estimate_args import check_count_options, parse_draft_devices

    model = values.get("draft_model")
    ngl, ctx = values.get("draft_ngl"), values.get("draft_ctx")
    check_count_options(draft_n_gpu_layers=ngl, draft_ctx=ctx)
    if ctx == 0:  # llama.cpp's -cd 0: "0 = loaded from model" (the default rule)
        ctx = None
    flags = {
        "--draft-quant": values.get("draft_quant"),
        "--draft-ngl": ngl,
        "--draft-ctx": ctx,
        "--cache-type-k-draft": values.get("draft_cache_type_k"),
        "--cache-type-v-draft": values.get("draft_cache_type_v"),
        "--device-draft": values.get("draft_device"),
    }
    orphan = next((flag for flag, value in flags.items() if value is not None), None)
    if model is None:
        if orphan is not None:
            raise InvalidSettingError(
                f"{orphan} needs --draft-model (llama.cpp -md): name the draft model or drop it",
                setting=orphan,
            )
        return {}
    if runtime != "llama.cpp":
        raise InvalidSettingError(
            f"--draft-model is llama-server's (-md); --runtime {runtime} does not use it: plan "
            "with --runtime llama.cpp or drop the draft",
            setting="--draft-model",
            value=model,
        )
    return {
        "draft_model": model,
        "draft_quant": values.get("draft_quant"),
        "draft_n_gpu_layers": ngl,
        "draft_ctx": ctx,
        "draft_cache_type_k": values.get("draft_cache_type_k"),
        "draft_cache_type_v": values.get("draft_cache_type_v"),
        "draft_devices": parse_draft_devices(values.get("draft_device")),
    }
