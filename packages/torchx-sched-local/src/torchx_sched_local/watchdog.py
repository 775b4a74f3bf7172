"""The supervisor's watchdog: if the supervisor dies, its replicas die too and the job says why.

The watchdog is a fresh small interpreter (``_supervise.py --watchdog <job dir>``) with the
read end of a pipe on fd 4 and the job's lock on fd 5, started once the job has run
``WATCHDOG_AFTER`` (1 s): a short job never pays for its start (before that, a dead
supervisor's replicas are found and stopped by ``status``/``cancel``). The supervisor tells it, over a pipe, the process
group of each replica it starts (``+<pgid>``) and reaps (``-<pgid>``), and ``end`` once
the job's final state is written. If the pipe closes without ``end`` (the supervisor was
SIGKILLed, OOM-killed or crashed), the watchdog SIGKILLs every live replica's process
group, waits for them to go, and records the job FAILED with the reason (CANCELLED if a
cancel was under way: ``cancel`` kills a supervisor that does not end the job in time). It shares the
job's lock with the supervisor, so nobody else writes the job's state meanwhile.
"""

from __future__ import annotations

import os
import signal
import time

from torchx_sched_local import store

_FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


PIPE_FD = 4
LOCK_COPY_FD = 5


class Watchdog:
    """The supervisor's end of the pipe to its watchdog (messages are best effort: a dead
    watchdog must not stop the job). Messages sent before :meth:`start` wait in the pipe."""

    def __init__(
        self, job_dir: str, fd: int = -1, pid: int | None = None, backlog: bytes = b"", read_fd: int = -1
    ) -> None:
        self._job_dir = job_dir
        self.read_fd = read_fd  # kept until the watchdog starts
        if fd < 0:
            self.read_fd, fd = os.pipe()
            os.set_blocking(fd, False)
        self._fd = fd
        self.pid = pid
        #: messages the pipe could not take yet (the watchdog is not reading yet)
        self.backlog = bytearray(backlog)

    @property
    def fd(self) -> int:
        """The write end (kept across the supervisor's exec)."""
        return self._fd

    def start(self, lock_fd: int) -> None:
        """Starts the watchdog process (a fresh interpreter holding a copy of ``lock_fd``)."""
        import sys

        from torchx_sched_local.launch import supervisor_argv

        try:
            self.pid = os.posix_spawn(
                sys.executable,
                supervisor_argv(self._job_dir, "--watchdog"),
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, self.read_fd, PIPE_FD),
                    (os.POSIX_SPAWN_DUP2, lock_fd, LOCK_COPY_FD),
                ],
            )
        except OSError:  # no watchdog: the job runs on unguarded
            self.pid = -1
        os.close(self.read_fd)
        self.read_fd = -1

    def _send(self, message: bytes) -> None:
        if self._fd >= 0:
            self.backlog += message
            self.flush()

    def flush(self) -> None:
        """Writes what the pipe takes of the backlog (never blocks)."""
        while self.backlog and self._fd >= 0:
            try:
                del self.backlog[: os.write(self._fd, self.backlog)]
            except BlockingIOError:
                return
            except OSError:  # the watchdog is gone
                os.close(self._fd)
                self._fd = -1

    def started(self, pgid: int) -> None:
        """Replica process group ``pgid`` exists."""
        self._send(b"+%d\n" % pgid)

    def reaped(self, pgid: int) -> None:
        """Replica process group ``pgid`` was killed and its leader reaped."""
        self._send(b"-%d\n" % pgid)

    def end(self) -> None:
        """The job's final state is written: the watchdog exits without acting."""
        self._send(b"end\n")


def main(job_dir: str) -> None:
    """Entry of the watchdog process (see :class:`Watchdog`)."""
    watch(job_dir, PIPE_FD, os.getppid())


def watch(job_dir: str, fd: int, supervisor_pid: int) -> None:
    """The watchdog: reads the supervisor's messages until the pipe closes, then acts."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # cancel is the supervisor's business
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    pending = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line == b"end":
                return
            if line[:1] == b"+":
                groups.add(int(line[1:]))
            elif line[:1] == b"-":
                groups.discard(int(line[1:]))
    from torchx_sched_local.supervisor import wait_groups_gone

    live = []
    for pgid in sorted(groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
            live.append(pgid)
        except (ProcessLookupError, PermissionError):
            pass
    wait_groups_gone(live, timeout=5.0)
    from torchx_sched_local.sessions import kill_sessions

    kill_sessions({pgid: 0 for pgid in groups})  # what they moved to process groups of their own
    path = os.path.join(job_dir, store.STATE_FILE)
    try:
        st = store.read_json(path) or {}
    except ValueError:
        st = {}
    if st.get("state") in _FINAL:  # ended (or crashed and said so) just before the pipe closed
        return
    killed = f"; its replicas (process groups {', '.join(map(str, live))}) were killed" if live else ""
    supervisor_pid = st.get("pid") or supervisor_pid  # the parent may be gone before this process started
    if os.path.exists(os.path.join(job_dir, store.CANCEL_FILE)):
        # a cancel was under way: `cancel` SIGKILLs a supervisor that has not ended the job in
        # time (stuck, or starved of CPU on a loaded machine), then waits for this process (it
        # holds the lock): the job ends as the user asked, it did not fail
        state, end = "CANCELLED", {"by": "cancel"}
        msg = f"cancelled (the job's supervisor (pid {supervisor_pid}) ended before it had stopped the job{killed})"
    else:
        state, end = "FAILED", {"by": "supervisor"}
        msg = f"the job's supervisor (pid {supervisor_pid}) died before the job ended{killed}"
    st.update(state=state, msg=msg, end=end, updated=time.time())
    for rs in st.get("replicas") or []:
        if rs.get("state") in ("PENDING", "RUNNING"):
            rs["state"] = state
    store.write_json(path, st)
