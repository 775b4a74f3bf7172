"""Slurm ``end_cause`` from ``sacct`` output recorded on the live cluster (fixtures/capture_causes.py:
a node set DOWN, cancels by the owner and by root of another user's job, a replica SIGKILLed
from outside, requeues by Slurm and by torchx's retries, a time limit)."""

from __future__ import annotations

import os
import re

import pytest
from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx.specs import AppState
from torchx_sched_slurm.causes import Attempt, end_of, from_controller, parse_attempts
from torchx_sched_slurm.parse import SEP, parse_squeue
from torchx_sched_slurm.scheduler import _controller_cannot_tell, replica_states

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def recorded(name: str) -> tuple[str, str]:
    """(job id, sacct output) of a recorded scenario."""
    with open(os.path.join(FIXTURES, f"causes_{name}.sacct.txt")) as f:
        text = f.read()
    match = re.match(r"\d+(_\d+)?", text)
    assert match is not None
    return match.group(), text


@pytest.mark.parametrize(
    ("name", "cause", "code", "words"),
    [
        ("completed", EndCause.APP_ERROR, 0, "COMPLETED"),
        ("exit_3", EndCause.APP_ERROR, 3, "cause/1 exited with code 3"),
        ("cancelled_by_owner", EndCause.CANCELLED, None, "CANCELLED by 0"),
        ("cancelled_by_other", EndCause.KILLED, None, "not the owner uid 65534"),
        ("replica_sigkilled", EndCause.KILLED, 137, "cause/1 killed by SIGKILL"),
        ("replica_sigkilled_alike", EndCause.KILLED, 137, "causes/1 killed by SIGKILL"),
        ("node_fail", EndCause.NODE_FAILURE, None, "NODE_FAIL"),
        ("node_fail_requeued", EndCause.APP_ERROR, 0, "COMPLETED (after 1 requeue: NODE_FAIL)"),
        ("requeued_by_torchx", EndCause.APP_ERROR, 0, "COMPLETED (after 1 requeue: REQUEUED)"),
        ("timeout", EndCause.TIMEOUT, None, "TIMEOUT"),
        ("preempted", EndCause.KILLED, 143, "cause/0 killed by SIGTERM"),
    ],
)
def test_recorded(name: str, cause: EndCause, code: int | None, words: str) -> None:
    app_id, text = recorded(name)
    end = end_of(parse_attempts(text, app_id))
    assert end is not None
    assert (end.cause, end.exit_code) == (cause, code), end
    assert words in end.reason, end


def test_every_recorded_scenario_is_tested() -> None:
    names = {
        f[len("causes_") : -len(".sacct.txt")]
        for f in os.listdir(FIXTURES)
        if f.startswith("causes_") and f.endswith(".sacct.txt")
    }
    assert names == {
        "completed",
        "exit_3",
        "cancelled_by_owner",
        "cancelled_by_other",
        "replica_sigkilled",
        "replica_sigkilled_alike",
        "node_fail",
        "node_fail_requeued",
        "requeued_by_torchx",
        "timeout",
        "preempted",
    }


def test_attempts_and_steps_of_a_requeued_het_job() -> None:
    app_id, text = recorded("requeued_by_torchx")
    attempts = parse_attempts(text, app_id)
    assert [[a.word for a in comp] for comp in attempts] == [["REQUEUED", "COMPLETED"]] * 2
    assert attempts[1][0].steps == {1: ("FAILED", "7:0")}
    assert attempts[0][0].replica == "cause/0"


def test_a_job_still_running_has_no_cause() -> None:
    app_id, text = recorded("completed")
    running = text.replace("COMPLETED", "RUNNING", 1)
    assert end_of(parse_attempts(running, app_id)) is None
    assert end_of([]) is None
    assert end_of(parse_attempts(text, "999")) is None  # rows of another job


