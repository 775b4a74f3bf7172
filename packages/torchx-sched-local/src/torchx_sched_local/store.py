"""The on-disk record of local jobs: one directory per job under a per-user state directory.

Layout of ``<state dir>/<app_id>/``:

* ``lock``: held (``flock`` LOCK_EX) by the job's supervisor for as long as it lives; the
  launcher takes it before the job becomes visible and hands it to the supervisor, so
  "lock free and state not final" means the supervisor died.
* ``app.json``: the request, written once by the launcher (roles, per-replica commands).
* ``state.json``: the job's status, rewritten whole by its single writer (the supervisor,
  or a canceller that took the lock after the supervisor died).
* ``cancel``: present once someone asked to cancel.

A job directory is assembled under a hidden name (``.new-<app_id>-<pid>``) and renamed
into place when complete, so a visible job always has both files and a failed submission
leaves nothing. The files of a job being assembled are written in place (nobody reads them
before the rename); every later change replaces a file atomically (temporary file, ``rename``).
Files are mode 0600, directories 0700, whatever the umask.

Durability, with as few ``fsync`` calls as it needs (each one waits for the disk): what must
survive a machine crash is forced to disk, what the crash makes moot is not.

* Before ``schedule`` returns, the job's record is on disk: one ``fdatasync`` of the
  state directory's journal (:mod:`.journal`), whose record holds the job's ``app.json``.
  The job's files and directories are not forced to disk one by one: after a crash,
  :meth:`JobStore.recover` restores from the journal what the crash lost of them (a missing
  directory, a torn ``app.json``) and records the job FAILED ("the machine stopped").
  Without a journal (no boot id: not Linux; or it cannot be written) ``app.json``, the job
  directory and the state directory are fsync'ed instead (3 fsyncs).
* The first ``state.json`` (SUBMITTED) and every state the supervisor writes while the job
  runs are atomic but not forced to disk: after a crash the supervisor is gone, and a job
  whose state is not final while nobody holds its lock reads as FAILED ("the supervisor
  died"); one recorded before the machine last booted whose state file the crash left
  empty or torn reads as FAILED too ("the machine stopped", ``LocalScheduler``).
* The final state (SUCCEEDED, FAILED, CANCELLED) the supervisor writes is forced to disk
  with one journal record (``fdatasync``; :func:`write_final_state`), restored from there by
  :meth:`JobStore.recover` if the crash lost the file; without a journal, the file and its
  directory are fsync'ed (2). A final state written by someone else (a watchdog, a canceller
  for a dead supervisor: rare paths) is fsync'ed with its directory.
A file that cannot be read (truncated, empty, not JSON, wrong shape) raises
:class:`UnreadableJobError` for that job only.

Its files are made with the primitives core's ``torchx.util.durable`` uses (private, atomic,
durable: :mod:`._files`, a copy of core's ``torchx.util.files`` kept identical by a test).
This module imports only the standard library: the supervisor (``python -I -S``, no torchx)
uses it too.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Iterator

from torchx_sched_local._files import (
    fsync_dir,
    fsync_path,
    lock_held,
    naming,
    private_dir,
    private_fd,
    state_root,
    write_all,
    write_atomic,
)
from torchx_sched_local.journal import JOURNAL_DIR, Journal, boot_id, earlier_journals, records

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STATE_DIR_ENV = "TORCHX_LOCAL_STATE_DIR"

APP_FILE = "app.json"
STATE_FILE = "state.json"
LOCK_FILE = "lock"
CANCEL_FILE = "cancel"
DONE_FILE = ".done"
#: the states a job ends in
FINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
#: why a job reads FAILED when a machine crash cut it short
MACHINE_STOPPED = "the machine stopped while the job ran, before its state was stored"

_APP_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


class InvalidAppIdError(ValueError):
    """An app id that cannot name a local job (it could escape the state directory)."""


def default_state_dir() -> str:
    """``$TORCHX_LOCAL_STATE_DIR``, else ``$XDG_STATE_HOME/torchx/local``, else ``~/.local/state/torchx/local``."""
    return state_root("local", STATE_DIR_ENV)


def is_valid_app_id(app_id: str) -> bool:
    """True if ``app_id`` is a single safe path component (letters, digits, ``_.-``; no leading dot)."""
    return isinstance(app_id, str) and bool(_APP_ID.fullmatch(app_id))


def check_app_id(app_id: str) -> str:
    """Returns ``app_id`` if it is valid.

    Raises:
        InvalidAppIdError: it has a slash, starts with a dot, or has other characters
    """
    if not is_valid_app_id(app_id):
        raise InvalidAppIdError(
            f"invalid local app id {app_id!r}: use letters, digits, '_', '.', '-' (not starting with '.' or '-')"
        )
    return app_id


class UnreadableJobError(ValueError):
    """One file of one job cannot be read (truncated, empty, not JSON, wrong shape).

    Only that job is affected: ``list`` skips it with a warning, ``status``/``describe``
    raise this error, ``delete`` removes the job.

    Attributes:
        path: the file
        reason: what is wrong with it
        handle: the job's app handle, when known (for the hint on how to remove it)
        errno: the error number, when the file could not be read at all (``EACCES``; the file
            itself may be fine, so the message does not suggest removing the job); else None.
            A reader out of file descriptors or memory gets that ``OSError`` instead
    """

    def __init__(self, path: str, reason: str, handle: str = "", errno: int | None = None) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason
        self.handle = handle
        self.errno = errno

    def __str__(self) -> str:
        # a file that could not be opened at all (EACCES ...) may be whole: no hint to remove it
        hint = f"; `torchx delete {self.handle}` removes the job" if self.handle and self.errno is None else ""
        return f"unreadable local job file {self.path}: {self.reason}{hint}"


def proc_field(path: str, key: bytes) -> bytes | None:
    """The first word after ``key`` on the line of a ``/proc`` file that starts with it
    (``proc_field("/proc/stat", b"btime")``); None if there is none or the file cannot be read."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(key):
                    return line[len(key) :].split()[0]
    except (OSError, IndexError):
        pass
    return None


