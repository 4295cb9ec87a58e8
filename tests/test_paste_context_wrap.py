"""doccause22: a sentence hard-wrapped over two lines is read as one (paste_context._continued).

Issue bodies and commit messages are often wrapped at 72-80 columns, so the fact a prose rule
reads can start on the message's own line and end on the next: "... OOMs silently when another
process (apr-train)" / "uses 12.7GB of the RTX 4090's 24GB." Neither half states it. The lines
are joined only when the first does not end a sentence and the second starts with a lower-case
word.
"""

from __future__ import annotations

from corpus_records import corpus_text
from oomkit.diagnose.doctor import diagnose_text
from oomkit.diagnose.paste_context import read_surroundings

WRAPPED = (
    "`apr serve run --gpu` OOMs silently when another process (apr-train)\n"
    "uses 12.7GB of the RTX 4090's 24GB. The server starts but crashes on the first request."
)


def test_wrapped_sentence_is_joined_with_the_message_line() -> None:
    first = WRAPPED.split("\n")[0]
    prose = read_surroundings(WRAPPED, (first,), (1,)).prose
    # the joined sentence comes first (paste order: it starts on line 1), then line 2 alone
    assert prose == (
        (
            1,
            "apr serve run --gpu` OOMs silently when another process (apr-train) uses 12.7GB "
            "of the RTX 4090's 24GB. The server starts but crashes on the first request.",
        ),
        (
            2,
            "uses 12.7GB of the RTX 4090's 24GB. The server starts but crashes on the first "
            "request.",
        ),
    )


def test_wrapped_statement_decides_like_one_line() -> None:
    one_line = diagnose_text(WRAPPED.replace("\n", " "))
    wrapped = diagnose_text(WRAPPED)
    assert one_line.cause == wrapped.cause == "other_process_holding_memory"
    assert wrapped.confidence <= one_line.confidence  # read lines away: never more sure


def test_sentence_ends_and_capitals_are_not_joined() -> None:
    for text in (
        "My training run works for a while and then it stops.\nuses 12.7GB of the card",
        "My training run works for a while and then\nThe other process uses 12.7GB of the card",
    ):
        lines = text.split("\n")
        prose = [s for _, s in read_surroundings(text, (), (1,)).prose]
        assert all(s in lines for s in prose), prose


def test_development_record() -> None:
    d = diagnose_text(corpus_text("h37-realizar-178"))  # the thread: apr-train holds 12.7 GB
    assert d.cause == "other_process_holding_memory", d.explanation
