"""The per-job supervisor: owns a local job's replicas from start to end.

One supervisor process per job, detached from the launcher (own session, stdio on
``/dev/null``), holding the job's lock until it exits: a fork of a single-threaded launcher
that hands over to a fresh interpreter once the job has run a while (:mod:`.handover`),
or a fresh interpreter from the start (see :mod:`.launch`), guarded by a watchdog
(:mod:`.watchdog`). It starts each replica in its own
session (so its whole process tree can be signalled), pumps the replicas' stdout and
stderr into the log files, restarts failed replicas according to the retry policy,
stops everything on cancel (SIGTERM, then SIGKILL after the grace period), records every
change in ``state.json`` and exits as soon as the job has ended.

It is a single-threaded event loop over the output pipes and a signal wake-up pipe
(SIGCHLD: a replica exited; SIGTERM/SIGINT/SIGHUP: cancel). It imports only the standard
library and this package's stdlib-only modules, so starting it is cheap. Errors writing
logs or state never end it (see :class:`torchx_sched_local.logfiles.StreamWriter`).
"""

from __future__ import annotations

import _signal  # the C functions where signal's wrappers would make an enum member of every signal (~0.4 ms)
import errno
import json
import os
import resource
import select
import signal
import time

from torchx_sched_local import handover, logfiles, sessions, store
from torchx_sched_local.entry import LOCK_FD, SUPERVISOR_LOG
from torchx_sched_local.watchdog import Watchdog

#: ``torchx.specs.NONE`` (no error): the supervisor is a small interpreter that imports no torchx module
NO_ERROR = "<NONE>"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from torchx_sched_local.recovering import Recovery

    T = TypeVar("T")

#: seconds to wait for a replica's output to reach EOF after it exited (descendants that
#: escaped its session may keep the pipe open)
DRAIN_TIMEOUT = 1.0
#: at most this many bytes are kept from a replica's TORCHELASTIC_ERROR_FILE
MAX_ERROR_FILE = 64 * 1024
_READ_SIZE = 1 << 20
#: log files the supervisor keeps open at once, whatever the number of replicas
OPEN_LOG_FILES = 64
#: file descriptors the supervisor needs besides 2 pipes per replica and its open log files
_SPARE_FDS = 32
#: a forked supervisor replaces itself with a fresh interpreter once its replicas ran this long (s):
#: a job that ends sooner (``utils.echo``) never waits for a new interpreter to start, and a
#: longer one shares the launcher's memory and command line for no more than this
HANDOVER_AFTER = 0.02
#: a handover that could not happen (e.g. too few free file descriptors for a new interpreter
#: to start) is tried again after this long (s); meanwhile the fork goes on as it was
HANDOVER_RETRY = 1.0
#: descriptors a fork keeps free for its handover (see :attr:`Supervisor.handover_room`)
HANDOVER_FDS = 8
#: a job younger than this (s) cannot have seen pids wrap around: its end looks at newer pids only
SHORT_JOB = 10.0
#: where a supervisor that re-executes itself leaves its state for its next image
RESUME_FILE = "supervisor.resume"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_DEFAULT_SIGNALS = frozenset(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


class SpawnError(Exception):
    """A replica could not be started (the message says why, for the job's status)."""


def read_error_file(path: str) -> str | None:
    """The first :data:`MAX_ERROR_FILE` bytes of a replica's error file (as text), or None if it is
    missing, empty or not a regular file: a FIFO there must not block the supervisor, nor a
    device like ``/dev/zero`` flood the job's status."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = b""
        while len(data) < MAX_ERROR_FILE:
            chunk = os.read(fd, MAX_ERROR_FILE - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace") or None


def describe_exit(code: int) -> str:
    """``exited with code 3`` / ``killed by signal 9 (SIGKILL)``."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"killed by signal {-code}{name}"


def _which(command: str, path: str) -> str | None:
    """The first executable file ``command`` in the directories of ``path`` (what ``shutil.which`` does
    on POSIX; shutil costs ~2 ms to import on the way to starting the first replica)."""
    for directory in path.split(os.pathsep):
        candidate = os.path.join(directory, command)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def resolve_entrypoint(entrypoint: str, path: str, cwd: str) -> str:
    """The executable ``entrypoint`` names: a path (relative to ``cwd``) or a command on ``path``.

    Raises:
        SpawnError: it does not exist or is not executable
    """
    if os.sep in entrypoint:
        full = os.path.normpath(os.path.join(cwd, entrypoint))
        if not os.path.exists(full):
            raise SpawnError(f"entrypoint {entrypoint!r} not found: {full} does not exist")
        if os.path.isdir(full) or not os.access(full, os.X_OK):
            raise SpawnError(
                f"entrypoint {entrypoint!r} is not executable ({full}); `chmod +x` it or run it through its interpreter"
            )
        return full
    found = _which(entrypoint, path)
    if found is None:
        raise SpawnError(
            f"entrypoint {entrypoint!r} not found on PATH (or not executable); install it, use a path,"
            " or set -cfg prepend_cwd=True to run commands in the current directory"
        )
    return os.path.join(cwd, found)


class Replica:
    """One replica of the job: its spec, current process, attempt outcome and log streams."""

    def __init__(self, spec: dict[str, Any], role: dict[str, Any]) -> None:
        self.spec = spec
        self.role = role
        self.name = f"{spec['role']}/{spec['replica_id']}"
        self.state = "PENDING"
        self.pid: int | None = None
        self.start_time: int | None = None
        self.exit_code: int | None = None
        self.restarts = 0
        self.msg = ""
        self.error = NO_ERROR
        self.alive = False
        self.pipes: dict[int, str] = {}
        self.drain_deadline: float | None = None
        self.kill_at: float | None = None
        self.stopped = False
        self.respawn = False
        self.final = False
        self.writers: dict[str, logfiles.StreamWriter] = {}
        self.log_error_noted = False

    @property
    def running(self) -> bool:
        """True while its process lives or its output is still being read."""
        return self.alive or bool(self.pipes)

    def dropped(self) -> tuple[int, str | None]:
        """Bytes of its output that could not be stored, and the first reason."""
        count, reason = 0, None
        for w in self.writers.values():
            count += w.dropped
            reason = reason or w.error
        return count, reason

    def to_json(self) -> dict[str, Any]:
        """Its entry in ``state.json``."""
        dropped, reason = self.dropped()
        return {
            "dropped_bytes": dropped,
            "log_error": reason,
            "state": self.state,
            "pid": self.pid,
            "start_time": self.start_time,
            "exit_code": self.exit_code,
            "restarts": self.restarts,
            "msg": self.msg,
            "error": self.error,
        }


class Supervisor:
    """Runs one job (see the module docstring)."""

    def __init__(self, job_dir: str, app: dict[str, Any], forked: bool = False) -> None:
        self.job_dir = job_dir
        #: a fork of the launcher (replaces itself with a fresh interpreter once the job runs a while)
        self.reexec_at: float | None = time.monotonic() + HANDOVER_AFTER if forked else None
        self.started = time.monotonic()
        self.roles: list[dict[str, Any]] = app["roles"]
        self.log_root: str = app["log_root"]
        self.replicas = [Replica(spec, self.roles[spec["role_index"]]) for spec in app["replicas"]]
        self.grace = float(app.get("stop_grace_period", 5.0))
        self.base_env = dict(os.environ)
        self.state_path = os.path.join(job_dir, store.STATE_FILE)
        self.base_state: dict[str, Any] = store.read_json(self.state_path) or {}
        # a spare descriptor, given back to write the state when the process runs out of them; the
        # first one held, so a start-up retried for want of descriptors (:func:`with_room`) leaks none
        self._reserve_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        # poll(2) directly: the selectors module costs ~1 ms to import, before the first replica starts
        self.poller = select.poll()
        self.readers: dict[int, Replica | None] = {}  # fd -> its replica (None: the signal wake-up pipe)
        self.by_pid: dict[int, Replica] = {}
        self.role_restarts = [0] * len(self.roles)
        self.num_restarts = 0
        self.cancelling = False
        #: who stopped the job: a cancel through torchx (its marker file exists) or a signal from outside
        self.stopped_by: dict[str, Any] = {}
        #: the job could not start at all (too few file descriptors for its replicas)
        self.not_started = False
        self.failed: Replica | None = None
        self.pending_restart: set[Replica] = set()
        #: when the next attempt of a recovering job starts (its back-off; monotonic), and that
        #: back-off in seconds, counted from when the failed attempt's last replica stopped
        self.restart_at: float | None = None
        self.backoff = 0.0
        #: the budgets and attempt log of a job that recovers by itself (managed's native recovery)
        self.recovery: Recovery | None = None
        if app.get("recovery"):
            from torchx_sched_local.recovering import Recovery

            self.recovery = Recovery(job_dir, app["recovery"])
        self.dirty = True
        self.app_state = "PENDING"
        self.msg = ""
        self._which: dict[tuple[str, str, str], str] = {}
        self.files = logfiles.FileCache(OPEN_LOG_FILES, root=app["log_root"])  # holds the log root, opened now
        self.watchdog: Watchdog | None = None
        #: the read end of the signal wake-up pipe (set by :meth:`run`)
        self.wake_r = -1
        #: the session of every replica process started (its pid) -> its start time (clock ticks);
        #: the module's, so that a crash kills them (one supervisor per process)
        self.sessions: dict[int, int] = _STARTED
        #: processes of the job that outlived it: ``[pid, start time]`` (left its session, or unkillable)
        self.left_running: list[list[int]] = []
        #: replicas that ended with the job: their ``.done`` markers follow its final state
        self.done_after_state: list[Replica] = []
        # a fork's room for its handover: low descriptors the exec closes, so the new image can
        # start (load its libraries and modules) even if the limit was lowered to what this holds
        self.handover_room = spare_fds(HANDOVER_FDS) if forked else []

    # ------------------------------------------------------------------ main loop
    def run(self, resume: dict[str, Any] | None = None, room: list[int] | None = None) -> None:
        """Runs the job to its end (``resume``: from where the previous image of this process
        left it; ``room``: the spare descriptors of a fresh image's start, see :func:`with_room`,
        held until it is set up); writes the final state."""
        room = room if room is not None else []
        problem = fd_budget(len(self.replicas)) if resume is None else None
        wake_r, wake_w = with_room(room, os.pipe)
        self.wake_r = wake_r
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        for sig in (*_STOP_SIGNALS, signal.SIGCHLD):
            signal.signal(sig, _ignore_signal)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        _signal.pthread_sigmask(signal.SIG_SETMASK, ())  # the C function: no enum of the old mask
        self._watch(wake_r, None)
        if resume is None:
            self._begin(problem)
        else:
            handover.restore(self, resume)
        self.settle_reserve(room)
        self.app_state = "RUNNING"
        self.dirty = True
        # the handover is counted from when every replica runs: a job that ends soon after never waits for it
        if self.reexec_at is not None:
            self.reexec_at = time.monotonic() + HANDOVER_AFTER
        while not self._ended():
            self._write_state()
            timeout = self._timeout()
            for fd, _ in self.poller.poll(None if timeout is None else timeout * 1000):
                if fd not in self.readers:  # closed by an earlier event of this batch
                    continue
                replica = self.readers[fd]
                if replica is None:
                    self._on_signals(wake_r)
                else:
                    self._on_output(fd, replica)
            self._reap()
            self._tick()
            if self.reexec_at is not None and time.monotonic() >= self.reexec_at and self._idle():
                self.reexec_at = time.monotonic() + HANDOVER_RETRY  # when it cannot happen now
                handover.reexec(self)  # returns only if it could not
        self._finish()

    def _begin(self, problem: str | None) -> None:
        """Starts the watchdog (no replica ever runs unguarded), then the replicas, or records
        why none starts."""
        self.watchdog = Watchdog(self.job_dir)
        self.watchdog.start()
        if problem:
            self.failed = self.replicas[0]
            self.not_started = True
            self.msg = problem
            for r in self.replicas:
                r.state = "CANCELLED"
        elif os.path.exists(os.path.join(self.job_dir, store.CANCEL_FILE)):
            self._cancel(None)
        else:
            self.base_state["started"] = time.time()  # when its first replica started (kept across a handover)
            if self.recovery is not None:
                try:
                    os.makedirs(self.recovery.checkpoint_dir, exist_ok=True)
                except OSError:  # the app says what it cannot write there
                    pass
                self.recovery.started()
            for r in self.replicas:
                self._start(r)
                if self.failed is not None:
                    break
            self._learn_start_times()

    def _idle(self) -> bool:
        """Nothing in flight (no stop, restart or drain under way): a state the handover can carry."""
        if self.cancelling or self.failed is not None or self.pending_restart:
            return False
        return all(r.kill_at is None and r.drain_deadline is None and not r.respawn for r in self.replicas)

    def _ended(self) -> bool:
        return not self.pending_restart and all(
            not r.running and r.state not in ("PENDING", "RUNNING") for r in self.replicas
        )

    def _timeout(self) -> float | None:
        deadlines = [d for r in self.replicas for d in (r.kill_at, r.drain_deadline) if d is not None]
        if self.restart_at is not None and self.pending_restart:
            deadlines.append(self.restart_at)
        if self.reexec_at is not None:
            deadlines.append(self.reexec_at)
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - time.monotonic())

    def _on_signals(self, wake_r: int) -> None:
        try:
            data = os.read(wake_r, 512)
        except BlockingIOError:
            return
        stop = next((sig for sig in data if sig in _STOP_SIGNALS), None)
        if stop is not None and not self.cancelling:
            self._cancel(stop)

    # ------------------------------------------------------------------ starting
    def _start(self, r: Replica) -> None:
        spec = r.spec
        if not r.writers:
            r.writers = logfiles.replica_writers(spec["log_dir"], self.files)
        else:  # a restart: the previous attempt's last line ends before this one writes
            t = time.time_ns()
            for w in r.writers.values():
                w.seal(t)
        r.exit_code = None
        r.msg = ""
        r.error = NO_ERROR
        r.respawn = False
        r.stopped = False
        r.kill_at = None
        try:
            pid = self._spawn(r)
        except SpawnError as e:
            r.state = "FAILED"
            r.msg = str(e)
            r.error = json.dumps({"message": f"{r.name}: {e}"})
            self._fail(r, f"{r.name}: {e}")
            return
        r.pid = pid
        # its start time is read later (:meth:`_learn_start_times`): right after the spawn the
        # child is still in exec, and reading its /proc stat then waits (~0.3 ms a replica).
        # Until then 0 stands for "ours": an unreaped child's pid cannot name anyone else.
        r.start_time = None
        self.sessions[pid] = 0
        r.alive = True
        r.state = "RUNNING"
        self.by_pid[pid] = r
        self.dirty = True

    def _spawn(self, r: Replica) -> int:
        spec = r.spec
        cwd = spec["cwd"]
        if not os.path.isdir(cwd):
            raise SpawnError(f"image directory {cwd} does not exist (role image {spec['image']!r})")
        env = {**self.base_env, **spec["env"]}
        if self.recovery is not None:
            env["TORCHX_ATTEMPT"] = str(self.recovery.attempt)
        if spec.get("prepend_cwd"):
            env["PATH"] = cwd + os.pathsep + env.get("PATH", os.defpath)
        cmd = spec["cmd"]
        key = (cmd[0], env.get("PATH", os.defpath), cwd)
        exe = self._which.get(key)
        if exe is None:
            exe = self._which[key] = resolve_entrypoint(cmd[0], key[1], cwd)
        out_r, out_w, err_r, err_w = _output_pipes()
        try:
            os.chdir(cwd)
            pid = os.posix_spawn(
                exe,
                cmd,
                env,
                file_actions=[(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)],
                setsid=True,
                setsigdef=_DEFAULT_SIGNALS,
                setsigmask=(),
            )
        except OSError as e:
            os.close(out_r)
            os.close(err_r)
            raise SpawnError(f"cannot start entrypoint {cmd[0]!r} ({exe}): {e.strerror or e}") from None
        finally:
            os.close(out_w)
            os.close(err_w)
        for fd, stream in ((out_r, "stdout"), (err_r, "stderr")):
            os.set_blocking(fd, False)
            r.pipes[fd] = stream
            self._watch(fd, r)
        return pid

    # ------------------------------------------------------------------ output
    def _watch(self, fd: int, r: Replica | None) -> None:
        """Wakes the loop when ``fd`` is readable or closed."""
        self.poller.register(fd, select.POLLIN)
        self.readers[fd] = r

    def _on_output(self, fd: int, r: Replica) -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        if data:
            self._write_output(r, r.pipes[fd], data)
            return
        self._close_pipe(r, fd)
        if not r.running:
            self._attempt_ended(r)

    def _write_output(self, r: Replica, stream: str, data: bytes) -> None:
        writer = r.writers[stream]
        writer.write(data, time.time_ns())
        if writer.error is not None and not r.log_error_noted:
            self._note_log_error(r)

    def _note_log_error(self, r: Replica) -> None:
        """Rewrites the state when a replica first loses output (so ``status`` says so at once)."""
        if not r.log_error_noted and r.dropped()[1] is not None:
            r.log_error_noted = True
            self.dirty = True

    def _close_pipe(self, r: Replica, fd: int) -> None:
        r.pipes.pop(fd)
        self.poller.unregister(fd)
        del self.readers[fd]
        os.close(fd)

    # ------------------------------------------------------------------ exits
    def _reap(self) -> None:
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None:
                return
            pid = info.si_pid
            if pid in self.by_pid:
                self._learn_start_times()  # before the reap frees its pid
            r = self.by_pid.pop(pid, None)
            if r is not None:
                # the leader is a zombie, so its group id cannot be reused yet: kill what it left behind
                _killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            if r is not None:
                self._exited(r, os.waitstatus_to_exitcode(status))

    def _exited(self, r: Replica, code: int) -> None:
        r.alive = False
        r.exit_code = code
        r.kill_at = None
        if r.pipes:
            r.drain_deadline = time.monotonic() + DRAIN_TIMEOUT
        else:
            self._attempt_ended(r)

    def _attempt_ended(self, r: Replica) -> None:
        r.drain_deadline = None
        for fd in list(r.pipes):
            self._close_pipe(r, fd)
        self._note_log_error(r)
        code = r.exit_code if r.exit_code is not None else -signal.SIGKILL
        self.dirty = True
        if r.respawn:
            r.state = "PENDING"
            self._restart_ready()
            return
        if r.stopped:
            r.state = "CANCELLED"
        elif code == 0:
            r.state = "SUCCEEDED"
        else:
            r.state = "FAILED"
            r.msg = describe_exit(code)
            r.error = self._error_file(r) or json.dumps({"message": f"{r.name} {r.msg}", "exit_code": code})
            if not (self.cancelling or self.failed is not None):
                self._on_failure(r)
        self._mark_final()

    def _error_file(self, r: Replica) -> str | None:
        path = r.spec["env"].get("TORCHELASTIC_ERROR_FILE")
        if not path:
            return None
        return read_error_file(path)

    # ------------------------------------------------------------------ retries
    def _on_failure(self, r: Replica) -> None:
        if self.recovery is not None:
            self._recover(r)
            return
        role_index = r.spec["role_index"]
        policy = r.role["retry_policy"]
        max_retries = int(r.role["max_retries"])
        if policy == "REPLICA" and r.restarts < max_retries:
            r.restarts += 1
            self.num_restarts += 1
            self._start(r)
            self._learn_start_times()
            return
        if policy in ("APPLICATION", "ROLE") and self.role_restarts[role_index] < max_retries:
            self.role_restarts[role_index] += 1
            self.num_restarts += 1
            group = [x for x in self.replicas if policy == "APPLICATION" or x.spec["role_index"] == role_index]
            for x in group:
                x.respawn = True
                x.restarts += 1
                self.pending_restart.add(x)
                if x.alive:
                    self._terminate(x)
            self._restart_ready()
            return
        self._fail(r, f"{r.name} {r.msg}")

    def _recover(self, r: Replica) -> None:
        """A replica of a recovering job failed: the attempt ends; every replica is stopped and,
        with a budget left, started again as the next attempt (after the back-off)."""
        assert self.recovery is not None
        code = r.exit_code if r.exit_code is not None else -signal.SIGKILL
        wait, why = self.recovery.failed(code)
        if wait is None:
            self._fail(r, f"{r.name} {r.msg}; {why}")
            return
        self.num_restarts += 1
        self.backoff = wait
        for x in self.replicas:
            x.respawn = True
            x.restarts += 1
            self.pending_restart.add(x)
            if x.alive:
                self._terminate(x)
        self._restart_ready()

    def _restart_ready(self) -> None:
        if any(x.running for x in self.pending_restart):
            return
        if self.recovery is not None:
            if self.recovery.pending is not None:  # the failed attempt's replicas all stopped
                self.recovery.stopped(self.backoff)
                self.restart_at = time.monotonic() + self.backoff
            if self.restart_at is not None and time.monotonic() < self.restart_at:
                return  # the back-off: the loop's timeout wakes it
            self.restart_at = None
            self.recovery.started()
        group, self.pending_restart = self.pending_restart, set()
        for x in sorted(group, key=self.replicas.index):
            x.final = False
            self._start(x)
            if self.failed is not None:
                break
        self._learn_start_times()

    def _learn_start_times(self) -> None:
        """Records the start time of every started replica that has none yet (a running or
        unreaped process), for ``state.json`` and for telling its session from a later one."""
        for r in self.replicas:
            if r.pid is not None and r.start_time is None and r.pid in self.by_pid:
                r.start_time = sessions.start_time(r.pid)
                self.sessions[r.pid] = r.start_time or 0

    def _fail(self, r: Replica, msg: str) -> None:
        """``r`` failed for good: the job fails and every other replica is stopped."""
        if self.failed is not None or self.cancelling:
            return
        self.failed = r
        self.msg = msg
        self.pending_restart.clear()
        self.restart_at = None
        for x in self.replicas:
            x.respawn = False
            if x is r:
                continue
            if x.alive:
                self._terminate(x)
            elif x.state == "PENDING" and not x.running:
                x.state = "CANCELLED"
        self.dirty = True

    # ------------------------------------------------------------------ stopping
    def _cancel(self, signum: int | None) -> None:
        """Stops every replica; ``signum``: the stop signal that asked for it (None: the cancel marker)."""
        self.cancelling = True
        # torchx's cancel leaves its marker before it signals; a signal without one came from outside
        if signum is None or os.path.exists(os.path.join(self.job_dir, store.CANCEL_FILE)):
            self.stopped_by = {"by": "cancel"}
        else:
            self.stopped_by = {"by": "signal", "signal": signum}
        self.msg = "cancelled"
        self.pending_restart.clear()
        self.restart_at = None
        for r in self.replicas:
            r.respawn = False
            if r.alive:
                self._terminate(r)
            elif not r.running and r.state in ("PENDING", "RUNNING"):
                r.state = "CANCELLED"
        # what the replicas moved to process groups of their own (bash `set -m`, `&`) is stopped too
        sessions.kill_all(sessions.scan(self.sessions)[0], signal.SIGTERM)
        self.dirty = True

    def _terminate(self, r: Replica) -> None:
        if r.pid is not None and r.alive and not r.stopped:
            r.stopped = True
            _killpg(r.pid, signal.SIGTERM)
            r.kill_at = time.monotonic() + self.grace

    def _tick(self) -> None:
        now = time.monotonic()
        for r in self.replicas:
            if r.kill_at is not None and now >= r.kill_at and r.alive and r.pid is not None:
                _killpg(r.pid, signal.SIGKILL)
                sessions.kill_all(sessions.scan({r.pid: self.sessions.get(r.pid, 0)})[0], signal.SIGKILL)
                r.kill_at = None
            if r.drain_deadline is not None and now >= r.drain_deadline:
                self._attempt_ended(r)
        if self.restart_at is not None and self.pending_restart and now >= self.restart_at:
            self._restart_ready()

    # ------------------------------------------------------------------ state
    def _mark_final(self) -> None:
        """Writes the ``.done`` marker of every replica that will not run again (log followers stop).

        When the job itself ends now, the markers wait for its final state (:meth:`_finish`): a
        follower that stops then reads the job as ended, as upstream's tail does."""
        stopping = self.cancelling or self.failed is not None
        ending = self._ended()
        for r in self.replicas:
            if r.final or r.running or r.respawn or r.state in ("PENDING", "RUNNING"):
                continue
            if not stopping and self._may_restart(r):
                continue
            r.final = True
            t = time.time_ns()
            for w in r.writers.values():
                w.seal(t, final=True)
            if ending:
                self.done_after_state.append(r)
            else:
                self._touch_done(r)

    def _touch_done(self, r: Replica, create_dirs: bool = True) -> None:
        try:
            self.files.touch(os.path.join(r.spec["log_dir"], store.DONE_FILE), create_dirs)
        except OSError:  # followers then stop when the supervisor lets go of the lock
            pass

    def _may_restart(self, r: Replica) -> bool:
        """True if another replica's failure could still restart ``r`` (APPLICATION/ROLE retries
        left; a recovering job's next attempt restarts every replica)."""
        if self.recovery is not None:
            return any(x.running for x in self.replicas)
        for index, role in enumerate(self.roles):
            if self.role_restarts[index] >= int(role["max_retries"]):
                continue
            covers_r = role["retry_policy"] == "APPLICATION" or (
                role["retry_policy"] == "ROLE" and index == r.spec["role_index"]
            )
            if covers_r and any(x.running for x in self.replicas if x.spec["role_index"] == index):
                return True
        return False

    def _final_state(self) -> str:
        if self.cancelling:
            return "CANCELLED"
        if self.failed is not None:
            return "FAILED"
        return "SUCCEEDED"

    def _end(self) -> dict[str, Any]:
        """Why the job ended, as facts for ``LocalScheduler.end_cause`` (the final state's ``end``)."""
        if self.cancelling:
            return self.stopped_by
        if self.not_started:
            return {"by": "limits"}
        if self.failed is not None:
            return {"by": "replica", "replica": self.replicas.index(self.failed)}
        return {"by": "done"}

    def _message(self) -> str:
        """The job's message: why it ended (if it did), and which replicas lost output."""
        notes = [self.msg] if self.msg else []
        for r in self.replicas:
            dropped, reason = r.dropped()
            if reason is not None:
                notes.append(f"{r.name}: {dropped} bytes of output not stored ({reason})")
        return "; ".join(notes)

    def _state_data(self, final: bool) -> dict[str, Any]:
        data = dict(self.base_state)
        data.update(
            state=self._final_state() if final else self.app_state,
            pid=os.getpid(),
            num_restarts=self.num_restarts,
            msg=self._message(),
            error=self.failed.error if self.failed is not None else NO_ERROR,
            replicas=[r.to_json() for r in self.replicas],
            updated=time.time(),
        )
        if self.left_running:
            data["left_running"] = self.left_running
        if final:
            data["end"] = self._end()
        return data

    def _write_state(self, final: bool = False) -> None:
        """Writes ``state.json``; on failure (full disk) keeps going and tries again at the next change.
        The final state, if it cannot be written, is written in place (in the room every write
        reserves); if that fails too, :meth:`_hold_outcome` keeps it."""
        if not self.dirty and not final:
            return
        self.dirty = False
        data = self._state_data(final)
        error = self._store(data, final)
        if error is None:
            return
        self.dirty = True
        if final:
            self._hold_outcome(data, error)

    def _store(self, data: dict[str, Any], final: bool) -> OSError | None:
        """Writes ``data`` to ``state.json``; the error if it could not."""
        while True:
            try:
                reserve = store.state_reserve(len(self.replicas))
                if final:  # durable: see store's "Durability"
                    store.write_final_state(self.state_path, data, reserve)
                else:
                    store.write_json(self.state_path, data, durable=False, reserve=reserve)
                if self._reserve_fd < 0:
                    try:
                        self._reserve_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                    except OSError:
                        pass
                return None
            except OSError as e:
                _remove_quietly(f"{self.state_path}.{os.getpid()}.tmp")
                if e.errno in (errno.EMFILE, errno.ENFILE) and self._free_fds():
                    continue
                if final and e.errno in (errno.ENOSPC, errno.EDQUOT) and self._store_in_place(data) is None:
                    return None
                return e

    def _store_in_place(self, data: dict[str, Any]) -> OSError | None:
        """Writes the final ``data`` over ``state.json`` in its reserved room (a full disk); long
        messages and errors are shortened if the whole does not fit. The error if it did not."""
        compact = {
            **data,
            "error": data["error"][:2000],
            "replicas": [{**rs, "error": NO_ERROR, "msg": rs["msg"][:200]} for rs in data["replicas"]],
        }
        for candidate in (data, compact):
            try:
                store.rewrite_in_place(self.state_path, json.dumps(candidate, separators=(",", ":")).encode())
                return None
            except OSError as e:
                error = e
        return error

    def _hold_outcome(self, data: dict[str, Any], error: OSError) -> None:
        """The final state cannot be stored (full or read-only state directory): keeps the job (its lock)
        and tries again, more slowly over time, until it is stored or the job's directory is
        deleted; meanwhile tells whoever asks (``status``, ``wait``, ``cancel``) the outcome and
        why it is not stored (:mod:`.outcome`)."""
        from torchx_sched_local.outcome import UNSTORED, OutcomeServer, reason

        try:
            server: OutcomeServer | None = OutcomeServer(self.job_dir)
        except OSError:
            server = None  # another process holds the name: nobody is told, the retries go on
        delay = 0.05
        pending: OSError | None = error
        try:
            while pending is not None and os.path.isdir(self.job_dir):
                held = {**data, UNSTORED: reason(pending)}
                deadline = time.monotonic() + delay
                while (left := deadline - time.monotonic()) > 0:
                    if server is None:
                        time.sleep(left)
                    elif select.select([server], [], [], left)[0]:
                        server.answer(held)
                delay = min(delay * 2, 2.0)
                pending = self._store(data, final=True)
        finally:
            if server is not None:
                server.close()

    def settle_reserve(self, room: list[int]) -> None:
        """Ends the start-up: moves the spare descriptor as low as it can, so that a limit later
        lowered to what the process holds still leaves it a slot to give back: to the lowest of
        it and ``room`` (the start-up's spare descriptors, then closed: each close frees a number
        above it, whenever the limit is lowered meanwhile), else to the lowest free number."""
        if room:
            keep, *others = sorted([*room, self._reserve_fd] if self._reserve_fd >= 0 else room)
            self._reserve_fd = keep
            for fd in others:
                os.close(fd)
            room.clear()
            return
        try:
            fd = os.dup(self._reserve_fd)
        except OSError:
            return
        lower = min(fd, self._reserve_fd)
        os.close(max(fd, self._reserve_fd))
        self._reserve_fd = lower

    def _free_fds(self) -> bool:
        """Out of file descriptors: closes the cached log files and the spare one; False if there were none."""
        if self._reserve_fd < 0:
            return False
        self.files.close()
        os.close(self._reserve_fd)
        self._reserve_fd = -1
        return True

    def _finish(self) -> None:
        self._stop_leftovers()
        if self.recovery is not None:
            if self.cancelling:  # a failed attempt stopped by the cancel still ended: no next one
                self.recovery.stopped()
            else:
                self.recovery.end(self._final_state())
        t = time.time_ns()
        for r in self.replicas:
            for w in r.writers.values():
                w.seal(t, final=True)
            if r.state in ("PENDING", "RUNNING"):
                r.state = "CANCELLED"
        self.files.close()
        self._write_summary()
        self._write_state(final=True)
        # the last markers come after the final state (the other followers stop when the
        # supervisor lets go of the lock); the job may be deleted from now on: a log directory
        # removed meanwhile is not made again
        for r in self.done_after_state:
            self._touch_done(r, create_dirs=False)
        self.watchdog.end()  # type: ignore[union-attr]
        _announce_end()

    def _write_summary(self) -> None:
        """TorchX's ``SUCCESS`` file in a ``log_dir`` the user gave (see :mod:`.summary`)."""
        if self.log_root.startswith(self.job_dir + os.sep) or self.files.root_fd < 0:
            return
        app_id = os.path.basename(self.job_dir)
        try:
            from torchx_sched_local import summary  # its import opens files too (EMFILE)

            summary.write_summary(
                self.files.root_fd, summary.summary(app_id, self.log_root, self._final_state(), self.replicas)
            )
        except OSError:  # a full or removed log directory, no descriptor left: the stored state says how it ended
            pass

    def _stop_leftovers(self) -> None:
        """Kills what the job's replicas left running in their sessions (in process groups of their
        own too: bash ``set -m``, ``&``) and records what it cannot kill or must not (daemons that
        left the session), for ``status`` to name."""
        since = min(self.sessions.values(), default=0)
        needle = f"PET_LOG_DIR={self.log_root}{os.sep}".encode()
        # a short job looks only at pids newer than its first replica (a few instead of every process)
        young = self.sessions and time.monotonic() - self.started < SHORT_JOB
        above = sessions.newer_pids_above(min(self.sessions)) if young else 0
        members, escaped = sessions.scan(self.sessions, needle, since, orphans_only=True, above=above)
        survivors: list[int] = []
        if members:
            sessions.kill_all(members, signal.SIGKILL)
            survivors = sessions.wait_gone(members, 2.0)
            sessions.kill_sessions(self.sessions)  # what forked meanwhile
        for pid in sorted({*survivors, *escaped}):
            started = sessions.start_time(pid)
            if started is not None:
                self.left_running.append([pid, started])


def _output_pipes() -> tuple[int, int, int, int]:
    """Read and write ends of a stdout and a stderr pipe.

    Raises:
        SpawnError: out of file descriptors
    """
    fds: list[int] = []
    try:
        for _ in range(2):
            fds.extend(os.pipe())
    except OSError as e:
        for fd in fds:
            os.close(fd)
        raise SpawnError(f"cannot create its output pipes: {e.strerror} (raise `ulimit -n`?)") from None
    return fds[0], fds[1], fds[2], fds[3]


def fd_budget(replicas: int) -> str | None:
    """Makes room for ``replicas`` replicas' output pipes: raises the soft ``RLIMIT_NOFILE`` as far as
    needed (up to the hard limit). Returns why the job cannot run if the hard limit is too low."""
    needed = 2 * replicas + OPEN_LOG_FILES + _SPARE_FDS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    if hard == resource.RLIM_INFINITY or hard >= needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return None
    return (
        f"not started: {replicas} replicas need {needed} open files in the job's supervisor (2 output pipes per"
        f" replica), but the hard limit `ulimit -Hn` is {hard}; raise it or run at most"
        f" {max(0, (hard - OPEN_LOG_FILES - _SPARE_FDS) // 2)} replicas per job"
    )


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _ignore_signal(signum: int, frame: object) -> None:
    """Python-level handler; the wake-up fd carries the signal into the event loop."""


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