def boot_time() -> float:
    """When the machine last booted (seconds since the epoch; 0 if it cannot be told)."""
    value = proc_field("/proc/stat", b"btime ")
    return float(value) if value is not None and value.isdigit() else 0.0


#: the space a ``state.json`` reserves beyond its content (bytes; the file is padded with blanks to a
#: multiple of 4 KiB above this), so that the final state can be written in place on a full disk
STATE_SLACK = 2048


def state_reserve(replicas: int) -> int:
    """The room a job's ``state.json`` keeps beyond its content: its final state (every replica's
    outcome and exit code) then fits in place."""
    return STATE_SLACK + 128 * replicas


def reserved_size(length: int, slack: int) -> int:
    """``length`` plus at least ``slack`` bytes, rounded up to 4 KiB (what a filesystem allocates anyway)."""
    return (length + slack + 4095) // 4096 * 4096


def write_json(path: str, data: Any, sync_dir: bool = True, durable: bool = True, reserve: int = 0) -> None:
    """Writes ``data`` as JSON to ``path`` atomically (and durably), mode 0600 whatever the umask.

    ``reserve``: the file is padded with blanks (valid JSON whitespace) to
    ``reserved_size(len, reserve)`` bytes, so that a later :func:`rewrite_in_place` has room.

    The content goes to a temporary file that is renamed over ``path``; readers see the old
    or the new file, never a torn one. With ``durable``, the temporary file is fsync'ed
    before the rename and the directory after it (unless ``sync_dir`` is false: the caller
    fsyncs it once after several files; or the process is out of file descriptors: the
    write is done, so it is not reported as failed), so after a crash the file is whole.
    Without it nothing is forced to disk (see the module's "Durability"). On failure nothing
    is left behind.

    Raises:
        OSError: the file cannot be written (the error names ``path``)
    """
    write_atomic(path, encode_json(data, reserve), durable=durable)
    directory = os.path.dirname(path)
    if sync_dir and durable:
        try:
            fsync_dir(directory)
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):
                return  # out of descriptors: the file is whole and in place; the next journal commit persists it
            raise OSError(e.errno, e.strerror, directory) from None


