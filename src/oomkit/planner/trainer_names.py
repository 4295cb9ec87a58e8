"""A training plan in the spelling of the trainer the user runs, not oomkit's flags.

``oomkit plan --train`` names its levers as oomkit flags (``--micro-batch``,
``--grad-checkpointing``...); :func:`trainer_options` spells the planned run as the libraries
take it, one line per library:

* HF Trainer / TRL (``SFTConfig`` subclasses it) ``TrainingArguments``: every field that sizes
  the step, stated even at oomkit's defaults because the Trainer's differ
  (``per_device_train_batch_size`` defaults to 8, ``bf16`` to False: fp32). Names checked in
  transformers 5.24 ``training_args.py``: ``per_device_train_batch_size`` (l.777), ``optim``
  (l.812), ``gradient_accumulation_steps`` (l.849), ``bf16``/``fp16`` (l.874/880),
  ``gradient_checkpointing`` (l.926), ``use_liger_kernel`` (l.957), ``fsdp`` (l.1447, the
  ``FSDPOption`` words of ``trainer_utils.py``: ``full_shard``, ``shard_grad_op``,
  ``hybrid_shard``, ``no_shard``, ``offload``, ``auto_wrap``), ``deepspeed`` (l.1463); the
  ``optim`` values are ``OptimizerNames`` (l.117-139): ``adamw_torch``, ``adamw_torch_fused``,
  ``adamw_bnb_8bit``, ``paged_adamw_32bit``, ``paged_adamw_8bit``, ``adamw_torch_8bit``
  (torchao), ``adafactor``, ``lion_32bit``, ``sgd``.
* PEFT ``LoraConfig(r=..., target_modules=...)`` (``peft/tuners/lora/config.py``; its ``r``
  defaults to 8, so it is always stated).
* bitsandbytes through transformers ``BitsAndBytesConfig(load_in_4bit=True,
  bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True)`` (``utils/quantization_config.py``
  l.443-466: the defaults are ``fp4`` and no double quantization, so both are stated).
* DeepSpeed JSON ``zero_optimization.stage``, ``offload_optimizer`` / ``offload_param``
  ``{"device": "cpu"}`` (DeepSpeed ``runtime/zero/config.py``; the ``ds_config.json`` the plan
  prints, :func:`oomkit.estimate.training_emit.emit_deepspeed_config`, has the same keys).
* accelerate's FSDP config ``fsdp_sharding_strategy``, ``fsdp_offload_params`` (the keys
  ``accelerate config`` writes, as in the plan's ``fsdp_config.yaml``).
* a run that steps the optimizer in backward (torchtune's ``optimizer_in_bwd``) as torchtune
  recipe overrides: ``batch_size``, ``gradient_accumulation_steps``,
  ``enable_activation_checkpointing``, ``optimizer_in_bwd``, ``loss._component_``.

>>> from oomkit.spec.settings import TrainingSettings
>>> s = TrainingSettings(method="qlora", micro_batch=2, grad_accum=2, optimizer="adamw8bit",
...                      grad_checkpointing="full")
>>> lines = trainer_options(s)
>>> print(lines[0].split("   #")[0])  # doctest: +NORMALIZE_WHITESPACE
TrainingArguments(per_device_train_batch_size=2, gradient_accumulation_steps=2,
    gradient_checkpointing=True, optim="adamw_bnb_8bit", bf16=True)
>>> [x.split("(")[0] for x in lines[1:]]
['LoraConfig', 'BitsAndBytesConfig']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oomkit.spec.settings import TrainingSettings

__all__ = ["HF_OPTIM", "trainer_options"]

#: oomkit's ``--optimizer`` as the Trainer's ``optim`` (transformers ``OptimizerNames``); the
#: plain AdamW by ``--optimizer-impl``: ``fused`` is ``adamw_torch_fused``
HF_OPTIM: dict[str, str] = {
    "adamw": "adamw_torch",
    "adamw8bit": "adamw_bnb_8bit",
    "paged_adamw": "paged_adamw_32bit",
    "paged_adamw8bit": "paged_adamw_8bit",
    "torchao_adamw8bit": "adamw_torch_8bit",
    "adafactor": "adafactor",
    "lion": "lion_32bit",
    "sgd": "sgd",
}
_TRAINER = "   # HF Trainer / TRL SFTConfig"
_DTYPE = {"bf16": "bfloat16", "fp16": "float16"}


def _q(text: str) -> str:
    return f'"{text}"'


def _hf_arguments(s: TrainingSettings) -> str:
    args = [f"per_device_train_batch_size={s.micro_batch}",
            f"gradient_accumulation_steps={s.grad_accum}"]  # fmt: skip
    if s.grad_checkpointing != "none":
        args.append("gradient_checkpointing=True")
    optim = HF_OPTIM.get(s.optimizer)
    if s.optimizer == "adamw" and s.optimizer_impl == "fused":
        optim = "adamw_torch_fused"
    if optim is not None:
        args.append(f"optim={_q(optim)}")
    if s.mixed_precision in ("bf16", "fp16"):
        args.append(f"{s.mixed_precision}=True")
    if s.loss == "fused":
        args.append("use_liger_kernel=True")
    if s.zero:
        args.append(f"deepspeed={_q('ds_config.json')}")
    if s.fsdp:
        words = [s.fsdp_strategy.lower(), *(["offload"] if s.offload_params else []),
                 "auto_wrap"]  # fmt: skip
        args.append(f"fsdp={_q(' '.join(words))}")
    return f"TrainingArguments({', '.join(args)}){_TRAINER}"


def _torchtune(s: TrainingSettings) -> str:
    args = [f"batch_size={s.micro_batch}"]
    if not s.optimizer_in_backward:
        args.append(f"gradient_accumulation_steps={s.grad_accum}")
    else:
        args.append("optimizer_in_bwd=True")
    if s.grad_checkpointing != "none":
        args.append("enable_activation_checkpointing=True")
    if s.activation_offloading:
        args.append("enable_activation_offloading=True")
    if s.loss == "chunked":
        args.append("loss._component_=torchtune.modules.loss.CEWithChunkedOutputLoss")
    if s.mixed_precision in ("bf16", "fp16"):
        args.append(f"dtype={s.mixed_precision}")
    if s.method != "full":
        args.append(f"model.lora_rank={s.lora_rank}")
    return f"{' '.join(args)}   # torchtune recipe overrides"


def _bnb_config(s: TrainingSettings) -> str:
    """QLoRA's ``BitsAndBytesConfig``: NF4 with double quantization (transformers' defaults are
    ``fp4`` and none); the compute dtype of the run (the default, float32, upcasts every 4-bit
    matmul's input: transformers warns of slow training); and, where FSDP or ZeRO-3 shards the
    4-bit weights, ``bnb_4bit_quant_storage`` in that dtype: "FSDP only supports sharding float
    data types" (bitsandbytes docs/source/fsdp_qlora.md, "the important change that enables
    FSDP-QLoRA"; PEFT's ZeRO-3 + QLoRA guide passes the same storage dtype)."""
    dtype = _DTYPE.get(s.mixed_precision)
    args = ["load_in_4bit=True", 'bnb_4bit_quant_type="nf4"', "bnb_4bit_use_double_quant=True"]
    if dtype:
        args.append(f"bnb_4bit_compute_dtype=torch.{dtype}")
        if s.fsdp or s.zero == 3:
            args.append(f"bnb_4bit_quant_storage=torch.{dtype}")
    return f"BitsAndBytesConfig({', '.join(args)})   # transformers + bitsandbytes"


def trainer_options(s: TrainingSettings) -> tuple[str, ...]:
    """The lines that set up ``s`` in the trainer's own spelling (see the module docstring)."""
    out: list[str] = []
    if s.optimizer_in_backward:
        out.append(_torchtune(s))  # torchtune's own way: no HF Trainer spelling
    else:
        out.append(_hf_arguments(s))
        if not s.master_weights and s.mixed_precision != "no":
            out.append(f"from_pretrained(..., dtype=torch.{_DTYPE[s.mixed_precision]})   # "
                       "parameters kept 16-bit: no fp32 master copy")  # fmt: skip
        if s.attn_implementation != "sdpa":  # sdpa is transformers' default: no line
            out.append(
                f'from_pretrained(..., attn_implementation="{s.attn_implementation}")'
                "   # transformers"
            )
        if s.loss == "chunked":
            out.append("chunked cross-entropy: the HF Trainer has none; use_liger_kernel=True is "
                       "Liger's fused one (size it with --fused-loss), torchtune's is "
                       "CEWithChunkedOutputLoss (torchtune.modules.loss)")  # fmt: skip
    if s.method != "full":
        targets = s.lora_targets
        if targets == ("all-linear",):
            tm = f", target_modules={_q('all-linear')}"
        elif targets:
            tm = f", target_modules=[{', '.join(_q(t) for t in targets)}]"
        else:
            tm = ""
        note = "" if targets else " (target_modules: PEFT's defaults)"
        out.append(f"LoraConfig(r={s.lora_rank}{tm})   # PEFT{note}")
    if s.method == "qlora":
        out.append(_bnb_config(s))
    if s.zero:
        zero = [f'"stage": {s.zero}']
        if s.offload_optimizer:
            zero.append('"offload_optimizer": {"device": "cpu"}')
        if s.offload_params:
            zero.append('"offload_param": {"device": "cpu"}')
        out.append(f'"zero_optimization": {{{", ".join(zero)}}}   # DeepSpeed ds_config.json')
    if s.fsdp:
        offload = "true" if s.offload_params else "false"
        out.append(f"fsdp_sharding_strategy: {s.fsdp_strategy}, fsdp_offload_params: {offload}"
                   "   # accelerate FSDP config")  # fmt: skip
    if s.expandable_segments:
        out.append("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # environment, before the "
                   "launch")  # fmt: skip
    return tuple(out)
