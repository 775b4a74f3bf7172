r"""Starting a job's supervisor so that it outlives the launcher, without carrying it.

* **fork, then a fresh interpreter** (single-threaded launcher: the CLI, most scripts):
  one ``fork`` + ``setsid`` starts the supervisor at once, so a short job (``utils.echo``)
  ends before a new interpreter could even have started. Once the job has run for
  :data:`torchx_sched_local.supervisor.HANDOVER_AFTER` (20 ms) and the supervisor is idle, it
  ``exec``-s ``python -I -S .../_supervise.py <job dir>`` (same pid: its replicas stay its
  children, their pipes stay open), handing over its state in a file: from then on it
  shares no memory with the launcher (a launcher holding 1 GiB leaves a ~10 MB supervisor)
  and its command line names only the job directory. Its watchdog is a fresh interpreter
  from the start.
* **a fresh interpreter at once** (multi-threaded launcher, e.g. a notebook kernel, where
  forking is unsafe): ``posix_spawn`` of the same command (a ``vfork``: constant cost
  however much memory the launcher holds); it reads the job from disk.

Either way the supervisor runs in its own session with the job's lock on fd 3,
stdin/stdout on ``/dev/null`` and stderr appended to ``<job dir>/supervisor.log``, and
stays the launcher's child: the launcher reaps the ones that ended at its next submission,
when its scheduler is closed, or when it waits for the job; if the launcher exits first,
init adopts and reaps them. ``-I -S`` skips ``site`` and the user's ``PYTHON*``
variables, which keeps the start short; the environment itself is passed on untouched.
"""

from __future__ import annotations

import os
import signal
import sys

from torchx_sched_local.entry import LOCK_FD, SUPERVISOR_LOG, supervisor_argv

_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
_children: set[int] = set()
#: this process's end pipe (read end, write end; -1: not made yet): every supervisor it forks
#: writes a byte once its job's final state is stored, which wakes a :func:`wait_ended` before
#: the supervisor's exit (slow for a copy of a large launcher) does
_end_pipe = [-1, -1]


def end_fd() -> int:
    """The read end of this process's end pipe (-1 if it forked no supervisor): readable once
    one of them stored its job's final state; :func:`drain_end` empties it."""
    return _end_pipe[0]


def drain_end() -> None:
    """Empties the end pipe (the caller then reads the states of the jobs it waits for)."""
    try:
        while os.read(_end_pipe[0], 4096):
            pass
    except OSError:  # empty (non-blocking)
        pass


def reap_children() -> None:
    """Reaps the supervisors this process started that have exited (no zombies are left behind)."""
    for pid in list(_children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # someone else reaped it
            done = pid
        if done:
            _children.discard(pid)


def _thread_count() -> int:
    """Threads of this process, counting ones Python did not start (Linux); else Python's count."""
    try:
        return len(os.listdir("/proc/self/task"))  # a tenth of the time of reading /proc/self/status
    except OSError:
        pass
    import threading

    return threading.active_count()


def start_supervisor(job_dir: str, lock_fd: int) -> int:
    """Starts the supervisor of the job in ``job_dir``, handing it the held lock ``lock_fd``.

    Returns the supervisor's pid at once; the caller closes its copy of ``lock_fd``.

    Raises:
        OSError: the process could not be created
    """
    reap_children()
    if hasattr(os, "fork") and _thread_count() == 1:
        pid = _fork(job_dir, lock_fd)
    else:
        pid = _spawn(job_dir, lock_fd)
    _children.add(pid)
    return pid


def _fork(job_dir: str, lock_fd: int) -> int:
    # Until the child has left the launcher's session, a signal to the launcher's process
    # group (Ctrl-C, a terminal hang-up, a kill of the group) would hit it too: block every
    # signal across the fork, and have the child discard what arrived before its setsid.
    # _signal: the C function itself; signal's wrapper turns each of the ~60 signals the
    # restore returns into an enum member, 0.4 ms of every submission
    import _signal

    from torchx_sched_local.supervisor import supervise_forked  # imported here, once, not in every child

    if _end_pipe[0] < 0:
        _end_pipe[:] = os.pipe()
        os.set_blocking(_end_pipe[0], False)
        os.set_blocking(_end_pipe[1], False)
    old_mask = _signal.pthread_sigmask(signal.SIG_BLOCK, _DEFAULT_SIGNALS)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                for sig in _signal.sigpending():
                    _signal.sigwait({sig})
                supervise_forked(job_dir, lock_fd, _end_pipe[1])  # unblocks once its handlers are set
            finally:
                os._exit(1)
    finally:
        _signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return pid


def _spawn(job_dir: str, lock_fd: int) -> int:
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
    return pid
