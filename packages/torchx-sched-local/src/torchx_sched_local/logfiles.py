"""Replica log files: written by the supervisor, read by ``log_iter``.

Each replica directory holds the bytes of its two output streams, ``stdout.log`` and
``stderr.log``, each byte stored once, and three indexes:

* ``stdout.idx``, ``stderr.idx``: 16-byte entries ``(end offset, time in ns)``: every line
  of that stream ending at or before ``end offset`` (and after the previous entry's) was
  complete at that time;
* ``combined.idx``: 32-byte entries ``(end offset, time in ns, stream number, padding)``
  (0: stdout, 1: stderr) in the order the lines were completed: the ``combined`` stream
  is read through it from the two logs, so it interleaves whole lines and copies nothing.

Entries are written only at line boundaries, so a reader can cut a log at any entry
without splitting a line, and ``since``/``until`` select whole index segments. Times never
decrease within an index. A partial line is simply not indexed until its end arrives (the
supervisor holds no output in memory, whatever the line length). An unterminated last line
gets a ``\\n`` only when another attempt of the replica follows; a replica's very last line
is indexed as written (``torchx log`` gives back the bytes the job wrote).

This module imports only the standard library: the supervisor uses it too.
"""

from __future__ import annotations

import bisect
import codecs
import errno
import os
import struct
from collections.abc import Callable, Iterable, Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

#: the streams stored in files, by stream number; ``combined`` is an index over them
STORED = ("stdout", "stderr")
COMBINED = "combined"

