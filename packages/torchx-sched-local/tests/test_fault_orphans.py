"""Fault injection, issue 12 point 4 and issue 20 point 2: no orphans when the supervisor dies.

A real SIGKILL of the supervisor (what the OOM killer sends), at any time (its watchdog starts
before the first replica): the watchdog kills every replica's process group (the replica and
what it started) and records the job FAILED with the reason. If the watchdog is SIGKILLed too, ``status`` names the live replica
processes and ``cancel`` stops them, and the job stays FAILED with the reason.
"""

from __future__ import annotations

import os
import signal

import pytest
from torchx.schedulers.causes import EndCause
from torchx.specs import AppState
from torchx.testing import children, cmdline, command_app, eventually
from torchx_sched_local import local_scheduler, store
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.orphans import survivors
from torchx_sched_local.sessions import alive

# the replica (sh) and two descendants in its process group
TREE = "sleep 300 & sleep 301 & echo up; wait"


def _started(sched: LocalScheduler, replicas: int = 2, grace: float = 5.0) -> tuple[str, dict]:  # type: ignore[type-arg]
    app_id = sched.submit(command_app("sh", "-c", TREE, replicas=replicas), {"stop_grace_period": grace})
    for k in range(replicas):
        eventually(lambda k=k: list(sched.log_iter(app_id, "r", k)) == ["up\n"])  # type: ignore[misc]
    # the supervisor's first state (written once it runs in its own interpreter) lists the replicas
    eventually(
        lambda: (
            [bool(r.get("start_time")) for r in (sched.store.state(app_id) or {}).get("replicas", [])]
            == [True] * replicas
        )
    )
    st = sched.store.state(app_id) or {}
    assert len(survivors(st, None)) == 3 * replicas
    eventually(lambda: len(children(st["pid"])) == replicas + 1)  # and the watchdog
    return app_id, st


def test_sigkill_of_the_supervisor_kills_every_replica_and_says_why(sched: LocalScheduler) -> None:
    app_id, st = _started(sched)
    os.kill(st["pid"], signal.SIGKILL)
    eventually(lambda: _recorded_state(sched, app_id) == "FAILED")  # by the watchdog
    assert survivors(st, None) == []  # the replicas and their children are gone
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert f"the job's supervisor (pid {st['pid']}) died before the job ended; its replicas" in desc.msg, desc.msg
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert "supervisor" in desc.msg


def test_supervisor_and_watchdog_killed_status_names_the_pids_and_cancel_stops_them(sched: LocalScheduler) -> None:
    app_id, st = _started(sched)
    replicas = {r["pid"] for r in st["replicas"]}
    (watchdog,) = [pid for pid in children(st["pid"]) if pid not in replicas]
    os.kill(watchdog, signal.SIGKILL)
    os.kill(st["pid"], signal.SIGKILL)
    eventually(lambda: not store.lock_is_held(sched.store.job_dir(app_id)))
    live = survivors(st, None)
    assert len(live) == 6
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert "died before the job ended" in desc.msg, desc.msg
    assert all(str(pid) in desc.msg for pid in live), desc.msg
    sched.cancel(app_id)
    assert survivors(st, None) == []
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert "died before the job ended" in desc.msg, desc.msg
    assert "`cancel` killed its replicas" in desc.msg, desc.msg


