"""The supervisor's watchdog: if the supervisor dies, its replicas die too and the job says why.

The supervisor starts its watchdog before its first replica, so that no replica ever runs
unguarded: a small ``/bin/sh`` program (:data:`WATCHDOG_SH`, ``posix_spawn``-ed: nothing of
the launcher's memory is copied, ~1 MB RSS) holding the read end of a pipe on fd 4, blocked
in one ``read`` for the job's life (no CPU). It holds nothing else: the job's lock stays the
supervisor's alone, so a free lock still means the supervisor has exited (log followers end
at once). The supervisor writes ``end`` once the job's final state is written, and the shell
exits. If the pipe closes without ``end`` (the supervisor was SIGKILLed, OOM-killed or
crashed), the shell becomes a small Python interpreter (``_supervise.py --watchdog <supervisor pid>
<job dir>``, :func:`main`) that takes the job's lock (after a ``cancel`` that took it first, it
finds the job ended and leaves it), kills whatever of the job still runs (:mod:`.orphans`:
its recorded replicas, their sessions, and anything carrying the job's environment, such as
a replica started but not recorded yet) and records the job FAILED with the reason
(CANCELLED if a cancel was under way: ``cancel`` kills a supervisor that does not end the
job in time).
"""

from __future__ import annotations

import os
import signal
import time

from torchx_sched_local import store
from torchx_sched_local.entry import supervisor_argv

_FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")

PIPE_FD = 4
#: variables that make a shell run a file of the user's first (bash as ``sh``: ``BASH_ENV``)
_SHELL_STARTUP = frozenset({"BASH_ENV", "ENV"})
#: the watchdog until the pipe closes (its arguments: the job's cancel marker, then the Python
#: watchdog's command line, which gets ``cancelling`` appended if a cancel was under way when
#: the supervisor died: a cancel asked for after that does not make a failed job CANCELLED)
WATCHDOG_SH = """
trap '' TERM INT HUP
marker=$1
shift
IFS= read -r line <&4
[ "$line" = end ] && exit 0
[ -e "$marker" ] && set -- "$@" cancelling
exec "$@"
"""


class Watchdog:
    """The supervisor's end of the pipe to its watchdog (``fd``, kept across the supervisor's
    exec; -1 once the watchdog is gone) and the watchdog's pid (-1: it could not be started)."""

    def __init__(self, job_dir: str, fd: int = -1, pid: int | None = None) -> None:
        self._job_dir = job_dir
        self.fd = fd
        self.pid = pid

    def start(self) -> None:
        """Starts the watchdog (see the module). If it cannot be started the job runs on unguarded."""
        read_fd, self.fd = os.pipe()
        python = supervisor_argv(self._job_dir, "--watchdog")
        python.insert(-1, str(os.getpid()))  # the supervisor's pid, for the reason if it dies unrecorded
        marker = os.path.join(self._job_dir, store.CANCEL_FILE)
        argv = ["/bin/sh", "-c", WATCHDOG_SH, "torchx-watchdog", marker, *python]
        try:
            self.pid = os.posix_spawn(
                "/bin/sh",
                argv,
                {k: v for k, v in os.environ.items() if k not in _SHELL_STARTUP},
                file_actions=[(os.POSIX_SPAWN_DUP2, read_fd, PIPE_FD)],
            )
        except OSError:
            self.pid = -1
            os.close(self.fd)
            self.fd = -1
        os.close(read_fd)

    def end(self) -> None:
        """The job's final state is written: the watchdog exits without acting."""
        if self.fd >= 0:
            try:
                os.write(self.fd, b"end\n")  # into an empty pipe: never blocks
            except OSError:  # the watchdog is gone
                pass


def main(supervisor: int, job_dir: str, cancelling: bool) -> None:
    """Entry of the Python watchdog of the supervisor ``supervisor``: the shell's pipe closed
    without ``end`` (see the module); ``cancelling``: a cancel was under way then."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # cancel is the supervisor's business
        signal.signal(sig, signal.SIG_IGN)
    with store.take_lock(job_dir):  # nobody else writes the job's state meanwhile
        _act(supervisor, job_dir, cancelling)


def _act(supervisor: int, job_dir: str, cancelling: bool) -> None:
    """Under the job's lock: unless the job ended, kills what of it runs and records why it ended."""
    path = os.path.join(job_dir, store.STATE_FILE)
    try:
        st = store.read_json(path) or {}
    except (ValueError, OSError):  # torn or unreadable: the job's environment still finds its processes
        st = {}
    if st.get("state") in _FINAL:  # ended (or crashed and said so) before the pipe closed
        return
    from torchx_sched_local import orphans  # here: only an acting watchdog needs it, not the supervisor

    try:
        log_root = (store.read_json(os.path.join(job_dir, store.APP_FILE)) or {}).get("log_root")
    except (ValueError, OSError):
        log_root = None
    killed, _ = orphans.kill(st, log_root if isinstance(log_root, str) else None)
    said = f"; its replicas and their processes (pids {', '.join(map(str, killed))}) were killed" if killed else ""
    if cancelling:
        # a cancel was under way: `cancel` SIGKILLs a supervisor that has not ended the job in
        # time (stuck, or starved of CPU on a loaded machine); whichever of it and this process
        # takes the lock first stops the job, which ends as the user asked: it did not fail
        state, end = "CANCELLED", {"by": "cancel"}
        msg = f"cancelled (the job's supervisor (pid {supervisor}) ended before it had stopped the job{said})"
    else:
        state, end = "FAILED", {"by": "supervisor"}
        msg = f"the job's supervisor (pid {supervisor}) died before the job ended{said}"
    st.update(state=state, msg=msg, end=end, updated=time.time())
    for rs in st.get("replicas") or []:
        if rs.get("state") in ("PENDING", "RUNNING"):
            rs["state"] = state
    store.write_json(path, st)
