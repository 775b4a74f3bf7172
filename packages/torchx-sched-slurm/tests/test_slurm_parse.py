"""squeue/sacct parsing and the describe built on it, from output recorded on Slurm 22.05 (fixtures/capture_outputs.py)."""

from __future__ import annotations

import json
import os
from datetime import datetime

import pytest
from torchx.specs import AppState
from torchx_sched_slurm.parse import SEP, parse_sacct, parse_squeue, split_job_name
from torchx_sched_slurm.scheduler import describe_components, list_apps

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(name: str) -> str:
    with open(os.path.join(FIXTURES, name + ".txt")) as f:
        return f.read()


def states_of(desc: object) -> dict[str, AppState]:
    return {f"{r.role}/{r.id}": r.state for rs in desc.roles_statuses for r in rs.replicas}  # type: ignore[attr-defined]


def test_split_job_name() -> None:
    assert split_job_name("trainer-3") == ("trainer", 3)
    assert split_job_name("my-role-10") == ("my-role", 10)
    for name in ("allocation", "batch", "trainer-", "-1", "x-y"):
        assert split_job_name(name) is None


def test_squeue_running_het_job() -> None:
    comps = parse_squeue(fixture("het_running.squeue"))
    assert [(c.app_id, c.offset, c.role, c.replica_id, c.node) for c in comps] == [
        ("38", 0, "trainer", 0, "node1"),
        ("38", 1, "trainer", 1, "node2"),
        ("38", 2, "ps", 0, "node3"),
    ]
    desc = describe_components("38", comps)
    assert desc.state == AppState.RUNNING
    assert desc.metadata["workdir"].startswith("/tmp/torchx-slurm-record-")
    assert [(r.name, r.num_replicas) for r in desc.roles] == [("trainer", 2), ("ps", 1)]
    assert set(states_of(desc).values()) == {AppState.RUNNING}


def test_squeue_held_plain_job_is_pending_with_its_reason() -> None:
    (comp,) = parse_squeue(fixture("single_held.squeue"))
    assert (comp.app_id, comp.offset, comp.role, comp.node, comp.reason) == ("46", 0, "echo", "", "JobHeldAdmin")
    desc = describe_components("46", [comp])
    assert desc.state == AppState.PENDING
    assert desc.msg == "pending: JobHeldAdmin"


def test_squeue_failed_job_tells_the_failed_replica_by_its_exit_status() -> None:
    comps = parse_squeue(fixture("het_failed.squeue"))
    assert [(c.exit_code, c.signal) for c in comps] == [(None, 9), (None, 9), (3, None)]
    desc = describe_components("41", comps)
    assert desc.state == AppState.FAILED
    assert states_of(desc) == {
        "trainer/0": AppState.CANCELLED,
        "trainer/1": AppState.CANCELLED,
        "ps/0": AppState.FAILED,
    }
    assert desc.msg == "ps/0 FAILED (exit code 3)"


def test_a_replica_stopped_with_sigkill_reported_as_exit_137_reads_cancelled() -> None:
    """Without its step's state (sacct not caught up yet), a sibling's exit code 137/143 (a
    shell's 128 + SIGKILL/SIGTERM) is the stop after another replica failed, as the signal is
    (seen in the live test: ``{"slurm_state": "FAILED", "exit_code": 137}`` for the stopped one)."""
    from torchx_sched_slurm.parse import Component

    comps = [
        Component("50", 0, "ok", 0, "FAILED", "NonZeroExitCode", exit_code=137),
        Component("50", 1, "term", 0, "FAILED", "NonZeroExitCode", exit_code=143),
        Component("50", 2, "bad", 0, "FAILED", "NonZeroExitCode", exit_code=3),
    ]
    desc = describe_components("50", comps)
    assert desc.state == AppState.FAILED
    assert states_of(desc) == {"ok/0": AppState.CANCELLED, "term/0": AppState.CANCELLED, "bad/0": AppState.FAILED}
    assert desc.msg == "bad/0 FAILED (exit code 3)"


def test_a_replica_killed_on_its_node_reads_failed_and_its_stopped_sibling_cancelled() -> None:
    """What ``squeue`` showed live (before sacct caught up) after a replica was SIGKILLed on its
    node: the killed one 137 (``137:0``), the sibling the script stopped ``0:9``. Without a
    replica that failed by itself, 137 is the kill, not a stop."""
    from torchx_sched_slurm.parse import Component

    comps = [
        Component("51", 0, "causes", 0, "FAILED", "NonZeroExitCode", signal=9),
        Component("51", 1, "causes", 1, "FAILED", "NonZeroExitCode", exit_code=137),
    ]
    desc = describe_components("51", comps)
    assert states_of(desc) == {"causes/0": AppState.CANCELLED, "causes/1": AppState.FAILED}
    assert desc.msg == "causes/1 FAILED (exit code 137)"
    alone = describe_components("52", [Component("52", 0, "w", 0, "FAILED", "NonZeroExitCode", exit_code=143)])
    assert states_of(alone) == {"w/0": AppState.FAILED}


def test_sacct_failed_job_uses_the_srun_steps() -> None:
    comps = parse_sacct(fixture("het_failed.sacct"))
    assert {c.restarts for c in comps} == {0}
    assert [(c.role, c.replica_id, c.step_state, c.exit_code, c.signal) for c in comps] == [
        ("trainer", 0, "CANCELLED by 0", None, 9),
        ("trainer", 1, "CANCELLED by 0", None, 9),
        ("ps", 0, "FAILED", 3, None),
    ]
    desc = describe_components("41", comps)
    assert desc.state == AppState.FAILED
    assert states_of(desc)["ps/0"] == AppState.FAILED
    assert states_of(desc)["trainer/0"] == AppState.CANCELLED
    error = json.loads(desc.structured_error_msg)
    assert error["exit_code"] == 3
    assert error["step_state"] == "FAILED"


def test_completed_from_squeue_and_sacct() -> None:
    for comps in (parse_squeue(fixture("het_completed.squeue")), parse_sacct(fixture("het_completed.sacct"))):
        desc = describe_components("38", comps)
        assert desc.state == AppState.SUCCEEDED
        assert set(states_of(desc).values()) == {AppState.SUCCEEDED}
        assert desc.structured_error_msg == "<NONE>"


def test_cancelled_by_uid() -> None:
    comps = parse_sacct(fixture("het_cancelled.sacct"))
    assert comps[0].state == "CANCELLED by 0"
    assert describe_components("44", comps).state == AppState.CANCELLED
    assert describe_components("44", parse_squeue(fixture("het_cancelled.squeue"))).state == AppState.CANCELLED


def test_plain_job_in_sacct() -> None:
    (comp,) = parse_sacct(fixture("single_completed.sacct"))
    assert (comp.app_id, comp.offset, comp.role, comp.step_state, comp.exit_code) == ("46", 0, "echo", "COMPLETED", 0)


def test_no_rows_right_after_submission() -> None:
    assert parse_sacct(fixture("het_submitted.sacct")) == []


def test_requeued_job_while_pending_again() -> None:
    comps = parse_squeue(fixture("het_requeued.squeue"))
    assert [c.restarts for c in comps] == [1, 1]
    desc = describe_components("47", comps)
    assert desc.num_restarts == 1
    assert desc.state.name not in ("FAILED", "SUCCEEDED", "CANCELLED")
    # sacct shows the leader as a transient "allocation" row while the job waits to rerun
    acct = parse_sacct(fixture("het_requeued.sacct"))
    assert [(c.role, c.replica_id, c.state) for c in acct] == [("worker", 1, "REQUEUED")]


def test_retried_job_counts_attempts_and_reads_the_last_one() -> None:
    comps = parse_sacct(fixture("het_retried.sacct"))
    assert [c.restarts for c in comps] == [1, 1]
    # the second attempt's steps are 47+0.1 and 47+1.0: each component's first step is its srun
    assert [(c.state, c.step_state, c.exit_code) for c in comps] == [
        ("COMPLETED", "COMPLETED", 0),
        ("COMPLETED", "COMPLETED", 0),
    ]
    desc = describe_components("47", comps)
    assert (desc.state, desc.num_restarts) == (AppState.SUCCEEDED, 1)


def test_list_rows_group_by_job_and_skip_foreign_names() -> None:
    comps = parse_sacct(fixture("list.sacct"))
    jobs = {c.app_id for c in comps}
    assert "38" in jobs
    assert "41" in jobs
    assert all(c.role not in ("expA", "allocation") for c in comps)


@pytest.mark.parametrize("line", ["", "garbage", SEP.join(["1", "RUNNING"])])
def test_malformed_lines_are_skipped(line: str) -> None:
    assert parse_squeue(line) == []
    assert parse_sacct(line) == []


def test_list_merges_accounting_and_controller_views() -> None:
    accounted = parse_sacct(fixture("list.sacct"))
    live = parse_squeue(fixture("het_running.squeue"))
    apps = {a.app_id: a for a in list_apps(accounted, live)}
    assert apps["38"].state == AppState.RUNNING  # slurmctld's fresher view wins
    assert (apps["41"].name, apps["41"].state) == ("trainer", AppState.FAILED)
    assert (apps["44"].state, apps["46"].name) == (AppState.CANCELLED, "echo")
    assert "1" not in apps  # a foreign het job whose second component happens to be named "r-1"
    assert list(apps) == sorted(apps, key=int)


def test_list_gives_submitted_started_ended_as_slurm_reports_them() -> None:
    def at(clock: str) -> float:  # Slurm prints the cluster's local time
        return datetime.fromisoformat(f"2026-11-29T{clock}").timestamp()

    (running,) = list_apps(parse_sacct(fixture("times_running.sacct")), parse_squeue(fixture("times_running.squeue")))
    assert (running.state, running.submitted, running.started) == (AppState.RUNNING, at("01:36:05"), at("01:36:23"))
    assert running.ended is None  # squeue's EndTime of a running job is its time limit, not an end
    (done,) = list_apps(parse_sacct(fixture("times_completed.sacct")), [])
    assert (done.state, done.submitted, done.started, done.ended) == (
        AppState.SUCCEEDED,
        at("01:36:05"),
        at("01:36:23"),
        at("01:36:27"),
    )
    # output recorded before the time fields still parses, without times
    older = list_apps(parse_sacct(fixture("list.sacct")), [])
    assert older and all(a.submitted is None and a.ended is None for a in older)


def test_a_pending_jobs_estimated_start_is_not_a_start() -> None:
    line = fixture("times_running.squeue").splitlines()[0].replace("RUNNING", "PENDING")
    (pending,) = list_apps([], parse_squeue(line))
    assert pending.state == AppState.PENDING
    assert pending.submitted is not None and pending.started is None


def recorded_commands(monkeypatch: pytest.MonkeyPatch, outputs: dict[str, str]) -> list[list[str]]:
    """Makes the scheduler's Slurm commands answer with recorded output; returns the calls made."""
    import subprocess

    from torchx_sched_slurm import commands

    calls: list[list[str]] = []

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, outputs.get(cmd[0], ""), "")

    monkeypatch.setattr(commands, "run", run)
    return calls


def test_status_of_a_running_job_is_one_squeue_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_sched_slurm.scheduler import SlurmScheduler

    calls = recorded_commands(monkeypatch, {"squeue": fixture("het_running.squeue")})
    desc = SlurmScheduler("t").describe("38")
    assert desc is not None
    assert desc.state == AppState.RUNNING
    assert [c[0] for c in calls] == ["squeue"]


def test_ended_job_prefers_settled_sacct_then_squeue(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_sched_slurm.scheduler import SlurmScheduler

    calls = recorded_commands(
        monkeypatch, {"squeue": fixture("het_failed.squeue"), "sacct": fixture("het_failed.sacct")}
    )
    desc = SlurmScheduler("t").describe("41")
    assert [c[0] for c in calls] == ["squeue", "sacct"]
    assert desc is not None
    assert json.loads(desc.structured_error_msg)["step_state"] == "FAILED"
    # sacct lagging (no rows yet): the controller's view
    recorded_commands(monkeypatch, {"squeue": fixture("het_failed.squeue")})
    desc = SlurmScheduler("t").describe("41")
    assert desc is not None
    assert desc.msg == "ps/0 FAILED (exit code 3)"
    # slurmctld forgot the job: sacct alone; neither knows it: None
    recorded_commands(monkeypatch, {"sacct": fixture("het_failed.sacct")})
    assert SlurmScheduler("t").describe("41") is not None
    recorded_commands(monkeypatch, {})
    assert SlurmScheduler("t").describe("41") is None


def test_array_element_ids_parse_and_sort() -> None:
    from torchx_sched_slurm.parse import SEP, job_id_key, parse_sacct, parse_squeue

    row = ["200", "N/A", "N/A", "PENDING", "JobArrayTaskLimit", "", "0", "0", "/w", "190", "2", "r-0"]
    (comp,) = parse_squeue(SEP.join(row) + SEP)
    assert comp.app_id == "190_2"
    assert comp.reason == "JobArrayTaskLimit"

    rows = [
        ["12_10", "COMPLETED", "0:0", "None", "n1", "/w", "r-0"],
        ["12_10.batch", "COMPLETED", "0:0", "", "n1", "", "batch"],
        ["12_10.0", "COMPLETED", "0:0", "", "n1", "", "bash"],
        ["12_2", "FAILED", "1:0", "None", "n1", "/w", "r-0"],
        ["12_2.0", "FAILED", "1:0", "", "n1", "", "bash"],
        ["12_[3-5%2]", "PENDING", "0:0", "None", "", "/w", "r-0"],
    ]
    comps = parse_sacct("\n".join(SEP.join(r) for r in rows))
    assert [(c.app_id, c.state, c.step_state, c.exit_code) for c in comps] == [
        ("12_2", "FAILED", "FAILED", 1),
        ("12_3", "PENDING", None, None),  # never started: only in the array's row
        ("12_4", "PENDING", None, None),
        ("12_5", "PENDING", None, None),
        ("12_10", "COMPLETED", "COMPLETED", 0),
    ]
    assert sorted(["12_10", "9", "12_2", "12"], key=job_id_key) == ["9", "12", "12_2", "12_10"]


def test_an_arrays_id_describes_its_elements() -> None:
    from torchx_sched_slurm.parse import Component
    from torchx_sched_slurm.scheduler import own_components

    comps = [
        Component("7_0", 0, "r", 0, "COMPLETED"),
        Component("7_1", 0, "r", 0, "RUNNING"),
        Component("8", 0, "r", 0, "PENDING"),
    ]
    assert [(c.app_id, c.replica_id) for c in own_components("7", comps)] == [("7", 0), ("7", 1)]
    assert describe_components("7", own_components("7", comps)).state == AppState.RUNNING
    assert [c.app_id for c in own_components("7_1", comps)] == ["7_1"]
    assert [c.app_id for c in own_components("8", comps)] == ["8"]
