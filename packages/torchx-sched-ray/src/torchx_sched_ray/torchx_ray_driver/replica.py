"""One replica's process: started, read and stopped by a Ray actor (this class, made remote by the driver).

Plain Python (no Ray import), so it runs the same in an actor and in a unit test.
The command runs without a shell (argv as given), in its own session; a supervising
thread started it, and it dies with that thread's process (``PR_SET_PDEATHSIG``). Its own
children (a shell that forks its command, a launcher) are killed too: a watcher process
(:func:`_group_watcher`) kills the session's process group when the actor's end of a pipe
closes, which happens however the actor dies. So a killed actor leaves no orphan behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque

from .placeholders import IMG_ROOT, RANK0_HOST, REPLICA_ID

_PR_SET_PDEATHSIG = 1
#: how long the output of an ended replica is still read (its children may keep the pipes open)
PIPE_DRAIN_SECONDS = 5.0


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the thread that started it ends (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def node_ip() -> str:
    """This node's address as Ray knows it (``RAY_NODE_IP_ADDRESS`` style), else the host name's."""
    try:
        import ray.util

        return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]
    except ImportError:
        return socket.gethostbyname(socket.gethostname())


def fill(value: str, values: dict[str, str]) -> str:
    """``value`` with the placeholders (keys of ``values``) replaced; nothing else is interpreted."""
    if "\0" not in value:
        return value
    for placeholder, replacement in values.items():
        value = value.replace(placeholder, replacement)
    return value


class ReplicaProcess:
    """Runs one command and buffers its output lines for :meth:`poll`."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._lines: deque[tuple[str, float, str, bool]] = deque()
        self._proc: subprocess.Popen[bytes] | None = None
        self._open = 0  # pipes still being read
        self._exit: int | None = None
        self._stopped = False

    def host(self) -> str:
        """The address of the node this replica runs on."""
        return node_ip()

    def start(self, argv: list[str], env: dict[str, str], replica_id: int, rank0_host: str) -> int:
        """Starts ``argv`` with ``env`` added to this process's environment; returns its pid.

        The placeholders are filled first: replica id, image root (this process's directory:
        the job's working dir) and the rank-0 host.

        Raises:
            OSError: the command cannot be started (e.g. not found); nothing runs then
        """
        values = {REPLICA_ID: str(replica_id), IMG_ROOT: os.getcwd(), RANK0_HOST: rank0_host}
        argv = [fill(a, values) for a in argv]
        full_env = dict(os.environ)
        full_env.update({k: fill(v, values) for k, v in env.items()})
        started: dict[str, object] = {}
        ready = threading.Event()
        threading.Thread(target=self._supervise, args=(argv, full_env, started, ready), daemon=True).start()
        ready.wait()
        if "error" in started:
            raise OSError(f"cannot start {argv[0]!r}: {started['error']}")
        proc = started["proc"]
        assert isinstance(proc, subprocess.Popen)
        return proc.pid

    def _supervise(
        self, argv: list[str], env: dict[str, str], started: dict[str, object], ready: threading.Event
    ) -> None:
        try:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            started["error"] = e.strerror or str(e)
            ready.set()
            return
        watcher = _group_watcher(proc.pid)
        self._proc = proc
        self._open = 2
        started["proc"] = proc
        ready.set()
        readers = [
            threading.Thread(target=self._read, args=(proc.stdout, "o"), daemon=True),
            threading.Thread(target=self._read, args=(proc.stderr, "e"), daemon=True),
        ]
        for t in readers:
            t.start()
        code = proc.wait()
        if watcher is not None:  # the replica ended: its group is no longer watched
            watcher.kill()
            watcher.wait()
        for t in readers:  # a child that outlives the replica may hold its pipes open: do not wait forever
            t.join(PIPE_DRAIN_SECONDS)
        with self._cond:
            self._exit = code
            self._cond.notify_all()

    def _read(self, pipe: object, stream: str) -> None:
        assert pipe is not None
        for raw in iter(pipe.readline, b""):  # type: ignore[attr-defined]
            newline = raw.endswith(b"\n")
            text = raw[:-1] if newline else raw
            with self._cond:
                self._lines.append((stream, time.time(), text.decode("utf-8", errors="replace"), newline))
                self._cond.notify_all()
        with self._cond:
            self._open -= 1
            self._cond.notify_all()

    def poll(self, timeout: float = 0.5) -> tuple[list[tuple[str, float, str, bool]], int | None, bool]:
        """Waits up to ``timeout`` s for output; returns (lines, exit code once ended, stopped by :meth:`stop`).

        Each line is (``o`` or ``e``, unix time, text without ``\\n``, had a ``\\n``). The exit
        code is negative for a signal, as in :mod:`subprocess`.
        """
        with self._cond:
            if not self._lines and self._exit is None:
                self._cond.wait(timeout)
            lines = list(self._lines)
            self._lines.clear()
            return lines, self._exit, self._stopped

    def stop(self, grace: float = 2.0) -> None:
        """SIGTERM to the replica's process group, SIGKILL after ``grace`` seconds if still alive."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        self._stopped = True
        _signal_group(proc.pid, signal.SIGTERM)

        def kill() -> None:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGKILL)

        timer = threading.Timer(grace, kill)
        timer.daemon = True
        timer.start()


#: the watcher: waits for EOF on stdin, then SIGKILLs the group (quietly if it is gone)
_WATCH = "import os, sys\nsys.stdin.buffer.read()\ntry:\n os.killpg(int(sys.argv[1]), 9)\nexcept OSError:\n pass"


def _group_watcher(pgid: int) -> subprocess.Popen[bytes] | None:
    """A process that SIGKILLs process group ``pgid`` once this process's end of its stdin
    closes (this process died, e.g. SIGKILLed with its actor); None if it cannot start."""
    try:
        return subprocess.Popen(
            [sys.executable, "-c", _WATCH, str(pgid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
