"""Blocking until a directory changes, without a polling loop where possible.

Linux: one ``inotify`` instance (through libc) per process, shared by every follower
(closing an inotify descriptor waits for an RCU grace period, several milliseconds, so
each follower having its own would make every tail end late and every exit slow). The
thread that waits first reads the events for everyone and wakes the others. A waiter may
also pass a ``pidfd`` (readable once that process exits) to be woken by its death.
Elsewhere: a short sleep.
"""

from __future__ import annotations

import _thread
import os
import select
import struct
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_IN_MODIFY = 0x002
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE_SELF = 0x400
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE_SELF
_EVENT = struct.Struct("iIII")
#: how long to sleep per wait when inotify is not available
FALLBACK_INTERVAL = 0.005


def pidfd(pid: int | None) -> int | None:
    """A pidfd of process ``pid`` (readable once it exits), or None if unavailable or gone."""
    if not pid or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


class _Hub:
    """The process's inotify instance: watches by path, a change counter per watch."""

    def __init__(self, libc: Any, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        import threading  # only once something is watched: keeps the module cheap to import

        self._cond = threading.Condition()
        self._reading = False
        self._changes: dict[int, int] = {}
        self._refs: dict[int, int] = {}

    def add(self, directory: str) -> int | None:
        """Watches ``directory``; returns the watch id (None if it cannot be watched)."""
        with self._cond:
            wd = int(self._libc.inotify_add_watch(self._fd, os.fsencode(directory), _MASK))
            if wd < 0:
                return None
            self._refs[wd] = self._refs.get(wd, 0) + 1
            self._changes.setdefault(wd, 0)
            return wd

    def remove(self, wd: int) -> None:
        """Drops one use of watch ``wd`` (the watch goes with the last)."""
        with self._cond:
            self._refs[wd] -= 1
            if self._refs[wd] == 0:
                del self._refs[wd]
                del self._changes[wd]
                self._libc.inotify_rm_watch(self._fd, wd)

    def changes(self, wd: int) -> int:
        """How many events watch ``wd`` has seen."""
        with self._cond:
            return self._changes.get(wd, 0)

    def wait(self, wd: int, seen: int, timeout: float, extra_fd: int | None) -> bool:
        """Blocks until watch ``wd`` has seen more than ``seen`` events or ``timeout`` passes.

        Returns True if ``extra_fd`` became readable (only noticed while this thread reads).
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._changes.get(wd, 0) == seen:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                if self._reading:
                    self._cond.wait(remaining)
                    continue
                self._reading = True
                self._cond.release()
                try:
                    fds = [self._fd] if extra_fd is None else [self._fd, extra_fd]
                    ready, _, _ = select.select(fds, [], [], remaining)
                    data = self._drain() if self._fd in ready else b""
                finally:
                    self._cond.acquire()
                    self._reading = False
                self._count(data)
                self._cond.notify_all()
                if extra_fd is not None and extra_fd in ready:
                    return True
            return False

    def _drain(self) -> bytes:
        chunks = []
        try:
            while True:
                chunks.append(os.read(self._fd, 65536))
        except BlockingIOError:
            pass
        return b"".join(chunks)

    def _count(self, data: bytes) -> None:
        pos = 0
        while pos + _EVENT.size <= len(data):
            wd, _, _, length = _EVENT.unpack_from(data, pos)
            pos += _EVENT.size + length
            if wd in self._changes:
                self._changes[wd] += 1


_hub: _Hub | None = None
_hub_lock = _thread.allocate_lock()
_hub_failed = False


def _get_hub() -> _Hub | None:
    global _hub, _hub_failed
    with _hub_lock:
        if _hub is None and not _hub_failed:
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
            except (OSError, AttributeError):
                fd = -1
            if fd < 0:
                _hub_failed = True
            else:
                _hub = _Hub(libc, fd)
        return _hub


class DirWatch:
    """Wakes up when files in ``directory`` change or process ``pid`` exits."""

    def __init__(self, directory: str, pid: int | None = None) -> None:
        self._hub = _get_hub()
        self._wd = self._hub.add(directory) if self._hub is not None else None
        self._seen = self._hub.changes(self._wd) if self._hub is not None and self._wd is not None else 0
        self._pidfd = pidfd(pid)

    def wait(self, timeout: float) -> None:
        """Returns after a change, the process's exit, or ``timeout`` seconds."""
        if self._hub is None or self._wd is None:
            time.sleep(min(timeout, FALLBACK_INTERVAL))
            return
        if self._hub.wait(self._wd, self._seen, timeout, self._pidfd) and self._pidfd is not None:
            os.close(self._pidfd)  # the process is gone: stop watching it, the caller rechecks
            self._pidfd = None
        self._seen = self._hub.changes(self._wd)

    def close(self) -> None:
        """Stops watching."""
        if self._hub is not None and self._wd is not None:
            self._hub.remove(self._wd)
            self._wd = None
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
