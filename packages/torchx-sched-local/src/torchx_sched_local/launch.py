"""Starting a job's supervisor so that it outlives the launching process.

Two ways, both ending with the supervisor in its own session, adopted by init, holding
the job's lock:

* **fork** (single-threaded launcher, the CLI and most scripts): one ``fork`` + ``setsid``.
  The supervisor is a copy of the launcher, so it starts at once and imports nothing. It
  stays the launcher's child (a second fork would cost as much again, 1-2 ms here), so
  the launcher reaps the supervisors it started that have ended at its next submission,
  when its scheduler is closed, or when it waits for the job; if the launcher exits
  first, init adopts and reaps them.
* **exec** (multi-threaded launcher, e.g. a notebook kernel): forking a process with
  other threads is unsafe (their locks are copied held), so a fresh interpreter runs
  :func:`torchx_sched_local.supervisor.main`, which forks the supervisor and exits.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from torchx_sched_local import supervisor

_BOOTSTRAP = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[3]); from torchx_sched_local.supervisor import main; main()"
)


def _thread_count() -> int:
    """Threads of this process, counting ones Python did not start (Linux); else Python's count."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import threading

    return threading.active_count()


_BLOCKABLE = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
_children: set[int] = set()


def reap_children() -> None:
    """Reaps the supervisors this process forked that have exited (no zombies are left behind)."""
    for pid in list(_children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # someone else reaped it
            done = pid
        if done:
            _children.discard(pid)


def start_supervisor(job_dir: str, lock_fd: int) -> int | None:
    """Starts the supervisor of the job in ``job_dir``, handing it the held lock ``lock_fd``.

    Returns once the supervisor exists, with its pid when known (fork path); the caller
    closes its copy of ``lock_fd``.

    Raises:
        OSError: the process could not be created
    """
    reap_children()
    if hasattr(os, "fork") and _thread_count() == 1:
        return _fork(job_dir, lock_fd)
    _exec(job_dir, lock_fd)
    return None


def _fork(job_dir: str, lock_fd: int) -> int:
    # Until the child has left the launcher's session, a signal to the launcher's process
    # group (Ctrl-C, a terminal hang-up, a kill of the group) would hit it too: block every
    # signal across the fork, and have the child discard what arrived before its setsid.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKABLE)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                for sig in signal.sigpending():
                    signal.sigwait({sig})
                supervisor.supervise(job_dir, lock_fd)  # unblocks once its handlers are set
            finally:
                os._exit(1)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    _children.add(pid)
    return pid


def _exec(job_dir: str, lock_fd: int) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, job_dir, str(lock_fd), json.dumps(sys.path)],
        pass_fds=(lock_fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        check=False,
    )
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise OSError(f"could not start the supervisor of {job_dir}: {detail[-1] if detail else proc.returncode}")
