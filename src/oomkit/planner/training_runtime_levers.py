"""Training levers that change what the runtime runs, not the recipe: the attention kernel and
the transformers release an MoE QLoRA loads its experts with.

Attention. transformers' default ``attn_implementation`` is ``sdpa``, but a model class that
sets ``_supports_sdpa = False`` runs ``eager_attention_forward`` instead
(:mod:`oomkit.estimate.hf_attention`): the ``B x a x S x S`` scores, their softmax (and with
soft-capping the ``tanh`` output) are saved for backward in every layer, 16 GiB a layer for
Gemma-2-9B at 8k. The reason is in the model code (transformers 5.24):

* ``models/gemma2/modeling_gemma2.py`` line 352-353: ``_supports_flash_attn = True``,
  ``_supports_sdpa = False  # sdpa does not support softcapping`` (Gemma-2's
  ``attn_logit_softcapping``); ``models/vaultgemma/modeling_vaultgemma.py`` line 343-344 the
  same. FlashAttention-2 takes the soft-cap as its ``softcap`` argument, which flash-attn has
  from 2.6.0; with an older flash-attn ``_process_flash_attention_kwargs``
  (``modeling_flash_attention_utils.py``) raises "This flash attention implementation does not
  support `softcap`". So these get ``flash_attention_2`` (flash-attn >= 2.6), on Ampere or
  newer GPUs only (flash-attn: "FlashAttention only supports Ampere GPUs or newer").
* gpt-oss (``models/gpt_oss/modeling_gpt_oss.py`` line 379-380) and MiMo-V2-Flash set
  ``_supports_sdpa = False`` for their attention sinks (``s_aux``), which the flash-attn 2
  package has no argument for: ``_process_flash_attention_kwargs`` passes ``s_aux`` only to a
  kernel that takes it (vLLM's FA3, FA4) and otherwise drops it, so flash_attention_2 would
  train a different model. No lever for them (nor for granite_swa, not checked).
* A run asked with ``eager`` on a model that supports SDPA: ``sdpa`` (PyTorch's fused kernels
  keep no ``S x S`` tensor), on every GPU.

The kernel changes no result (the same attention, computed without materialising the scores),
so the lever ranks with the free changes, after the allocator and the fused AdamW step.

transformers release. On transformers 5, an MoE's experts are fused 3-D ``nn.Parameter``
tensors that bitsandbytes' ``replace_with_bnb_linear`` (``nn.Linear`` only) leaves in bf16, so a
QLoRA of Qwen3-30B-A3B keeps ~57 GiB of experts 16-bit; transformers 4.x built each expert as an
``nn.Linear`` and quantized it to NF4 (release v5.0.0, ``MixtralExperts.gate_up_proj``;
bitsandbytes-foundation/bitsandbytes#1849; the generation ``v5-fused-experts`` of
:mod:`oomkit.estimate.generation_rows_transformers`). Where the user did not pin a release
(``--transformers-version``), transformers 4.57 (the last 4.x) is a lever for an MoE QLoRA.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from oomkit.estimate.hf_attention import SDPA_UNSUPPORTED, effective_attn_implementation
from oomkit.spec.hardware import DeviceTarget
from oomkit.spec.settings import TrainingSettings

__all__ = [
    "FLASH_SOFTCAP",
    "LAST_V4",
    "attention_lever",
    "flash_attn_gpus",
    "transformers_v4_lever",
]

Lever = Callable[[TrainingSettings], tuple[str, TrainingSettings] | None]

#: ``model_type`` values whose class sets ``_supports_sdpa = False`` for logit soft-capping and
#: ``_supports_flash_attn = True`` (module docstring): flash_attention_2 with flash-attn >= 2.6
FLASH_SOFTCAP: frozenset[str] = frozenset({"gemma2", "vaultgemma"})

#: the last transformers 4.x release (per-expert ``nn.Linear`` modules, quantized by bitsandbytes)
LAST_V4 = "4.57"


def flash_attn_gpus(devices: Iterable[DeviceTarget]) -> bool:
    """Every accelerator is a CUDA GPU of compute capability 8.0 or newer (flash-attn's floor);
    an unknown capability counts as new (as the estimator's pre-Ampere note does)."""
    gpus = [d for d in devices if d.backend != "cpu"]
    if not gpus:
        return False
    for d in gpus:
        if d.backend != "cuda":
            return False
        major, _, minor = (d.compute_capability or "").partition(".")
        if major.isdigit() and minor.isdigit() and (int(major), int(minor)) < (8, 0):
            return False
    return True


def attention_lever(model_type: str, flash_ok: bool) -> Lever:
    """The attention-kernel lever for a model of ``model_type`` (module docstring);
    ``flash_ok``: the GPUs run flash-attn (:func:`flash_attn_gpus`)."""

    def lever(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
        runs, _ = effective_attn_implementation(model_type, s.attn_implementation)
        if runs != "eager":
            return None
        if model_type not in SDPA_UNSUPPORTED:
            return (
                'sdpa attention in place of eager: no S x S scores kept (attn_implementation="sdpa"'
                "; --attn-implementation sdpa)",
                dataclasses.replace(s, attn_implementation="sdpa"),
            )
        if model_type not in FLASH_SOFTCAP or not flash_ok:
            return None
        return (
            "flash_attention_2 in place of eager: no S x S scores kept "
            '(attn_implementation="flash_attention_2", flash-attn >= 2.6 for the logit '
            "soft-capping; --attn-implementation flash_attention_2)",
            dataclasses.replace(s, attn_implementation="flash_attention_2"),
        )

    return lever


def transformers_v4_lever(moe: bool, pinned: bool) -> Lever:
    """transformers 4.57 for a QLoRA of an MoE (module docstring): offered only where the user
    did not pin a release (``pinned``) and the experts would stay 16-bit."""

    def lever(s: TrainingSettings) -> tuple[str, TrainingSettings] | None:
        if not moe or pinned or s.method != "qlora" or not s.fused_experts_unquantized:
            return None
        return (
            f"transformers {LAST_V4} (4.x): its per-expert nn.Linear modules are quantized to "
            "NF4, where transformers 5's fused experts stay 16-bit (bitsandbytes#1849; "
            f'pip install "transformers=={LAST_V4}.*"; --transformers-version {LAST_V4})',
            dataclasses.replace(s, fused_experts_unquantized=False),
        )

    return lever
