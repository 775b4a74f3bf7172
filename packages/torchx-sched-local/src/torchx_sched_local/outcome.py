"""A job's outcome that could not be stored yet (full or read-only state directory).

When the supervisor cannot write a job's final state, it keeps the job (its lock) and
retries; meanwhile it answers on an abstract Unix socket named after the job directory
(no file is needed, so it works on a full or read-only filesystem) with the final state it
holds and why it could not be stored. ``status``, ``wait``, ``cancel`` and log followers
ask it when the stored state says the job still runs. Only processes of the same user (or
root) get an answer (``SO_PEERCRED``).

This module imports only the standard library: the supervisor uses it too. The asking side
uses the C module ``_socket`` (``socket`` builds its enums at import: a few ms on every
``status``/``wait`` of a running job); the listening side, needed only when a state could not
be stored, imports ``socket``.
"""

from __future__ import annotations

import _socket
import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: key of the answer naming why the state is not stored (``ENOSPC on <path>``)
UNSTORED = "unstored"
_TIMEOUT = 1.0
_MAX_ANSWER = 1 << 24


def address(job_dir: str) -> bytes:
    """The abstract socket address of the job in ``job_dir`` (Linux): named by the directory's
    device and inode, unique while it exists (no hash module to import on the way to ``status``).

    Raises:
        OSError: the directory is gone
    """
    st = os.stat(job_dir)
    return b"\0torchx-local-outcome-%d-%d" % (st.st_dev, st.st_ino)


def reason(e: OSError) -> str:
    """``ENOSPC on /path``: the error name and the file it happened on."""
    import errno

    name = errno.errorcode.get(e.errno or 0, str(e.errno))
    return f"{name} on {e.filename}" if e.filename else name


class OutcomeServer:
    """The supervisor's end: listens while the final state waits to be stored."""

    def __init__(self, job_dir: str) -> None:
        import socket

        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.bind(address(job_dir))
        self.sock.listen(16)

    def fileno(self) -> int:
        """The listening socket (readable when someone asks)."""
        return self.sock.fileno()

    def answer(self, state: dict[str, Any]) -> None:
        """Answers one waiting client (if it is this user or root) with ``state``."""
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        import socket
        import struct

        with conn:
            try:
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                uid = struct.unpack("3i", creds)[1]
                if uid in (0, os.getuid()):
                    conn.settimeout(_TIMEOUT)
                    conn.sendall(json.dumps(state, default=str).encode())
            except OSError:
                pass

    def close(self) -> None:
        """Stops answering (the state is stored)."""
        self.sock.close()


def ask(job_dir: str) -> dict[str, Any] | None:
    """The final state the job's supervisor holds but could not store (with :data:`UNSTORED`
    saying why), or None if it holds none (the usual case: nobody listens)."""
    if not hasattr(_socket, "AF_UNIX"):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(_TIMEOUT)
        sock.connect(address(job_dir))  # refused at once when nobody listens (the usual case)
        chunks = []
        size = 0
        while size < _MAX_ANSWER:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        sock.close()
    try:
        data = json.loads(b"".join(chunks))
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get(UNSTORED), str) else None
