"""Which vLLM releases know a model's ``rope_scaling`` type.

vLLM builds each attention layer's rotary embedding with ``get_rope``
(vllm/model_executor/layers/rotary_embedding.py), which dispatches on the config's
``rope_scaling`` type and ends with ``raise ValueError(f"Unknown RoPE scaling type
{scaling_type}")``: a release older than a type's implementation fails while it builds the
model, before any memory is sized (vllm#6689: Llama 3.1 on 0.5.3, "Unknown RoPE scaling type
extended"). So, like an unregistered architecture (:mod:`oomkit.estimate.vllm_support`), an
estimate or a plan of such a run is refused with one line naming the release and the type.

Rows: the type, the first release that has it, and the change that added it. Where the
change's merge date is not pinned down, ``first`` is the first release after the change's
pull request was opened: every older release certainly lacks the type (a refusal is never
wrong), a release between the opening and the merge is let through.

* ``linear``, ``dynamic``: vllm PR #555 (RoPE scaling, read from the model's config.json);
  opened after issue #464 ("RoPE scaling support?", 2023-07-14, no support then), so 0.1.2
  (2023-07-05) and older lack it; first 0.1.3.
* ``yarn``: vllm PR #1264 ("YaRN support implementation", opened 2023-10-05, after 0.2.0);
  first 0.2.1.
* ``longrope`` (and its former name ``su``, which oomkit's config reader reads as
  ``longrope``): vllm PR #4298 ("[Model] Adds Phi-3 support", opened 2024-04-23, the
  ``su``-scaled rotary embedding); first 0.4.1. PR #5595 (2024-06-17) later renamed the type
  ``longrope``.
* ``llama3``: Llama 3.1's configs say ``"rope_type": "llama3"``; vLLM 0.5.3 (PR #6553) knew it
  as ``extended`` and failed on them; PR #6693 ("[BugFix] Fix RoPE error in Llama 3.1",
  2024-07-23) made ``get_rope`` read ``llama3``, released the same day as 0.5.3.post1 (PR
  #6696, "Bump version to 0.5.3.post1 ... to resolve rope scaling issue in llama 3").
* ``mrope`` (Qwen2-VL): vllm PR #7905 ("[Model][VLM] Add Qwen2-VL model support",
  ``MRotaryEmbedding``), still under review on 2024-09-05, after 0.6.0; first 0.6.1.

DeepSeek-V2/V3's configs say ``yarn``; vLLM maps that to its own ``deepseek_yarn`` rotary
embedding (PR #4650, with the DeepSeek-V2 model itself), so no config oomkit reads carries
``deepseek_yarn`` and the ``yarn`` row covers those models' rope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from oomkit.errors import InvalidSettingError
from oomkit.spec.model import ModelSpec

__all__ = ["VLLM_ROPE_SUPPORT", "VllmRopeSupport", "check_vllm_rope"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmRopeSupport:
    """The first vLLM release whose ``get_rope`` builds one ``rope_scaling`` type."""

    rope_type: str
    first: str  # a release, possibly a post-release ("0.5.3.post1")
    #: a release dated before this lacks the type (for ``--runtime-version 2024-06`` forms)
    first_date: str
    source: str


VLLM_ROPE_SUPPORT: dict[str, VllmRopeSupport] = {
    r.rope_type: r
    for r in (
        VllmRopeSupport(
            rope_type="linear",
            first="0.1.3",
            first_date="2023-07-14",
            source="vllm PR #555",
        ),
        VllmRopeSupport(
            rope_type="dynamic",
            first="0.1.3",
            first_date="2023-07-14",
            source="vllm PR #555",
        ),
        VllmRopeSupport(
            rope_type="yarn",
            first="0.2.1",
            first_date="2023-10-05",
            source="vllm PR #1264",
        ),
        VllmRopeSupport(
            rope_type="longrope",
            first="0.4.1",
            first_date="2024-04-23",
            source="vllm PR #4298 (as 'su')",
        ),
        VllmRopeSupport(
            rope_type="llama3",
            first="0.5.3.post1",
            first_date="2024-07-23",
            source="vllm PR #6693",
        ),
        VllmRopeSupport(
            rope_type="mrope",
            first="0.6.1",
            first_date="2024-09-05",
            source="vllm PR #7905",
        ),
    )
}
VLLM_ROPE_SUPPORT["su"] = VLLM_ROPE_SUPPORT["longrope"]

_POST = re.compile(r"[.\-_]?post[.\-_]?(\d*)$")


def _release_key(text: str) -> tuple[tuple[int, ...], int]:
    """``"0.5.3.post1"`` -> ((0, 5, 3, 0), 1): the release and its post-release number
    (:func:`~oomkit.estimate.generations.parse_runtime_version` reads ``.postN`` as the
    release itself, which cannot tell 0.5.3 from 0.5.3.post1)."""
    from oomkit.estimate.generations import parse_runtime_version

    value = text.strip().lower()
    m = _POST.search(value)
    release = parse_runtime_version("vllm", value)
    assert not isinstance(release, date)
    return release, int(m.group(1) or 0) if m else 0


def check_vllm_rope(spec: ModelSpec, version: str | None) -> None:
    """Refuse a ``--runtime-version`` of vLLM whose ``get_rope`` lacks ``spec``'s rope type.

    Raises:
        InvalidSettingError: that release fails on the type (see the module doc).
    """
    kind = spec.rope_scaling_type
    if version is None or not version.strip() or kind is None:
        return
    row = VLLM_ROPE_SUPPORT.get(kind)
    if row is None:
        return
    from oomkit.estimate.generations import parse_runtime_version

    when = parse_runtime_version("vllm", version)
    if isinstance(when, date):
        older = when < date.fromisoformat(row.first_date)
    else:
        older = _release_key(version) < _release_key(row.first)
    if older:
        raise InvalidSettingError(
            f"vLLM {version.strip()} cannot run {spec.name}: its rope_scaling type "
            f"'{kind}' is first supported in vLLM {row.first} ({row.source}; older releases "
            f"fail with 'Unknown RoPE scaling type'); use --runtime-version {row.first} or later",
            setting="runtime_version",
            value=version,
        )
