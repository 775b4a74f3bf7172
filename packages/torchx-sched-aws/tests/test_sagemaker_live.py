"""aws_sagemaker against moto through boto3's SageMaker API (marker ``aws``).

The shared moto completes every training job at once; the lifecycle tests use private moto
servers whose jobs stay InProgress for a few seconds, then end Completed or Failed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
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
from torchx.testing import PROBE_SCRIPT, hostile_value, macro_probe, macro_probe_output
from torchx_sched_aws.sagemaker import LOG_GROUP, AWSSageMakerScheduler, create_scheduler

pytestmark = pytest.mark.aws

ROLE_ARN = "arn:aws:iam::123456789012:role/torchx-sagemaker"
CFG = {"role": ROLE_ARN, "output_path": "s3://torchx-test-output/out"}
AWS_G5 = specs.resource(h="aws_g5.xlarge")


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
    assert status is not None
    assert status.state == specs.AppState.SUCCEEDED  # moto completes at once
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
    assert status is not None
    assert status.state == specs.AppState.SUCCEEDED
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
    assert desc is not None
    assert desc.state == specs.AppState.RUNNING
    assert desc.msg == "Training"
    ended = sched.wait(app_id, timeout=30, poll_interval=0.5)
    assert ended is not None
    assert ended.state == state
    assert msg in ended.msg
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


@pytest.fixture
def sent_requests(aws_live: dict[str, str]) -> tuple[Any, list[dict[str, Any]]]:
    """A real sagemaker client bound to moto, and the JSON bodies of the CreateTrainingJob
    requests it sends (moto keeps no ``Environment``: the wire request is the record of it)."""
    client = boto3.client("sagemaker")
    bodies: list[dict[str, Any]] = []

    def record(request: Any, **_: Any) -> None:
        bodies.append(json.loads(request.body))

    client.meta.events.register("before-send.sagemaker.CreateTrainingJob", record)
    return client, bodies


@pytest.fixture
def marker() -> Iterator[Path]:
    """The file a command substitution in a value would create (a short path: SageMaker takes
    arguments of at most 256 characters, and the hostile value holds the path three times)."""
    with tempfile.TemporaryDirectory(prefix="tx", dir="/tmp") as d:
        yield Path(d) / "pwned"


def test_macro_values_and_hostile_text_arrive_as_data(
    sent_requests: tuple[Any, list[dict[str, Any]]], marker: Path, tmp_path: Path
) -> None:
    client, bodies = sent_requests
    hostile = hostile_value(str(marker))
    probe = macro_probe("123456789012.dkr.ecr.us-east-1.amazonaws.com/probe:1", str(marker), resource=AWS_G5)
    probe.args.append(specs.macros.escape(hostile))  # one more word, to arrive as it is
    probe.env["HOSTILE"] = specs.macros.escape(hostile)
    with get_runner("live", clients={"sagemaker": client}) as runner:
        handle = runner.run(specs.AppDef("macros", roles=[probe]), "aws_sagemaker", CFG)
    job_name = handle.rsplit("/", 1)[1]

    stored = boto3.client("sagemaker").describe_training_job(TrainingJobName=job_name)["AlgorithmSpecification"]
    [sent] = bodies
    assert sent["TrainingJobName"] == job_name
    for key in ("TrainingImage", "ContainerEntrypoint", "ContainerArguments"):
        assert stored[key] == sent["AlgorithmSpecification"][key], key
    assert stored["ContainerEntrypoint"] == ["sh"]
    assert stored["ContainerArguments"][:2] == ["-c", PROBE_SCRIPT]
    assert stored["ContainerArguments"][-1] == hostile
    env = sent["Environment"]
    assert (env["HOSTILE"], env["MARK"], env["TORCHX_REPLICA_IDX"]) == (hostile, str(marker), "0")

    # SageMaker execs ContainerEntrypoint + ContainerArguments with no shell in between (moto
    # runs no container): run that argv here, with the job's environment
    proc = subprocess.run(
        [*stored["ContainerEntrypoint"], *stored["ContainerArguments"]],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    expected = macro_probe_output("", job_name, 0).splitlines(keepends=True)
    expected.insert(-1, f"<{hostile}>\n")  # before PROBE_ENV's line
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "".join(expected), "")
    assert not marker.exists()

    cli = subprocess.run([sys.executable, "-m", "torchx", "status", handle], capture_output=True, text=True, timeout=60)
    assert (cli.returncode, cli.stderr) == (0, ""), cli.stderr
    assert cli.stdout.startswith(f"SUCCEEDED  {handle}\n"), cli.stdout


def test_hyperparameters_keep_hostile_values_and_fill_macros(
    sent_requests: tuple[Any, list[dict[str, Any]]], marker: Path
) -> None:
    client, bodies = sent_requests
    hostile = hostile_value(str(marker))
    role = specs.Role(
        "trainer",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1",
        entrypoint="train.py",
        args=[
            "--data",
            specs.macros.escape(hostile),
            f"--out={specs.macros.img_root}/{specs.macros.app_id}-{specs.macros.replica_id}:$$$$",
            "--quote",
            'it\'s "$(id)" `id` $HOME',
        ],
        resource=AWS_G5,
    )
    with get_runner("live", clients={"sagemaker": client}) as runner:
        handle = runner.run(
            specs.AppDef("hyper", roles=[role]), "aws_sagemaker", {**CFG, "args_mode": "hyperparameters"}
        )
    job_name = handle.rsplit("/", 1)[1]
    stored = boto3.client("sagemaker").describe_training_job(TrainingJobName=job_name)["HyperParameters"]
    assert stored == bodies[0]["HyperParameters"]
    # the SageMaker framework containers JSON-decode each value and pass it as one argument
    assert {k: json.loads(v) for k, v in stored.items()} == {
        "data": hostile,
        "out": f"/{job_name}-0:$$",
        "quote": 'it\'s "$(id)" `id` $HOME',
        "sagemaker_program": "train.py",
    }


@pytest.mark.parametrize(
    "final, cause, code", [("Completed", "APP_ERROR", 0), ("Failed", "APP_ERROR", None), ("Stopped", "CANCELLED", None)]
)
def test_end_cause_on_moto(
    lifecycle: Callable[[str], AWSSageMakerScheduler], final: str, cause: str, code: int | None
) -> None:
    sched = lifecycle("Completed" if final == "Stopped" else final)
    app_id = sched.submit(train_app(num_replicas=1), CFG)
    assert sched.end_cause(app_id) is None  # running
    if final == "Stopped":
        wait_state(sched, app_id, specs.AppState.RUNNING)
        sched.cancel(app_id)
    sched.wait(app_id, timeout=30, poll_interval=0.5)
    end = sched.end_cause(app_id)
    assert end is not None and (end.cause.value, end.exit_code) == (cause, code), end
    if os.environ.get("TORCHX_RECORD_FIXTURES"):  # re-records fixtures/causes_sagemaker_jobs.json
        path = Path(__file__).parent / "fixtures" / "causes_sagemaker_jobs.json"
        saved = json.loads(path.read_text()) if path.exists() else {}
        saved[final] = json.loads(json.dumps(sched._describe_job(app_id), default=str))
        path.write_text(json.dumps(saved, indent=1, sort_keys=True))
