"""The supervisor's watchdog: if the supervisor dies, its replicas die too and the job says why.

The supervisor starts its watchdog before its first replica, so that no replica ever runs
unguarded: a small ``/bin/sh`` program (:data:`WATCHDOG_SH`, ``posix_spawn``-ed: no copy of
the launcher's memory, about a millisecond of CPU) with the read end of a pipe on fd 4 and the
job's lock on fd 5. The supervisor tells it, over the pipe, the process group of each replica
it starts (``+<pgid>``) and reaps (``-<pgid>``), and ``end`` once the job's final state is
written. If the pipe closes without ``end`` (the supervisor was SIGKILLed, OOM-killed or
crashed), the shell SIGKILLs every live replica's process group at once and becomes a small
Python interpreter (``_supervise.py --watchdog [pgid ...] <job dir>``, :func:`main`) that waits
for them to go, stops what they moved out of their groups, and records the job FAILED with the
reason (CANCELLED if a cancel was under way: ``cancel`` kills a supervisor that does not end
the job in time). It shares the job's lock with the supervisor, so nobody else writes the
job's state meanwhile.
"""

from __future__ import annotations

import os
import signal
import time

from torchx_sched_local import store

_FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


PIPE_FD = 4
LOCK_COPY_FD = 5
#: variables that make a shell run a file of the user's first (bash as ``sh``: ``BASH_ENV``)
_SHELL_STARTUP = frozenset({"BASH_ENV", "ENV"})
#: the watchdog until the pipe closes (``$1``: the job directory; the rest: the command line of
#: the Python watchdog, which gets the live process groups and the job directory appended)
WATCHDOG_SH = """
trap '' TERM INT HUP
job=$1
shift
groups=
while IFS= read -r line <&4; do
    case $line in
        end) exit 0 ;;
        [+-]*[!0-9]*) ;;
        +?*) groups="$groups ${line#+}" ;;
        -?*)
            left=
            for g in $groups; do [ "$g" = "${line#-}" ] || left="$left $g"; done
            groups=$left ;;
    esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
exec "$@" $groups "$job"
"""


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
        """Starts the watchdog (see the module) holding a copy of ``lock_fd``. If it cannot be
        started the job runs on unguarded."""
        from torchx_sched_local.launch import supervisor_argv

        argv = ["/bin/sh", "-c", WATCHDOG_SH, "torchx-watchdog", self._job_dir, *supervisor_argv("", "--watchdog")[:-1]]
        try:
            self.pid = os.posix_spawn(
                "/bin/sh",
                argv,
                {k: v for k, v in os.environ.items() if k not in _SHELL_STARTUP},
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, self.read_fd, PIPE_FD),
                    (os.POSIX_SPAWN_DUP2, lock_fd, LOCK_COPY_FD),
                ],
            )
        except OSError:
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


def main(args: list[str]) -> None:
    """Entry of the Python watchdog, ``[pgid ...] <job dir>``: the shell's pipe closed without
    ``end`` and it already SIGKILLed the groups (see the module)."""
    *groups, job_dir = args
    watch(job_dir, PIPE_FD, os.getppid(), {int(g) for g in groups})


def watch(job_dir: str, fd: int, supervisor_pid: int, groups: set[int] | None = None) -> None:
    """Reads the supervisor's messages until the pipe closes, then acts (``groups``: the
    replicas' process groups already known)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # cancel is the supervisor's business
        signal.signal(sig, signal.SIG_IGN)
    groups = set() if groups is None else groups
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
    from torchx_sched_local.sessions import kill_all, kill_sessions, scan
    from torchx_sched_local.supervisor import wait_groups_gone

    for pgid in groups:  # the shell did, unless the pipe closed before it ran
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    killed = sorted(groups)
    wait_groups_gone(killed, timeout=5.0)
    # a replica the supervisor started but had not told of yet (its own session, the job's environment)
    untold = [pid for pid in scan({}, _needle(job_dir))[1] if pid not in groups and _leads_session(pid)]
    kill_all(untold, signal.SIGKILL)
    kill_sessions({pgid: 0 for pgid in (*groups, *untold)})  # what they moved to process groups of their own
    killed = sorted({*killed, *untold})
    path = os.path.join(job_dir, store.STATE_FILE)
    try:
        st = store.read_json(path) or {}
    except ValueError:
        st = {}
    if st.get("state") in _FINAL:  # ended (or crashed and said so) just before the pipe closed
        return
    killed_text = f"; its replicas (process groups {', '.join(map(str, killed))}) were killed" if killed else ""
    supervisor_pid = st.get("pid") or supervisor_pid  # the parent may be gone before this process started
    if os.path.exists(os.path.join(job_dir, store.CANCEL_FILE)):
        # a cancel was under way: `cancel` SIGKILLs a supervisor that has not ended the job in
        # time (stuck, or starved of CPU on a loaded machine), then waits for this process (it
        # holds the lock): the job ends as the user asked, it did not fail
        state, end = "CANCELLED", {"by": "cancel"}
        msg = (
            f"cancelled (the job's supervisor (pid {supervisor_pid}) ended before it had stopped the job{killed_text})"
        )
    else:
        state, end = "FAILED", {"by": "supervisor"}
        msg = f"the job's supervisor (pid {supervisor_pid}) died before the job ended{killed_text}"
    st.update(state=state, msg=msg, end=end, updated=time.time())
    for rs in st.get("replicas") or []:
        if rs.get("state") in ("PENDING", "RUNNING"):
            rs["state"] = state
    store.write_json(path, st)


def _needle(job_dir: str) -> bytes:
    """The bytes of the job's replicas' environment that name it (see :func:`.sessions.scan`)."""
    try:
        app = store.read_json(os.path.join(job_dir, store.APP_FILE)) or {}
    except ValueError:
        return b""
    log_root = app.get("log_root")
    return f"PET_LOG_DIR={log_root}{os.sep}".encode() if isinstance(log_root, str) else b""


def _leads_session(pid: int) -> bool:
    """``pid`` is a session leader (every replica is: the supervisor starts each in its own)."""
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False
