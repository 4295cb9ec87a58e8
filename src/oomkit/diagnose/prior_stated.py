"""The phase a message's own words state, for the base rate's finer key (docs/doctor-causes.md
section 8).

A traceback or a runtime's stage places most failures (:func:`oomkit.diagnose.taxonomy.phase_of`).
Prose has neither: an issue title, a sentence pasted with ``CUDA out of memory``. Its words can
still say what the run was doing when it failed:

* ``load``: loading the model or its weights ("when loading the model", "fails to load",
  ``from_pretrained``, "load shards", 模型加载). Loaders materialise a checkpoint before the
  first step (``torch.load`` and safetensors read into host RAM, then ``.to(device)`` copies), so
  what fails there is what stays resident, in host RAM or on the device. ``load_device`` where
  the words name the device it was loading onto (GPU, VRAM, CUDA, HBM, a card): the device's
  memory, not the host's, ran out.
* ``training``: a training or fine-tuning run (train, fine-tune, SFT, LoRA, epoch, backward,
  optimizer, DreamBooth, GRPO/PPO/DPO): the step holds weights, gradients, optimizer states and
  the activations kept for backward.
* ``inference``: inference, generation, prediction, evaluation, serving requests: the step holds
  the weights and one forward pass's activations (or the KV cache).

Neither a traceback nor a stage is overruled: :func:`stated_phase` reads words only where the
phase is ``unknown``. Words naming both training and inference state nothing (``""``).

>>> stated_phase("The app fails to load the model: not enough memory")
'load'
>>> stated_phase("OOM when loading the model on a 3090")
'load_device'
>>> stated_phase("I'm trying to load this on to two 3090s and it is OOMing")
'load_device'
>>> stated_phase("OOM while fine-tuning Llama-2-7b with LoRA")
'training'
>>> stated_phase("CUDA out of memory during inference with a long prompt")
'inference'
>>> stated_phase("CUDA out of memory.")
''
"""

from __future__ import annotations

import re

__all__ = ["STATED_PHASES", "stated_phase"]

#: the values of :func:`stated_phase` besides ``""`` (nothing stated)
STATED_PHASES = ("load", "load_device", "training", "inference")

# the model or its weights being loaded (not a "load test", a "workload" or a "download": \b
# and the lookahead keep those out)
_LOAD = re.compile(
    r"(?i)\b(?:from_pretrained|load_state_dict|load_checkpoint|load_model"
    r"|(?:when|while|during|on|at)\s+(?:the\s+)?(?:model\s+)?load(?:ing)?\b(?![- ]test)"
    r"|load(?:s|ed|ing)?\s+(?:the\s+|a\s+|my\s+|this\s+|our\s+)?(?:whole\s+|full\s+|base\s+)?"
    r"(?:models?|weights|checkpoints?|ckpt|shards?|pipeline|lora|gguf|safetensors)\b"
    r"|(?:to|not|cannot|can't|unable\s+to|fail(?:s|ed)?\s+to)\s+load\b(?![- ]test))"
    r"|模型加载|加载模型|载入模型"
)
_TRAINING = re.compile(
    r"(?i)\b(?:train(?:s|ed|ing|er)?|fine[- ]?tun(?:e|es|ed|ing)|finetun(?:e|es|ed|ing)|sft"
    r"|q?lora|epochs?|backward|optimi[sz]er|dreambooth|grpo|ppo|dpo|rlhf"
    r"|pre-?train(?:ing|ed)?)\b|微调|训练"
)
_INFERENCE = re.compile(
    r"(?i)\b(?:inference|infer(?:s|red|ring)?|generat(?:e|es|ed|ing|ion)|predict(?:s|ed|ing|ion)?"
    r"|eval(?:uat(?:e|es|ed|ing|ion))?|sampling|serv(?:e|es|ed|ing)|requests?|prompts?"
    r"|txt2img|img2img|upscal(?:e|es|ed|ing))\b|推理"
)


# the words name the device the load was filling: a GPU, its memory, its runtime, a card; a
# card model counted in the plural ("load this on to two 3090s", "8 A100s", doccause17) names
# the device as surely as the singular
_DEVICE = re.compile(
    r"(?i)\b(?:gpus?|vram|cuda\w*|hbm\d?|rocm|hip|metal|mps|xpu|npu|tpu|device|cards?"
    r"|(?:rtx|gtx)\s*\d{3,4}\w*|[ahlvt]\d{1,3}0?(?:-\d+g)?s?|\d{4}\s*tis?|[34]0[5-9]0(?:\s*ti)?s?"
    r"|50[6-9]0s?|tensor\s+parallel\w*)\b|显存|显卡"
)


def stated_phase(text: str) -> str:
    """The phase ``text``'s words state: ``load`` (``load_device`` where the words name the
    device it was loading onto), ``training``, ``inference``, or ``""``."""
    if _LOAD.search(text):
        return "load_device" if _DEVICE.search(text) else "load"
    training = _TRAINING.search(text) is not None
    inference = _INFERENCE.search(text) is not None
    if training == inference:
        return ""
    return "training" if training else "inference"
