"""aws_sagemaker ``end_cause``: from training jobs recorded on moto (fixtures/
causes_sagemaker_jobs.json, by ``TORCHX_RECORD_FIXTURES=1`` of test_sagemaker_live.py:
Completed, Failed, Stopped), and from the secondary statuses and failure reasons real
SageMaker adds (time limits, Spot interruptions, capacity, exit codes)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from torchx.schedulers.causes import EndCause
from torchx_sched_aws.sagemaker_causes import training_end

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "causes_sagemaker_jobs.json")) as f:
    JOBS: dict[str, dict[str, Any]] = json.load(f)


@pytest.mark.parametrize(
    ("name", "cause", "code"),
    [("Completed", EndCause.APP_ERROR, 0), ("Failed", EndCause.APP_ERROR, None), ("Stopped", EndCause.CANCELLED, None)],
)
def test_recorded_on_moto(name: str, cause: EndCause, code: int | None) -> None:
    end = training_end(JOBS[name])
    assert end is not None and (end.cause, end.exit_code) == (cause, code), end


@pytest.mark.parametrize(
    ("status", "secondary", "reason", "cause", "code"),
    [
        ("Stopped", "MaxRuntimeExceeded", "", EndCause.TIMEOUT, None),
        ("Stopped", "MaxWaitTimeExceeded", "", EndCause.TIMEOUT, None),
        ("Stopped", "Interrupted", "", EndCause.PREEMPTED, None),
        (
            "Failed",
            "Failed",
            "CapacityError: Unable to provision requested ML compute capacity",
            EndCause.NO_CAPACITY,
            None,
        ),
        ("Failed", "Failed", "InternalServerError: We encountered an internal error", EndCause.NODE_FAILURE, None),
        (
            "Failed",
            "Failed",
            'AlgorithmError: ExecuteUserScriptError: Command "python train.py", exit code: 3',
            EndCause.APP_ERROR,
            3,
        ),
        ("Failed", "Failed", "AlgorithmError: ExecuteUserScriptError: exit code: 137", EndCause.KILLED, 137),
    ],
)
def test_what_real_sagemaker_adds(status: str, secondary: str, reason: str, cause: EndCause, code: int | None) -> None:
    job = {**JOBS["Failed"], "TrainingJobStatus": status, "SecondaryStatus": secondary, "FailureReason": reason}
    end = training_end(job)
    assert end is not None and (end.cause, end.exit_code) == (cause, code), end


def test_a_running_job_has_no_cause() -> None:
    assert training_end({**JOBS["Completed"], "TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}) is None
