"""A forked supervisor replacing itself with a fresh interpreter, mid-job.

The supervisor of a single-threaded launcher starts as a fork of it (fast: a short job
ends before a new interpreter could have started). Once the job has run a while and
nothing is in flight, it ``exec``-s ``_supervise.py <job dir>``: the same pid, so its
replicas stay its children and their output pipes (made inheritable for the exec) stay
open; it writes what it knows to ``supervisor.resume`` (``marshal``) for its next image,
which deletes it. Signals that arrive meanwhile stay blocked, then pending, across the
exec; one that arrived just before (still unread in the wake-up pipe, which the exec closes)
puts the handover off. If anything fails before the exec, or the new image would not have the file
descriptors it needs to start (a low ``ulimit -n``), the supervisor goes on as it was and
tries again later: an exec that cannot start its interpreter would lose the job.
"""

from __future__ import annotations

import marshal
import os
import resource
import signal
import sys

from torchx_sched_local.entry import LOCK_FD, SUPERVISOR_LOG, supervisor_argv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx_sched_local.supervisor import Supervisor

#: free file descriptors a fresh supervisor needs to start (its script, modules, state files)
_FDS_TO_START = 16

_REPLICA_FIELDS = ("state", "pid", "start_time", "exit_code", "restarts", "msg", "error", "alive", "final")
_WRITER_FIELDS = ("_size", "_indexed", "_last_t", "_skipping", "_open_line", "dropped", "error")


def snapshot(sup: Supervisor) -> dict[str, Any]:
    """What an idle supervisor knows that its files do not say."""
    return {
        "replicas": [
            {
                **{f: getattr(r, f) for f in _REPLICA_FIELDS},
                "pipes": dict(r.pipes),
                "log_error_noted": r.log_error_noted,
                "writers": {name: {f: getattr(w, f) for f in _WRITER_FIELDS} for name, w in r.writers.items()},
                "combined_t": next(iter(r.writers.values()))._combined._last_t if r.writers else 0,  # type: ignore[union-attr]
            }
            for r in sup.replicas
        ],
        "role_restarts": sup.role_restarts,
        "log_root_fd": sup.files.root_fd,
        "sessions": sup.sessions,
        "num_restarts": sup.num_restarts,
        "msg": sup.msg,
        "watchdog": [sup.watchdog.fd, sup.watchdog.pid] if sup.watchdog else None,
        "recovery": sup.recovery.snapshot() if sup.recovery is not None else None,
    }


def restore(sup: Supervisor, data: dict[str, Any]) -> None:
    """Puts a fresh supervisor back where :func:`snapshot` left it (its pipes and children are inherited)."""
    from torchx_sched_local import logfiles
    from torchx_sched_local.watchdog import Watchdog

    for r, saved in zip(sup.replicas, data["replicas"], strict=True):
        for f in _REPLICA_FIELDS:
            setattr(r, f, saved[f])
        r.log_error_noted = saved["log_error_noted"]
        if saved["writers"]:
            r.writers = logfiles.replica_writers(r.spec["log_dir"], sup.files)
            for name, fields in saved["writers"].items():
                for f, value in fields.items():
                    setattr(r.writers[name], f, value)
            next(iter(r.writers.values()))._combined._last_t = saved["combined_t"]  # type: ignore[union-attr]
        for fd, stream in saved["pipes"].items():
            os.set_inheritable(fd, False)
            r.pipes[fd] = stream
            sup._watch(fd, r)
        if r.alive and r.pid is not None:
            sup.by_pid[r.pid] = r
    sup.role_restarts = data["role_restarts"]
    if data["log_root_fd"] >= 0:  # the log root this process opened before its replicas ran
        if sup.files.root_fd >= 0:
            os.close(sup.files.root_fd)
        os.set_inheritable(data["log_root_fd"], False)
        sup.files.root_fd = data["log_root_fd"]
    sup.sessions.update(data["sessions"])
    sup.num_restarts = data["num_restarts"]
    sup.msg = data["msg"]
    if sup.recovery is not None and data["recovery"] is not None:
        sup.recovery.restore(data["recovery"])
    if data["watchdog"] is not None:
        fd, pid = data["watchdog"]
        if fd >= 0:
            os.set_inheritable(fd, False)
        sup.watchdog = Watchdog(sup.job_dir, fd, pid)
    sup.dirty = True


def take_resume(job_dir: str) -> dict[str, Any] | None:
    """The state a previous image of this process left (and removes it), or None."""
    path = os.path.join(job_dir, "supervisor.resume")
    try:
        with open(path, "rb") as f:
            data: dict[str, Any] = marshal.load(f)
    except FileNotFoundError:
        return None
    try:
        os.unlink(path)
    except OSError:  # a read-only state directory: the job goes on (only a forked image writes the file)
        pass
    return data


def _room_to_start(inherited: list[int]) -> bool:
    """True if a new image holding ``inherited`` (and stdin/out/err) has the descriptors to start."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return True
    kept = {fd for fd in (*inherited, 0, 1, 2) if fd < soft}
    return soft - len(kept) >= _FDS_TO_START


def _signalled(wake_r: int) -> bool:
    """True if the signal wake-up pipe ``wake_r`` holds a signal not yet read."""
    import select

    if wake_r < 0:
        return False
    poller = select.poll()
    poller.register(wake_r, select.POLLIN)
    return bool(poller.poll(0))


def reexec(sup: Supervisor) -> None:
    """Replaces the process with a fresh supervisor carrying on the job; returns only if it could not."""
    path = os.path.join(sup.job_dir, "supervisor.resume")
    inherited = [fd for r in sup.replicas for fd in r.pipes] + [LOCK_FD]
    if sup.files.root_fd >= 0:
        inherited.append(sup.files.root_fd)
    if sup.watchdog is not None and sup.watchdog.fd >= 0:
        inherited.append(sup.watchdog.fd)
    if not _room_to_start(inherited):
        return
    data = snapshot(sup)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
    if _signalled(sup.wake_r):  # a signal the loop has not read yet would die with the pipe
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, marshal.dumps(data))
        finally:
            os.close(fd)
        log = os.open(os.path.join(sup.job_dir, SUPERVISOR_LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log, 2)  # the next image's start-up errors, if any
        os.close(log)
        for fd in inherited:
            os.set_inheritable(fd, True)
        sup.files.close()
        os.execv(sys.executable, supervisor_argv(sup.job_dir))
    except OSError:
        for fd in inherited:
            os.set_inheritable(fd, False)
        try:
            os.unlink(path)
        except OSError:
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
