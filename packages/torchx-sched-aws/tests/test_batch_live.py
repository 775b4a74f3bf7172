"""aws_batch against the moto endpoint; with Docker, jobs run as real containers and their
output lands in CloudWatch Logs (marker ``aws``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from torchx import specs
from torchx.runner import Runner, get_runner
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_aws._aws import AWSError

pytestmark = pytest.mark.aws

HOSTILE = ["it's", 'say "hi"', "$HOME", "`id`", "a;b|c&d>e", "back\\slash", "*", "~", "€ ünï", "tab\there"]


@pytest.fixture
def runner(aws_live: dict[str, str]) -> Iterator[Runner]:
    with get_runner("live") as r:
        yield r


def wait_for(runner: Runner, handle: str, states: set[specs.AppState], timeout: float = 120) -> specs.AppStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = runner.status(handle)
        assert status is not None, f"{handle} vanished"
        if status.state in states or time.monotonic() > deadline:
            assert status.state in states, f"{handle}: {status.state.name} after {timeout}s: {status.msg}"
            return status
        time.sleep(0.3)


def test_hostile_echo_runs_in_a_real_container(runner: Runner, batch_docker: str, busybox_image: str) -> None:
    role = specs.Role(
        "echo", image=busybox_image, entrypoint="echo", args=HOSTILE, resource=specs.resource(cpu=1, memMB=128)
    )
    handle = runner.run(specs.AppDef("echo", roles=[role]), "aws_batch", {"queue": batch_docker})
    status = runner.wait(handle, wait_interval=0.5, timeout=120)
    assert status is not None, status
    assert status.state == specs.AppState.SUCCEEDED, status
    assert list(runner.log_lines(handle, "echo", 0)) == [" ".join(HOSTILE) + "\n"]
    assert list(runner.log_lines(handle, "echo", 0, regex="nothing-like-this")) == []
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    assert list(runner.log_lines(handle, "echo", 0, since=later)) == []
    assert list(runner.log_lines(handle, "echo", 0, until=later)) == [" ".join(HOSTILE) + "\n"]


def test_two_node_job_with_hostile_args(runner: Runner, batch_docker: str, python_image: str) -> None:
    script = "import json, os, sys; print(json.dumps([os.environ['TORCHX_RANK0_HOST'], os.environ['TORCHX_REPLICA_IDX'], sys.argv[1:]]))"
    role = specs.Role(
        "trainer",
        image=python_image,
        entrypoint="python3",
        args=["-c", script, *HOSTILE, f"rank={specs.macros.replica_id}"],
        num_replicas=2,
        resource=specs.resource(cpu=1, memMB=256),
    )
    handle = runner.run(specs.AppDef("mnp", roles=[role]), "aws_batch", {"queue": batch_docker})
    status = runner.wait(handle, wait_interval=0.5, timeout=180)
    assert status is not None, status
    assert status.state == specs.AppState.SUCCEEDED, status
    assert [len(r.replicas) for r in status.roles] == [2]
    desc = runner.describe(handle)
    assert desc is not None
    assert desc.roles[0].num_replicas == 2
    # moto keeps every node's output in the job's one stream and sets no AWS_BATCH_JOB_NODE_INDEX
    lines = [json.loads(line) for line in runner.log_lines(handle, "trainer", 1)]
    assert len(lines) == 2
    hosts = sorted(host for host, _, _ in lines)
    assert hosts[1] == "localhost"
    assert hosts[0].count(".") == 3  # main node, then the worker's view of it
    for _, idx, argv in lines:
        assert argv == [*HOSTILE, f"rank={idx}"]


def test_failing_job_fails_with_its_output(runner: Runner, batch_docker: str, busybox_image: str) -> None:
    role = specs.Role(
        "boom",
        image=busybox_image,
        entrypoint="sh",
        args=["-c", "echo about to fail >&2; exit 3"],
        resource=specs.resource(cpu=1, memMB=128),
    )
    handle = runner.run(specs.AppDef("boom", roles=[role]), "aws_batch", {"queue": batch_docker})
    status = runner.wait(handle, wait_interval=0.5, timeout=120)
    assert status is not None, status
    assert status.state == specs.AppState.FAILED, status
    assert "about to fail\n" in list(runner.log_lines(handle, "boom", 0))


def test_cancel_a_running_job_and_list(runner: Runner, batch_docker: str, busybox_image: str) -> None:
    role = specs.Role(
        "sleeper", image=busybox_image, entrypoint="sleep", args=["300"], resource=specs.resource(cpu=1, memMB=64)
    )
    handle = runner.run(specs.AppDef("sleeper", roles=[role]), "aws_batch", {"queue": batch_docker})
    wait_for(runner, handle, {specs.AppState.RUNNING})
    app_id = handle.rsplit("/", 1)[1]
    listed = {a.app_id: a for a in runner.list("aws_batch", {"queue": batch_docker})}
    assert listed[app_id].state == specs.AppState.RUNNING
    assert listed[app_id].name == "sleeper"
    assert app_id in {a.app_id for a in runner.list("aws_batch")}  # every queue

    t0 = time.monotonic()
    runner.cancel(handle)
    status = wait_for(runner, handle, {specs.AppState.CANCELLED}, timeout=60)
    assert time.monotonic() - t0 < 30
    assert "cancelled via torchx" in status.msg
    runner.cancel(handle)  # ended: a no-op
    listed = {a.app_id: a for a in runner.list("aws_batch", {"queue": batch_docker})}
    assert listed[app_id].state == specs.AppState.CANCELLED
    times = (listed[app_id].submitted, listed[app_id].started, listed[app_id].ended)
    assert None not in times and times == tuple(sorted(times)), times  # type: ignore[type-var]


def test_tail_follows_until_the_job_ends(runner: Runner, batch_docker: str, busybox_image: str) -> None:
    role = specs.Role(
        "tail",
        image=busybox_image,
        entrypoint="sh",
        args=["-c", "echo one; sleep 2; echo two"],
        resource=specs.resource(cpu=1, memMB=64),
    )
    handle = runner.run(specs.AppDef("tail", roles=[role]), "aws_batch", {"queue": batch_docker})
    assert list(runner.log_lines(handle, "tail", 0, should_tail=True)) == ["one\n", "two\n"]
    status = runner.status(handle)
    assert status is not None
    assert status.state == specs.AppState.SUCCEEDED


def test_unknown_queue_and_unknown_app(runner: Runner, batch_queue: str, busybox_image: str) -> None:
    role = specs.Role("x", image=busybox_image, entrypoint="true", resource=specs.resource(cpu=1, memMB=64))
    with pytest.raises(AWSError, match=f"job queue 'no-such-queue' does not exist .*existing: .*{batch_queue}"):
        runner.run(specs.AppDef("x", roles=[role]), "aws_batch", {"queue": "no-such-queue"})
    assert runner.status(f"aws_batch://live/{batch_queue}:never-submitted") is None
    assert runner.status("aws_batch://live/no-such-queue:x") is None
    runner.cancel(f"aws_batch://live/{batch_queue}:never-submitted")  # unknown: a no-op


def test_delete_deregisters_the_job_definition(runner: Runner, batch_queue: str, busybox_image: str) -> None:
    import boto3

    role = specs.Role("x", image=busybox_image, entrypoint="true", resource=specs.resource(cpu=1, memMB=64))
    handle = runner.run(specs.AppDef("del", roles=[role]), "aws_batch", {"queue": batch_queue})
    desc = runner.describe_app(handle)
    assert desc is not None
    arn = desc.metadata["job_definition"]
    runner.delete(handle)
    defs = boto3.client("batch").describe_job_definitions(jobDefinitions=[arn])["jobDefinitions"]
    assert [d["status"] for d in defs] == ["INACTIVE"]


def test_macro_values_are_data_in_a_real_container(runner: Runner, batch_docker: str, busybox_image: str) -> None:
    marker = "/tmp/pwned"
    probe = macro_probe(busybox_image, marker, resource=specs.resource(cpu=1, memMB=128))
    probe.args.append(specs.macros.escape(hostile_value(marker)))  # one more word, to arrive as it is
    handle = runner.run(specs.AppDef("macros", roles=[probe]), "aws_batch", {"queue": batch_docker})
    status = runner.wait(handle, wait_interval=0.5, timeout=120)
    assert status is not None, status
    assert status.state == specs.AppState.SUCCEEDED, status
    expected = macro_probe_output("", handle.rsplit("/", 1)[1], 0).splitlines(keepends=True)
    expected.insert(-1, f"<{hostile_value(marker)}>\n")  # before PROBE_ENV's line
    assert "".join(runner.log_lines(handle, "probe", 0)) == "".join(expected)


# ---------------------------------------------------------------- why a job ended (end_cause)


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        ("Host EC2 (instance i-0123456789abcdef0) terminated.", "NODE_FAILURE"),
        ("Your Spot Task was interrupted.", "PREEMPTED"),
        ("Terminated by the on-call operator", "KILLED"),
    ],
)
def test_end_cause_of_a_job_terminated_with_a_batch_reason(
    aws_live: dict[str, str], batch_docker: str, busybox_image: str, reason: str, cause: str
) -> None:
    from torchx_sched_aws.batch import create_scheduler

    sched = create_scheduler("causes")
    role = specs.Role(
        "w", image=busybox_image, entrypoint="sleep", args=["60"], resource=specs.resource(cpu=1, memMB=64)
    )
    app_id = sched.submit(specs.AppDef("causes", [role]), {"queue": batch_docker})
    deadline = time.monotonic() + 120
    while (desc := sched.describe(app_id)) is None or desc.state != specs.AppState.RUNNING:
        assert time.monotonic() < deadline, desc
        time.sleep(0.3)
    assert sched.end_cause(app_id) is None
    sched._clients("batch").terminate_job(jobId=sched._job(app_id)["jobId"], reason=reason)  # as Batch would
    desc = sched.wait(app_id, timeout=60, poll_interval=0.3)
    assert desc is not None and desc.state == specs.AppState.FAILED, desc
    end = sched.end_cause(app_id)
    assert end is not None and end.cause.value == cause and reason in end.reason, end


def test_end_cause_of_a_cancel_through_torchx(aws_live: dict[str, str], batch_docker: str, busybox_image: str) -> None:
    from torchx_sched_aws.batch import create_scheduler

    sched = create_scheduler("causes")
    role = specs.Role(
        "w", image=busybox_image, entrypoint="sleep", args=["60"], resource=specs.resource(cpu=1, memMB=64)
    )
    app_id = sched.submit(specs.AppDef("causes", [role]), {"queue": batch_docker})
    sched.cancel(app_id)
    sched.wait(app_id, timeout=60, poll_interval=0.3)
    end = sched.end_cause(app_id)
    assert end is not None and end.cause.value == "CANCELLED", end
