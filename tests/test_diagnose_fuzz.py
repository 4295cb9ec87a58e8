"""Property tests: parsers and the doctor never raise, on random text and mutated real messages."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.parse import PARSERS
from oomkit.diagnose.text import split_lines

LOGS = Path(__file__).parent / "fixtures" / "oom_logs"
REAL = [p.read_text(encoding="utf-8") for p in sorted(LOGS.glob("*.txt"))]


def _run_all(text: str) -> None:
    lines = split_lines(text)
    for parser in PARSERS:
        events, facts = parser(lines)
        assert isinstance(events, list)
        assert isinstance(facts, dict)
    d = diagnose_text(text)
    d.to_dict()
    assert 0.0 <= d.confidence <= 1.0


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_random_text(text: str) -> None:
    _run_all(text)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(REAL),
    st.integers(min_value=0, max_value=2000),
    st.integers(min_value=0, max_value=2000),
    st.text(max_size=20),
    st.sampled_from(["", "9" * 40, "-1", "1e309", "\u00a0", "\n", "GiB", "nan", "0.00000001"]),
)
def test_mutated_real_messages(base: str, cut: int, pos: int, junk: str, num: str) -> None:
    text = base[: max(1, cut)] + junk + num + base[pos:]
    _run_all(text)
