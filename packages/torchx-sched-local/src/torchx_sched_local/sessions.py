"""Finding every process a job started, for stopping it (Linux ``/proc``).

Each replica starts in its own session (its pid is the session id), and what it starts stays
in that session unless it calls ``setsid`` — even if it moves to a process group of its own
(``bash`` with job control, ``set -m``, ``&``): so the job's processes are found by session,
not only by process group. A daemon that leaves the session is found by its environment
(it still carries the replica's ``PET_LOG_DIR``, unless it cleared it): it is named, not
killed (it asked to outlive its parent).

One pass over ``/proc`` reads a small ``stat`` file per process (a few ms for a few hundred
processes); it runs when a job ends and when it is cancelled, never per line of output.
This module imports only the standard library: the supervisor and its watchdog use it.
"""

from __future__ import annotations

import os
import signal
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def _stat(pid: str) -> list[bytes] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state is [0]), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def scan(
    sessions: Mapping[int, int], needle: bytes = b"", since: int = 0, orphans_only: bool = False, above: int = 0
) -> tuple[list[int], list[int]]:
    """Live processes of a job: ``(members, escaped)``.

    Args:
        sessions: replica session id -> the replica's start time (clock ticks since boot): a
            member started no earlier (so a reused id is not counted)
        needle: bytes of the replicas' environment (``PET_LOG_DIR=<log root>/``); other processes
            started at or after ``since`` whose environment holds it are ``escaped`` (they
            left their replica's session)
        since: the job's start (clock ticks since boot)
        orphans_only: look for ``escaped`` among processes whose parent is init or this process
            only (a daemon is re-parented so; saves reading every new process's environment)
        above: look only at pids above this one (see :func:`newer_pids_above`)
    """
    members: list[int] = []
    escaped: list[int] = []
    if not sessions and not needle:
        return members, escaped
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members, escaped
    seen: dict[int, list[bytes]] = {}
    for entry in entries:
        if entry.isdigit() and (pid := int(entry)) > above:
            fields = _stat(entry)
            if fields is not None:
                seen[pid] = fields
    # the session leaders' pids were read above unless they are at or below ``above``
    sessions = _still_ours(sessions, {pid: int(f[19]) for pid, f in seen.items()}, above)
    for pid, fields in seen.items():
        if pid == me or fields[0] in (b"Z", b"X"):
            continue
        sid, started = int(fields[3]), int(fields[19])
        if sid in sessions and started >= sessions[sid]:
            members.append(pid)
        elif needle and started >= since and (not orphans_only or int(fields[1]) in (1, me)):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = f.read()
            except OSError:
                continue
            if needle in environ:
                escaped.append(pid)
    return sorted(members), sorted(escaped)


def newer_pids_above(first: int) -> int:
    """``first - 1`` if every process created since process ``first`` (the job's first replica) has
    a higher pid, i.e. pids have not wrapped around since (the last pid the kernel gave out,
    ``/proc/loadavg``, is not below it); else 0 (look at every pid). Callers use it only for
    jobs younger than a few seconds, when pids cannot have gone all the way round."""
    try:
        with open("/proc/loadavg", "rb") as f:
            last = int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0
    return first - 1 if last >= first else 0


def _still_ours(sessions: Mapping[int, int], started_at: Mapping[int, int], above: int) -> dict[int, int]:
    """The ``sessions`` whose id still names the replica's session. The kernel gives a pid out
    again only once no process uses it as a session (or group) id, so a live process with
    that pid and another start time means the replica's session is gone and the id now names
    someone else's (another job's supervisor, after ``setsid``): it must not be touched.
    ``started_at``: the start times of the processes above pid ``above`` (one pass over ``/proc``)."""
    ours = {}
    for sid, started in sessions.items():
        leader = started_at.get(sid) if sid > above else start_time(sid)
        if leader is None or not started or leader == started:
            ours[sid] = started
    return ours


def kill_all(pids: Iterable[int], sig: int) -> None:
    """Sends ``sig`` to each of ``pids`` (gone ones are skipped)."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    fields = _stat(str(pid))
    return fields is not None and fields[0] not in (b"Z", b"X")


def wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    """Waits (up to ``timeout`` s) until ``pids`` are gone; returns those still alive."""
    deadline = time.monotonic() + timeout
    pending = [p for p in pids if alive(p)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.005)
        pending = [p for p in pending if alive(p)]
    return pending


def group_alive(pgid: int) -> bool:
    """True while process group ``pgid`` has a member that is not a zombie (Linux: checked in /proc)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return False  # no /proc: the members were signalled, assume they are going
    for entry in entries:
        if entry.isdigit():
            fields = _stat(entry)
            if fields is not None and int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    return False


def wait_groups_gone(pgids: list[int], timeout: float) -> None:
    """Waits (up to ``timeout`` s) until the killed process groups ``pgids`` have no live member."""
    deadline = time.monotonic() + timeout
    pending = [p for p in pgids if group_alive(p)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.005)
        pending = [p for p in pending if group_alive(p)]


def kill_sessions(sessions: Mapping[int, int], timeout: float = 2.0) -> None:
    """SIGKILLs every member of ``sessions`` (see :func:`scan`) and waits until they are gone."""
    for _ in range(3):  # a member may fork while it is being killed: look again
        members, _ = scan(sessions)
        if not members:
            return
        kill_all(members, signal.SIGKILL)
        wait_gone(members, timeout)


def start_time(pid: int) -> int | None:
    """The start time (clock ticks since boot) of ``pid``, or None if it is gone."""
    fields = _stat(str(pid))
    return None if fields is None else int(fields[19])
