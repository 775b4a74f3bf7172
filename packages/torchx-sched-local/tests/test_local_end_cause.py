"""local_cwd ``end_cause``: why a job ended, with the faults injected for real (SIGKILL of a
replica or of the supervisor from outside, a signal to the supervisor, a real segfault, cancel)."""

from __future__ import annotations

import os
import signal
import time

import pytest
from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx.specs import AppState
from torchx.testing import command_app, eventually, python_app
from torchx_sched_local import store
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.sessions import alive

READY = "echo ready; exec sleep 300"


def _running(sched: LocalScheduler, app_id: str, replicas: int = 1) -> dict[str, object]:
    """The job's state once every replica printed ``ready``."""
    eventually(lambda: all(list(sched.log_iter(app_id, "r", k)) == ["ready\n"] for k in range(replicas)))
    st = sched.store.state(app_id)
    assert st is not None
    return st


def _ended(sched: LocalScheduler, app_id: str) -> AttemptEnd:
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None
    assert desc.state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED), desc
    end = sched.end_cause(app_id)
    assert end is not None
    return end


def test_success_is_exit_code_zero(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("true"), {})
    assert _ended(sched, app_id) == AttemptEnd(EndCause.APP_ERROR, 0, "succeeded")


def test_exit_code_is_an_application_error_with_its_code(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", "exit 3"), {})
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 3)
    assert "exited with code 3" in end.reason


def test_a_replica_sigkilled_from_outside_is_killed(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", READY, replicas=2), {"stop_grace_period": 0.5})
    st = _running(sched, app_id, replicas=2)
    victim = st["replicas"][1]["pid"]  # type: ignore[index]
    os.kill(victim, signal.SIGKILL)
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 137)
    assert "r/1" in end.reason and "SIGKILL" in end.reason
    assert sched.describe(app_id).state == AppState.FAILED  # type: ignore[union-attr]


def test_a_replica_sigtermed_from_outside_is_killed(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", READY), {})
    st = _running(sched, app_id)
    os.kill(st["replicas"][0]["pid"], signal.SIGTERM)  # type: ignore[index]
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 128 + signal.SIGTERM)


@pytest.mark.parametrize(("sig", "cause"), [(signal.SIGKILL, EndCause.KILLED), (signal.SIGSEGV, EndCause.APP_ERROR)])
def test_an_app_signalled_under_a_shell_wrapper_reads_as_the_signal(
    sched: LocalScheduler, sig: signal.Signals, cause: EndCause
) -> None:
    """utils.sh's shape (``sh -c '"$@"' sh CMD...``): the shell outlives its app and exits 128+N."""
    app_id = sched.submit(command_app("sh", "-c", '"$@"', "sh", "sh", "-c", READY), {})
    st = _running(sched, app_id)
    wrapper = st["replicas"][0]["pid"]  # type: ignore[index]
    with open(f"/proc/{wrapper}/task/{wrapper}/children") as f:
        (app,) = (int(p) for p in f.read().split())
    os.kill(app, sig)
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (cause, 128 + sig)
    assert f"exited with code {128 + sig}" in end.reason and sig.name in end.reason, end.reason


def test_a_real_segfault_is_the_applications_error(sched: LocalScheduler) -> None:
    app_id = sched.submit(python_app("import ctypes; ctypes.string_at(0)"), {})
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 128 + signal.SIGSEGV)
    assert "SIGSEGV" in end.reason


@pytest.mark.parametrize("after", [0.0, 1.5], ids=["at-once", "after-its-handover"])
def test_the_supervisor_sigkilled_is_a_node_failure(sched: LocalScheduler, after: float) -> None:
    app_id = sched.submit(command_app("sh", "-c", READY), {})
    st = _running(sched, app_id)
    time.sleep(after)
    supervisor = st["pid"]
    assert isinstance(supervisor, int)
    os.kill(supervisor, signal.SIGKILL)
    end = _ended(sched, app_id)
    assert end.cause == EndCause.NODE_FAILURE
    assert f"supervisor (pid {supervisor}) died" in end.reason
    # what cancel does after the loss (kills what the watchdog did not) keeps the cause
    sched.cancel(app_id)
    assert sched.end_cause(app_id) == AttemptEnd(EndCause.NODE_FAILURE, None, sched.describe(app_id).msg)  # type: ignore[union-attr]


def _watchdog_of(supervisor: int) -> int:
    with open(f"/proc/{supervisor}/task/{supervisor}/children") as f:
        children = [int(p) for p in f.read().split()]
    for pid in children:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"torchx-watchdog" in f.read():
                return pid
    raise AssertionError(f"the supervisor {supervisor} has no watchdog among its children {children}")


def test_a_lost_supervisor_never_reads_running_again_while_its_watchdog_records_the_end(
    sched: LocalScheduler,
) -> None:
    """Between the supervisor's death and the final state its watchdog records, the job holds
    its lock again (the watchdog's): a status read then must not go back to RUNNING."""
    app_id = sched.submit(command_app("sh", "-c", READY), {})
    st = _running(sched, app_id)
    supervisor = st["pid"]
    assert isinstance(supervisor, int)
    watchdog = _watchdog_of(supervisor)
    os.kill(watchdog, signal.SIGSTOP)  # hold the watchdog before it notices
    try:
        os.kill(supervisor, signal.SIGKILL)
        eventually(lambda: not alive(supervisor))
        lost = sched.describe(app_id)
        assert lost is not None and lost.state == AppState.FAILED, lost
        with store.take_lock(sched.store.job_dir(app_id)):  # as the watchdog does to record the end
            held = sched.describe(app_id)
            assert held is not None and held.state == AppState.FAILED, held
            assert f"supervisor (pid {supervisor}) died" in held.msg
    finally:
        os.kill(watchdog, signal.SIGCONT)
    end = _ended(sched, app_id)
    assert end.cause == EndCause.NODE_FAILURE
    replica = st["replicas"][0]["pid"]  # type: ignore[index]
    eventually(lambda: not alive(replica))  # the watchdog, let go, stopped the replica


def test_a_signal_to_the_supervisor_from_outside_is_killed(sched: LocalScheduler) -> None:
    # several times, right after the replica starts: the signal often lands when the supervisor
    # hands over to a fresh interpreter (it must not be lost there)
    for _ in range(8):
        app_id = sched.submit(command_app("sh", "-c", READY), {})
        st = _running(sched, app_id)
        os.kill(st["pid"], signal.SIGTERM)  # type: ignore[arg-type]
        desc = sched.wait(app_id, timeout=5)
        assert desc is not None and desc.state == AppState.CANCELLED, desc
        end = sched.end_cause(app_id)
        assert end is not None and end.cause == EndCause.KILLED
        assert "SIGTERM from outside torchx" in end.reason


def test_cancel_through_torchx_is_cancelled(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", READY), {})
    _running(sched, app_id)
    LocalScheduler("other", state_dir=sched.store.root).cancel(app_id)
    end = _ended(sched, app_id)
    assert end.cause == EndCause.CANCELLED


def test_a_job_cancelled_before_it_starts_is_cancelled(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sleep", "300"), {})
    sched.cancel(app_id)
    assert _ended(sched, app_id).cause == EndCause.CANCELLED


def test_an_entrypoint_that_cannot_start_is_an_application_error(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("no-such-command-anywhere"), {})
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, None)
    assert "not found" in end.reason


def test_no_cause_while_running_or_for_an_unknown_job(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", READY), {})
    _running(sched, app_id)
    assert sched.end_cause(app_id) is None
    assert sched.end_cause("no-such-app") is None
    sched.cancel(app_id)
