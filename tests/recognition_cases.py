"""The three recognition tests every wording family gets: each text alone, the whole family
inside the four log wrappers, and the near-misses that must stay silent."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from oomkit.diagnose.doctor import diagnose_text

#: the log lines an OOM message is pasted inside: a traceback, a rank prefix, a logger line and
#: a docker-compose service prefix
WRAPPERS = (
    'Traceback (most recent call last):\n  File "/app/run.py", line 12, in <module>\n'
    "    main()\n{}",
    "[rank0]: {}",
    "2025-03-01 10:00:00,123 - ERROR - {}",
    "worker-1  | {}",
)


def recognition_tests(
    ooms: Sequence[str], near_misses: Sequence[str]
) -> tuple[Callable[[str], None], Callable[[str], None], Callable[[str], None]]:
    """(each OOM recognised, all of them inside every wrapper, each near-miss silent)."""

    @pytest.mark.parametrize("text", ooms)
    def recognised(text: str) -> None:
        assert diagnose_text(text).oom_found, text

    @pytest.mark.parametrize("wrapper", WRAPPERS)
    def recognised_inside_a_log(wrapper: str) -> None:
        missed = [t for t in ooms if not diagnose_text(wrapper.format(t)).oom_found]
        assert missed == []

    @pytest.mark.parametrize("text", near_misses)
    def near_miss_is_silent(text: str) -> None:
        assert not diagnose_text(text).oom_found, text

    return recognised, recognised_inside_a_log, near_miss_is_silent
