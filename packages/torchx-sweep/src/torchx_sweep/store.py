"""A sweep on disk: its spec (written once, atomically) and a journal of events (append-only).

Layout, under :func:`default_root` (``$TORCHX_SWEEP_STATE_DIR``)::

    <root>/<sweep id>/spec.json     # what to run: component, trials, scheduler, cfg, mode
                     /events.jsonl  # one JSON object per line, appended with one write(2) each
                     /driver.lock   # flock held by the live driver (its pid inside)
                     /driver.log    # the driver's stderr

Every event is a single ``write`` to a file opened ``O_APPEND``, so concurrent writers (the
driver's workers, ``torchx sweep cancel``) never interleave and a killed writer leaves at
most a last line without its newline, which readers ignore. The state of a sweep is the fold
of its events (:meth:`SweepStore.load`). Events::

    {"i": 3, "ev": "submitting", "name": APP_NAME}   # about to submit trial 3 (named APP_NAME)
    {"i": 3, "ev": "submitted", "handle": HANDLE}
    {"i": 3, "ev": "ended", "state": "SUCCEEDED", "msg": ""}
    {"ev": "cancel"}  {"ev": "fail_fast"}  {"ev": "finished"}
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

STATE_DIR_ENV = "TORCHX_SWEEP_STATE_DIR"
SPEC = "spec.json"
EVENTS = "events.jsonl"
LOCK = "driver.lock"
LOG = "driver.log"


def default_root() -> str:
    """``$TORCHX_SWEEP_STATE_DIR``, else ``$XDG_STATE_HOME/torchx/sweeps``, else ``~/.local/state/torchx/sweeps``."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "torchx", "sweeps")


class UnknownSweepError(LookupError):
    """No sweep with that id is stored here."""


@dataclass
class TrialState:
    """What is known of one trial.

    Attributes:
        index: its position in the sweep
        args: the swept component arguments
        state: an ``AppState`` name (``PENDING`` until submitted, ``UNSUBMITTED`` if never)
        handle: its app handle, once submitted
        submitting: the app name it was being submitted under (a submission in flight)
        msg: why it failed to submit, or the scheduler's last message
    """

    index: int
    args: dict[str, str]
    state: str = "PENDING"
    handle: str | None = None
    submitting: str | None = None
    msg: str = ""


@dataclass
class SweepState:
    """A sweep's spec and its trials' states, folded from the journal."""

    spec: dict[str, Any]
    trials: list[TrialState]
    cancelled: bool = False
    fail_fast_hit: bool = False
    finished: bool = False

    @property
    def sweep_id(self) -> str:
        """The sweep's id (last part of its handle)."""
        return str(self.spec["id"])


def _apply(state: SweepState, ev: dict[str, Any]) -> None:
    kind = ev.get("ev")
    if kind == "cancel":
        state.cancelled = True
        return
    if kind == "fail_fast":
        state.fail_fast_hit = True
        return
    if kind == "finished":
        state.finished = True
        return
    i = ev.get("i")
    if not isinstance(i, int) or not 0 <= i < len(state.trials):
        return
    trial = state.trials[i]
    if kind == "submitting":
        trial.submitting = str(ev.get("name", ""))
    elif kind == "submitted":
        trial.handle = str(ev["handle"])
        trial.submitting = None
        trial.state = "SUBMITTED"
    elif kind == "ended":
        trial.state = str(ev.get("state", "UNKNOWN"))
        trial.msg = str(ev.get("msg", ""))
        trial.submitting = None


