"""Log streams and helpers for ``log_iter`` implementations."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import Enum


class Stream(str, Enum):
    """Which output of a replica to read."""

    STDOUT = "stdout"
    STDERR = "stderr"
    COMBINED = "combined"

    def __str__(self) -> str:
        return self.value


def filter_regex(regex: str, data: Iterable[str]) -> Iterator[str]:
    """Yields the lines of ``data`` that ``regex`` matches (``re.search``)."""
    import re

    pattern = re.compile(regex)
    return (line for line in data if pattern.search(line))


def split_lines(text: str) -> list[str]:
    """Splits text at each ``\n``, keeping it (the last piece may lack one); only ``\n``
    ends a line, as in TorchX."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def split_lines_iterator(chunks: Iterable[str]) -> Iterator[str]:
    """Splits each chunk with :func:`split_lines`, as TorchX does: a line cut across two
    chunks comes out as two pieces. Use :func:`lines_from_chunks` to get whole lines."""
    for chunk in chunks:
        yield from split_lines(chunk)


def lines_from_chunks(chunks: Iterable[str]) -> Iterator[str]:
    """Re-chunks a stream of text pieces into whole lines (keeping ``\n``; only ``\n`` ends a
    line); linear in the text's length however it is cut."""
    pending: list[str] = []
    for chunk in chunks:
        if "\n" not in chunk:
            pending.append(chunk)
            continue
        *lines, rest = chunk.split("\n")
        lines[0] = "".join(pending) + lines[0]
        for line in lines:
            yield line + "\n"
        pending = [rest] if rest else []
    if pending:
        yield "".join(pending)


def decode_chunks(chunks: Iterable[bytes]) -> Iterator[str]:
    """UTF-8 text of a byte stream (invalid bytes replaced); a character cut across chunks is
    kept whole. ``lines_from_chunks(decode_chunks(raw))`` turns raw log bytes into lines."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail
