"""Prose that states a load failed and the two sizes: what loading needs against what is there.

"显存不足，模型加载失败：需要约 15GB 显存，当前只有 12GB 可用" / "failed to load the model: it needs
about 15GB of VRAM but only 12GB is available" (review 17). A numberless message read as prose
gets the base rate's guess (the batch); these sentences state the phase (loading:
:func:`oomkit.diagnose.prior_stated.stated_phase`, in any of its languages) and the arithmetic
that decides it.

Mechanism: a loader places the weights (and what it allocates with them) before the first step
and keeps them resident, so a load whose stated need is above the stated available memory fails
whatever the batch or context: ``model_too_large``, the cause the doctor's own ``--when load``
answer decides (:mod:`oomkit.diagnose.user_phase`). Only where the runtime rule left the cause
open (:func:`oomkit.diagnose.rules_stated.fallback`), and not where the words name host RAM
(a load into RAM is the host's: ``names_host_memory``).
"""

from __future__ import annotations

import re

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import Fix
from oomkit.diagnose.prior_stated import stated_phase
from oomkit.diagnose.rules_extra import names_host_memory
from oomkit.diagnose.rules_stated import fallback
from oomkit.units import format_bytes, parse_size

__all__ = ["stated_load_need_over_available"]

# a size as prose writes it ("15GB", "15 GB", "12G", "7.5GiB"); CJK follows a unit directly
# ("15GB显存"), so the end is "no further Latin letter", not \b
_SIZE = r"(?P<{0}>\d{{1,5}}(?:\.\d{{1,2}})?)\s?(?P<{0}u>[GM]i?B|[GM])(?![A-Za-z])"
_NEED = re.compile(
    r"(?i)(?:\bneeds?|\brequires?|\brequired|需要|需)\s{0,3}"
    r"(?:about\s|around\s|approximately\s|roughly\s|at\s+least\s|~|约|大约|至少)?\s{0,2}"
    + _SIZE.format("n")
)
_AVAILABLE = re.compile(
    r"(?i)(?:\bonly(?:\s+has)?|\bhas\s+only|\bavailable:?|\bfree:?|只有|仅有|仅剩|只剩|剩余|可用)\s{0,3}"
    + _SIZE.format("a")
    + r"|"
    + _SIZE.format("b")
    + r"\s{0,3}(?:is\s+|are\s+)?(?:available|free|可用)"
)


#: the generic reading's sentence that this rule answers
_OPEN = " The phase (loading vs running) and the free memory would decide the cause."


def _size(m: re.Match[str], g: str) -> int | None:
    if m[g] is None:
        return None
    return parse_size(m[g] + m[g + "u"])


def stated_load_need_over_available(
    result: Analysis, e: OomEvent, ctx: LogContext
) -> Analysis | None:
    """A load the text says failed, needing more than it says is available (module docstring)."""
    del ctx
    text = e.text
    if not fallback(result) or result.cause == "model_too_large":
        return None
    if stated_phase(text) not in ("load", "load_device") or names_host_memory(text):
        return None
    need_m, avail_m = _NEED.search(text), _AVAILABLE.search(text)
    if need_m is None or avail_m is None:
        return None
    need, avail = _size(need_m, "n"), _size(avail_m, "a") or _size(avail_m, "b")
    if need is None or avail is None or need <= avail:
        return None
    return Analysis(
        cause="model_too_large",
        confidence=0.6,
        explanation=result.explanation.split(" Neither the numbers")[0].replace(_OPEN, "")
        + f" The text says loading the model failed and states the sizes: it needs about "
        f"{format_bytes(need)} and {format_bytes(avail)} is available. What a load places stays "
        "resident before any batch or context, so the model (at this precision) does not fit: "
        f"{format_bytes(need - avail)} short.",
        fixes=(
            Fix(
                title="Load a smaller or more quantized model",
                why=f"the load needs {format_bytes(need)} against {format_bytes(avail)}; 8-bit "
                "weights are half of 16-bit ones, 4-bit about a quarter.",
                commands=(
                    "a 4-bit (GGUF Q4_K_M, AWQ/GPTQ, bitsandbytes nf4) build of the same model",
                    "the next smaller model size",
                ),
                expected_saving_bytes=None,
            ),
            Fix(
                title="Offload part of the model to CPU RAM",
                why=f"keeps about {format_bytes(avail)} on the GPU and the rest in RAM (slower).",
                commands=(
                    'from_pretrained(name, device_map="auto", max_memory={0: "'
                    + f'{max(1, avail * 9 // 10 >> 30)}GiB", "cpu": "64GiB"}})',
                    "-ngl <fewer layers>   # llama.cpp",
                ),
                expected_saving_bytes=None,
            ),
        ),
    )