#: sessions of the replicas this process started (pid -> start time): a crash kills them
_STARTED: dict[int, int] = {}


def _record_crash(job_dir: str, error: BaseException) -> None:
    """Kills the replicas a crashed supervisor started (nothing must outlive the job), writes its
    traceback to its log and FAILED to the job's state (it may have died for want of descriptors:
    it gives up all but stdio and the job's lock first). Its watchdog, woken by the closed pipe,
    waits for the lock this process holds until it exits, then finds the job ended."""
    os.closerange(LOCK_FD + 1, 1 << 20)
    try:
        sessions.kill_sessions(_STARTED)
    except OSError:
        pass
    try:
        import traceback  # only now: an import opens files, and the crash may be EMFILE

        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    except BaseException:
        text = f"{type(error).__name__}: {error}\n"
    try:
        with open(os.path.join(job_dir, SUPERVISOR_LOG), "a", encoding="utf-8") as f:
            f.write(text)
        path = os.path.join(job_dir, store.STATE_FILE)
        data = store.read_json(path) or {}
        last = text.strip().splitlines()[-1] if text.strip() else "unknown error"
        killed = "; its replicas were killed" if _STARTED else ""
        data.update(
            state="FAILED",
            msg=f"the job's supervisor failed: {last} (see {job_dir}/{SUPERVISOR_LOG}){killed}",
            end={"by": "supervisor"},
        )
        store.write_json(path, data)
    except (OSError, ValueError):
        pass


