"""ray ``list`` times: from the Jobs API's listing of a torchx job recorded while it ran and after
it succeeded (fixtures/capture_times.py); ``start_time``/``end_time`` in milliseconds."""

from __future__ import annotations

import json
import os
from typing import Any

from torchx_sched_ray.status import job_state, job_times

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "times_ray_jobs.json")) as f:
    JOBS: dict[str, dict[str, Any]] = json.load(f)


def times(job: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    return job_times(job_state(job["status"]), job["start_time"], job["end_time"])


def test_a_succeeded_job_has_all_three_times_in_seconds() -> None:
    assert times(JOBS["succeeded"]) == (1795916488.021, 1795916488.021, 1795916497.044)


def test_a_running_job_has_no_end_yet() -> None:
    assert times(JOBS["running"]) == (1795916488.021, 1795916488.021, None)


def test_a_pending_job_is_submitted_not_started() -> None:
    assert times({**JOBS["running"], "status": "PENDING"}) == (1795916488.021, None, None)
