"""The journal vocabulary shared by torchx-managed and torchx-sweep: records round-trip, and the
lines written before it (managed's ``n``/``started``/``reason``, sweep's ``i``) read the same."""

from __future__ import annotations

import json

from torchx.util.journal import RunEnded, RunSubmitted, RunSubmitting, parse, record


def test_records_round_trip_through_a_journal_line() -> None:
    for rec in (
        RunSubmitting(2, "app-2", "slurm", 1.5),
        RunSubmitting(3, "trial-3"),
        RunSubmitted(2, "slurm://s/42", 2.0),
        RunEnded(2, "FAILED", "exited with code 3", "APP_ERROR", 3, 9.0),
        RunEnded(4, "CANCELLED", "not submitted: the sweep was cancelled"),
    ):
        line = json.loads(json.dumps(record(rec)))
        assert parse(line) == rec
    assert record(RunSubmitted(1, "h")) == {"ev": "submitted", "run": 1, "handle": "h"}  # no empty fields


def test_lines_of_the_previous_managed_and_sweep_journals_are_read() -> None:
    managed = [
        {"ev": "submitting", "n": 0, "target": "local_cwd", "name": "j-0", "t": 1.0},
        {"ev": "started", "n": 0, "handle": "local_cwd://s/j-0", "t": 1.5},
        {
            "ev": "ended",
            "n": 0,
            "state": "FAILED",
            "cause": "NODE_FAILURE",
            "exit_code": None,
            "reason": "lost",
            "t": 3,
        },
    ]
    assert [parse(ev) for ev in managed] == [
        RunSubmitting(0, "j-0", "local_cwd", 1.0),
        RunSubmitted(0, "local_cwd://s/j-0", 1.5),
        RunEnded(0, "FAILED", "lost", "NODE_FAILURE", None, 3.0),
    ]
    sweep = [
        {"i": 3, "ev": "submitting", "name": "x-3"},
        {"i": 3, "ev": "submitted", "handle": "h3"},
        {"i": 3, "ev": "ended", "state": "SUCCEEDED", "msg": ""},
    ]
    assert [parse(ev) for ev in sweep] == [RunSubmitting(3, "x-3"), RunSubmitted(3, "h3"), RunEnded(3, "SUCCEEDED")]


def test_other_lines_are_not_run_records() -> None:
    for ev in ({"ev": "cancel"}, {"ev": "final", "state": "SUCCEEDED", "msg": ""}, {"ev": "started", "n": 0}, {}):
        assert parse(ev) is None
