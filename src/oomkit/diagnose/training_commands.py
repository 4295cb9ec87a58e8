"""The commands a training fix prints, in the vocabulary of the stack the log came from.

HF Trainer arguments, DeepSpeed JSON, accelerate config, PEFT calls; a torchtune run gets
torchtune recipe overrides only (``tune run RECIPE --config CFG key=value``: torchtune's own
``enable_activation_checkpointing``, ``batch_size``, ``optimizer._component_``...). Every fix
ends with the ``oomkit estimate ... --train`` command that reproduces its numbers: it carries
every setting the estimate used (:func:`_oomkit_cmd`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.settings import TrainingSettings

__all__: list[str] = []


def _cmds(
    change: str, s: TrainingSettings, fw: str | None, model: str, tt_model: str | None = None
) -> tuple[str, ...]:
    """The option(s) to change for ``change`` (new settings ``s``), stack-specific first; a
    torchtune run gets torchtune recipe overrides only (``tune run ... key=value``)."""
    if fw == "torchtune":
        return (*_torchtune_cmds(change, s, tt_model), _oomkit_cmd(s, model))
    ds = fw == "deepspeed" or s.zero
    out: list[str]
    if change == "expandable":
        out = ["export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # before the launch"]
    elif change == "micro_batch":
        if ds:
            out = [f'"train_micro_batch_size_per_gpu": {s.micro_batch}, '
                   f'"gradient_accumulation_steps": {s.grad_accum}   # DeepSpeed JSON']  # fmt: skip
        else:
            out = []
        out.append(f"--per_device_train_batch_size {s.micro_batch} "
                   f"--gradient_accumulation_steps {s.grad_accum}   # HF Trainer")  # fmt: skip
    elif change == "checkpointing":
        out = [
            "--gradient_checkpointing True   # HF Trainer",
            "model.gradient_checkpointing_enable()",
        ]
    elif change == "chunked_loss":
        out = ["--use_liger_kernel True   # HF Trainer: fused linear cross-entropy (Liger)"]
    elif change == "adam8bit":
        out = ["--optim adamw_bnb_8bit   # HF Trainer",
               "bnb.optim.AdamW8bit(model.parameters(), lr=lr)"]  # fmt: skip
    elif change in ("shard", "zero_next", "more_gpus"):
        if s.fsdp:
            out = [f"fsdp_sharding_strategy: {s.fsdp_strategy}   # accelerate config",
                   f"--fsdp \"{s.fsdp_strategy.lower()} auto_wrap\"   # HF Trainer"]  # fmt: skip
        else:
            out = [f'"zero_optimization": {{"stage": {s.zero}}}   # DeepSpeed JSON',
                   f"accelerate launch --use_deepspeed --zero_stage {s.zero} "
                   f"--num_processes {s.gpus} train.py"]  # fmt: skip
    elif change == "offload" and s.fsdp:  # FSDP offloads parameters, gradients and the step
        strategy = s.fsdp_strategy.lower()
        out = ["fsdp_offload_params: true   # accelerate config",
               f"--fsdp \"{strategy} offload auto_wrap\"   # HF Trainer"]  # fmt: skip
    elif change == "offload":
        out = [f'"zero_optimization": {{"stage": {s.zero}, "offload_optimizer": '
               '{"device": "cpu"}}   # DeepSpeed JSON']  # fmt: skip
    elif change == "lora_rank":
        out = [f"LoraConfig(r={s.lora_rank}, lora_alpha={2 * s.lora_rank}, ...)   # PEFT"]
    elif change == "lora":
        out = ["get_peft_model(model, LoraConfig(r=16, target_modules='all-linear'))   # PEFT"]
    else:  # qlora
        out = ["BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', "
               "bnb_4bit_use_double_quant=True)   # + PEFT LoRA"]  # fmt: skip
    out.append(_oomkit_cmd(s, model))
    return tuple(out)


def _tt_builder(tt_model: str | None, prefix: str) -> str:
    """torchtune's LoRA/QLoRA builder next to the full one (``torchtune.models.llama3_1.
    llama3_1_8b`` -> ``...lora_llama3_1_8b``), or a placeholder when the log does not name it."""
    if tt_model is None:
        return f"torchtune.models.<family>.{prefix}_<model>"
    pkg, _, name = tt_model.rpartition(".")
    return f"{pkg}.{prefix}_{name}"


def _torchtune_cmds(change: str, s: TrainingSettings, tt_model: str | None) -> list[str]:
    """torchtune recipe config overrides (``tune run RECIPE --config CFG key=value``)."""
    if change == "expandable":  # an environment variable, not a recipe key
        return ["export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # before tune run"]
    if change == "micro_batch":
        accum = "" if s.optimizer_in_backward else f" gradient_accumulation_steps={s.grad_accum}"
        return [f"batch_size={s.micro_batch}{accum}   # torchtune override"]
    if change == "checkpointing":
        return ["enable_activation_checkpointing=True   # torchtune override"]
    if change == "chunked_loss":
        return ["loss._component_=torchtune.modules.loss.CEWithChunkedOutputLoss"]
    if change == "adam8bit":
        return ["optimizer._component_=bitsandbytes.optim.PagedAdamW8bit"]
    if change == "offload_activations":
        return ["enable_activation_offloading=True   # torchtune override"]
    if change in ("shard", "zero_next", "more_gpus", "offload"):
        extra = " fsdp_cpu_offload=True" if s.offload_optimizer or s.offload_params else ""
        return [f"tune run --nproc_per_node {s.gpus} full_finetune_distributed --config CONFIG"
                f"{extra}   # torchtune FSDP recipe"]  # fmt: skip
    if change == "lora_rank":
        return [f"model.lora_rank={s.lora_rank} model.lora_alpha={2 * s.lora_rank}"]
    if change == "lora":
        return [
            f"tune run lora_finetune_single_device --config CONFIG "
            f"model._component_={_tt_builder(tt_model, 'lora')}   # torchtune LoRA recipe"
        ]
    return [f"tune run lora_finetune_single_device --config CONFIG "
            f"model._component_={_tt_builder(tt_model, 'qlora')}   # torchtune QLoRA"]  # fmt: skip


def _oomkit_cmd(s: TrainingSettings, model: str) -> str:
    """``oomkit estimate`` that reproduces the numbers of ``s`` (see ``estimate --train``)."""
    parts = [f"oomkit estimate {model} --train {s.method}", f"--micro-batch {s.micro_batch}",
             f"--seq {s.seq}", f"--optimizer {s.optimizer}"]  # fmt: skip
    if s.grad_accum > 1:
        parts.append(f"--grad-accum {s.grad_accum}")
    if s.grad_checkpointing != "none":
        parts.append(f"--grad-checkpointing {s.grad_checkpointing}")
    if s.zero:
        parts.append(f"--zero {s.zero}")
    if s.fsdp:
        parts.append(f"--fsdp {s.fsdp_strategy}")
    if s.gpus > 1:
        parts.append(f"--gpus {s.gpus}")
    if s.method != "full":
        parts.append(f"--lora-rank {s.lora_rank}")
        if s.lora_targets:
            parts.append(f"--lora-targets {','.join(s.lora_targets)}")
    if s.loss == "chunked":
        parts.append("--chunked-loss")
    elif s.loss == "fused":
        parts.append("--fused-loss")
    if not s.master_weights:
        parts.append("--no-master-weights")
    if s.optimizer_in_backward:
        parts.append("--optimizer-in-backward")
    if s.offload_optimizer:
        parts.append("--offload-optimizer")
    if s.activation_offloading:
        parts.append("--activation-offloading")
    if s.kbit_prep:
        parts.append("--kbit-prep")
    if s.expandable_segments:
        parts.append("--expandable-segments")
    if s.mixed_precision != "bf16":
        parts.append(f"--mixed-precision {s.mixed_precision}")
    # the rest change the numbers too: a check command without them did not reproduce the plan
    # (`plan --train --attn-implementation eager` printed a check 4.9 GiB under its own peak)
    if s.nodes > 1:
        parts.append(f"--nodes {s.nodes}")
    if s.tp > 1:
        parts.append(f"--tp {s.tp}")
    if s.sp:
        parts.append("--sp")
    if s.offload_params:
        parts.append("--offload-params")
    if s.optimizer_impl != "foreach":
        parts.append(f"--optimizer-impl {s.optimizer_impl}")
    if s.attn_implementation != "sdpa":
        parts.append(f"--attn-implementation {s.attn_implementation}")
    if s.fragmentation_fraction is not None:
        parts.append(f"--fragmentation {s.fragmentation_fraction}")
    if s.softmax_saves_input:
        parts.append("--softmax-saves-input")
    if s.compiled:
        parts.append("--compile" if s.compiled_loss else "--compile --no-compile-loss")
    if not s.fused_experts_unquantized:  # any 4.x release: experts quantized one by one
        parts.append("--transformers-version 4.57")
    return " ".join(parts)


#: the ``oomkit estimate ... --train`` command of a setting (``oomkit plan --train`` prints it)
oomkit_estimate_command = _oomkit_cmd