_ENTRY = struct.Struct("<qq")
_CENTRY = struct.Struct("<qqq8x")  # 32 bytes: an entry never straddles a page (all or nothing)
_BLOCK = 1 << 20
#: characters ``str.splitlines`` treats as line breaks besides ``\n``
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class FileCache:
    """Append-only files kept open, at most ``limit`` at a time (the least recently used is closed).

    Bounds the supervisor's file descriptors whatever the number of replicas. A file that
    was unlinked meanwhile (its log directory removed) is re-created, directory and all.

    Files under ``root`` (the job's log root, opened once, before any replica runs) are opened
    through it, one directory at a time (``openat`` with ``O_NOFOLLOW``): a replica that
    replaces its log directory (or its role's) with a symlink cannot make the supervisor
    write elsewhere; the write fails (``ELOOP``/``ENOTDIR``) and is counted as dropped output.
    """

    def __init__(self, limit: int, root: str | None = None, root_fd: int = -1) -> None:
        self.limit = limit
        self._fds: dict[str, int] = {}  # path -> fd, least recently used first
        self.root = root
        #: the log root, held open (kept across the supervisor's handover); -1: not held
        self.root_fd = root_fd
        #: replica directories opened through it, least recently used first (at most ``limit // 8``)
        self._dirs: dict[str, int] = {}
        if root is not None and root_fd < 0:
            try:
                self.root_fd = os.open(root, _DIR_FLAGS)
            except OSError:
                self.root_fd = -1

    def fd(self, path: str) -> int:
        """An fd appending to ``path`` (created 0600, never through a symlink).

        Raises:
            OSError: the file cannot be opened or created
        """
        fd = self._fds.pop(path, None)
        if fd is not None and os.fstat(fd).st_nlink == 0:  # removed under us: start a new file
            os.close(fd)
            fd = None
        if fd is None:
            while len(self._fds) >= self.limit:
                self._close_oldest()
            fd = self._open(path)
        self._fds[path] = fd
        return fd

    def _open(self, path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_APPEND) -> int:
        flags |= os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            return self._open_at(path, flags, create_dirs=False)
        except FileNotFoundError:
            return self._open_at(path, flags, create_dirs=True)
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE) or not (self._fds or self._dirs):
                raise
            while self._dirs:  # out of descriptors: give back the directories and half of our files
                os.close(self._dirs.popitem()[1])
            for _ in range(len(self._fds) // 2 + 1 if self._fds else 0):
                self._close_oldest()
        return self._open_at(path, flags, create_dirs=True)

    def _open_at(self, path: str, flags: int, create_dirs: bool) -> int:
        """Opens ``path``: through the held log root, one directory at a time, never following a
        symlink (else by path, for files outside it or when the root is gone)."""
        root = self.root
        if self.root_fd >= 0 and root is not None and os.fstat(self.root_fd).st_nlink == 0 and create_dirs:
            os.close(self.root_fd)  # the whole log root was removed: re-create it, hold the new one
            self.root_fd = -1
            if not _has_symlink(root):
                os.makedirs(root, mode=0o700, exist_ok=True)
                self.root_fd = os.open(root, _DIR_FLAGS)
        if self.root_fd < 0 or root is None or not path.startswith(root + os.sep):
            if create_dirs:
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            return os.open(path, flags, 0o600)
        directory, name = os.path.split(path)
        held = self._dirs.pop(directory, None)
        if held is not None:
            try:
                fd = os.open(name, flags, 0o600, dir_fd=held)
                self._dirs[directory] = held
                return fd
            except FileNotFoundError:  # the directory was removed: walk again
                os.close(held)
        dirs = directory[len(root) + 1 :].split(os.sep) if directory != root else []
        opened: list[int] = []
        try:
            at = self.root_fd
            for part in dirs:
                try:
                    at = os.open(part, _DIR_FLAGS, dir_fd=at)
                except FileNotFoundError:
                    if not create_dirs:
                        raise
                    os.mkdir(part, 0o700, dir_fd=at)
                    at = os.open(part, _DIR_FLAGS, dir_fd=at)
                opened.append(at)
            fd = os.open(name, flags, 0o600, dir_fd=at)
            if opened:  # keep the replica's directory: its other files open with one call
                self._dirs[directory] = opened.pop()
                while len(self._dirs) > max(1, self.limit // 8):
                    os.close(self._dirs.pop(next(iter(self._dirs))))
            return fd
        except OSError as e:
            raise OSError(e.errno, e.strerror, path) from None
        finally:
            for fd in opened:
                os.close(fd)

    def touch(self, path: str, create_dirs: bool = True) -> None:
        """Creates the empty file ``path`` (a marker), mode 0600, the way log files are opened;
        ``create_dirs=False``: only in a directory that exists (never re-creates a removed one).

        Raises:
            OSError: it cannot be created
        """
        flags = os.O_WRONLY | os.O_CREAT
        if create_dirs:
            fd = self._open(path, flags)
        else:
            fd = self._open_at(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW, create_dirs=False)
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)

    def _close_oldest(self) -> None:
        path = next(iter(self._fds))
        os.close(self._fds.pop(path))

    def forget(self, path: str) -> None:
        """Closes ``path`` if it is open."""
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """Closes every file (and the directories held to open them; not the log root)."""
        while self._fds:
            self._close_oldest()
        while self._dirs:
            os.close(self._dirs.popitem()[1])


class StreamWriter:
    """Appends whole lines and their index entries to one stream of one replica.

    The files are created on the first write (a replica that prints nothing costs no file).
    Output that cannot be stored (full disk, no file descriptors, unwritable directory) is
    dropped and counted, never raised: ``dropped`` bytes, ``error`` the first reason
    (``ENOSPC on <path>``). After a drop, the rest of the interrupted line is dropped too
    and the stored fragment is ended, so the stream stays a sequence of whole lines.
    """

    def __init__(self, base: str, files: FileCache, combined: CombinedIndex | None = None, number: int = 0) -> None:
        self._combined = combined
        self._number = number
        self._log = base + ".log"
        self._idx = base + ".idx"
        self._files = files
        self._size = -1  # unknown until the log is first opened
        self._indexed = 0
        self._last_t = 0
        self._skipping = False
        self._open_line = False  # the stored bytes end inside a line
        self.dropped = 0
        self.error: str | None = None

    def write(self, data: bytes, t: int) -> None:
        """Appends ``data`` (read at time ``t``) and indexes the lines it completes."""
        if self._skipping:
            newline = data.find(b"\n")
            if newline < 0:
                self.dropped += len(data)
                return
            self.dropped += newline + 1
            data = data[newline + 1 :]
            self._skipping = False
            if self._open_line:  # end the fragment stored before the drop
                self._append(b"\n", t)
        if data:
            self._append(data, t)

    def _append(self, data: bytes, t: int) -> None:
        path = self._log
        written = 0
        try:
            fd = self._files.fd(path)
            if self._size < 0:
                self._size = self._indexed = os.fstat(fd).st_size
            view = memoryview(data)
            while written < len(data):
                written += os.write(fd, view[written:])
        except OSError as e:
            self._dropped(e, path, len(data) - written)
            if written:
                self._size += written
                self._open_line = data[written - 1] != 10
            return
        self._size += written
        self._open_line = data[-1] != 10
        newline = data.rfind(b"\n")
        if newline >= 0:
            self._mark(self._size - len(data) + newline + 1, t)

    def _dropped(self, e: OSError, path: str, count: int) -> None:
        self.dropped += count
        self._skipping = True
        if self.error is None:
            name = errno.errorcode.get(e.errno or 0, e.strerror or str(e))
            self.error = f"{name} on {path}"
        self._files.forget(path)

    def seal(self, t: int, final: bool = False) -> None:
        """Ends the stored output before another attempt writes (an unterminated last line gets its
        ``\\n``), or for good (``final``: the job's last line is indexed as written, without one,
        so the stream is byte-exact; a fragment cut short by a write error is still ended);
        retries an index entry that could not be written."""
        cut_short = self._skipping
        self._skipping = False
        if self._open_line and (not final or cut_short):
            self._append(b"\n", t)
        elif self._size > self._indexed:
            self._mark(self._size, t)

    def _mark(self, offset: int, t: int) -> None:
        """Indexes the lines up to ``offset`` (an entry is written whole or not at all: entries never
        straddle a page)."""
        self._last_t = max(t, self._last_t)
        try:
            os.write(self._files.fd(self._idx), _ENTRY.pack(offset, self._last_t))
            if self._combined is not None:
                self._combined.add(offset, self._last_t, self._number)
        except OSError as e:  # the lines are stored; the next entry that can be written covers them
            if self.error is None:
                self.error = f"{errno.errorcode.get(e.errno or 0, str(e))} on {e.filename or self._idx}"
            self._files.forget(self._idx)
            return
        self._indexed = offset


class CombinedIndex:
    """``combined.idx`` of one replica: which stream completed which lines, in order.

    An entry that cannot be written is not lost: the stream's next entry covers its lines.
    """

    def __init__(self, path: str, files: FileCache) -> None:
        self._path = path
        self._files = files
        self._last_t = 0

    def add(self, offset: int, t: int, number: int) -> None:
        """Lines of stream ``number`` up to ``offset`` were complete at ``t``.

        Raises:
            OSError: the entry could not be written (``filename`` set)
        """
        self._last_t = max(t, self._last_t)
        try:
            os.write(self._files.fd(self._path), _CENTRY.pack(offset, self._last_t, number))
        except OSError as e:
            self._files.forget(self._path)
            e.filename = self._path
            raise


def _has_symlink(path: str) -> bool:
    """True if a component of absolute ``path`` that exists is a symlink."""
    current = os.sep
    for part in path.split(os.sep):
        if not part:
            continue
        current = os.path.join(current, part)
        if os.path.islink(current):
            return True
        if not os.path.exists(current):
            return False
    return False


def replica_writers(log_dir: str, files: FileCache) -> dict[str, StreamWriter]:
    """The writers of a replica's ``stdout`` and ``stderr`` (which also index ``combined``)."""
    combined = CombinedIndex(os.path.join(log_dir, COMBINED + ".idx"), files)
    return {
        name: StreamWriter(os.path.join(log_dir, name), files, combined, number) for number, name in enumerate(STORED)
    }


# ---------------------------------------------------------------------------------------- reading


def _split_lines(text: str) -> list[str]:
    """Lines of ``text`` (which ends with ``\\n``), each keeping its ``\\n``; only ``\\n`` breaks lines."""
    for ch in _OTHER_BREAKS:
        if ch in text:
            parts = text.split("\n")
            parts.pop()
            return [p + "\n" for p in parts]
    return text.splitlines(keepends=True)


def _read_range(f: BinaryIO, start: int, end: int) -> Iterator[list[str]]:
    """Lists of the lines in bytes ``[start, end)`` of open file ``f`` (both at line boundaries).

    Linear in the bytes read whatever the line lengths: a line longer than a block is
    collected in pieces and joined once.
    """
    if end <= start:
        return
    # bytes that are not UTF-8 become lone surrogates, which encode back to those very bytes
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    carry: list[str] = []  # pieces of a line not yet ended
    f.seek(start)
    remaining = end - start
    while remaining > 0:
        block = f.read(min(_BLOCK, remaining))
        if not block:
            break
        remaining -= len(block)
        text = decoder.decode(block, final=remaining <= 0)
        if carry:
            cut = text.find("\n") + 1
            if not cut:
                carry.append(text)
                continue
            carry.append(text[:cut])  # the long line ends here: joined once
            yield ["".join(carry)]
            carry = []
            text = text[cut:]
        cut = text.rfind("\n") + 1
        if cut:
            yield _split_lines(text[:cut])
        if cut < len(text):
            carry.append(text[cut:])
    if carry:
        yield ["".join(carry)]


class _Index:
    """The index of one stream of a replica (``combined``: over both stored streams), read incrementally."""

    def __init__(self, base: str) -> None:
        directory, stream = os.path.split(base)
        self.directory = directory
        self.combined = stream == COMBINED
        self.path = base + ".idx"
        self.width = (_CENTRY.size if self.combined else _ENTRY.size) // 8
        self.logs = STORED if self.combined else (stream,)
        self.pos = 0  # bytes of the index consumed
        self.starts = [0] * len(self.logs)  # per log: where its next unread line starts

    def read(self) -> memoryview:
        """Entries appended since the last call, as a flat ``q`` view (``width`` fields each)."""
        size = self.width * 8
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            data = b""
        data = data[: len(data) - len(data) % size]
        self.pos += len(data)
        return memoryview(data).cast("q")

    def window(self, entries: memoryview, since_ns: int | None, until_ns: int | None) -> tuple[int, int]:
        """Positions ``[lo, hi)`` of the entries whose time is in ``[since, until)``."""
        times = entries[1 :: self.width]
        lo = 0 if since_ns is None else bisect.bisect_left(times, since_ns)
        hi = len(times) if until_ns is None else bisect.bisect_left(times, until_ns)
        return lo, max(lo, hi)

    def skip(self, entries: memoryview, upto: int) -> None:
        """Marks the lines of entries ``[0, upto)`` as read without reading them."""
        for i in range(upto):
            self.starts[self._log(entries, i)] = entries[i * self.width]

    def _log(self, entries: memoryview, i: int) -> int:
        return entries[i * self.width + 2] if self.combined else 0

    def lines(self, entries: memoryview, lo: int, hi: int) -> Iterator[str]:
        """The lines of entries ``[lo, hi)`` (a run of entries of one log is read at once)."""
        files: dict[int, BinaryIO] = {}
        try:
            i = lo
            while i < hi:
                log = self._log(entries, i)
                j = i
                while j + 1 < hi and self._log(entries, j + 1) == log:
                    j += 1
                end = entries[j * self.width]
                if log not in files:
                    files[log] = open(os.path.join(self.directory, self.logs[log] + ".log"), "rb")  # noqa: SIM115 (closed below)
                for lines in _read_range(files[log], self.starts[log], end):
                    yield from lines
                self.starts[log] = end
                i = j + 1
        finally:
            for f in files.values():
                f.close()


def read_lines(base: str, since_ns: int | None = None, until_ns: int | None = None) -> Iterator[str]:
    """Every whole line stored so far in stream ``base`` (``.../<replica>/<stream>``), optionally by time."""
    index = _Index(base)
    entries = index.read()
    lo, hi = index.window(entries, since_ns, until_ns)
    if hi == lo:
        return iter(())
    index.skip(entries, lo)
    return index.lines(entries, lo, hi)


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
    from torchx.schedulers.streams import follow  # here: the supervisor imports this module, not that

    index = _Index(base)
    passed_until = False

    def read() -> Iterable[str] | None:
        nonlocal passed_until
        if passed_until:
            return None
        entries = index.read()
        if not len(entries):
            return []
        lo, hi = index.window(entries, since_ns, until_ns)
        index.skip(entries, lo)
        # a line at or after `until`: nothing later can match
        passed_until = hi < len(entries) // index.width
        return index.lines(entries, lo, hi)

    yield from follow(read, True, finished, wait)
