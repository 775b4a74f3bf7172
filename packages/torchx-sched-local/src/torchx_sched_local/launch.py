"""Starting a job's supervisor: a fresh, small interpreter that outlives the launcher.

The launcher ``posix_spawn``s ``python -I -S .../torchx_sched_local/_supervise.py <job dir>``
(a ``vfork``: constant cost however much memory the launcher holds), in its own session,
with the job's lock on fd 3, stdin/stdout on ``/dev/null`` and stderr appended to
``<job dir>/supervisor.log``. The supervisor reads the job from disk; it shares no memory
with the launcher (a launcher holding 1 GiB leaves a ~10 MB supervisor) and its command
line names only the job directory (never the launcher's arguments). ``-I -S`` skips
``site`` and the user's ``PYTHON*`` variables, which keeps the start short; the
environment itself is passed through untouched for the replicas.

The supervisor stays the launcher's child: the launcher reaps the ones that ended at its
next submission, when its scheduler is closed, or when it waits for the job; if the
launcher exits first, init adopts and reaps them.
"""

from __future__ import annotations

import os
import signal
import sys

#: the fd on which the supervisor receives the job's (held) lock
LOCK_FD = 3
SUPERVISOR_LOG = "supervisor.log"
_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_supervise.py")
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
_children: set[int] = set()


def reap_children() -> None:
    """Reaps the supervisors this process started that have exited (no zombies are left behind)."""
    for pid in list(_children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # someone else reaped it
            done = pid
        if done:
            _children.discard(pid)


def supervisor_argv(job_dir: str) -> list[str]:
    """The supervisor's command line: the interpreter, its entry script and the job directory."""
    return [sys.executable, "-I", "-S", _ENTRY, job_dir]


def start_supervisor(job_dir: str, lock_fd: int) -> int:
    """Starts the supervisor of the job in ``job_dir``, handing it the held lock ``lock_fd``.

    Returns the supervisor's pid at once (it has not necessarily started running); the
    caller closes its copy of ``lock_fd``.

    Raises:
        OSError: the process could not be created
    """
    reap_children()
    log = os.path.join(job_dir, SUPERVISOR_LOG)
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = []
    if lock_fd != LOCK_FD:
        actions.append((os.POSIX_SPAWN_DUP2, lock_fd, LOCK_FD))
    else:
        os.set_inheritable(lock_fd, True)
    actions += [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 0, 1),
        (os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600),
    ]
    try:
        pid = os.posix_spawn(
            sys.executable,
            supervisor_argv(job_dir),
            os.environ,
            file_actions=actions,  # type: ignore[arg-type]
            setsid=True,
            setsigdef=_DEFAULT_SIGNALS,
            setsigmask=(),
        )
    finally:
        if lock_fd == LOCK_FD:
            os.set_inheritable(lock_fd, False)
    _children.add(pid)
    return pid
