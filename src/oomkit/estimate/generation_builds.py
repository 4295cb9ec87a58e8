"""llama.cpp build numbers as dates (data for :mod:`oomkit.estimate.generations`).

llama.cpp generations are bounded by dates, so a release tag ``bNNNN`` is compared through its
date: anchors are approximate to a few days (b5274 = 2025-05-03 from a log in the validation
set; b1430 and b1446 from llama.cpp CI runs and issue #3780; builds 622, 665 and 879 from the
logs of PRs #1706, #1826 and #2325); builds in between are interpolated.
"""

from __future__ import annotations

import itertools
from datetime import date

__all__ = ["LLAMACPP_BUILD_DATES", "build_date"]

#: llama.cpp release tag -> date (approximate anchors; builds in between are interpolated)
LLAMACPP_BUILD_DATES: tuple[tuple[int, date], ...] = (
    # June-July 2023 builds print 'main: build = N (commit)', N the same commit count as the
    # later bNNNN tags; dated by the logs that show them (the Metal generations of that summer)
    (622, date(2023, 6, 5)),  # build 622 (f4c55d3), PR #1706's log of 2023-06-05
    (665, date(2023, 6, 12)),  # build 665 (4cf08d9), kiltyj's log in PR #1826, 2023-06-12
    (879, date(2023, 7, 22)),  # build 879 (b47b8a9) = PR #2325, llama.cpp#2325 2023-07-22
    (1000, date(2023, 8, 1)),
    (1430, date(2023, 10, 27)),  # b1430 = commit 2f9ec7e, PR #3776 (CI run of 2023-10-27)
    (1446, date(2023, 10, 31)),  # b1446 = 207b519, named in llama.cpp#3780 on 2023-10-31
    (2000, date(2024, 1, 27)),
    (3000, date(2024, 5, 26)),
    (4000, date(2024, 11, 1)),
    (4069, date(2024, 11, 13)),  # b4069 = 2e82ffa4a, PR #10257 (commit date 2024-11-13)
    (4127, date(2024, 11, 19)),  # b4127 holds 557924f22, PR #10385 (commit date 2024-11-19)
    (4500, date(2025, 1, 18)),
    (5000, date(2025, 3, 29)),
    (5274, date(2025, 5, 3)),
    (6000, date(2025, 7, 27)),
    (7000, date(2025, 11, 12)),
    (8000, date(2026, 2, 20)),
    # build 9495 (166fe2949) in llama.cpp issue #24085, filed 2026-06-03; without it b9409,
    # which Ollama pinned on 2026-05-29 (ollama commit 9db4bdbad), read as 2026-06-17, past
    # PR #23861 (2026-06-01)
    (9495, date(2026, 6, 3)),
)


def build_date(build: int) -> date:
    """The date of llama.cpp build ``build`` (interpolated between the anchors)."""
    anchors = LLAMACPP_BUILD_DATES
    if build <= anchors[0][0]:
        return anchors[0][1]
    for (b0, d0), (b1, d1) in itertools.pairwise(anchors):
        if build <= b1:
            days = (d1 - d0).days * (build - b0) / (b1 - b0)
            return date.fromordinal(d0.toordinal() + int(days))
    b_last, d_last = anchors[-1]
    return date.fromordinal(d_last.toordinal() + (build - b_last) // 12)
