"""LSF states -> AppState, and when an EXIT is a cancel."""

from __future__ import annotations

import pytest
from torchx.specs.status import AppState
from torchx_sched_lsf.parse import LsfJob
from torchx_sched_lsf.scheduler import app_state, cancelled_file
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
    assert app_state(job(stat="DONE", exit_code=0, cwd=str(tmp_path))) == AppState.SUCCEEDED
