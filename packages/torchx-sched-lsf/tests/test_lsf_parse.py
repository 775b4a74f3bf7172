"""Parsing bjobs output: recorded from OpenLava (fixtures/record.sh) and IBM's documented samples."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from torchx.specs.status import AppState
from torchx_sched_lsf.parse import LsfJob, _hosts, event_time, parse_json, parse_unformatted
from torchx_sched_lsf.scheduler import app_state, describe_job

FIXTURES = Path(__file__).parent / "fixtures"


def one(name: str) -> LsfJob:
    jobs = parse_unformatted((FIXTURES / name).read_text())
    assert len(jobs) == 1, jobs
    return jobs[0]


@pytest.mark.parametrize(
    ("fixture", "stat", "exit_code", "hosts", "state"),
    [
        ("openlava_done.uf.txt", "DONE", 0, ["vm"], AppState.SUCCEEDED),
        ("openlava_exit.uf.txt", "EXIT", 3, ["vm"], AppState.FAILED),
        ("openlava_run.uf.txt", "RUN", None, ["vm"], AppState.RUNNING),
        ("openlava_held.uf.txt", "PSUSP", None, [], AppState.PENDING),
        ("openlava_pend.uf.txt", "PEND", None, [], AppState.PENDING),
        ("openlava_stop.uf.txt", "USUSP", None, ["vm"], AppState.PENDING),
        ("openlava_kill.uf.txt", "EXIT", None, [], AppState.CANCELLED),  # killed before it started
        ("openlava_killrun.uf.txt", "EXIT", 130, ["vm"], AppState.FAILED),  # bkill outside torchx: no marker
    ],
)
def test_openlava_unformatted(
    fixture: str, stat: str, exit_code: int | None, hosts: list[str], state: AppState
) -> None:
    job = one(fixture)
    assert (job.stat, job.exit_code, job.hosts) == (stat, exit_code, hosts)
    assert job.cwd.startswith("/tmp/torchx-lsf-record.")
    assert job.name.endswith("@r:1")
    assert app_state(job) == state


def test_openlava_pending_reason() -> None:
    assert one("openlava_pend.uf.txt").reason == "Job slot limit reached: 1 host;"
    assert one("openlava_held.uf.txt").reason == "The job was suspended by the user while pending: 1 host;"


def test_openlava_unknown_job_prints_no_record() -> None:
    assert parse_unformatted((FIXTURES / "openlava_unknown.uf.txt").read_text()) == []


def test_openlava_multi_slot_start_line() -> None:
    text = (
        "Job <224>, Job Name <run@r:2>, User <root>, Project <default>, Status <RUN>, Queue <normal>, Command <sleep 60>\n"
        "Tue Nov 24 15:29:46: Submitted from host <vm>, CWD </tmp/x>, Output File </dev/null>, 2 Processors Requested;\n"
        "Tue Nov 24 15:29:49: Started on 2 Hosts/Processors <vm> <vm>, Execution Home </root>, Execution CWD </tmp/x>;\n"
    )
    [job] = parse_unformatted(text)
    assert job.hosts == ["vm", "vm"] and job.cwd == "/tmp/x"


def test_ibm_unformatted_sample() -> None:
    job = one("ibm_bjobs_uf.txt")
    assert (job.job_id, job.stat, job.hosts, job.cwd) == ("1", "RUN", ["hostB"], "/home/lsfuser")
    assert app_state(job) == AppState.RUNNING


def test_ibm_json() -> None:
    jobs, errors = parse_json((FIXTURES / "ibm_bjobs_json.txt").read_text())
    assert errors == ["Job <123> is not found"]
    by_id = {j.job_id: j for j in jobs}
    run, bad, killed, pend = by_id["5100"], by_id["5101"], by_id["5102"], by_id["5103"]
    assert run.hosts == ["hostA", "hostA", "hostB"] and run.cwd == "/gpfs/jobs/x"
    assert (bad.exit_code, app_state(bad)) == (3, AppState.FAILED)
    assert killed.killed and app_state(killed) == AppState.CANCELLED
    assert (pend.cwd, pend.reason, app_state(pend)) == (
        "/home/user1",
        "New job is waiting for scheduling;",
        AppState.PENDING,
    )
    desc = describe_job(run)
    assert [(r.role, len(r.replicas)) for r in desc.roles_statuses] == [("trainer", 2), ("ps", 1)]
    assert [r.hostname for rs in desc.roles_statuses for r in rs.replicas] == ["hostA", "hostA", "hostB"]
    assert desc.metadata["app_name"] == "train"


def test_json_garbage_is_an_error() -> None:
    with pytest.raises(ValueError, match="bjobs -json printed something else"):
        parse_json("No job found")


@pytest.mark.parametrize(
    ("text", "hosts"),
    [("hostA:hostA", ["hostA", "hostA"]), ("2*hostA:hostB", ["hostA", "hostA", "hostB"]), ("-", []), ("", [])],
)
def test_exec_host_forms(text: str, hosts: list[str]) -> None:
    assert _hosts(text) == hosts


def test_describe_a_job_that_is_not_torchx_s() -> None:
    desc = describe_job(LsfJob(job_id="9", name="my job", stat="DONE", exit_code=0, hosts=["h"]))
    assert [(r.role, [x.hostname for x in r.replicas]) for r in desc.roles_statuses] == [("my job", ["h"])]


def test_many_records_as_one_bjobs_call_prints_them() -> None:
    names = sorted(
        p.name for p in FIXTURES.glob("openlava_*.uf.txt") if not any(w in p.name for w in ("unknown", "array"))
    )
    text = ("-" * 78 + "\n").join((FIXTURES / n).read_text() for n in names)
    jobs = parse_unformatted(text)
    assert [j.job_id for j in jobs] == [one(n).job_id for n in names]
    assert [j.stat for j in jobs] == [one(n).stat for n in names]


def nov24(clock: str) -> float:  # OpenLava prints the cluster's local time, without a year
    return datetime.fromisoformat(f"2026-11-24T{clock}").timestamp()


def test_times_of_recorded_jobs_done_exited_killed_running_pending() -> None:
    times = {
        name: (job.submitted, job.started, job.ended)
        for name in ("done", "exit", "kill", "run", "pend")
        for job in [one(f"openlava_{name}.uf.txt")]
    }
    assert times["done"] == (nov24("15:30:04"), nov24("15:30:05"), nov24("15:30:05"))
    assert times["exit"][2] is not None and times["exit"][0] <= times["exit"][1] <= times["exit"][2]  # type: ignore[operator]
    assert times["kill"] == (nov24("15:30:09"), None, nov24("15:30:14"))  # killed while pending: "Exited"
    assert times["run"] == (nov24("15:30:09"), nov24("15:30:11"), None)
    assert times["pend"] == (nov24("15:30:09"), None, None)


def test_an_array_elements_start_is_its_own() -> None:
    jobs = {j.job_id: j for j in parse_unformatted((FIXTURES / "openlava_array.uf.txt").read_text())}
    assert jobs["553[1]"].started == nov24("18:42:01") and jobs["553[1]"].ended == nov24("18:42:01")
    assert jobs["553[2]"].started == nov24("18:42:03")
    assert jobs["553[3]"].submitted == nov24("18:42:00") and jobs["553[3]"].started is None


def test_the_year_of_an_event_is_the_latest_with_its_weekday() -> None:
    in_2027 = datetime(2027, 1, 5).timestamp()
    # Nov 24 was a Tuesday in 2026 (and a Wednesday in 2027): a January 2027 reader reads 2026
    assert event_time("Tue", "Nov 24 15:30:04", None, in_2027) == nov24("15:30:04")
    assert event_time("Tue", "Nov 24 15:30:04", "2026") == nov24("15:30:04")
    assert event_time("Xyz", "Nov 24 15:30:04", None) is None
