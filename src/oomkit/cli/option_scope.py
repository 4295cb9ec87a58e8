"""Which options belong to inference and which to training: ``--train`` with an inference-only
option, or a training option without ``--train``, is refused with the flag as typed and, where
one exists, the option the user most likely meant."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from oomkit.cli.args_command import typed_flag
from oomkit.cli.draft_options import DRAFT_PARAMS
from oomkit.cli.speculative_options import SPECULATIVE_PARAMS
from oomkit.spec.settings_lora import LORA_FIELDS

if TYPE_CHECKING:
    from oomkit.cli.train_options import TrainOptions

__all__ = ["INFERENCE_ONLY_OPTIONS", "reject_inference_options"]

#: estimate parameters that only make sense for inference (click parameter names)
INFERENCE_ONLY_OPTIONS: tuple[str, ...] = (
    "runtime",
    "quant",
    "dtype",
    "ctx",
    "parallel",
    "batch_size",
    "ubatch",
    "kv_dtype",
    "cache_type_k",
    "cache_type_v",
    "kv_unified",
    "swa_full",
    "flash_attn",
    "n_gpu_layers",
    "n_cpu_moe",
    "gpu_memory_utilization",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enforce_eager",
    "disable_hybrid_swa_memory",
    "prompt_logprobs",
    "llm_class",
    "pooling",
    *LORA_FIELDS,
    "runtime_version",
    *DRAFT_PARAMS,
    *SPECULATIVE_PARAMS,
    "backend",
    "device_map",  # transformers from_pretrained / generate() options
    "max_memory",
    "max_new_tokens",
    # plan's inference search options: the training planner read none of them, so
    # `plan --train --headroom 20GiB` answered as if 1 GiB were kept free
    "headroom",
    "min_ctx",
    "min_quant",
    "no_offload",
    "prefer",
)
#: plan's search options, refused with --train only when they differ from their defaults
_PLAN_SEARCH_OPTIONS = frozenset({"headroom", "min_ctx", "min_quant", "no_offload", "prefer"})
#: why an inference-only option means nothing to a training step, where "is an inference
#: option" alone does not say it
_WHY_NOT_TRAINING: dict[str, str] = {
    "runtime_version": (
        "it picks an inference runtime's generation and training has no runtime generations; "
        "for torch < 1.11 autograd use --softmax-saves-input"
    ),
}
#: the training option an inference option's user most likely meant
_TRAINING_COUNTERPART: dict[str, str] = {
    "parallel": "--micro-batch N (sequences per GPU per forward; --grad-accum for more)",
    "batch_size": "--micro-batch N (sequences per GPU per forward; --grad-accum for more)",
    "ubatch": "--micro-batch N (sequences per GPU per forward; --grad-accum for more)",
    "ctx": "--seq N (tokens per training sequence)",
    "quant": "--train qlora (a 4-bit frozen base)",
    "kv_dtype": "nothing: training keeps no KV cache",
    "cache_type_k": "nothing: training keeps no KV cache",
    "cache_type_v": "nothing: training keeps no KV cache",
    "headroom": (
        "--vram SIZE (the memory the step may use; the verdict keeps the band of real runs "
        "free itself)"
    ),
    "min_ctx": "--seq N (tokens per training sequence)",
    "min_quant": "--train qlora (a 4-bit frozen base)",
}


def reject_inference_options(
    ctx: click.Context, training: TrainOptions, *, inference_ok: tuple[str, ...] = ()
) -> None:
    """``--train`` with an inference-only option, or a training option without ``--train``
    (``inference_ok``: training options this inference run reads too, e.g. transformers'
    ``--attn-implementation``)."""
    from click.core import ParameterSource

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)

    def changed(name: str) -> bool:
        """Given with a value other than the default: the web API sends plan's defaults
        (``prefer: quality``) with every body, and asking for the default changes nothing."""
        if not given(name):
            return False
        param = next((p for p in ctx.command.params if p.name == name), None)
        return param is None or ctx.params.get(name) != param.get_default(ctx)

    if training.method is not None:
        bad = [
            n
            for n in INFERENCE_ONLY_OPTIONS
            if (changed(n) if n in _PLAN_SEARCH_OPTIONS else given(n))
        ]
        if bad:
            flag = typed_flag(ctx, bad[0])
            why = _WHY_NOT_TRAINING.get(bad[0])
            if why is not None:
                raise click.UsageError(f"{flag} cannot be used with --train: {why}")
            meant = _TRAINING_COUNTERPART.get(bad[0])
            hint = f"; for training use {meant}" if meant else ""
            raise click.UsageError(
                f"{flag} is an inference option; it cannot be used with --train{hint}"
            )
        lora = [n for n in ("train_lora_rank", "train_lora_targets") if given(n)]
        if lora and training.method == "full":  # full fine-tuning has no adapters to size
            flag = "--" + lora[0][len("train_") :].replace("_", "-")
            raise click.UsageError(f"{flag} sizes LoRA adapters: use --train lora or qlora")
        return
    train_given = [
        p.name
        for p in ctx.command.params
        if p.name and p.name.startswith("train_") and given(p.name) and p.name not in inference_ok
    ]
    if train_given:
        flag = "--" + train_given[0][len("train_") :].replace("_", "-")
        if train_given[0] == "train_expandable_segments":
            # the planner's transformers note names the setting: say why it is not priced here
            raise click.UsageError(
                f"{flag} needs --train full|lora|qlora: expandable segments are measured for "
                "training steps only; for inference (generate()) no band with them is measured, "
                "so the verdict keeps the caching allocator's term"
            )
        if train_given[0] == "train_attn_implementation":  # from_pretrained's, for inference
            raise click.UsageError(
                f"{flag} needs --train full|lora|qlora or --runtime transformers"
            )
        raise click.UsageError(f"{flag} needs --train full|lora|qlora")
