"""Fixes a training log rules in or out (revfix21b): what the stack refuses, and its own levers.

Three mechanisms, each applied to the finished diagnosis (:func:`training_levers`):

* A full fine-tune cannot start from a quantized base: the HF Trainer refuses a model loaded in
  8/4-bit without adapters ("You cannot perform fine-tuning on purely quantized models. Please
  attach trainable adapters on top of the quantized model", transformers ``Trainer.__init__``
  via ``_is_quantized_and_base_model``; trainer_utils.py in 5.x). So a training run whose log
  shows no LoRA/QLoRA drops the "load it quantized" fixes (QLoRA stays, as the training
  estimator's method change).
* DeepSpeed ZeRO-3 places the parameters itself: ``from_pretrained`` refuses a ``device_map``
  under it ("DeepSpeed Zero-3 is not compatible with passing a `device_map`",
  transformers integrations/accelerate.py / modeling_utils.py), so the device_map fix goes. An
  optimizer-step OOM under DeepSpeed gets DeepSpeed's own levers instead (deepspeed.ai
  docs/config-json, ``zero_optimization``): ``offload_optimizer`` (states and the fp32 step on
  the CPU), ``offload_param`` (ZeRO-3), a smaller ``sub_group_size`` (ZeRO-3's step,
  stage3.py ``DeepSpeedZeroOptimizer_Stage3.step``, updates the fp32 partition one sub-group at
  a time, and each sub-group's buffers are allocated whole: the default 1e9 elements is a
  3.73 GiB fp32 tensor), the next ZeRO stage, and more GPUs last.
* A failure at the fp32 logits upcast (``logits = logits.float()``: transformers' causal-LM
  ``forward`` up to 4.44, ``ForCausalLMLoss`` in loss_utils.py since 4.46) is the tokens x
  vocabulary x 4-byte tensor itself: a loss that never materialises it (Liger's fused linear
  cross-entropy, ``use_liger_kernel=True`` in TrainingArguments, transformers 4.45+; a chunked
  cross-entropy) or fewer tokens per micro-batch is the lever, not the weights.
"""

from __future__ import annotations

import dataclasses

from oomkit.diagnose.fixes import Fix, generic, rank, size_text
from oomkit.diagnose.rules import Diagnosis
from oomkit.diagnose.training_context import TrainingLogSetup, training_setup_from_log

__all__ = ["training_levers"]

#: titles of load-quantization fixes (the rules' generic one, the estimator's sized ones)
_QUANT_LOAD = ("Load the weights quantized", "Load in 4-bit", "Load in 8-bit")
_DEVICE_MAP = ("Spread or offload the model",)
#: the rules' expandable-segments fix (sized from the message) and the training estimator's
_FRAG_RULE = "Let the allocator grow segments"
_FRAG_ESTIMATE = "The allocator's expandable segments"
_LOGITS_UPCAST = ("logits = logits.float()", "logits.float()")


def _full_finetune(setup: TrainingLogSetup) -> bool:
    return setup.method not in ("lora", "qlora")


