"""Durable drivers: a directory per job with a spec, an append-only journal and a single-driver
lock, and a detached driver process that any later look at the job resumes if it died.

What a detached driver (the ``torchx sweep`` driver, the ``managed`` scheduler's driver) needs
to outlive the CLI, its own SIGKILL and a machine restart, in one place. Layout of one job,
under a :class:`DurableStore`'s ``root``::

    <root>/<id>/spec.json     # what to do, written once (atomically; rewritten only atomically)
               /events.jsonl  # the journal: one JSON object per line, appended with one write(2)
               /driver.lock   # flock held by the live driver (its pid inside)
               /driver.log    # the driver's stdout and stderr
               /driver.problem  # why the driver cannot go on (a write refused: a full disk), or blank

The state of a job is the fold of its journal; the driver writes an event before the step it
announces and another after it, so a driver started again finds where the last one stopped.
Each append is a single ``write`` to a file opened ``O_APPEND`` (concurrent writers never
interleave), optionally followed by ``fsync`` (the event then survives a machine crash); a
writer killed mid-line leaves a last line without its newline, which readers ignore.

At most one driver runs per job: it holds ``driver.lock`` (``flock``) for its whole life, and
one started while another holds it exits at once (:meth:`DurableStore.driver_lock`). So
"resume on look" is safe to call from any number of processes: :meth:`DurableStore.resume`
starts a driver when none holds the lock and the job is not finished.

A full disk must not silence a driver (its ``driver.log`` is on the same disk): the lock's pid
and ``driver.problem`` are fixed-size slots written in place, allocated when the job is
created, so a driver can still say who it is and why it cannot record
(:meth:`DurableStore.report_problem`), and a look at the job can tell the user.

Its files are made with the primitives of :mod:`torchx.util.files` (private, atomic,
durable), the ones local_cwd's job store uses too. This module imports only the standard
library and is not on the CLI's start-up path.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from torchx.util.files import fsync_dir, naming, private_dir, private_fd
from torchx.util.files import state_root as state_root  # re-exported: managed's drivers import them from here
from torchx.util.files import write_atomic as write_atomic

SPEC = "spec.json"
EVENTS = "events.jsonl"
LOCK = "driver.lock"
LOG = "driver.log"
PROBLEM = "driver.problem"
#: bytes of the driver's pid slot in ``driver.lock`` (space-padded, written in place)
PID_WIDTH = 20
#: bytes of the ``driver.problem`` slot (space-padded UTF-8, written in place)
PROBLEM_SIZE = 1024
#: seconds a driver started again by :meth:`DurableStore.resume` has to take its job's lock (it
#: takes it within a second of starting, a few under heavy load) before it counts as not starting
DRIVER_START_TIMEOUT = 10.0
#: ``-P``: the driver runs in the job's working directory without it on ``sys.path``, so a
#: user's ``json.py`` or ``logging.py`` there cannot shadow what the driver imports (Python 3.11+)
_SAFE_PATH = ("-P",) if sys.version_info >= (3, 11) else ()


class UnsafeJobError(PermissionError):
    """A job's files can be changed by other users: what it would run is not the user's to trust."""


def check_private(path: str, error: type[UnsafeJobError] = UnsafeJobError) -> None:
    """Refuses a file or directory that another user owns or can write.

    Raises:
        UnsafeJobError: it is so (``error``, a subclass; the message says how to fix it)
    """
    st = os.stat(path)
    if st.st_uid != os.getuid() and os.getuid() != 0:
        raise error(f"{path} belongs to another user (uid {st.st_uid}); refusing to run what it says")
    if st.st_mode & 0o022:
        raise error(
            f"{path} can be written by other users (mode {st.st_mode & 0o777:04o}); refusing to run what it says:"
            f" check it, then `chmod go-w {path}`"
        )


def record_error(what: str, e: OSError) -> str:
    """``cannot record WHAT: no space left on device (/path/events.jsonl)``: one line naming
    what could not be written, why and where."""
    why = (e.strerror or str(e)).strip()
    why = why[:1].lower() + why[1:]
    return f"cannot record {what}: {why} ({e.filename})" if e.filename else f"cannot record {what}: {why}"


class DriverStartError(RuntimeError):
    """A driver started again died, or hung, before taking its job's lock: nothing drives the job.
    The message says how it ended, its last words and where its log is."""


class RecordError(OSError):
    """A job's state could not be written (a full disk): an :class:`OSError` (same ``errno`` and
    ``filename``) whose message is :func:`record_error`'s one line."""

    def __init__(self, what: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), cause.filename)
        self.what = what

    def __str__(self) -> str:
        return record_error(self.what, self)


