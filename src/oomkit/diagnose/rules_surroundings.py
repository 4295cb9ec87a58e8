"""The rule that reads the lines around the failing message (:mod:`oomkit.diagnose.paste_context`).

It applies after every rule that reads the message and its own line
(:func:`oomkit.diagnose.rules_evidence.refine_by_evidence`), only where those left the cause
open (:func:`oomkit.diagnose.rules_stated.fallback`), and never over host RAM (a statement about
the GPU does not explain a process the kernel killed for RAM).

:func:`stated_around`: a sentence of the paste outside the message (an issue title above the
traceback, the poster's remark between two log excerpts) states the fact one of the prose rules
reads (growth across steps, co-tenants on the device, one GPU of several taking the work,
fragmentation, the KV cache for a long context, a model larger than the memory...). The same
rule decides as if the sentence were the message's own line, 0.05 lower: a sentence lines away
may describe another attempt than the failure pasted, which the explanation names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from oomkit.diagnose.analysis import Analysis
from oomkit.diagnose.events import LogContext, OomEvent
from oomkit.diagnose.rules_stated import (
    colocated_rollout_engine,
    fallback,
    stated_cotenants,
    stated_growth,
)
from oomkit.diagnose.rules_stated_alloc import (
    stated_checkpoint_on_first_gpu,
    stated_dataset_accumulation,
    stated_fragmentation,
    stated_free_memory,
    stated_kv_for_context,
    stated_model_too_large,
    stated_one_gpu_of_several,
    stated_reload_on_several_gpus,
)
from oomkit.diagnose.rules_stated_budget import (
    stated_configured_cap,
    stated_context_budget,
    stated_eval_fails_training_fits,
    stated_full_weights_on_device,
)
from oomkit.diagnose.rules_stated_contrast import stated_context_contrast
from oomkit.diagnose.rules_stated_design import (
    stated_full_logits,
    stated_graph_kept_in_inference,
    stated_replay_buffer,
)
from oomkit.diagnose.rules_stated_held import (
    stated_context_too_large,
    stated_context_unset,
    stated_outputs_kept_on_device,
    stated_resident_models,
)
from oomkit.diagnose.rules_stated_history import stated_chat_history, stated_conversation_growth
from oomkit.diagnose.rules_stated_host import (
    stated_conversion_on_host,
    stated_pinned_host,
    stated_unified_memory,
)
from oomkit.diagnose.rules_stated_levers import (
    stated_batch_cut_still_fails,
    stated_kv_pool_took_memory,
    stated_process_outlives_exit,
)
from oomkit.diagnose.rules_stated_load import stated_load_need_over_available
from oomkit.diagnose.rules_stated_rerun import stated_rerun
from oomkit.diagnose.rules_stated_size import (
    stated_card_cannot_run,
    stated_lora_fits_full_does_not,
    stated_weights_exceed_card,
)
from oomkit.diagnose.rules_stated_state import stated_training_state_phase

__all__ = ["PROSE_RULES", "stated_around"]

_Rule = Callable[[Analysis, OomEvent, LogContext], "Analysis | None"]
#: the prose rules, in the order refine_by_evidence tries them on the message's own line
#: (tests/test_doctor_surroundings_rules.py checks that they are exactly the prose rules of
#: rules_evidence.EVIDENCE_RULES, in its order: a rule added there is read around the message too)
PROSE_RULES: tuple[_Rule, ...] = (
    stated_process_outlives_exit,
    stated_replay_buffer,
    stated_graph_kept_in_inference,
    stated_full_logits,
    stated_chat_history,
    stated_conversation_growth,
    stated_growth,
    stated_rerun,
    stated_eval_fails_training_fits,
    stated_fragmentation,
    colocated_rollout_engine,
    stated_cotenants,
    stated_resident_models,
    stated_checkpoint_on_first_gpu,
    stated_one_gpu_of_several,
    stated_reload_on_several_gpus,
    stated_kv_for_context,
    stated_context_unset,
    stated_context_too_large,
    stated_kv_pool_took_memory,
    stated_context_budget,
    stated_context_contrast,
    stated_configured_cap,
    stated_dataset_accumulation,
    stated_outputs_kept_on_device,
    stated_free_memory,
    stated_model_too_large,
    stated_training_state_phase,
    stated_load_need_over_available,
    stated_weights_exceed_card,
    stated_card_cannot_run,
    stated_lora_fits_full_does_not,
    stated_full_weights_on_device,
    stated_batch_cut_still_fails,
    stated_conversion_on_host,
    stated_unified_memory,
    stated_pinned_host,
)
#: how much less a sentence lines away weighs than the message's own line
_AWAY = 0.05
# GPU-side messages only: a host-RAM kill is read by its own rules
_HOST_KINDS = frozenset({"host_oom", "host_alloc_failed", "oom_killer", "cpu_oom"})


def _host(result: Analysis, e: OomEvent) -> bool:
    return result.cause == "host_ram" or e.kind in _HOST_KINDS or e.runtime == "os"


def stated_around(result: Analysis, e: OomEvent, ctx: LogContext) -> Analysis | None:
    """A sentence of the paste outside the failing message states a deciding fact.

    Mechanism: the prose rules state theirs (``rules_stated``, ``rules_stated_alloc``); what is
    new here is only *where* the statement sits. A pasted report puts the title or the
    poster's sentence on its own line and the runtime's message below it ("torchrun
    --nproc_per_node=2 ... all tensors are sent to cuda:0 first" above "cuda:0 OOM!"); the
    statement is about the same failure, so the rule it matches decides, at 0.05 less than on
    the message's own line, and the explanation quotes the line it came from. The first
    matching sentence (paste order) wins; a line that is an OOM message and nothing else was
    read by the rules already (:func:`oomkit.diagnose.paste_context.read_surroundings` leaves
    it out), while the words around a message on its own line are read here.
    """
    if not ctx.paste_prose or not fallback(result) or _host(result, e):
        return None
    for no, sentence in ctx.paste_prose:
        wide = dataclasses.replace(e, text=sentence)
        for rule in PROSE_RULES:
            found = rule(result, wide, ctx)
            if found is None or found.cause == result.cause:
                continue
            return dataclasses.replace(
                found,
                confidence=max(0.0, found.confidence - _AWAY),
                explanation=found.explanation + f" (This is read from line {no} of the paste, "
                "not from the failing message: if that line describes another attempt, it does "
                f"not decide this one.)",
            )
    return None
