"""aws_batch ``end_cause``: from job descriptions recorded on the moto endpoint (fixtures/
causes_batch_jobs.json: exit 3 and success in real containers, a cancel through torchx, and
``terminate_job`` with the reasons Batch gives for a lost host, a Spot interruption and an
operator), and from the fields real Batch adds that moto leaves out (exit codes, container
reasons, attempts' status reasons)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from torchx.schedulers.causes import EndCause
from torchx_sched_aws.batch import CANCEL_REASON
from torchx_sched_aws.batch_causes import batch_end

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "causes_batch_jobs.json")) as f:
    JOBS: dict[str, dict[str, Any]] = json.load(f)


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("succeeded", EndCause.APP_ERROR),
        ("exit_3", EndCause.UNKNOWN),  # moto records no exit code and no reason
        ("cancelled", EndCause.CANCELLED),
        ("host_terminated", EndCause.NODE_FAILURE),
        ("spot_interrupted", EndCause.PREEMPTED),
        ("terminated_by_other", EndCause.KILLED),
    ],
)
def test_recorded_on_moto(name: str, cause: EndCause) -> None:
    end = batch_end(JOBS[name], CANCEL_REASON)
    assert end is not None and end.cause == cause, end
    if JOBS[name].get("statusReason"):
        assert JOBS[name]["statusReason"] in end.reason


def _with(base: str, **fields: Any) -> dict[str, Any]:
    job = json.loads(json.dumps(JOBS[base]))
    job.update(fields)
    return job


@pytest.mark.parametrize(
    ("fields", "cause", "code"),
    [
        ({"statusReason": "Essential container in task exited", "container": {"exitCode": 3}}, EndCause.APP_ERROR, 3),
        ({"statusReason": "Essential container in task exited", "container": {"exitCode": 137}}, EndCause.KILLED, 137),
        (
            {
                "statusReason": "Essential container in task exited",
                "attempts": [
                    {"container": {"exitCode": 137, "reason": "OutOfMemoryError: Container killed due to memory usage"}}
                ],
            },
            EndCause.KILLED,
            137,
        ),
        (
            {"attempts": [{"statusReason": "Host EC2 (instance i-0f) terminated.", "container": {}}]},
            EndCause.NODE_FAILURE,
            None,
        ),
        ({"statusReason": "Job attempt duration exceeded timeout"}, EndCause.TIMEOUT, None),
        ({"statusReason": "CannotPullContainerError: pull image manifest has been retried"}, EndCause.APP_ERROR, None),
        ({"statusReason": "ResourceInitializationError: unable to pull secrets"}, EndCause.NODE_FAILURE, None),
        ({"statusReason": "Dependent Job failed"}, EndCause.UNKNOWN, None),
    ],
)
def test_what_real_batch_adds(fields: dict[str, Any], cause: EndCause, code: int | None) -> None:
    end = batch_end(_with("exit_3", **fields), CANCEL_REASON)
    assert end is not None and (end.cause, end.exit_code) == (cause, code), end


def test_a_running_job_has_no_cause() -> None:
    assert batch_end(_with("exit_3", status="RUNNING"), CANCEL_REASON) is None
