"""Private, atomic, durable files: the primitives under every torchx job directory.

Where a kind of job keeps its directories (:func:`state_root`), files and directories only
their owner can read whatever the umask and never opened through a symlink
(:func:`private_fd`, :func:`private_dir`), a file replaced so that readers see the old one or
the new one and never a part (:func:`write_atomic`), forcing files and directory entries to
disk (:func:`fsync_path`, :func:`fsync_dir`), and whether a job's lock is held
(:func:`lock_held`).

This module imports only :mod:`os` and :mod:`fcntl`, and nothing of torchx:
core's :mod:`torchx.util.durable` (the sweep and managed drivers) builds on it, and
local_cwd's job store carries a copy of it (``torchx_sched_local/_files.py``, kept identical
to this file by a test), because local_cwd's supervisor runs as ``python -I -S``, without
site-packages, and cannot import torchx.
"""

from __future__ import annotations

import fcntl
import os


def state_root(kind: str, env_var: str) -> str:
    """Where jobs of one ``kind`` are kept: ``$<env_var>``, else ``$XDG_STATE_HOME/torchx/<kind>``,
    else ``~/.local/state/torchx/<kind>`` (an absolute path)."""
    explicit = os.environ.get(env_var)
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(os.path.abspath(base), "torchx", kind)


def private_fd(path: str, flags: int, create: bool = True) -> int:
    """Opens (creating, unless not ``create``) ``path`` mode 0600 whatever the umask, never
    through a symlink: a job's files hold what it runs and its environment."""
    fd = os.open(path, flags | (os.O_CREAT if create else 0) | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o777 != 0o600:
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


def private_dir(path: str, exist_ok: bool = False) -> None:
    """Creates directory ``path`` (and missing parents) mode 0700 whatever the umask.

    Raises:
        FileExistsError: it exists (unless ``exist_ok``)
    """
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


def write_all(fd: int, data: bytes) -> None:
    """Writes all of ``data`` to ``fd`` (``os.write`` may write less than it was given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def naming(e: OSError, path: str) -> OSError:
    """``e`` with ``path`` as its file name (``os.write`` errors name none)."""
    if e.filename == path or e.errno is None:
        return e
    return type(e)(e.errno, e.strerror or os.strerror(e.errno), path)


def write_atomic(path: str, data: str | bytes, durable: bool = True) -> None:
    """Replaces ``path`` by ``data`` (mode 0600) so readers see the old file or the new one,
    never a part: written to a hidden temporary file in the same directory, forced to disk
    (with ``durable``), then renamed over ``path``. The directory entry is not forced to disk
    (:func:`fsync_dir` does that, once for several files).

    Raises:
        OSError: it could not be written (a full disk); its ``filename`` is ``path``, and no
            temporary file is left behind
    """
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        fd = private_fd(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            write_all(fd, data.encode() if isinstance(data, str) else data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise naming(e, path) from None
        raise


def fsync_path(path: str, flags: int = 0) -> None:
    """Forces the file (or, with ``os.O_DIRECTORY``, the directory) ``path`` to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """Makes the entries of directory ``path`` (a rename into it) durable."""
    fsync_path(path, os.O_DIRECTORY)


def lock_held(path: str) -> bool:
    """True while some process holds an exclusive ``flock`` on the file ``path`` (False when
    the file does not exist)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