#: where a forked supervisor tells its launcher that the job ended (see :func:`_announce_end`)
END_FD = LOCK_FD + 1
_end_fd = -1


def _announce_end() -> None:
    """The job's final state is stored: lets go of the job's lock and, in a fork, writes a byte
    to the launcher's end pipe (:mod:`.launch`), before the exit. Exiting takes a while for a
    copy of a large launcher (its memory is unmapped first), and a launcher waiting for the job
    is woken by the byte instead, and finds the lock free."""
    global _end_fd
    try:
        os.close(LOCK_FD)
    except OSError:
        pass
    if _end_fd >= 0:
        try:
            os.write(_end_fd, b"e")  # non-blocking: a full pipe already wakes the launcher
        except OSError:  # full, or the launcher closed it
            pass
        os.close(_end_fd)
        _end_fd = -1


def _detach(lock_fd: int, end_fd: int = -1) -> None:
    """Cuts a freshly forked supervisor loose from the launcher: the lock on fd 3, the launcher's
    end pipe ``end_fd`` (if any) on fd 4, stdio on /dev/null (stderr goes to ``supervisor.log``
    at the handover), every other inherited fd closed, no launcher handler."""
    global _end_fd
    import fcntl
    import gc

    gc.freeze()  # objects of the launcher must never be finalized here
    signal.set_wakeup_fd(-1)
    for sig in range(1, _signal.NSIG):  # the launcher's Python handlers must not run here
        try:
            handler = _signal.getsignal(sig)
        except ValueError:  # not a signal number here
            continue
        if callable(handler):
            _signal.signal(sig, _signal.SIG_DFL)
    if end_fd >= 0:  # above the numbers taken below
        end_fd = fcntl.fcntl(end_fd, fcntl.F_DUPFD_CLOEXEC, END_FD + 1)
    if lock_fd != LOCK_FD:
        os.dup2(lock_fd, LOCK_FD, inheritable=False)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if end_fd >= 0:  # close-on-exec: a supervisor that hands over no longer says when it ends
        _end_fd = os.dup2(end_fd, END_FD, inheritable=False)
    os.closerange(END_FD + 1 if end_fd >= 0 else LOCK_FD + 1, 1 << 20)  # devnull too (>= 4 when 0-3 are taken)


