r"""Expert tensors on the CPU in a printed llama.cpp-family command: ``--n-cpu-moe N`` (or
koboldcpp's ``--moecpu N``), or the ``-ot`` rules themselves when they move only some of each
layer's expert tensors.

``--n-cpu-moe N`` is shorthand for the overrides ``blk\.{i}\.ffn_(up|down|gate)_exps`` -> CPU
for ``i < N`` (llama.cpp PR #15077, ``common/common.h`` ``llm_ffn_exps_block_regex``): all
three expert tensors of the first N layers. A rule set such as ``-ot 'ffn_(up|down)_exps=CPU'``
(kept in ``settings.override_tensor``; the estimate places only the up and down experts on the
CPU: :func:`oomkit.estimate.llamacpp_placement.moved_expert_kinds`) is not that: printed as
``--n-cpu-moe N`` it would move the gate experts too, and a plan that added ``--n-cpu-moe``
to it would move all three kinds of those layers (llama.cpp appends both to
``tensor_buft_overrides``: the union). Such rules are printed as they were estimated, one
``-ot`` value, comma-joined: llama.cpp ``common/arg.cpp`` declares ``{"--override-tensor",
"-ot"}, "<tensor name pattern>=<buffer type>,..."`` and ``parse_tensor_buffer_overrides``
splits the value on ``,``; koboldcpp's ``--overridetensors`` passes the string to the bundled
llama.cpp unchanged (koboldcpp.py 1.102 at 000115dd: "same as in llama.cpp").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from oomkit.spec.model import ModelSpec
from oomkit.spec.settings import InferenceSettings

__all__ = ["command_expert_settings", "partial_expert_rules"]


def partial_expert_rules(rules: Sequence[str] | None) -> str | None:
    """The ``-ot`` value (rules comma-joined) when ``rules`` move only some of each layer's
    ``ffn_{up,down,gate}_exps`` (what ``--n-cpu-moe`` cannot say); None when there are no
    rules or they move all three kinds (``--n-cpu-moe N`` is then the same placement).

    >>> partial_expert_rules(("ffn_(up|down)_exps=CPU",))
    'ffn_(up|down)_exps=CPU'
    >>> partial_expert_rules(("exps=CPU",)) is None
    True
    """
    from oomkit.estimate.llamacpp_placement import EXPERT_KINDS, moved_expert_kinds

    if not rules or moved_expert_kinds(rules) >= frozenset(EXPERT_KINDS):
        return None
    return ",".join(rules)


def command_expert_settings(spec: ModelSpec, settings: InferenceSettings) -> InferenceSettings:
    """``settings`` as a printed command must carry their expert placement: ``-ot`` rules read
    as the estimate reads them (:func:`oomkit.estimate.checks.expert_rules_settings`: whole
    layers -> ``n_cpu_moe``; partial rules kept, ``n_cpu_moe`` the layers they reach). A plan's
    own ``--n-cpu-moe`` count under partial rules is not what was estimated (the estimate keeps
    the rules' placement), so the rules win. A model without experts drops the rules (nothing
    to move); rules the placement model refuses (never estimated so) stay as given."""
    if not settings.override_tensor:
        return settings
    from oomkit.errors import InvalidSettingError
    from oomkit.estimate.checks import expert_rules_settings

    if spec.moe is None:
        return dataclasses.replace(settings, override_tensor=None)
    try:
        return expert_rules_settings(spec, settings)
    except InvalidSettingError:  # never estimated so: keep what was given
        return settings