def _slot(fd: int, text: str, size: int) -> None:
    """Writes ``text`` space-padded to ``size`` bytes at the start of ``fd``: in place over the
    bytes the file already has, so no space is needed on a full disk."""
    data = text.encode()[:size].decode(errors="ignore").encode()
    os.pwrite(fd, data + b" " * (size - len(data)), 0)


def _how_it_ended(code: int) -> str:
    """``exited with code 1`` / ``was killed by SIGKILL`` (a Popen return code)."""
    if code < 0:
        import signal

        try:
            return f"was killed by {signal.Signals(-code).name} before taking the lock"
        except ValueError:
            return f"was killed by signal {-code} before taking the lock"
    return f"exited with code {code} before taking the lock"


def _last_words(log: str, start: int) -> str:
    """``: ModuleNotFoundError: ...``: the last line a dead driver wrote to its log after
    offset ``start`` (its error), or ""."""
    try:
        with open(log, "rb") as f:
            f.seek(max(start, os.path.getsize(log) - 8192))
            lines = [line.strip() for line in f.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1][:300]}" if lines else ""


def _same_file(fd: int, path: str) -> bool:
    """True if ``path`` still names the file open as ``fd`` (not removed or replaced)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _write_pid(fd: int, pid: int | None) -> None:
    """Writes ``pid`` (None: blank, "starting") into the lock's slot in place; a slot that cannot
    be written (a full disk, a lock file of a job stored before the slot existed) is blanked
    instead, which needs no space: the lock is held either way, the pid then reads as unknown."""
    try:
        _slot(fd, "" if pid is None else str(pid), PID_WIDTH)
    except OSError:
        os.ftruncate(fd, 0)


class UnknownJobError(LookupError):
    """No job with that id is stored here."""


class DurableStore:
    """Jobs with a spec, a journal and a driver, stored under ``root``.

    Args:
        root: the directory holding one directory per job
        kind: what a job is called in messages (``sweep``, ``managed job``)
    """

    def __init__(self, root: str, kind: str = "job") -> None:
        self.root = os.path.abspath(root)
        self.kind = kind

    # ------------------------------------------------------------------ files
    def job_dir(self, job_id: str) -> str:
        """The directory of a job.

        Raises:
            UnknownJobError: the id is not a plain name
        """
        if not job_id or "/" in job_id or job_id.startswith("."):
            raise self._unknown(f"{job_id!r} is not a {self.kind} id")
        return os.path.join(self.root, job_id)

    def _unknown(self, msg: str) -> UnknownJobError:
        return UnknownJobError(msg)

    #: seconds :meth:`resume` waits for a driver started again to take the job's lock
    driver_start_timeout: float = DRIVER_START_TIMEOUT

    def log_path(self, job_id: str) -> str:
        """The job's ``driver.log`` (a store keeping jobs off this machine's disk puts it elsewhere)."""
        return os.path.join(self.job_dir(job_id), LOG)

    #: what :meth:`check_private` raises
    unsafe_error: type[UnsafeJobError] = UnsafeJobError

    def create(self, job_id: str, spec: dict[str, Any]) -> str:
        """Stores a new job's spec and an empty journal (both fsync'ed), and allocates its
        driver's pid and problem slots; returns its directory.

        Raises:
            FileExistsError: a job with this id exists
            OSError: it could not be stored (a full disk; the error names the file): nothing of
                it is left
        """
        path = self.job_dir(job_id)
        private_dir(path)
        try:
            write_atomic(os.path.join(path, SPEC), json.dumps(spec))
            for name, size in ((EVENTS, 0), (LOCK, PID_WIDTH), (PROBLEM, PROBLEM_SIZE)):
                file = os.path.join(path, name)
                fd = private_fd(file, os.O_WRONLY | os.O_APPEND)
                try:
                    if size:
                        os.write(fd, b" " * size)
                except OSError as e:
                    raise naming(e, file) from None
                finally:
                    os.close(fd)
            fsync_dir(path)
        except BaseException:
            import shutil  # here: not on the path of every look at a job

            shutil.rmtree(path, ignore_errors=True)
            raise
        return path

    def check_private(self, job_id: str) -> None:
        """Refuses a job whose spec, journal or directory another user can write (they say what runs).

        Raises:
            UnsafeJobError: one of them can (:attr:`unsafe_error`)
        """
        path = self.job_dir(job_id)
        for name in ("", SPEC, EVENTS):
            target = os.path.join(path, name) if name else path
            if name and not os.path.exists(target):
                continue
            check_private(target, self.unsafe_error)

    def read_spec(self, job_id: str) -> dict[str, Any]:
        """The job's spec.

        Raises:
            UnknownJobError: no such job here
        """
        path = os.path.join(self.job_dir(job_id), SPEC)
        try:
            with open(path, encoding="utf-8") as f:
                spec: dict[str, Any] = json.load(f)
        except FileNotFoundError:
            raise self._unknown(f"unknown {self.kind} {job_id!r} (no {path})") from None
        return spec

    def update_spec(self, job_id: str, **changes: Any) -> None:
        """Rewrites the spec with ``changes`` (atomically)."""
        spec = self.read_spec(job_id)
        spec.update(changes)
        write_atomic(os.path.join(self.job_dir(job_id), SPEC), json.dumps(spec))

    def append(self, job_id: str, *events: dict[str, Any], sync: bool = False) -> None:
        """Appends events to the job's journal in one ``write`` (after a torn last line, on a new
        line); with ``sync``, returns only once they are on disk. Never creates the journal
        (:meth:`create` does): a removed job stays removed.

        Raises:
            UnknownJobError: the job was removed (or never stored)
            OSError: the events could not be written (a full disk); its ``filename`` is the journal's
        """
        data = "".join(json.dumps(ev, separators=(",", ":")) + "\n" for ev in events).encode()
        path = os.path.join(self.job_dir(job_id), EVENTS)
        try:
            fd = private_fd(path, os.O_RDWR | os.O_APPEND, create=False)
        except FileNotFoundError:
            raise self._unknown(f"unknown {self.kind} {job_id!r} (no {path})") from None
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a writer was killed mid-line: keep that garbage on its own line
            written = os.write(fd, data)
            if written != len(data):  # the disk filled mid-write: the torn line is skipped by readers
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            if sync:
                os.fdatasync(fd)
        except OSError as e:
            raise naming(e, path) from None
        finally:
            os.close(fd)

    def events(self, job_id: str) -> Iterator[dict[str, Any]]:
        """The job's journal, oldest first (torn or unreadable lines skipped)."""
        try:
            with open(os.path.join(self.job_dir(job_id), EVENTS), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        for line in data.split(b"\n")[:-1]:  # a last line without newline is a torn write
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict):
                yield ev

    def job_ids(self) -> list[str]:
        """Every stored job, oldest first."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if name.startswith("."):  # one being removed (:meth:`remove`)
                continue
            try:
                found.append((os.stat(os.path.join(self.root, name, SPEC)).st_mtime, name))
            except OSError:
                continue
        return [n for _, n in sorted(found)]

    # ------------------------------------------------------------------ the driver
    def driver_pid(self, job_id: str) -> int | None:
        """The pid of the job's live driver (-1 if it is starting and has not written it yet),
        or None when no driver holds the lock."""
        path = os.path.join(self.job_dir(job_id), LOCK)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = os.read(fd, 32).decode(errors="replace").strip()
                return int(text) if text.isdigit() else -1
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def _lock_names(self, job_id: str, pid: int) -> bool:
        """True if the lock's pid slot names ``pid`` (it took the lock once; read without locking)."""
        try:
            with open(os.path.join(self.job_dir(job_id), LOCK), "rb") as f:
                return f.read(PID_WIDTH).strip() == str(pid).encode()
        except OSError:
            return False

    def take_driver_lock(self, job_id: str, own: bool = True) -> int | None:
        """Takes the job's driver lock; returns its file descriptor (closing it lets go), or None
        if another process holds it. Pass the descriptor to :meth:`spawn` to hand the lock over,
        with ``own=False``: the lock then names no pid (:meth:`driver_pid` says -1) until the
        driver writes its own, so nobody signals the caller for the driver.

        Raises:
            UnknownJobError: the job was removed (before the lock was taken, or while it was
                waited for: the lock held is then the removed job's, and is let go)
        """
        path = os.path.join(self.job_dir(job_id), LOCK)
        try:
            fd = private_fd(path, os.O_RDWR)  # creates no directory: a removed job's stays away
        except FileNotFoundError:
            raise self._unknown(f"unknown {self.kind} {job_id!r} (no {os.path.dirname(path)})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not _same_file(fd, path) or not os.path.exists(os.path.join(os.path.dirname(path), SPEC)):
                raise self._unknown(f"{self.kind} {job_id!r} was removed")
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        _write_pid(fd, os.getpid() if own else None)
        return fd

    @contextmanager
    def driver_lock(self, job_id: str, fd: int | None = None) -> Iterator[bool]:
        """Holds the driver lock while the block runs; yields False (and holds nothing) if another
        process holds it. The lock goes with the process, however it ends. ``fd``: a lock handed
        over by :meth:`spawn` (already held)."""
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held through this very open file: succeeds
            _write_pid(fd, os.getpid())
        else:
            fd = self.take_driver_lock(job_id)
        if fd is None:
            yield False
            return
        try:
            yield True
        finally:
            os.close(fd)

    def spawn(self, job_id: str, argv: Sequence[str], cwd: str | None = None, lock_fd: int | None = None) -> int:
        """Starts ``python ARGV...`` as the job's detached driver: its own session (it outlives the
        caller and its terminal), stdin from /dev/null, output appended to ``driver.log``; returns its pid.
        It runs in ``cwd`` (the job's, so its configuration resolves as at submit) but does not
        import from there (``-P``).

        ``lock_fd`` (from :meth:`take_driver_lock`) is inherited by the driver under the same
        number, so the lock passes to it with no moment where nobody holds it (the caller then
        closes its copy); the driver adopts it with ``driver_lock(job_id, fd=lock_fd)``."""
        return self._start(job_id, argv, cwd, lock_fd).pid

    def _start(
        self, job_id: str, argv: Sequence[str], cwd: str | None = None, lock_fd: int | None = None
    ) -> subprocess.Popen[bytes]:
        with open(private_fd(self.log_path(job_id), os.O_WRONLY | os.O_APPEND), "ab") as log:
            return subprocess.Popen(
                [sys.executable, *_SAFE_PATH, *argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=() if lock_fd is None else (lock_fd,),
            )

    # ------------------------------------------------------------------ problems
    def report_problem(self, job_id: str, text: str) -> bool:
        """Records why the job's driver cannot go on (``text``, at most :data:`PROBLEM_SIZE`
        bytes kept) in ``driver.problem``, in place: it works on a full disk. Never raises;
        False if it could not be recorded (a job stored before the slot existed, on a full disk)."""
        try:
            fd = private_fd(os.path.join(self.job_dir(job_id), PROBLEM), os.O_WRONLY)
        except (OSError, UnknownJobError):
            return False
        try:
            _slot(fd, " ".join(text.split()), PROBLEM_SIZE)
            os.fdatasync(fd)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def problem(self, job_id: str) -> str:
        """What :meth:`report_problem` last recorded for the job ("" if nothing, or cleared)."""
        try:
            with open(os.path.join(self.job_dir(job_id), PROBLEM), "rb") as f:
                return f.read(PROBLEM_SIZE).decode(errors="replace").strip()
        except (OSError, UnknownJobError):
            return ""

    def clear_problem(self, job_id: str) -> None:
        """Blanks the job's recorded problem (the driver can record again)."""
        if self.problem(job_id):
            self.report_problem(job_id, "")

    def remove(self, job_id: str) -> None:
        """Removes the job's files at once: its directory is first renamed out of the way (so from
        then on every look, append or driver finds no job, and none recreates it), then deleted."""
        path = self.job_dir(job_id)
        gone = os.path.join(os.path.dirname(path), f".removed-{os.path.basename(path)}-{os.getpid()}")
        try:
            os.rename(path, gone)
        except FileNotFoundError:
            return
        import shutil  # here: not on the path of every look at a job

        shutil.rmtree(gone, ignore_errors=True)

    def resume(self, job_id: str, argv: Sequence[str], finished: bool, cwd: str | None = None) -> bool:
        """Starts the job's driver again if it is not ``finished`` and no driver runs; True if started.

        Safe against races: two callers may both start one, the second exits at once (the lock).
        Waits until the driver holds the job's lock (or exits: another driver won the race), so
        that a driver that cannot start (an import error, a broken interpreter) is told, not
        taken for one that runs.

        Raises:
            UnsafeJobError: another user can write the job's spec, journal or directory
            DriverStartError: the driver exited with an error, or did not take the lock within
                :data:`DRIVER_START_TIMEOUT`, before holding the lock (also recorded as the job's
                problem, which the next driver to start blanks)
        """
        if finished or self.driver_pid(job_id) is not None:
            return False
        self.check_private(job_id)  # the spec says what runs
        if cwd is not None and not os.path.isdir(cwd):
            cwd = None
        log = self.log_path(job_id)
        try:
            start = os.path.getsize(log)
        except OSError:
            start = 0
        proc = self._start(job_id, argv, cwd)
        why = self._await_lock(job_id, proc)
        if why:
            why = f"nothing drives the {self.kind}: its driver {why}{_last_words(log, start)} (see {log})"
            self.report_problem(job_id, why)
            raise DriverStartError(why)
        return True

    def _await_lock(self, job_id: str, proc: subprocess.Popen[bytes]) -> str:
        """Waits until a driver holds the job's lock; "" then, else how ``proc`` failed to."""
        import time  # here: only a driver started again waits

        deadline = time.monotonic() + self.driver_start_timeout
        delay = 0.005
        while True:
            code = proc.poll()
            if code is None and self.driver_pid(job_id) is not None:
                return ""
            if code is not None:  # 0: it found the lock taken (another look started one) or the job gone
                if code == 0 or self.driver_pid(job_id) is not None or self._lock_names(job_id, proc.pid):
                    return ""  # it held the lock and stopped on its own error: drive() recorded why
                return _how_it_ended(code)
            if time.monotonic() >= deadline:
                return f"(pid {proc.pid}) has not taken the {self.kind}'s lock {self.driver_start_timeout:.0f}s after it started"
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
