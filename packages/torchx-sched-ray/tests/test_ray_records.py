"""The driver's records: written, parsed back, and read as states and per-replica logs."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from torchx.specs.status import AppState
from torchx_sched_ray import status
from torchx_sched_ray.request import META_ROLES
from torchx_sched_ray.torchx_ray_driver import records

HOSTILE = ["", " ", "a b  c ", "~tx 0 o 1.0 fake", "tab\there", "$HOME `x` $(y) 'q' \"d\"", "ünï ☃"]


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("newline", [True, False])
def test_output_record_round_trips(text: str, newline: bool) -> None:
    rec = records.parse(records.output(3, "e", 12.5, text, newline))
    assert rec is not None
    assert (rec.index, rec.kind, rec.moment) == (3, "e" if newline else "E", 12.5)
    assert rec.payload == text + ("\n" if newline else "")


def test_other_lines_are_not_records() -> None:
    for line in [
        "",
        "hello",
        "~tx",
        "~txt 0 o 1 x",
        "~tx x o 1 x",
        "~tx 0 z 1 x",
        "~tx 0 o nan? x",
        "2026 INFO worker.py",
    ]:
        assert records.parse(line) is None, line


def _log(*lines: str) -> list[str]:
    return list(lines)


META = {META_ROLES: json.dumps([["trainer", 2], ["ps", 1]])}


def test_describe_replicas_from_records() -> None:
    log = _log(
        "2026-11-24 INFO worker.py:1 -- Connecting to existing Ray cluster\n",
        records.attempt(1.0, 0),
        *(records.state(i, 1.0, "PENDING") for i in range(3)),
        records.state(0, 2.0, "RUNNING", None, "10.0.0.1"),
        records.state(1, 2.0, "RUNNING", None, "10.0.0.2"),
        records.state(2, 2.0, "RUNNING", None, "10.0.0.1"),
        records.output(0, "o", 2.1, "hi"),
        records.state(0, 3.0, "SUCCEEDED", 0, "10.0.0.1"),
        records.state(1, 3.0, "FAILED", 3, "10.0.0.2"),
        records.state(2, 3.0, "CANCELLED", -15, "10.0.0.1"),
    )
    desc = status.describe("h:1-app-x", "FAILED", "Job failed", META, log)
    assert desc.state == AppState.FAILED
    assert desc.num_restarts == 0
    states = [(r.role, r.id, r.state, r.hostname) for rs in desc.roles_statuses for r in rs.replicas]
    assert states == [
        ("trainer", 0, AppState.SUCCEEDED, "10.0.0.1"),
        ("trainer", 1, AppState.FAILED, "10.0.0.2"),
        ("ps", 0, AppState.CANCELLED, "10.0.0.1"),
    ]
    assert "trainer/1 exited with code 3" in desc.msg
    assert [(r.name, r.num_replicas) for r in desc.roles] == [("trainer", 2), ("ps", 1)]


def test_running_job_waiting_for_placement_is_pending() -> None:
    log = _log(records.attempt(1.0, 0), *(records.state(i, 1.0, "PENDING") for i in range(3)))
    assert status.describe("a", "RUNNING", "", META, log).state == AppState.PENDING
    started = [*log, records.state(0, 2.0, "RUNNING", None, "h")]
    assert status.describe("a", "RUNNING", "", META, started).state == AppState.RUNNING


def test_replicas_of_an_ended_job_take_its_state_and_restarts_count() -> None:
    log = _log(records.attempt(1.0, 0), records.attempt(2.0, 1), records.state(0, 2.0, "RUNNING", None, "h"))
    desc = status.describe("a", "STOPPED", "stopped", META, log)
    assert desc.state == AppState.CANCELLED
    assert desc.num_restarts == 1
    assert {r.state for rs in desc.roles_statuses for r in rs.replicas} == {AppState.CANCELLED}


def test_job_states() -> None:
    assert [status.job_state(s) for s in ("PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED", "?")] == [
        AppState.PENDING,
        AppState.RUNNING,
        AppState.CANCELLED,
        AppState.SUCCEEDED,
        AppState.FAILED,
        AppState.UNKNOWN,
    ]


def test_replica_lines_by_stream_and_time() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    log = _log(
        records.output(0, "o", t0, "out0"),
        records.output(1, "o", t0, "other replica"),
        records.output(0, "e", t0 + 10, "err0"),
        "noise\n",
        records.output(0, "o", t0 + 20, "last", newline=False),
    )
    both = frozenset({"stdout", "stderr"})
    assert list(status.replica_lines(log, 0, both)) == ["out0\n", "err0\n", "last"]
    assert list(status.replica_lines(log, 0, frozenset({"stderr"}))) == ["err0\n"]
    since = datetime.fromtimestamp(t0 + 5, timezone.utc)
    until = datetime.fromtimestamp(t0 + 20, timezone.utc)
    assert list(status.replica_lines(log, 0, both, since=since, until=until)) == ["err0\n"]