def encode_json(data: Any, reserve: int = 0) -> bytes:
    """``data`` as compact JSON, padded with blanks to ``reserved_size(len, reserve)`` bytes (see
    :func:`write_json`)."""
    import json

    text = json.dumps(data, separators=(",", ":"), default=str).encode()  # one C-speed call, then one write
    if reserve:
        text = text.ljust(reserved_size(len(text), reserve) - 1) + b"\n"
    return text


def create_json(path: str, data: Any, reserve: int = 0) -> None:
    """Writes ``data`` as JSON (see :func:`write_json`) to the new file ``path``, mode 0600, nothing
    forced to disk: for a job directory being assembled under its staging name, which nobody reads
    before it is published whole (a crash before then leaves a staging directory that
    :meth:`JobStore.recover` mends from the journal), so no temporary file and rename are needed.

    Raises:
        OSError: the file exists or cannot be written (the error names ``path``)
    """
    text = encode_json(data, reserve)
    fd = private_fd(path, os.O_WRONLY | os.O_EXCL)
    try:
        write_all(fd, text)
    except OSError as e:
        raise naming(e, path) from None
    finally:
        os.close(fd)


def write_final_state(path: str, data: dict[str, Any], reserve: int = 0) -> None:
    """Writes a job's final ``state.json`` (``path``) atomically and durably: the file, then one
    journal record (``fdatasync``) where there is a journal; else, or when the journal cannot
    be written, the file and its directory are fsync'ed (see "Durability").

    Raises:
        OSError: the file cannot be written or forced to disk (the error names the file)
    """
    boot = boot_id()
    if boot is None:
        write_json(path, data, reserve=reserve)
        return
    write_json(path, data, durable=False, reserve=reserve)
    job_dir = os.path.dirname(path)
    journal = Journal(os.path.dirname(job_dir), boot)
    try:
        _make_durable(journal, {"app_id": os.path.basename(job_dir), "state": data}, [path], [job_dir])
    finally:
        journal.close()


def _make_durable(journal: Journal | None, record: dict[str, Any], files: list[str], dirs: list[str]) -> None:
    """Forces a change to disk: ``record`` appended to ``journal`` (one ``fdatasync``); without a
    journal, or when it cannot be written, ``files`` and then ``dirs`` are fsync'ed instead.

    Raises:
        OSError: neither could be done
    """
    if journal is not None:
        try:
            journal.append(record)
            return
        except OSError:
            pass  # e.g. the journal's directory cannot be created: the files themselves, then
    for file in files:
        fsync_path(file)
    for directory in dirs:
        fsync_dir(directory)


def touch_private(path: str) -> None:
    """Creates the empty file ``path`` (a marker), mode 0600 whatever the umask, never through a symlink."""
    os.close(private_fd(path, os.O_WRONLY))


