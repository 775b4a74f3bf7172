"""The supervisor's watchdog: if the supervisor dies, its replicas die too and the job says why.

The supervisor forks the watchdog before it starts any replica (both are small: the
supervisor is a fresh interpreter). The supervisor tells it, over a pipe, the process
group of each replica it starts (``+<pgid>``) and reaps (``-<pgid>``), and ``end`` once
the job's final state is written. If the pipe closes without ``end`` (the supervisor was
SIGKILLed, OOM-killed or crashed), the watchdog SIGKILLs every live replica's process
group, waits for them to go, and records the job FAILED with the reason. It shares the
job's lock with the supervisor, so nobody else writes the job's state meanwhile.
"""

from __future__ import annotations

import os
import signal

from torchx_sched_local import store

_FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


class Watchdog:
    """The supervisor's end of the pipe to its watchdog (messages are best effort: a dead
    watchdog must not stop the job)."""

    def __init__(self, job_dir: str) -> None:
        read_fd, self._fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(self._fd)
                watch(job_dir, read_fd, os.getppid())
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(read_fd)
        self.pid = pid

    def _send(self, message: bytes) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, message)
        except OSError:
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


def watch(job_dir: str, fd: int, supervisor_pid: int) -> None:
    """The watchdog process: reads the supervisor's messages until the pipe closes, then acts."""
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
    path = os.path.join(job_dir, store.STATE_FILE)
    try:
        st = store.read_json(path) or {}
    except ValueError:
        st = {}
    if st.get("state") in _FINAL:  # ended (or crashed and said so) just before the pipe closed
        return
    killed = f"; its replicas (process groups {', '.join(map(str, live))}) were killed" if live else ""
    st.update(state="FAILED", msg=f"the job's supervisor (pid {supervisor_pid}) died before the job ended{killed}")
    for rs in st.get("replicas") or []:
        if rs.get("state") in ("PENDING", "RUNNING"):
            rs["state"] = "FAILED"
    store.write_json(path, st)
