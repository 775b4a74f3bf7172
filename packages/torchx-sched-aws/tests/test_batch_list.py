"""aws_batch ``list`` times: from job descriptions recorded on the moto endpoint (fixtures/
capture_causes.py), ``createdAt``/``startedAt``/``stoppedAt`` in milliseconds."""

from __future__ import annotations

import json
import os
from typing import Any

from torchx_sched_aws.batch import job_times

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "causes_batch_jobs.json")) as f:
    JOBS: dict[str, dict[str, Any]] = json.load(f)


def test_an_ended_job_has_all_three_times_in_seconds() -> None:
    assert job_times(JOBS["succeeded"]) == (1795708631.706, 1795708631.711, 1795708633.318)
    for job in JOBS.values():
        submitted, started, ended = job_times(job)
        assert submitted is not None and started is not None and ended is not None
        assert submitted <= started <= ended


def test_a_job_batch_has_not_started_or_stopped_has_no_such_times() -> None:
    queued = {k: v for k, v in JOBS["succeeded"].items() if k not in ("startedAt", "stoppedAt")}
    assert job_times(queued) == (1795708631.706, None, None)
    assert job_times({**queued, "startedAt": 0}) == (1795708631.706, None, None)  # unset is 0 in some SDKs
