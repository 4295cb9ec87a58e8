"""llama-cpp-python releases -> the llama.cpp tree each vendors (data for ``--runtime-version``).

``pip show llama-cpp-python`` prints the binding's version (``0.3.16``), not a llama.cpp build:
each release pins llama.cpp as the git submodule ``vendor/llama.cpp``. The commit is the
submodule pointer at the release tag (``git ls-tree v0.3.16 vendor/llama.cpp`` in
abetlen/llama-cpp-python; CHANGELOG.md names the same commits, "update llama.cpp to
ggml-org/llama.cpp@4df29be4f" under 0.3.35); the date is that of the binding's commit that moved
the submodule there (``git log -1 --format=%cs v0.3.16 -- vendor/llama.cpp``): the vendored
llama.cpp commit is that day's master or a little older, which is what llama.cpp's dated
generations (:mod:`oomkit.estimate.generations`) need.

The table starts at 0.2.30 (2024-01-18), the first release whose ``Llama.__init__`` defaults
are the ones :mod:`oomkit.estimate.llamacpp_python` models (n_ctx 512, n_batch 512,
n_gpu_layers 0, offload_kqv True, flash_attn absent before 0.2.68 and False from it: read at
each tag's llama_cpp/llama.py). 0.2.24-0.2.29 default ``offload_kqv: bool = False`` (the KV
cache on the CPU) and 0.2.0-0.2.23 predate the flag (llama.cpp offloaded the KV cache with
``-ngl`` beyond the layer count then): those are refused, not modelled as later ones.
"""

from __future__ import annotations

from datetime import date

__all__ = ["OFFLOAD_KQV_DEFAULT_SINCE", "VENDORED_LLAMACPP", "vendored_llamacpp"]

#: the first release with ``offload_kqv: bool = True`` (v0.2.30's llama_cpp/llama.py l.80)
OFFLOAD_KQV_DEFAULT_SINCE = (0, 2, 30)

#: (binding version, vendored llama.cpp commit, date the binding pinned it), oldest first
VENDORED_LLAMACPP: tuple[tuple[tuple[int, int, int], str, date], ...] = (
    ((0, 2, 30), "57e2a7a52", date(2024, 1, 18)),
    ((0, 2, 31), "a5cacb22b", date(2024, 1, 19)),
    ((0, 2, 32), "504dc37be", date(2024, 1, 21)),
    ((0, 2, 33), "faa3526a1", date(2024, 1, 25)),
    ((0, 2, 34), "6db2b41a7", date(2024, 1, 27)),
    ((0, 2, 35), "d2f650cb5", date(2024, 1, 28)),
    ((0, 2, 36), "2aed77eb0", date(2024, 1, 29)),
    ((0, 2, 37), "fea4fd4ba", date(2024, 1, 30)),
    ((0, 2, 38), "1cfb5372c", date(2024, 1, 31)),
    ((0, 2, 39), "b08f22c88", date(2024, 2, 6)),
    ((0, 2, 40), "3bdc4cd0f", date(2024, 2, 11)),
    ((0, 2, 41), "895407f31", date(2024, 2, 13)),
    ((0, 2, 42), "ea9c8e114", date(2024, 2, 13)),
    ((0, 2, 43), "8084d5544", date(2024, 2, 14)),
    ((0, 2, 44), "4524290e8", date(2024, 2, 15)),
    ((0, 2, 45), "89febfed9", date(2024, 2, 21)),
    ((0, 2, 46), "ba2135cca", date(2024, 2, 21)),
    ((0, 2, 47), "973053d8b", date(2024, 2, 21)),
    ((0, 2, 48), "15499eb94", date(2024, 2, 23)),
    ((0, 2, 49), "15499eb94", date(2024, 2, 23)),
    ((0, 2, 50), "15499eb94", date(2024, 2, 23)),
    ((0, 2, 51), "c39373398", date(2024, 2, 25)),
    ((0, 2, 52), "a33e6a0d2", date(2024, 2, 26)),
    ((0, 2, 53), "cb49e0f8c", date(2024, 2, 27)),
    ((0, 2, 54), "c2224f003", date(2024, 3, 1)),
    ((0, 2, 55), "973113429", date(2024, 3, 2)),
    ((0, 2, 56), "c2101a2e9", date(2024, 3, 8)),
    ((0, 2, 57), "ac9ee6a4a", date(2024, 3, 18)),
    ((0, 2, 58), "ba0c7c70a", date(2024, 3, 29)),
    ((0, 2, 59), "60cdf40cc", date(2024, 4, 3)),
    ((0, 2, 60), "75cd4c772", date(2024, 4, 6)),
    ((0, 2, 61), "ba5e134e0", date(2024, 4, 10)),
    ((0, 2, 62), "3b8f1ec4b", date(2024, 4, 18)),
    ((0, 2, 63), "0e4802b2e", date(2024, 4, 19)),
    ((0, 2, 64), "4e96a812b", date(2024, 4, 23)),
    ((0, 2, 65), "46e12c469", date(2024, 4, 25)),
    ((0, 2, 66), "8843a98c2", date(2024, 4, 29)),
    ((0, 2, 67), "8843a98c2", date(2024, 4, 29)),
    ((0, 2, 68), "77e15bec6", date(2024, 4, 30)),
    ((0, 2, 69), "6ecf3189e", date(2024, 5, 2)),
    ((0, 2, 70), "c0e6fbf8c", date(2024, 5, 8)),
    ((0, 2, 71), "911b3900d", date(2024, 5, 8)),
    ((0, 2, 72), "911b3900d", date(2024, 5, 8)),
    ((0, 2, 73), "25c6e82e7", date(2024, 5, 10)),
    ((0, 2, 74), "b228aba91", date(2024, 5, 12)),
    ((0, 2, 75), "13ad16af1", date(2024, 5, 15)),
    ((0, 2, 76), "0df0aa8e4", date(2024, 5, 24)),
    ((0, 2, 77), "bde7cd3cd", date(2024, 6, 4)),
    ((0, 2, 78), "fd5ea0f89", date(2024, 6, 10)),
    ((0, 2, 79), "9c77ec1d7", date(2024, 6, 19)),
    ((0, 2, 80), "023b8807e", date(2024, 7, 2)),
    ((0, 2, 81), "968967376", date(2024, 7, 2)),
    ((0, 2, 82), "7fdb6f73e", date(2024, 7, 9)),
    ((0, 2, 83), "081fe431a", date(2024, 7, 22)),
    ((0, 2, 84), "4730faca6", date(2024, 7, 28)),
    ((0, 2, 85), "398ede5ef", date(2024, 7, 31)),
    ((0, 2, 86), "725e3d943", date(2024, 8, 6)),
    ((0, 2, 87), "be55695ef", date(2024, 8, 7)),
    ((0, 2, 88), "fc4ca27b2", date(2024, 8, 12)),
    ((0, 2, 89), "cfac111e2", date(2024, 8, 19)),
    ((0, 2, 90), "1d1ccce67", date(2024, 8, 29)),
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
