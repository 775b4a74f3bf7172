"""The on-disk record of local jobs: one directory per job under a per-user state directory.

Layout of ``<state dir>/<app_id>/``:

* ``lock``: held (``flock`` LOCK_EX) by the job's supervisor for as long as it lives; the
  launcher takes it before the job becomes visible and hands it to the supervisor, so
  "lock free and state not final" means the supervisor died.
* ``app.json``: the request, written once by the launcher (roles, per-replica commands).
* ``state.json``: the job's status, rewritten whole by its single writer (the supervisor,
  or a canceller that took the lock after the supervisor died).
* ``cancel``: present once someone asked to cancel.

Every file is replaced atomically (write to a temporary name, then ``rename``), so readers
never see a torn file and concurrent jobs never share a file. Job ids are reserved with
``mkdir``, which is atomic, so concurrent submitters never collide.

This module imports only the standard library: the supervisor uses it too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STATE_DIR_ENV = "TORCHX_LOCAL_STATE_DIR"

APP_FILE = "app.json"
STATE_FILE = "state.json"
LOCK_FILE = "lock"
CANCEL_FILE = "cancel"
DONE_FILE = ".done"

_APP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")


class InvalidAppIdError(ValueError):
    """An app id that cannot name a local job (it could escape the state directory)."""


def default_state_dir() -> str:
    """``$TORCHX_LOCAL_STATE_DIR``, else ``$XDG_STATE_HOME/torchx/local``, else ``~/.local/state/torchx/local``."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(os.path.abspath(base), "torchx", "local")


def is_valid_app_id(app_id: str) -> bool:
    """True if ``app_id`` is a single safe path component (letters, digits, ``_.-``; no leading dot)."""
    return isinstance(app_id, str) and bool(_APP_ID.match(app_id))


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


def write_json(path: str, data: Any) -> None:
    """Writes ``data`` as JSON to ``path`` atomically (readers see the old or the new file)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    import json

    text = json.dumps(data, separators=(",", ":"), default=str)  # one C-speed call, then one write
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def read_json(path: str) -> Any:
    """The JSON in ``path``, or None if it does not exist."""
    try:
        with open(path, "rb") as f:
            import json

            return json.loads(f.read())
    except FileNotFoundError:
        return None


def lock_is_held(job_dir: str) -> bool:
    """True while some process (the job's supervisor) holds the job's lock."""
    try:
        fd = os.open(os.path.join(job_dir, LOCK_FILE), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def take_lock(job_dir: str) -> Iterator[None]:
    """Holds the job's lock (blocking); used to write for a supervisor that has died."""
    fd = os.open(os.path.join(job_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class JobStore:
    """The job directories of one state directory."""

    def __init__(self, root: str | None = None) -> None:
        self.root = os.path.abspath(root) if root else default_state_dir()

    def job_dir(self, app_id: str) -> str:
        """The directory of job ``app_id`` (which need not exist).

        Raises:
            InvalidAppIdError: the id could name a path outside the state directory
        """
        return os.path.join(self.root, check_app_id(app_id))

    def reserve(self, app_id: str) -> str:
        """Creates the job's directory and returns it.

        Raises:
            FileExistsError: a job with this id exists
        """
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        path = self.job_dir(app_id)
        os.mkdir(path, 0o700)
        return path

    def app(self, app_id: str) -> dict[str, Any] | None:
        """The job's request, or None if there is no such job."""
        if not is_valid_app_id(app_id):
            return None
        data: dict[str, Any] | None = read_json(os.path.join(self.root, app_id, APP_FILE))
        return data

    def state(self, app_id: str) -> dict[str, Any] | None:
        """The job's last written status, or None if there is no such job."""
        if not is_valid_app_id(app_id):
            return None
        data: dict[str, Any] | None = read_json(os.path.join(self.root, app_id, STATE_FILE))
        return data

    def app_ids(self) -> list[str]:
        """Ids of every job directory (including ones still being created)."""
        try:
            with os.scandir(self.root) as entries:
                return [e.name for e in entries if is_valid_app_id(e.name) and e.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return []

    def remove(self, app_id: str) -> None:
        """Deletes the job's directory: it disappears at once (renamed), then is removed."""
        path = self.job_dir(app_id)
        trash = os.path.join(self.root, f".deleted-{app_id}-{os.getpid()}")
        try:
            os.rename(path, trash)
        except FileNotFoundError:
            return
        import shutil

        shutil.rmtree(trash, ignore_errors=True)
