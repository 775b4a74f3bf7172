"""LSF states -> AppState, and when an EXIT is a cancel."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx.specs.status import AppState
from torchx_sched_lsf.parse import LsfJob
from torchx_sched_lsf.scheduler import app_state, cancelled_file, describe_job, replica_state
from torchx_sched_lsf.states import LSF_STATES, to_app_state


@pytest.mark.parametrize(
    ("stat", "state"),
    [
        ("PEND", AppState.PENDING),
        ("PSUSP", AppState.PENDING),
        ("RUN", AppState.RUNNING),
        ("USUSP", AppState.PENDING),
        ("SSUSP", AppState.PENDING),
        ("DONE", AppState.SUCCEEDED),
        ("EXIT", AppState.FAILED),
        ("UNKWN", AppState.UNKNOWN),
        ("ZOMBI", AppState.FAILED),
        ("WAIT", AppState.PENDING),
        ("PROV", AppState.PENDING),
        ("run", AppState.RUNNING),
        ("BOGUS", AppState.UNKNOWN),
        ("", AppState.UNKNOWN),
    ],
)
def test_every_lsf_state(stat: str, state: AppState) -> None:
    assert to_app_state(stat) == state


def test_the_issue_states_are_all_mapped() -> None:
    assert {"PEND", "PSUSP", "RUN", "USUSP", "SSUSP", "DONE", "EXIT", "UNKWN", "ZOMBI"} <= set(LSF_STATES)


def job(**kw: object) -> LsfJob:
    base: dict[str, object] = {"job_id": "7", "name": "a@r:1", "stat": "EXIT", "exit_code": 130, "hosts": ["h"]}
    return LsfJob(**{**base, **kw})  # type: ignore[arg-type]


def test_exit_is_failed_unless_killed(tmp_path: object) -> None:
    assert app_state(job(cwd=str(tmp_path))) == AppState.FAILED
    assert app_state(job(killed=True)) == AppState.CANCELLED  # LSF says TERM_OWNER
    assert app_state(job(hosts=[])) == AppState.CANCELLED  # killed before it started
    (tmp_path / cancelled_file("7")).write_text("")  # type: ignore[operator]
    assert app_state(job(cwd=str(tmp_path))) == AppState.CANCELLED  # torchx cancelled it
    # OpenLava records a job killed in its first second as DONE: with the marker and no replica
    # that recorded its exit, a cancel (as end_cause says); every replica exited 0: it finished first
    assert app_state(job(stat="DONE", exit_code=0, cwd=str(tmp_path))) == AppState.CANCELLED
    (tmp_path / "lsf-7-r-0.exit").write_text("0\n")  # type: ignore[operator]
    assert app_state(job(stat="DONE", exit_code=0, cwd=str(tmp_path))) == AppState.SUCCEEDED
    assert describe_job(job(stat="DONE", exit_code=0, cwd=str(tmp_path))).state == AppState.SUCCEEDED


def test_replicas_take_their_own_outcome_once_the_job_ended(tmp_path: Path) -> None:
    for name, code in (("lsf-7-a-0.exit", "0\n"), ("lsf-7-b-0.exit", "3\n")):
        (tmp_path / name).write_text(code)
    done = LsfJob(job_id="7", name="x@a:2,b:1", stat="EXIT", exit_code=3, hosts=["h"] * 3, cwd=str(tmp_path))
    desc = describe_job(done)
    states = {(r.role, r.id): r.state for rs in desc.roles_statuses for r in rs.replicas}
    assert states == {("a", 0): AppState.SUCCEEDED, ("a", 1): AppState.CANCELLED, ("b", 0): AppState.FAILED}
    assert desc.state == AppState.FAILED and desc.msg == "EXIT: b/0 exit code 3"
    running = describe_job(LsfJob(job_id="7", name="x@a:2,b:1", stat="RUN", hosts=["h"] * 3, cwd=str(tmp_path)))
    assert {r.state for rs in running.roles_statuses for r in rs.replicas} == {AppState.RUNNING}


@pytest.mark.parametrize(
    ("app", "code", "state"),
    [
        (AppState.RUNNING, None, AppState.RUNNING),
        (AppState.SUCCEEDED, 0, AppState.SUCCEEDED),
        (AppState.FAILED, 0, AppState.SUCCEEDED),
        (AppState.FAILED, 2, AppState.FAILED),
        (AppState.FAILED, None, AppState.CANCELLED),
        (AppState.CANCELLED, None, AppState.CANCELLED),
    ],
)
def test_replica_state(app: AppState, code: int | None, state: AppState) -> None:
    assert replica_state(app, code) == state
