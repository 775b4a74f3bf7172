"""The journal of a state directory: one ``fdatasync`` makes a submitted job's record durable.

``<state dir>/.journal/<boot id>.<machine id>.<host>`` is an append-only file of JSON records, one per
submitted job (the content of its ``app.json``) and one per deleted job. A submission writes
its job directory without forcing anything to disk, renames it into place, appends its record
and ``fdatasync``-s the journal: one wait for the disk per job instead of one per file and
directory. Replaying what a crash lost is :meth:`torchx_sched_local.store.JobStore.recover`'s
job; this module owns the file: its name, its records, its locking and its rotation.

* Records are written with one ``write`` to a file opened ``O_APPEND`` while holding a shared
  ``flock`` (concurrent submissions never interleave); each starts and ends with a newline, so
  a record a crash tore (its ``fdatasync`` never returned, nor did its submission) is one bad
  line that :func:`records` skips.
* A journal of the current boot is emptied once it passes :data:`ROTATE_AT` bytes: under an
  exclusive ``flock``, after ``syncfs()`` forced every job file written so far to disk.
* Journals are per machine (``/etc/machine-id`` and host name) and boot: a state directory
  shared by several machines (an NFS home) is replayed only by the machine that wrote the
  journal, after it booted again.

Linux only (the boot id comes from ``/proc``); elsewhere :func:`boot_id` is None and the store
fsyncs each file and directory instead. Standard library only.
"""

from __future__ import annotations

import _thread
import fcntl
import os
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the journal directory's name inside a state directory (a dot: never an app id)
JOURNAL_DIR = ".journal"
#: a journal of the current boot is emptied (after a ``syncfs()``) once it is this large
ROTATE_AT = 8 << 20
_BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
_MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
_boot_id: list[str | None] = []


def boot_id() -> str | None:
    """This boot's id (Linux), read once per process; None where the system has none."""
    if not _boot_id:
        try:
            with open(_BOOT_ID_FILE, "rb") as f:
                text = f.read().decode("ascii").strip()
            _boot_id.append(text if text and "." not in text and os.sep not in text else None)
        except (OSError, UnicodeDecodeError):
            _boot_id.append(None)
    return _boot_id[0]


def host_id() -> str:
    """This machine's name in journal names: its ``/etc/machine-id`` and its host name, so that
    two machines with one host name that share a state directory keep apart."""
    machine = ""
    for path in _MACHINE_ID_FILES:
        try:
            with open(path, "rb") as f:
                text = f.read(64).decode("ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isalnum():
            machine = text
            break
    host = os.uname().nodename.replace(os.sep, "_")
    return f"{machine}.{host}" if machine else host


def journal_name(boot: str) -> str:
    """The file name of this machine's journal for boot ``boot``."""
    return f"{boot}.{host_id()}"


def earlier_journals(directory: str, boot: str) -> list[str]:
    """Paths of this machine's journals in ``directory`` written before boot ``boot``."""
    mine = journal_name(boot)
    host = mine.split(".", 1)[1]
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return [
        os.path.join(directory, name)
        for name in sorted(names)
        if name != mine and not name.startswith(".") and name.split(".", 1)[-1] == host
    ]


def sync_filesystem(fd: int) -> None:
    """Forces to disk everything written to the file system that holds ``fd``: Linux's
    ``syncfs``, so that other file systems' pending writes (a busy NFS mount) do not hold the
    caller up; ``sync()`` (all of them) where there is no ``syncfs``."""
    try:
        import ctypes  # only here: a rotation is rare, and ctypes costs milliseconds to import

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syncfs(fd) == 0:
            return
    except (OSError, AttributeError):
        pass
    os.sync()


def records(fd: int) -> Iterator[dict[str, Any]]:
    """The whole records of the journal open on ``fd``, oldest first (torn ones are skipped)."""
    import json

    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    for line in b"".join(chunks).split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("app_id"), str):
            yield record


class Journal:
    """This host's journal of the current boot in one state directory, opened on first use."""

    def __init__(self, root: str, boot: str) -> None:
        self.directory = os.path.join(root, JOURNAL_DIR)
        self.path = os.path.join(self.directory, journal_name(boot))
        self._fd = -1
        # threads of one process share the journal's open file, hence its flock: this keeps
        # their records out of a rotation's window between its syncfs() and the truncation
        self._mutex = _thread.allocate_lock()

    def append(self, record: dict[str, Any]) -> None:
        """Appends ``record`` (it has an ``app_id``) and forces it to disk.

        Raises:
            OSError: it could not be written or forced to disk (the error names the journal)
        """
        import json

        line = b"\n" + json.dumps(record, separators=(",", ":"), default=str).encode() + b"\n"
        try:
            with self._mutex:
                fd = self._open()
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                with self._mutex:
                    written = os.write(fd, line)
                if written != len(line):  # a full disk: the torn line is skipped by readers
                    import errno

                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                os.fdatasync(fd)
                if os.fstat(fd).st_size > ROTATE_AT:
                    with self._mutex:
                        self._rotate(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as e:
            raise OSError(e.errno, e.strerror, self.path) from None

    def close(self) -> None:
        """Closes the journal (it is reopened on the next append)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _open(self) -> int:
        if self._fd < 0:
            try:
                os.mkdir(self.directory, 0o700)
            except FileExistsError:
                pass
            else:
                os.chmod(self.directory, 0o700)  # whatever the umask
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
            self._fd = os.open(self.path, flags, 0o600)
        return self._fd

    @staticmethod
    def _rotate(fd: int) -> None:
        """Empties the journal once every job file written so far is on disk. Skipped (left to a
        later append) while another process holds the journal."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        sync_filesystem(fd)
        os.ftruncate(fd, 0)  # if a crash loses this, the old records replay as no-ops: their jobs are on disk