def test_cancel_of_a_stuck_supervisor_reads_cancelled(sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    """A supervisor that does not end the job in time (stopped here; starved of CPU on a loaded
    machine) is SIGKILLed by ``cancel``; then ``cancel`` or the watchdog, whichever takes the
    job's lock first, kills the replicas: the job reads CANCELLED, as asked, not FAILED (issue
    20 point 5: an attached run's Ctrl-C once ended FAILED under load)."""
    monkeypatch.setattr(local_scheduler, "CANCEL_SLACK", 1.0)  # the wait for the supervisor: 10 s by default
    app_id, st = _started(sched, grace=0.0)
    os.kill(st["pid"], signal.SIGSTOP)
    sched.cancel(app_id)
    assert survivors(st, None) == []
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.CANCELLED
    assert desc.msg.startswith("cancelled (the job's supervisor ") and "replicas" in desc.msg, desc.msg
    assert [r.state for r in desc.roles_statuses[0].replicas] == [AppState.CANCELLED] * 2
    cause = sched.end_cause(app_id)
    assert cause is not None
    assert cause.cause == EndCause.CANCELLED


def test_watchdog_leaves_a_job_that_ended_alone(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", "echo done"), {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED
    assert desc.msg == ""
    job_dir = sched.store.job_dir(app_id)
    eventually(lambda: _watchdogs_of(job_dir) == [])  # it read "end" and exited
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.SUCCEEDED
    assert desc.msg == ""


# ---------------------------------------------------------------- issue 20 point 2: early failures


def test_a_supervisor_crashing_before_its_watchdog_stops_what_it_started(sched: LocalScheduler) -> None:
    """Replica 0 starts, then the supervisor crashes on replica 1 (a NUL byte slipped into a request
    built past the dry run's check): replica 0 must not outlive it."""
    app = command_app("sleep", "300", replicas=2)
    info = sched.submit_dryrun(app, {})
    info.request.replicas[1].env["BAD"] = "a\0b"
    app_id = sched.schedule(info)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED, desc
    assert "the job's supervisor failed" in desc.msg and "its replicas were killed" in desc.msg, desc.msg
    with open(os.path.join(sched.store.job_dir(app_id), "supervisor.log"), encoding="utf-8") as f:
        crash = f.read()
    assert crash.startswith("Traceback (most recent call last):") and "null byte" in crash, crash
    st = sched.store.state(app_id) or {}
    assert survivors(st, None) == []
    pid0 = (st.get("replicas") or [{}])[0].get("pid")
    assert pid0 is None or not alive(pid0)


def test_a_supervisor_killed_at_once_has_its_replicas_killed_by_its_watchdog(sched: LocalScheduler) -> None:
    """SIGKILL as soon as the replicas exist (maybe before any state was written): the watchdog,
    started before them, kills them all and records why; nobody has to call status or cancel."""
    app_id = sched.submit(command_app("sh", "-c", TREE, replicas=3), {})
    (supervisor,) = children(os.getpid())
    eventually(lambda: len(children(supervisor)) == 4, interval=0.001)  # 3 replicas and the watchdog
    os.kill(supervisor, signal.SIGKILL)
    os.waitpid(supervisor, 0)
    eventually(lambda: _recorded_state(sched, app_id) == "FAILED")  # by the watchdog
    assert _processes_with(sched.store.root) == []  # the replicas and their children
    st = sched.store.state(app_id) or {}
    assert st.get("state") == "FAILED", st
    assert f"the job's supervisor (pid {supervisor}) died before the job ended" in st["msg"], st
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED
    assert "still running" not in desc.msg, desc.msg


def test_supervisor_and_watchdog_killed_at_once_status_names_the_replicas_and_cancel_stops_them(
    sched: LocalScheduler,
) -> None:
    """Both killed right after the replicas start (no state of theirs written, maybe): status names
    every live replica (found by its environment if it was not recorded), cancel kills them all and
    does not say it did while one runs."""
    app_id = sched.submit(command_app("sleep", "300", replicas=3), {})
    (supervisor,) = children(os.getpid())
    eventually(lambda: len(children(supervisor)) == 4, interval=0.001)
    watchdog = [pid for pid in children(supervisor) if cmdline(pid)[:1] == ["/bin/sh"]]
    assert len(watchdog) == 1
    os.kill(watchdog[0], signal.SIGKILL)
    os.kill(supervisor, signal.SIGKILL)
    os.waitpid(supervisor, 0)
    replicas = [p for p in _processes_with(sched.store.root)]
    assert len(replicas) == 3
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED
    for pid in replicas:
        assert str(pid) in desc.msg, desc.msg
    sched.cancel(app_id)
    assert not any(alive(p) for p in replicas)
    assert "still running" not in (sched.describe(app_id) or desc).msg


def _processes_with(root: str) -> list[int]:
    """Live processes whose environment names a log directory under ``root``."""
    from torchx_sched_local.sessions import scan

    return scan({}, f"PET_LOG_DIR={root}".encode())[1]


def _recorded_state(sched: LocalScheduler, app_id: str) -> str | None:
    """The state written in the job's state file (not the one ``describe`` infers)."""
    return (sched.store.state(app_id) or {}).get("state")


def _watchdogs_of(job_dir: str) -> list[int]:
    """Live watchdog processes (the shell or the Python one) of the job in ``job_dir``."""
    return [
        int(entry)
        for entry in os.listdir("/proc")
        if entry.isdigit() and {"--watchdog", job_dir} <= set(cmdline(int(entry)))
    ]
