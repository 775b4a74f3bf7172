"""Replica log files: written by the supervisor, read by ``log_iter``.

Each replica directory holds three streams, ``stdout``, ``stderr`` and ``combined``, each
as ``<stream>.log`` (the bytes) plus ``<stream>.idx`` (an index). An index entry is 16
bytes, ``(end offset, time in ns)``: every line that ends at or before ``end offset`` (and
after the previous entry's) was complete at that time. Entries are written only at line
boundaries, so a reader can cut a log at any entry without splitting a line, and
``since``/``until`` select whole index segments. Times never decrease within an index.

The ``combined`` stream interleaves whole lines only: a partial line waits until its end
arrives. When an attempt of a replica ends, an unterminated last line gets a ``\\n`` so
every stored stream is a sequence of whole lines.

This module imports only the standard library: the supervisor uses it too.
"""

from __future__ import annotations

import bisect
import codecs
import itertools
import os
import struct
from collections.abc import Callable, Iterator

STREAMS = ("stdout", "stderr", "combined")

_ENTRY = struct.Struct("<qq")
_BLOCK = 1 << 20
#: a partial line longer than this is cut in the combined stream only (bounds supervisor memory)
MAX_PENDING_LINE = 64 << 20
#: characters ``str.splitlines`` treats as line breaks besides ``\n``
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class StreamWriter:
    """Appends whole lines and their index entries to one stream of one replica.

    The files are created on the first write (a replica that prints nothing costs no file).
    """

    def __init__(self, base: str) -> None:
        self._base = base
        self._fd = -1
        self._idx = -1
        self._size = 0
        self._indexed = 0
        self._last_t = 0

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        self._fd = os.open(self._base + ".log", flags, 0o600)
        self._idx = os.open(self._base + ".idx", flags, 0o600)
        self._size = self._indexed = os.fstat(self._fd).st_size

    def write(self, data: bytes, t: int) -> None:
        """Appends ``data`` (read at time ``t``) and indexes the lines it completes."""
        if not data:
            return
        if self._fd < 0:
            self._open()
        _write_all(self._fd, data)
        self._size += len(data)
        newline = data.rfind(b"\n")
        if newline >= 0:
            self._mark(self._size - len(data) + newline + 1, t)

    def seal(self, t: int) -> None:
        """Ends an attempt: an unterminated last line gets its ``\\n`` and is indexed."""
        if self._size > self._indexed:
            self.write(b"\n", t)

    def _mark(self, offset: int, t: int) -> None:
        self._last_t = max(t, self._last_t)
        os.write(self._idx, _ENTRY.pack(offset, self._last_t))
        self._indexed = offset

    def close(self) -> None:
        """Closes the files (if they were opened)."""
        if self._fd >= 0:
            os.close(self._fd)
            os.close(self._idx)
            self._fd = self._idx = -1


class LineJoiner:
    """Holds back a stream's partial line so the combined stream only gets whole lines."""

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> bytes:
        """The whole lines ``data`` completes (with what was pending); keeps the rest."""
        newline = data.rfind(b"\n")
        if newline < 0:
            self._pending += data
            if len(self._pending) <= MAX_PENDING_LINE:
                return b""
            return self.flush()
        out = bytes(self._pending) + data[: newline + 1]
        self._pending = bytearray(data[newline + 1 :])
        return out

    def flush(self) -> bytes:
        """What is pending, ended with ``\\n`` (empty if nothing is)."""
        if not self._pending:
            return b""
        out = bytes(self._pending) + b"\n"
        self._pending.clear()
        return out


# ---------------------------------------------------------------------------------------- reading


def _split_lines(text: str) -> list[str]:
    """Lines of ``text`` (which ends with ``\\n``), each keeping its ``\\n``; only ``\\n`` breaks lines."""
    for ch in _OTHER_BREAKS:
        if ch in text:
            parts = text.split("\n")
            parts.pop()
            return [p + "\n" for p in parts]
    return text.splitlines(keepends=True)


def _read_range(path: str, start: int, end: int) -> Iterator[list[str]]:
    """Lists of the lines in bytes ``[start, end)`` of ``path`` (both at line boundaries)."""
    if end <= start:
        return
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    carry = ""
    with open(path, "rb") as f:
        f.seek(start)
        remaining = end - start
        while remaining > 0:
            block = f.read(min(_BLOCK, remaining))
            if not block:
                break
            remaining -= len(block)
            text = carry + decoder.decode(block, final=remaining <= 0)
            cut = text.rfind("\n") + 1
            carry = text[cut:]
            if cut:
                yield _split_lines(text[:cut])
    if carry:
        yield [carry]


def _read_index(path: str, offset: int = 0) -> memoryview:
    """Index entries from byte ``offset`` on, as a flat ``q`` view: off0, t0, off1, t1, ..."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        data = b""
    data = data[: len(data) - len(data) % _ENTRY.size]
    return memoryview(data).cast("q")


def _window(index: memoryview, since_ns: int | None, until_ns: int | None) -> tuple[int, int]:
    """Positions ``[lo, hi)`` of the entries whose time is in ``[since, until)``."""
    times = index[1::2]
    lo = 0 if since_ns is None else bisect.bisect_left(times, since_ns)
    hi = len(times) if until_ns is None else bisect.bisect_left(times, until_ns)
    return lo, max(lo, hi)


def read_lines(base: str, since_ns: int | None = None, until_ns: int | None = None) -> Iterator[str]:
    """Every whole line stored so far in stream ``base`` (``.../<replica>/<stream>``), optionally by time."""
    index = _read_index(base + ".idx")
    offsets = index[0::2]
    lo, hi = _window(index, since_ns, until_ns)
    if hi == lo:
        return iter(())
    start = offsets[lo - 1] if lo > 0 else 0
    return itertools.chain.from_iterable(_read_range(base + ".log", start, offsets[hi - 1]))


def follow_lines(
    base: str,
    finished: Callable[[], bool],
    wait: Callable[[], None],
    since_ns: int | None = None,
    until_ns: int | None = None,
) -> Iterator[str]:
    """Lines of stream ``base`` as they are written, until ``finished()`` and everything is read.

    Args:
        base: the stream's path without extension
        finished: True once nothing more will be written (checked before the last read)
        wait: blocks until the files may have changed
        since_ns: skip lines completed before this time
        until_ns: stop at the first line completed at or after this time
    """
    index_pos = 0
    log_pos = 0
    while True:
        done = finished()
        index = _read_index(base + ".idx", index_pos)
        if len(index):
            index_pos += len(index) * 8
            lo, hi = _window(index, since_ns, until_ns)
            offsets = index[0::2]
            if hi > lo:
                start = offsets[lo - 1] if lo > 0 else log_pos
                for lines in _read_range(base + ".log", start, offsets[hi - 1]):
                    yield from lines
            log_pos = offsets[-1]
            if hi < len(offsets):  # a line at or after `until`: nothing later can match
                return
        elif done:
            return
        else:
            wait()
