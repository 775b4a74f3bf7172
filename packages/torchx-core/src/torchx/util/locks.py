"""Whether a lock file is held: one ``flock`` probe, importing nothing beyond :mod:`os` and
:mod:`fcntl` (local_cwd's ``status`` path reads it without loading heavier modules)."""

from __future__ import annotations

import fcntl
import os


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