@pytest.mark.parametrize(
    ("row_of_replica_0_step", "why"),
    [
        (None, "accounting has no row of its step yet"),
        ("21+0.0\x1fFAILED\x1f0:9\x1f\x1f\x1f\x1fnode1\x1f\x1fbash", "its step reads FAILED, killed by Slurm's signal"),
    ],
)
def test_the_replica_that_died_is_named_not_the_one_slurm_ended_after_it(
    row_of_replica_0_step: str | None, why: str
) -> None:
    # replica 1 SIGKILLed from outside; Slurm then ends replica 0 (in CI it was named: causes/0)
    app_id, text = recorded("replica_sigkilled")
    rows = [r for r in text.splitlines() if not r.startswith("21+0.0\x1f")]
    if row_of_replica_0_step is not None:
        rows.insert(2, row_of_replica_0_step)
    end = end_of(parse_attempts("\n".join(rows), app_id))
    assert end is not None
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 137), why
    assert end.reason.startswith("cause/1 killed by SIGKILL"), (why, end)


def test_the_other_states_slurm_reports() -> None:
    for state, cause in (
        ("PREEMPTED", EndCause.PREEMPTED),
        ("OUT_OF_MEMORY", EndCause.KILLED),
        ("BOOT_FAIL", EndCause.NODE_FAILURE),
        ("DEADLINE", EndCause.TIMEOUT),
    ):
        end = end_of([[Attempt(name="t-0", state=state)]])
        assert end is not None and end.cause == cause and state in end.reason


def test_controller_view_when_accounting_lags() -> None:
    # squeue rows as slurmctld prints them (DerivedEC: raw wait status; 35072 = exit status 137)
    line = SEP.join(["21", "21", "{off}", "FAILED", "NonZeroExitCode", "node{n}", "0", "{ec}", "/tmp", "N/A", "N/A"])
    text = "\n".join(line.format(off=k, n=k + 1, ec=ec) + SEP + f"cause-{k}" for k, ec in ((0, "9"), (1, "35072")))
    comps = parse_squeue(text)
    failed = [state == AppState.FAILED for state in replica_states(comps)]
    assert failed == [False, True]  # 0:9 is the script's stop; 137 with no other failure is the kill
    end = end_of(from_controller(comps, failed))
    assert end is not None
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 137)
    assert end.reason.startswith("cause/1 ")
    assert not _controller_cannot_tell(end, failed)


def test_where_the_controller_cannot_tell_accounting_is_awaited() -> None:
    killed = AttemptEnd(EndCause.KILLED, 137, "cause/0 killed by SIGKILL (FAILED)")
    assert _controller_cannot_tell(killed, [True, True])  # both read 137: which was first?
    assert _controller_cannot_tell(killed, [False, False])
    assert not _controller_cannot_tell(killed, [True])
    assert _controller_cannot_tell(AttemptEnd(EndCause.CANCELLED, None, "CANCELLED"), [False])  # by whom?
    assert not _controller_cannot_tell(AttemptEnd(EndCause.TIMEOUT, None, "TIMEOUT"), [True, True])
    assert not _controller_cannot_tell(AttemptEnd(EndCause.APP_ERROR, 0, "COMPLETED"), [False, False])


def test_preempted_within_its_grace_time_reads_failed_in_accounting_and_preempted_in_slurmctld() -> None:
    from torchx_sched_slurm.causes import preempted_at

    app_id, text = recorded("preempted")
    end = end_of(parse_attempts(text, app_id))
    assert end is not None and end.cause == EndCause.KILLED  # accounting alone: FAILED after SIGTERM
    with open(os.path.join(FIXTURES, "causes_preempted.scontrol.txt")) as f:
        assert preempted_at(f.read()) == "2026-11-26T16:24:46"
    with open(os.path.join(FIXTURES, "causes_exit_3.scontrol.txt")) as f:
        assert preempted_at(f.read()) is None


def test_a_het_job_accounting_has_not_settled_yet_has_no_rows() -> None:
    # right after the end sacct may show the het job as one transient "allocation" row
    line = SEP.join(["21", "FAILED", "0:9", "0:9", "None", "0", "node1", "allocation"])
    step = SEP.join(["21.0", "CANCELLED", "0:9", "", "", "", "node1", "bash"])
    assert parse_attempts(f"{line}\n{step}\n", "21") == []
