"""Validation of the vLLM LoRA settings of :class:`~oomkit.spec.settings.InferenceSettings`.

The ranges are vLLM's own (vllm/config/lora.py ``LoRAConfig``): ``max_lora_rank`` is one of
``MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]``, ``max_loras`` is
``Field(default=1, ge=1)``, ``max_cpu_loras`` "must be >= max_loras" (``_validate_lora_config``)
and ``lora_dtype`` is ``Literal["auto", "float16", "bfloat16"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oomkit.errors import InvalidSettingError
from oomkit.validate import MAX_TOKENS, check_bool, check_choice, check_int

if TYPE_CHECKING:
    from oomkit.spec.settings import InferenceSettings

__all__ = [
    "LORA_DTYPES",
    "LORA_FIELDS",
    "LORA_RANKS",
    "LORA_SLOT_FIELDS",
    "MAX_LORAS",
    "check_lora_settings",
]

#: vllm/config/lora.py ``MaxLoRARanks``
LORA_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: vllm/config/lora.py ``LoRADType``
LORA_DTYPES: tuple[str, ...] = ("auto", "float16", "bfloat16")
#: adapters in one batch: vLLM has no upper bound, but every slot is preallocated on the GPU
#: in every LoRA layer; a larger count is a typo, not a run
MAX_LORAS = 4096
#: the settings that only mean something with ``enable_lora`` (set without it: an error)
LORA_SLOT_FIELDS = (
    "max_loras",
    "max_lora_rank",
    "max_cpu_loras",
    "fully_sharded_loras",
    "lora_dtype",
    "cudagraph_specialize_lora",
)
#: every LoRA setting (``InferenceSettings`` field names), for the lists that name them all
LORA_FIELDS = ("enable_lora", *LORA_SLOT_FIELDS)


def check_lora_settings(s: InferenceSettings) -> None:
    """Types and vLLM's ranges of the LoRA fields; the slot fields need ``enable_lora``.

    Raises:
        InvalidSettingError: one line naming the field and what vLLM accepts.
    """
    check_bool("enable_lora", s.enable_lora)
    check_bool("fully_sharded_loras", s.fully_sharded_loras)
    check_bool("cudagraph_specialize_lora", s.cudagraph_specialize_lora)
    check_int("max_loras", s.max_loras, lo=1, hi=MAX_LORAS, optional=True)
    check_int("max_cpu_loras", s.max_cpu_loras, lo=1, hi=MAX_TOKENS, optional=True)
    check_choice("lora_dtype", s.lora_dtype, LORA_DTYPES)
    rank = s.max_lora_rank
    if rank is not None:
        check_int("max_lora_rank", rank, lo=1, hi=LORA_RANKS[-1])
        if rank not in LORA_RANKS:
            raise InvalidSettingError(
                f"max_lora_rank must be one of {', '.join(map(str, LORA_RANKS))} "
                f"(vLLM LoRAConfig), got {rank}",
                setting="max_lora_rank",
                value=rank,
            )
    if s.max_cpu_loras is not None and s.max_cpu_loras < (s.max_loras or 1):
        raise InvalidSettingError(
            f"max_cpu_loras ({s.max_cpu_loras}) must be >= 'max_loras' ({s.max_loras or 1}) "
            "(vLLM LoRAConfig)",
            setting="max_cpu_loras",
            value=s.max_cpu_loras,
        )
    if not s.enable_lora:
        for name in LORA_SLOT_FIELDS:
            if getattr(s, name) is not None:
                raise InvalidSettingError(
                    f"{name} is set but 'enable_lora' is not: add it (vLLM ignores "
                    "the LoRA options without it) or drop the option",
                    setting=name,
                    value=None,
                )