def rewrite_in_place(path: str, text: bytes) -> None:
    """Overwrites ``path`` with ``text`` padded with blanks to the file's size, in the blocks it already
    has: needs no free space (a full disk), unlike :func:`write_json`. Not atomic: used only when
    that cannot write.

    Raises:
        OSError: the file cannot be written, or ``text`` does not fit (ENOSPC; the error names ``path``)
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            size = os.fstat(fd).st_size
            if len(text) > size:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            view = memoryview(text.ljust(size))
            offset = 0
            while offset < size:
                offset += os.pwrite(fd, view[offset:], offset)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None


def read_json(path: str) -> Any:
    """The JSON in ``path``, or None if it does not exist.

    Raises:
        UnreadableJobError: the file is empty, truncated, not JSON or cannot be read
    """
    import json

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):  # this process's want, not the job's
            raise OSError(e.errno, f"{e.strerror} (reading a job's file; the file itself may be fine)", path) from None
        raise UnreadableJobError(path, e.strerror or str(e), errno=e.errno) from None
    if not raw.strip():
        raise UnreadableJobError(path, "the file is empty")
    try:
        return json.loads(raw)
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise UnreadableJobError(path, f"not valid JSON ({e})") from None


_STATES = frozenset({"UNSUBMITTED", "SUBMITTED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN"})
_NUMBER = (int, float)


def _need(data: dict[str, Any], key: str, types: type | tuple[type, ...], path: str, optional: bool = False) -> None:
    value = data.get(key)
    if value is None and optional:
        return
    if not isinstance(value, types) or isinstance(value, bool):
        raise UnreadableJobError(path, f"wrong shape: {key!r} is {_shown(value)}")


def _shown(value: Any) -> str:
    return "missing" if value is None else f"a {type(value).__name__} ({str(value)[:40]!r})"


def check_state(data: Any, path: str) -> dict[str, Any]:
    """``data`` if it has the shape of a ``state.json``.

    Raises:
        UnreadableJobError: it has not
    """
    if not isinstance(data, dict):
        raise UnreadableJobError(path, f"wrong shape: a JSON {type(data).__name__}, not an object")
    if data.get("state") not in _STATES:
        raise UnreadableJobError(path, f"wrong shape: 'state' is {_shown(data.get('state'))}, not an app state")
    _need(data, "name", str, path)
    _need(data, "msg", str, path, optional=True)
    _need(data, "created", _NUMBER, path, optional=True)
    _need(data, "pid", int, path, optional=True)
    _need(data, "num_restarts", int, path, optional=True)
    _need(data, "replicas", list, path, optional=True)
    for replica in data.get("replicas") or []:
        if not isinstance(replica, dict) or replica.get("state", "PENDING") not in _STATES:
            raise UnreadableJobError(path, f"wrong shape: replica entry {_shown(replica)}")
    return data


def check_app(data: Any, path: str) -> dict[str, Any]:
    """``data`` if it has the shape of an ``app.json``.

    Raises:
        UnreadableJobError: it has not
    """
    if not isinstance(data, dict):
        raise UnreadableJobError(path, f"wrong shape: a JSON {type(data).__name__}, not an object")
    _need(data, "log_root", str, path)
    _need(data, "roles", list, path)
    _need(data, "replicas", list, path)
    _need(data, "stop_grace_period", _NUMBER, path, optional=True)
    roles = data["roles"]
    for replica in data["replicas"]:
        if not (
            isinstance(replica, dict)
            and isinstance(replica.get("role"), str)
            and isinstance(replica.get("replica_id"), int)
            and isinstance(replica.get("log_dir"), str)
            and isinstance(replica.get("role_index"), int)
            and 0 <= replica["role_index"] < len(roles)
        ):
            raise UnreadableJobError(path, f"wrong shape: replica entry {_shown(replica)}")
    return data


def lock_is_held(job_dir: str) -> bool:
    """True while some process (the job's supervisor) holds the job's lock."""
    return lock_held(os.path.join(job_dir, LOCK_FILE))


@contextlib.contextmanager
def take_lock(job_dir: str) -> Iterator[None]:
    """Holds the job's lock (blocking); used to write for a supervisor that has died."""
    path = os.path.join(job_dir, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno != errno.EROFS:
            raise
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # a read-only state directory: flock needs no write access
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


#: prefix of a job directory being created (renamed to the app id once complete)
STAGING_PREFIX = ".new-"
#: prefix of a job directory being deleted
TRASH_PREFIX = ".deleted-"
#: a staging directory whose creator is gone is swept after this many seconds
STALE_STAGING = 60.0


def restrict_to_owner(paths: list[str]) -> None:
    """Gives directories this process just created with mode 0700 that mode, whatever the umask
    took away (one ``stat`` for all: they were made under one umask)."""
    if paths and os.stat(paths[0]).st_mode & 0o777 != 0o700:
        for path in paths:
            os.chmod(path, 0o700)


class JobStore:
    """The job directories of one state directory."""

    def __init__(self, root: str | None = None) -> None:
        self.root = os.path.abspath(root) if root else default_state_dir()
        self._journal: Journal | None = None
        self._recovered = False

    def close(self) -> None:
        """Closes the journal, if it was opened (the store stays usable)."""
        if self._journal is not None:
            self._journal.close()

    def job_dir(self, app_id: str) -> str:
        """The directory of job ``app_id`` (which need not exist).

        Raises:
            InvalidAppIdError: the id could name a path outside the state directory
        """
        return os.path.join(self.root, check_app_id(app_id))

    def exists(self, app_id: str) -> bool:
        """True if job ``app_id`` has a directory (readable or not)."""
        if not is_valid_app_id(app_id):
            return False
        self.recover()
        try:
            return stat.S_ISDIR(os.lstat(os.path.join(self.root, app_id)).st_mode)  # a symlink is no job
        except OSError:
            return False

    def staging_dir(self, app_id: str) -> str:
        """Creates and returns a private, hidden directory in which job ``app_id`` is assembled;
        :meth:`publish` makes it the job's directory, :meth:`discard` removes it.

        Raises:
            OSError: it cannot be created (the error names the path)
        """
        check_app_id(app_id)
        path = os.path.join(self.root, f"{STAGING_PREFIX}{app_id}-{os.getpid()}")
        try:
            try:
                os.mkdir(path, 0o700)  # the state directory is there but for the first submission
            except FileNotFoundError:
                os.makedirs(os.path.dirname(self.root), exist_ok=True)
                with contextlib.suppress(FileExistsError):
                    private_dir(self.root)
                private_dir(path)
            else:
                restrict_to_owner([path])
        except OSError as e:
            raise OSError(e.errno, e.strerror, self.root) from None  # the directory users know
        return path

    def publish(self, staging: str, app_id: str) -> str:
        """Renames the complete ``staging`` directory to job ``app_id``'s directory (atomic) and
        returns it; :meth:`commit` then makes it durable.

        Raises:
            FileExistsError: a job with this id exists
        """
        path = self.job_dir(app_id)
        try:
            os.rename(staging, path)
        except OSError as e:
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(e.errno, e.strerror, path) from None
            raise
        return path

    def commit(self, app_id: str, app: dict[str, Any]) -> None:
        """Makes the published job ``app_id``, whose ``app.json`` holds ``app``, durable: one
        journal record, or (no journal, or it cannot be written) 3 fsyncs (see "Durability").

        Raises:
            OSError: it cannot be forced to disk
        """
        path = self.job_dir(app_id)
        record = {"app_id": app_id, "app": app}
        _make_durable(self._open_journal(), record, [os.path.join(path, APP_FILE)], [path, self.root])

    def _open_journal(self) -> Journal | None:
        if self._journal is None:
            boot = boot_id()
            if boot is not None:
                self._journal = Journal(self.root, boot)
        return self._journal

    def recover(self) -> None:
        """Restores what a machine crash lost of the jobs this host recorded before it last
        booted (once per store; the first reader after a boot does the work, see :mod:`.journal`):
        a missing job directory (from the staging directory whose rename was lost, else
        recreated), a torn or missing ``app.json``, a final state the crash lost (from its
        journal record); a state that is missing, torn or not final and has no such record
        becomes FAILED ("the machine stopped"). Then the old journal is removed. A state
        directory that cannot be written is left as it is (tried again by the next process)."""
        if self._recovered:
            return
        self._recovered = True
        boot = boot_id()
        if boot is None:
            return
        for path in earlier_journals(os.path.join(self.root, JOURNAL_DIR), boot):
            with contextlib.suppress(OSError):
                self._replay(path)

    def _replay(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one replayer; appenders are of this boot, not that one
            if os.fstat(fd).st_nlink == 0:
                return  # another process replayed it while this one waited
            apps: dict[str, dict[str, Any]] = {}
            ends: dict[str, dict[str, Any]] = {}
            for entry in records(fd):
                app_id = entry["app_id"]
                if not is_valid_app_id(app_id):
                    continue
                if entry.get("deleted"):
                    apps.pop(app_id, None)
                    ends.pop(app_id, None)
                elif isinstance(entry.get("app"), dict):
                    apps[app_id] = entry["app"]
                elif isinstance(entry.get("state"), dict) and entry["state"].get("state") in FINAL_STATES:
                    ends[app_id] = entry["state"]
            staged = {}
            for name in os.listdir(self.root):
                if name.startswith(STAGING_PREFIX):
                    staged[name[len(STAGING_PREFIX) :].rpartition("-")[0]] = os.path.join(self.root, name)
            for app_id in {**apps, **ends}:
                self._restore(app_id, apps.get(app_id), ends.get(app_id), staged.get(app_id))
            fsync_dir(self.root)
            os.unlink(path)
            fsync_dir(os.path.dirname(path))
        finally:
            os.close(fd)

    def _restore(self, app_id: str, app: dict[str, Any] | None, end: dict[str, Any] | None, staged: str | None) -> None:
        """Job ``app_id`` of an earlier boot, whole and ended (see :meth:`recover`): ``app`` its
        journaled request (None: the journal was emptied since, so its files are on disk), ``end``
        its journaled final state (None: it did not end before the crash)."""
        path = self.job_dir(app_id)
        if not os.path.isdir(path):
            if staged is not None:
                os.rename(staged, path)  # the crash lost the rename, not the files
            elif app is not None:
                private_dir(path)
            else:
                return  # deleted by hand since
        if lock_is_held(path):
            return  # alive: not a job the crash cut short
        if app is not None:
            try:
                whole = read_json(os.path.join(path, APP_FILE)) is not None
            except UnreadableJobError:
                whole = False
            if not whole:
                write_json(os.path.join(path, APP_FILE), app)
        state_path = os.path.join(path, STATE_FILE)
        try:
            state = read_json(state_path)
            state = None if state is None else check_state(state, state_path)
        except UnreadableJobError:
            state = None
        if state is not None and state["state"] in FINAL_STATES:
            return
        if end is None:
            base = state or {
                "app_id": app_id,
                "name": (app or {}).get("name", app_id),
                "created": (app or {}).get("created"),
            }
            end = {**base, "state": "FAILED", "msg": MACHINE_STOPPED, "end": {"by": "supervisor"}}
        write_json(state_path, end)

    def app(self, app_id: str) -> dict[str, Any] | None:
        """The job's request, or None if there is no such job.

        Raises:
            UnreadableJobError: its ``app.json`` cannot be read
        """
        if not is_valid_app_id(app_id):
            return None
        self.recover()
        path = os.path.join(self.root, app_id, APP_FILE)
        data = read_json(path)
        return None if data is None else check_app(data, path)

    def state(self, app_id: str) -> dict[str, Any] | None:
        """The job's last written status, or None if there is no such job.

        Raises:
            UnreadableJobError: its ``state.json`` cannot be read (or is missing from its directory)
        """
        if not is_valid_app_id(app_id):
            return None
        self.recover()
        path = os.path.join(self.root, app_id, STATE_FILE)
        data = read_json(path)
        if data is None:
            if os.path.isdir(os.path.dirname(path)):  # jobs appear complete: a directory without it is damaged
                raise UnreadableJobError(path, "the file is missing")
            return None
        return check_state(data, path)

    def app_ids(self) -> list[str]:
        """Ids of every job directory; sweeps what interrupted submissions and deletions left behind."""
        self.recover()  # first: a crash may have left a job in a staging directory
        try:
            with os.scandir(self.root) as entries:
                names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return []
        for name in names:
            if name.startswith(TRASH_PREFIX) or (name.startswith(STAGING_PREFIX) and self._abandoned(name)):
                import shutil

                shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)
        return [name for name in names if is_valid_app_id(name)]

    def _abandoned(self, staging: str) -> bool:
        """True if the submission assembling ``staging`` is gone (its lock is free and it is old)."""
        path = os.path.join(self.root, staging)
        try:
            age = time.time() - os.stat(path).st_mtime
        except OSError:
            return False
        return age > STALE_STAGING and not lock_is_held(path)

    def remove(self, app_id: str) -> None:
        """Deletes the job's directory: it disappears at once (renamed), then is removed.

        Works on a full disk (renaming and removing need no space).
        """
        import shutil

        path = self.job_dir(app_id)
        journal = self._open_journal()
        if journal is not None:
            with contextlib.suppress(OSError):  # at worst a crash brings the job back as FAILED
                journal.append({"app_id": app_id, "deleted": True})  # so that no replay restores it
        trash = os.path.join(self.root, f"{TRASH_PREFIX}{app_id}-{os.getpid()}")
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return
        except OSError:  # cannot rename: remove it in place
            trash = path
        shutil.rmtree(trash, ignore_errors=True)
        if os.path.isdir(trash):
            shutil.rmtree(trash)  # what could not be removed raises, naming the path
