"""Log streams and helpers for ``log_iter`` implementations."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from enum import Enum

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


class Stream(str, Enum):
    """Which output of a replica to read."""

    STDOUT = "stdout"
    STDERR = "stderr"
    COMBINED = "combined"

    def __str__(self) -> str:
        return self.value


def follow(
    read: Callable[[], Iterable[T] | None],
    should_tail: bool,
    ended: Callable[[], bool],
    wait: Callable[[], None],
) -> Iterator[T]:
    """The one follow-until-done loop of ``log_iter`` implementations: yields what ``read()``
    returns, reading again until the job is over.

    1. ``read()`` returns what is new since its last call (empty: nothing yet), or None when
       nothing more can match (e.g. an ``until`` bound was passed): then it stops at once.
    2. Without ``should_tail``: reads until a read returns nothing new, then stops.
    3. Following: after a read that returned nothing, asks ``ended()``; once the job is over
       it reads one last time (what was written just before the end) and stops; until then
       it calls ``wait()`` (a sleep, or a wait for the files to change) and reads again.
    """
    last = False
    while True:
        got = read()
        if got is None:
            return
        new = False
        for item in got:
            new = True
            yield item
        if new:
            continue
        if not should_tail or last:
            return
        last = ended()
        if not last:
            wait()


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


class Tee:
    """Copies what is appended to one or more source files into ``out`` (upstream's combined log).

    A daemon thread polls the sources (opened unbuffered, non-blocking, so named pipes work
    too) and appends each chunk to ``out``; ``write`` appends directly. The order between
    chunks of different sources, and between them and ``write``, is not guaranteed.
    ``close`` copies what is still unread, then closes the sources and ``out``: always call it.

    Args:
        out: a binary file open for writing (``open(path, "wb")``)
        sources: paths of the files to follow (at least one)
    """

    _CHUNK = 64 * 1024
    _POLL = 0.1

    def __init__(self, out: io.FileIO | io.BufferedIOBase, *sources: str) -> None:
        if not sources:
            raise ValueError("Tee needs at least one source")
        import threading  # only a Tee needs it: kept off `import torchx.runner`

        self.out = out
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sources: list[io.FileIO] = []
        try:
            for path in sources:
                src = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
                self._sources.append(src)
                os.set_blocking(src.fileno(), False)
        except BaseException:
            for opened in self._sources:
                opened.close()
            raise
        self._thread = threading.Thread(target=self._pump, name="torchx-tee", daemon=True)
        self._thread.start()

    def _drain(self) -> bool:
        """Copies one chunk of every source that has data; True when any had."""
        copied = False
        for f in self._sources:
            data = f.read(self._CHUNK)
            if data:
                copied = True
                self.write(data)
        return copied

    def _pump(self) -> None:
        while True:
            if self._drain():
                continue
            if self._stop.is_set():
                return
            self._stop.wait(self._POLL)

    def write(self, data: bytes) -> int:
        """Appends ``data`` to ``out``; returns the number of bytes written."""
        with self._lock:
            written = self.out.write(data)
            self.out.flush()
            return written

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._stop.is_set()

    def close(self) -> None:
        """Copies the rest of the sources, stops the thread and closes the sources and ``out``."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        with self._lock:
            for f in self._sources:
                f.close()
            self.out.close()
