"""Reading a log too large to keep whole: its head and tail, and the lines of the middle counted.

The doctor keeps a huge log's first and last bytes (:func:`oomkit.cli.doctor.read_log`). A line
number it reports must be the line in the FILE (``"line": 509019`` for the OOM on line 509,019 of
a 50 MB log, not the line in what was kept): the skipped middle's newlines are counted as its
bytes stream past (one ``bytes.count`` a chunk, nothing kept) and stand in its place as that
many newlines, so every reader of the text counts the file's lines.

>>> import io
>>> data, kept, skipped = read_head_tail(io.BytesIO(b"a\\n" * 10 + b"OOM\\n"), 8, 4, 4)
>>> data, kept, skipped
(b'a\\na\\n\\n\\n\\n\\n\\n\\n\\n\\nOOM\\n', 4, 16)
>>> data.split(b"\\n").index(b"OOM") + 1  # the OOM's line in the file
11
"""

from __future__ import annotations

import codecs
import collections
from typing import BinaryIO

__all__ = ["newline_of", "read_head_tail", "utf16_without_bom"]


def utf16_without_bom(block: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when every other byte of ``block`` is a NUL and the others
    are not (ASCII text written as UTF-16 without a byte-order mark), else None."""
    odd, even = block[1::2], block[0::2]
    if len(odd) < 8:
        return None
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return "utf-16-be"
    return None


def newline_of(head: bytes, sniff: int = 8000) -> bytes:
    """The bytes of a newline in the encoding the log's ``head`` shows (as ``decode_log``
    reads it: UTF-16 by its byte-order mark or its NULs, else UTF-8).

    >>> newline_of(b"ok\\n"), newline_of("ok".encode("utf-16-le") * 8)
    (b'\\n', b'\\n\\x00')
    """
    if head.startswith(codecs.BOM_UTF16_LE):
        return b"\n\x00"
    if head.startswith(codecs.BOM_UTF16_BE):
        return b"\x00\n"
    utf16 = utf16_without_bom(head[:sniff])
    return {"utf-16-le": b"\n\x00", "utf-16-be": b"\x00\n"}.get(utf16 or "", b"\n")


def read_head_tail(fh: BinaryIO, limit: int, head_bytes: int, chunk: int) -> tuple[bytes, int, int]:
    """``fh``'s first ``head_bytes`` and its last bytes up to ``limit`` in all, read in
    ``chunk``-sized pieces, with the skipped middle replaced by as many newlines as it held
    (counted in the head's encoding; a UTF-16 newline never straddles two even-sized chunks);
    and the bytes of the tail kept and skipped (0 skipped: the input whole)."""
    head = fh.read(head_bytes)
    newline = newline_of(head)
    tail: collections.deque[bytes] = collections.deque()
    kept = skipped = lines = 0
    while piece := fh.read(chunk):
        tail.append(piece)
        kept += len(piece)
        while kept > limit - head_bytes and len(tail) > 1:
            gone = tail.popleft()
            skipped += len(gone)
            kept -= len(gone)
            lines += gone.count(newline)
    return head + newline * lines + b"".join(tail), kept, skipped