def private_fd(path: str, flags: int) -> int:
    """Opens (creating) ``path`` mode 0600 whatever the umask, never through a symlink: a sweep's
    files hold its ``--env`` values."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o777 != 0o600:
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


def private_dir(path: str, exist_ok: bool = False) -> None:
    """Creates directory ``path`` (and missing parents) mode 0700 whatever the umask."""
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        private_dir(parent, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not exist_ok:
            raise
        return
    if os.stat(path).st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)


class UnsafeSweepError(PermissionError):
    """A sweep's files can be changed by other users: what it would run is not the user's to trust."""


def check_private(path: str) -> None:
    """Refuses a file or directory that another user owns or can write.

    Raises:
        UnsafeSweepError: it is so (the message says how to fix it)
    """
    st = os.stat(path)
    if st.st_uid != os.getuid() and os.getuid() != 0:
        raise UnsafeSweepError(f"{path} belongs to another user (uid {st.st_uid}); refusing to run what it says")
    if st.st_mode & 0o022:
        raise UnsafeSweepError(
            f"{path} can be written by other users (mode {st.st_mode & 0o777:04o}); refusing to run what it says:"
            f" check it, then `chmod go-w {path}`"
        )


def write_atomic(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` (mode 0600) so readers see the old file or the new one, never a part."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = private_fd(tmp, os.O_WRONLY | os.O_TRUNC)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class SweepStore:
    """The sweeps stored under ``root`` (default: :func:`default_root`)."""

    def __init__(self, root: str | None = None) -> None:
        self.root = os.path.abspath(root) if root else default_root()

    def sweep_dir(self, sweep_id: str) -> str:
        """The directory of a sweep.

        Raises:
            UnknownSweepError: the id is not a plain name
        """
        if not sweep_id or "/" in sweep_id or sweep_id.startswith("."):
            raise UnknownSweepError(f"{sweep_id!r} is not a sweep id")
        return os.path.join(self.root, sweep_id)

    def create(self, spec: dict[str, Any]) -> str:
        """Stores a new sweep's spec; returns its directory."""
        path = self.sweep_dir(str(spec["id"]))
        private_dir(path)
        write_atomic(os.path.join(path, SPEC), json.dumps(spec))
        os.close(private_fd(os.path.join(path, EVENTS), os.O_WRONLY | os.O_APPEND))
        return path

    def check_private(self, sweep_id: str) -> None:
        """Refuses a sweep whose spec, journal or directory another user can write (they say what runs).

        Raises:
            UnsafeSweepError: one of them can
        """
        path = self.sweep_dir(sweep_id)
        for name in ("", SPEC, EVENTS):
            target = os.path.join(path, name) if name else path
            if name and not os.path.exists(target):
                continue
            check_private(target)

    def update_spec(self, sweep_id: str, **changes: Any) -> None:
        """Rewrites the spec with ``changes`` (atomically)."""
        path = os.path.join(self.sweep_dir(sweep_id), SPEC)
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        spec.update(changes)
        write_atomic(path, json.dumps(spec))

    def append(self, sweep_id: str, *events: dict[str, Any]) -> None:
        """Appends events to the sweep's journal (in one ``write``; after a torn last line, on a new line)."""
        data = "".join(json.dumps(ev, separators=(",", ":")) + "\n" for ev in events).encode()
        fd = private_fd(os.path.join(self.sweep_dir(sweep_id), EVENTS), os.O_RDWR | os.O_APPEND)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a writer was killed mid-line: keep that garbage on its own line
            os.write(fd, data)
        finally:
            os.close(fd)

    def load(self, sweep_id: str) -> SweepState:
        """The sweep's spec and state.

        Raises:
            UnknownSweepError: no such sweep here
        """
        path = self.sweep_dir(sweep_id)
        try:
            with open(os.path.join(path, SPEC), encoding="utf-8") as f:
                spec = json.load(f)
        except FileNotFoundError:
            raise UnknownSweepError(
                f"unknown sweep {sweep_id!r} (no {os.path.join(path, SPEC)});"
                " `torchx sweep list` shows the sweeps stored here"
            ) from None
        trials = [TrialState(i, dict(t["args"])) for i, t in enumerate(spec["trials"])]
        for i, handle in enumerate(spec.get("handles") or []):
            trials[i].handle = handle
            trials[i].state = "SUBMITTED"
        state = SweepState(spec, trials)
        try:
            with open(os.path.join(path, EVENTS), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        for line in data.split(b"\n")[:-1]:  # a last line without newline is a torn write
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict):
                _apply(state, ev)
        return state

    def sweep_ids(self) -> list[str]:
        """Every stored sweep, oldest first."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        found = [(os.stat(os.path.join(self.root, n, SPEC)).st_mtime, n) for n in names if self._has_spec(n)]
        return [n for _, n in sorted(found)]

    def _has_spec(self, name: str) -> bool:
        return os.path.isfile(os.path.join(self.root, name, SPEC))

    def driver_pid(self, sweep_id: str) -> int | None:
        """The pid of the sweep's live driver, or None when no driver holds the lock."""
        path = os.path.join(self.sweep_dir(sweep_id), LOCK)
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

    @contextmanager
    def driver_lock(self, sweep_id: str) -> Iterator[bool]:
        """Holds the driver lock while the block runs; yields False (and holds nothing) if taken."""
        path = os.path.join(self.sweep_dir(sweep_id), LOCK)
        fd = private_fd(path, os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield True
        finally:
            os.close(fd)