def supervise_forked(job_dir: str, lock_fd: int, end_fd: int = -1) -> None:
    """Runs the job in ``job_dir`` in a fork of the launcher holding the lock ``lock_fd``, ``end_fd``
    the write end of the launcher's end pipe (-1: none); never returns."""
    code = 0
    try:
        _detach(lock_fd, end_fd)
        _run(job_dir, forked=True)
    except BaseException as e:
        code = 1
        _record_crash(job_dir, e)
    finally:
        os._exit(code)


def spare_fds(count: int) -> list[int]:
    """Up to ``count`` descriptors on /dev/null (close-on-exec), as many as the limit allows."""
    room: list[int] = []
    try:
        while len(room) < count:
            room.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        pass
    return room


def with_room(room: list[int], step: Callable[[], T]) -> T:
    """Runs ``step``; while it fails for want of file descriptors, closes the highest of ``room``
    (spare descriptors held for this, in increasing order) and tries again."""
    while True:
        try:
            return step()
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE) or not room:
                raise
            os.close(room.pop())


def _run(job_dir: str, forked: bool, room: list[int] | None = None) -> None:
    os.set_inheritable(LOCK_FD, False)  # replicas must not hold the job's lock
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # a closed pipe or a file size limit is an OSError here
        signal.signal(sig, signal.SIG_IGN)
    os.chdir(job_dir)
    room = room if room is not None else []
    app = with_room(room, lambda: store.read_json(os.path.join(job_dir, store.APP_FILE)))
    resume = None if forked else with_room(room, lambda: handover.take_resume(job_dir))
    supervisor = with_room(room, lambda: Supervisor(job_dir, app, forked=forked))
    supervisor.run(resume, room)


def main(argv: list[str], room: list[int] | None = None) -> None:
    """Entry of the fresh supervisor process: ``_supervise.py JOB_DIR``, the job's lock on fd 3
    (and, after a handover, ``supervisor.resume`` in the job directory); ``room``: spare
    descriptors to give back if the process's limit leaves none for its start.

    Runs the job to its end and exits the process (never returns).
    """
    job_dir = os.path.abspath(argv[0])
    code = 0
    try:
        _run(job_dir, forked=False, room=room)
    except BaseException as e:
        code = 1
        _record_crash(job_dir, e)
    finally:
        os._exit(code)