def _zero_levers(setup: TrainingLogSetup, have: str) -> list[Fix]:
    out: list[Fix] = []
    if "offload_optimizer" not in have and not setup.offload_optimizer:
        out.append(
            generic(
                "Move the optimizer states to the CPU (ZeRO-Offload)",
                "DeepSpeed keeps the fp32 master weights and AdamW's two states (12 bytes a "
                "parameter, this rank's share) on the GPU; offload_optimizer holds them in host "
                "RAM and runs the step there (DeepSpeedCPUAdam), at the cost of a slower step.",
                (
                    '"zero_optimization": {"offload_optimizer": {"device": "cpu", '
                    '"pin_memory": true}}   # DeepSpeed config',
                ),
            )
        )
    if setup.zero == 3:
        out.append(
            generic(
                "Step the optimizer in smaller sub-groups (ZeRO-3 sub_group_size)",
                "ZeRO-3 updates the fp32 partition one sub-group at a time and allocates each "
                "sub-group's buffers whole (the default 1e9 elements is a 3.73 GiB fp32 "
                "tensor); a smaller sub_group_size makes each of those allocations smaller, so "
                "a step that fails on one such buffer finds room (the states' total is the same: "
                "offload them if that is what fills the card).",
                ('"zero_optimization": {"stage": 3, "sub_group_size": 1e8}   # DeepSpeed config',),
            )
        )
        if "offload_param" not in have:
            out.append(
                generic(
                    "Offload the parameters too (ZeRO-3 offload_param)",
                    "ZeRO-3 can keep its parameter partition in host RAM and fetch each layer "
                    "for its forward/backward; with offload_optimizer this leaves the GPU "
                    "little more than one layer's weights and the activations.",
                    ('"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}',),
                )
            )
    elif setup.zero in (None, 0, 1, 2) and "ZeRO-3" not in have and "stage 3" not in have:
        out.append(
            generic(
                "Shard more with the next ZeRO stage",
                "ZeRO-1 shards the optimizer states, ZeRO-2 the gradients too, ZeRO-3 the "
                "parameters as well: each stage divides one more term by the number of GPUs.",
                ('"zero_optimization": {"stage": 3}   # DeepSpeed config',),
            )
        )
    if "more GPUs" not in have and "over " not in have:
        out.append(
            dataclasses.replace(
                generic(
                    "Hardware change: shard over more GPUs",
                    "ZeRO divides the optimizer states (and at stage 3 the parameters and "
                    "gradients) by the data-parallel world size: more ranks, less per GPU.",
                    ("deepspeed --num_gpus N train.py ...",),
                ),
                hardware=True,
            )
        )
    return out


def _logits_fix(result: Diagnosis) -> Fix:
    e = result.primary
    x = e.requested_bytes if e is not None else None
    what = (
        f"the failing {size_text(x)} request is that tensor"
        if x is not None
        else "that tensor is what failed"
    )
    return Fix(
        title="Compute the loss without materialising fp32 logits (fused / chunked cross-entropy)",
        why="the traceback fails at the fp32 upcast of the logits (`logits.float()`): tokens in "
        f"the micro-batch x vocabulary x 4 bytes, and {what}. Liger's fused linear "
        "cross-entropy computes the loss chunk by chunk without the full logits (bf16 or fp32); "
        "a chunked cross-entropy does the same; otherwise fewer tokens per micro-batch (a "
        "shorter max length, or a smaller per-device batch with more gradient accumulation) "
        "shrinks it in proportion.",
        commands=(
            "TrainingArguments(..., use_liger_kernel=True)   # pip install liger-kernel",
            "TrainingArguments(per_device_train_batch_size=bs // 2, "
            "gradient_accumulation_steps=ga * 2)",
            "max_length //= 2   # tokenizer / SFTConfig(max_length=...)",
        ),
        expected_saving_bytes=x,
    )


def _has_upcast(text: str, result: Diagnosis) -> bool:
    phase = result.context.frame_phase
    return phase in ("forward", "backward", None) and any(s in text for s in _LOGITS_UPCAST)


def training_levers(result: Diagnosis, text: str) -> Diagnosis:
    """``result`` without the fixes the training stack refuses and with its own levers (the
    module docstring gives each mechanism); unchanged for a log that is not a training run."""
    if not result.oom_found or result.primary is None:
        return result
    if result.primary.runtime not in ("pytorch", None):
        return result
    setup = training_setup_from_log(text, result.context.frame_phase)
    upcast = _has_upcast(text, result)
    if not setup.is_training and not upcast:
        return result
    fixes = list(result.fixes)
    drop: tuple[str, ...] = ()
    if setup.is_training and _full_finetune(setup):
        drop += _QUANT_LOAD
    if setup.framework == "deepspeed" and setup.zero == 3:
        drop += _DEVICE_MAP
    fixes = [f for f in fixes if not f.title.startswith(drop)] if drop else fixes
    if any(f.title.startswith(_FRAG_RULE) for f in fixes):
        fixes = [f for f in fixes if not f.title.startswith(_FRAG_ESTIMATE)]
    have = " ".join(f.title + " " + " ".join(f.commands) for f in fixes)
    added: list[Fix] = []
    if setup.framework == "deepspeed" and setup.phase == "optimizer_step":
        added += _zero_levers(setup, have)
    if upcast and "cross-entropy" not in have:
        added.append(_logits_fix(result))
    if not added and len(fixes) == len(result.fixes):
        return result
    return dataclasses.replace(result, fixes=rank([*fixes, *added]) if added else tuple(fixes))
