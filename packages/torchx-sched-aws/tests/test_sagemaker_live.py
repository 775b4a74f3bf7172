"""aws_sagemaker against moto through boto3's SageMaker API (marker ``aws``).

The shared moto completes every training job at once; the lifecycle tests use private moto
servers whose jobs stay InProgress for a few seconds, then end Completed or Failed."""

from __future__ import annotations

import io
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from torchx import specs
from torchx.runner import Runner, get_runner
from torchx_sched_aws.sagemaker import LOG_GROUP, AWSSageMakerScheduler, create_scheduler

pytestmark = pytest.mark.aws

ROLE_ARN = "arn:aws:iam::123456789012:role/torchx-sagemaker"
CFG = {"role": ROLE_ARN, "output_path": "s3://torchx-test-output/out"}


def train_app(num_replicas: int = 2, **kw: Any) -> specs.AppDef:
    role = specs.Role(
        "trainer",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
        entrypoint="python",
        args=["train.py", "--lr", "0.1"],
        num_replicas=num_replicas,
        resource=specs.resource(h="aws_g5.xlarge"),
        **kw,
    )
    return specs.AppDef("train", roles=[role])


@pytest.fixture
def runner(aws_live: dict[str, str]) -> Iterator[Runner]:
    with get_runner("live") as r:
        yield r


def test_create_describe_list_cancel_and_upload(runner: Runner, tmp_path: Path) -> None:
    bucket = f"torchx-code-{uuid.uuid4().hex[:8]}"
    boto3.client("s3").create_bucket(Bucket=bucket)
    (tmp_path / "train.py").write_text("print('training')\n")
    cfg = {**CFG, "code_location": f"s3://{bucket}/code"}

    handle = runner.run(train_app(max_retries=1), "aws_sagemaker", cfg, workspace=str(tmp_path))
    job_name = handle.rsplit("/", 1)[1]
    status = runner.status(handle)
    assert status is not None and status.state == specs.AppState.SUCCEEDED  # moto completes at once
    assert [r.hostname for r in status.roles[0].replicas] == ["algo-1", "algo-2"]

    desc = runner.describe_app(handle)
    assert desc is not None
    role = desc.roles[0]
    assert (role.image, role.entrypoint, role.args, role.num_replicas) == (
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
        "python",
        ["train.py", "--lr", "0.1"],
        2,
    )
    assert role.resource.capabilities["node.kubernetes.io/instance-type"] == "g5.xlarge"
    raw = boto3.client("sagemaker").describe_training_job(TrainingJobName=job_name)
    key = f"code/{job_name}/source.tar.gz"
    assert raw["HyperParameters"]["sagemaker_submit_directory"] == f"s3://{bucket}/{key}"

    body = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        assert tar.extractfile("train.py").read() == b"print('training')\n"  # type: ignore[union-attr]

    assert job_name in {a.app_id for a in runner.list("aws_sagemaker")}
    runner.cancel(handle)  # already ended: a no-op
    status = runner.status(handle)
    assert status is not None and status.state == specs.AppState.SUCCEEDED
    assert runner.status("aws_sagemaker://live/never-submitted") is None


def test_logs_from_cloudwatch(runner: Runner) -> None:
    handle = runner.run(train_app(), "aws_sagemaker", CFG)
    job_name = handle.rsplit("/", 1)[1]
    logs = boto3.client("logs")
    try:
        logs.create_log_group(logGroupName=LOG_GROUP)
    except logs.exceptions.ResourceAlreadyExistsException:
        pass
    t0 = int(time.time() - 60) * 1000  # CloudWatch drops events older than 14 days
    stream = f"{job_name}/algo-1-{t0 // 1000}"
    logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
    events = [{"timestamp": t0 + i * 1000, "message": f'step {i} it\'s "ok"'} for i in range(3)]
    assert "rejectedLogEventsInfo" not in logs.put_log_events(
        logGroupName=LOG_GROUP, logStreamName=stream, logEvents=events
    )

    def ts(ms: int) -> datetime:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)

    lines = list(runner.log_lines(handle, "trainer", 0))
    assert lines == [e["message"] + "\n" for e in events]
    assert list(runner.log_lines(handle, "trainer", 0, regex="step [02]")) == [lines[0], lines[2]]
    assert list(runner.log_lines(handle, "trainer", 0, since=ts(t0 + 1000))) == lines[1:]
    assert list(runner.log_lines(handle, "trainer", 0, until=ts(t0 + 2000))) == lines[:2]
    assert list(runner.log_lines(handle, "trainer", 1)) == []  # algo-2 wrote nothing
    with pytest.raises(ValueError, match="instances 0..1, not 5"):
        list(runner.log_lines(handle, "trainer", 5))


@pytest.fixture
def lifecycle(sagemaker_lifecycle: Callable[[str], Any]) -> Callable[[str], AWSSageMakerScheduler]:
    return lambda final: create_scheduler("live", clients={"sagemaker": sagemaker_lifecycle(final)})


def wait_state(sched: AWSSageMakerScheduler, app_id: str, state: specs.AppState, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        desc = sched.describe(app_id)
        assert desc is not None
        if desc.state == state or time.monotonic() > deadline:
            assert desc.state == state, f"{app_id}: {desc.state.name}: {desc.msg}"
            return desc
        time.sleep(0.3)


@pytest.mark.parametrize(
    "final, state, msg",
    [("Completed", specs.AppState.SUCCEEDED, "Completed"), ("Failed", specs.AppState.FAILED, "simulated failure")],
)
def test_lifecycle_in_progress_then_final(
    lifecycle: Callable[[str], AWSSageMakerScheduler], final: str, state: specs.AppState, msg: str
) -> None:
    sched = lifecycle(final)
    app_id = sched.submit(train_app(num_replicas=1), CFG)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == specs.AppState.RUNNING and desc.msg == "Training"
    ended = sched.wait(app_id, timeout=30, poll_interval=0.5)
    assert ended is not None and ended.state == state and msg in ended.msg
    assert {a.app_id: a.state for a in sched.list()}[app_id] == state


def test_cancel_stops_a_running_job(lifecycle: Callable[[str], AWSSageMakerScheduler]) -> None:
    sched = lifecycle("Completed")
    app_id = sched.submit(train_app(), CFG)
    wait_state(sched, app_id, specs.AppState.RUNNING)
    listed = {a.app_id: a.state for a in sched.list()}
    assert listed[app_id] == specs.AppState.RUNNING
    sched.cancel(app_id)
    desc = wait_state(sched, app_id, specs.AppState.CANCELLED, timeout=5)
    assert desc.metadata["secondary_status"] == "Stopped"
    time.sleep(0.5)
    sched.cancel(app_id)  # ended: a no-op
    assert {a.app_id: a.state for a in sched.list()}[app_id] == specs.AppState.CANCELLED
