"""llama-cpp-python releases -> the llama.cpp tree each vendors (data for ``--runtime-version``).

``pip show llama-cpp-python`` prints the binding's version (``0.3.16``), not a llama.cpp build:
each release pins llama.cpp as the git submodule ``vendor/llama.cpp``. The commit is the
submodule pointer at the release tag (``git ls-tree v0.3.16 vendor/llama.cpp`` in
abetlen/llama-cpp-python; CHANGELOG.md names the same commits, "update llama.cpp to
ggml-org/llama.cpp@4df29be4f" under 0.3.35); the date is that of the binding's commit that moved
the submodule there (``git log -1 --format=%cs v0.3.16 -- vendor/llama.cpp``): the vendored
llama.cpp commit is that day's master or a little older, which is what llama.cpp's dated
generations (:mod:`oomkit.estimate.generations`) need.
"""

from __future__ import annotations

from datetime import date

__all__ = ["VENDORED_LLAMACPP", "vendored_llamacpp"]

#: (binding version, vendored llama.cpp commit, date the binding pinned it), oldest first
VENDORED_LLAMACPP: tuple[tuple[tuple[int, int, int], str, date], ...] = (
    ((0, 3, 0), "ea9c32be7", date(2024, 9, 25)),
    ((0, 3, 1), "c919d5db3", date(2024, 9, 29)),
    ((0, 3, 2), "74d73dc85", date(2024, 11, 15)),
    ((0, 3, 3), "ce8784bdb", date(2024, 12, 8)),
    ((0, 3, 4), "ce8784bdb", date(2024, 12, 8)),
    ((0, 3, 5), "26a8406ba", date(2024, 12, 9)),
    ((0, 3, 6), "f7cd13301", date(2025, 1, 8)),
    ((0, 3, 7), "794fe23f2", date(2025, 1, 28)),
    ((0, 3, 8), "7841fc723", date(2025, 3, 12)),
    ((0, 3, 9), "8733e0cf6", date(2025, 5, 8)),
    ((0, 3, 10), "8846aace4", date(2025, 7, 1)),
    ((0, 3, 11), "8846aace4", date(2025, 7, 1)),
    ((0, 3, 12), "a0374a67e", date(2025, 7, 6)),
    ((0, 3, 13), "bdca38376", date(2025, 7, 15)),
    ((0, 3, 14), "79e0b68c1", date(2025, 7, 16)),
    ((0, 3, 15), "9a9638954", date(2025, 8, 7)),
    ((0, 3, 16), "4227c9be4", date(2025, 8, 14)),
    ((0, 3, 17), "49bfddeca", date(2026, 3, 22)),
    ((0, 3, 18), "49bfddeca", date(2026, 3, 22)),
    ((0, 3, 19), "c0159f9c1", date(2026, 3, 25)),
    ((0, 3, 20), "f49e91787", date(2026, 4, 2)),
    ((0, 3, 21), "f53577432", date(2026, 4, 26)),
    ((0, 3, 22), "63d93d173", date(2026, 5, 2)),
    ((0, 3, 23), "7d442abf5", date(2026, 5, 10)),
    ((0, 3, 24), "af6528e6d", date(2026, 5, 31)),
    ((0, 3, 25), "210a6570c", date(2026, 6, 1)),
    ((0, 3, 26), "7c158fbb4", date(2026, 6, 4)),
    ((0, 3, 27), "465b1f0e7", date(2026, 6, 7)),
    ((0, 3, 28), "9e3b928fd", date(2026, 6, 7)),
    ((0, 3, 29), "f05cf4676", date(2026, 6, 13)),
    ((0, 3, 30), "e3a74b299", date(2026, 6, 15)),
    ((0, 3, 31), "f449e0553", date(2026, 6, 19)),
    ((0, 3, 32), "b3fed31b9", date(2026, 6, 28)),
    ((0, 3, 33), "78d2f5246", date(2026, 7, 5)),
    ((0, 3, 34), "e3546c794", date(2026, 7, 11)),
    ((0, 3, 35), "4df29be4f", date(2026, 8, 16)),
)


def vendored_llamacpp(version: tuple[int, int, int]) -> tuple[str, date] | None:
    """The llama.cpp commit and date a llama-cpp-python release vendors (None: not listed).

    >>> vendored_llamacpp((0, 3, 16))
    ('4227c9be4', datetime.date(2025, 8, 14))
    """
    for known, commit, when in VENDORED_LLAMACPP:
        if known == version:
            return commit, when
    return None
