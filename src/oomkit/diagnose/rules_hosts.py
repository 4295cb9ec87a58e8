"""Analysis for the families of :mod:`oomkit.diagnose.parse_hosts` that the generic host-RAM rule
(``rules_serving.analyze_other``) does not answer: a request dropped for lack of KV-cache budget
(OpenVINO GenAI) and a device another process already half fills (MindSpore on Ascend).

The OS and scheduler kills of that module (jetsam, Android LMK, cgroup events, Ray) carry kind
``killed`` / ``oom_killer`` / ``host_oom`` and are host RAM by the generic rule.
"""

from __future__ import annotations

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.fixes import generic, size_text

__all__ = ["analyze_hosts"]


def _openvino_kv() -> Analysis:
    return Analysis(
        cause="kv_cache_or_context",
        confidence=0.6,
        explanation="OpenVINO GenAI's continuous-batching scheduler dropped the request "
        "(GenerationStatus::IGNORED, 'generation run into out-of-memory condition'): the "
        "prompt plus its generated tokens did not fit the KV-cache budget (cache_size / "
        "num_kv_blocks), which is fixed when the pipeline starts, not the device memory.",
        fixes=(
            generic(
                "Give the KV cache a larger budget",
                "the scheduler's block pool is sized once from cache_size; a sequence longer "
                "than the pool holds is dropped.",
                ("SchedulerConfig.cache_size = 16  # GB", "--cache-size-gb 16"),
            ),
            generic(
                "Shorten the prompt or max_new_tokens",
                "the KV cache a sequence needs is linear in its length.",
                ("max_new_tokens=512",),
            ),
        ),
    )


def _mindspore_half(e: OomEvent) -> Analysis:
    free, total = e.free_bytes, e.total_bytes
    held = f" ({size_text(free)} of {size_text(total)} free)" if free and total else ""
    return Analysis(
        cause="other_process_holding_memory",
        confidence=0.6,
        explanation="MindSpore reserves its memory pool from the device's free memory and "
        f"refuses to start when less than half of it is free{held}: another process (an "
        "earlier run, a data-augmentation worker on the same card) holds the rest.",
        fixes=(
            generic(
                "Stop what else holds the NPU, or run on a free card",
                "the pool is a share of free memory at start-up.",
                ("npu-smi info", "ps -ef | grep python", "export DEVICE_ID=<free card>"),
            ),
        ),
    )


def analyze_hosts(e: OomEvent, ctx: LogContext) -> Analysis | None:
    """Analysis for the two families above, or ``None`` for other events."""
    del ctx  # these messages are read on their own
    if e.format == "openvino_genai_request_ignored":
        return _openvino_kv()
    if e.format == "mindspore_free_less_than_half":
        return _mindspore_half(e)
    return None
