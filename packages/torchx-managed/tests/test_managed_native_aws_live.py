"""Managed jobs that recover inside AWS Batch (moto, which runs each job as a real Docker
container), with nothing of torchx's left on the submitting side.

Each test submits with ``torchx run --detach`` from a client in its own PID namespace (torn
down when it returns), moves that client's HOME away, breaks the attempt, and reads the job
from a second client with a fresh HOME. The job's checkpoint directory is a host directory
bind-mounted into the container.

moto (5.2.5) keeps a job definition's ``retryStrategy`` but never retries a job: every job has
one attempt, ``AWS_BATCH_JOB_ATTEMPT`` is not set and ``describe_jobs`` gives no exit code.
So these tests check what runs for real on moto: the retry rules Batch is given, the attempt's
``TORCHX_ATTEMPT`` and checkpoint directory, the attempt's end and cause as another machine
reads them (a lost host, an application error), and a cancel from another machine. Batch's own
retries (attempts 2..N) are checked against botocore's model of the request and with real
``describe_jobs`` shapes in ``torchx-sched-aws``'s ``test_batch_recovery.py``. Another machine
also lists the job (``torchx list -s managed -cfg targets=aws_batch``), picked out by its tag,
and not a plain Batch job. Run by ``nox -s integration-managed``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import live_backend_env, unavailable
from torchx.testing.machines import Machine
from torchx.testing.processes import eventually

COUNTER = Path(__file__).with_name("counter.py")
#: steps of the counter and seconds per step: the attempt runs long enough to be broken mid-run
STEPS, STEP_SECONDS = 40, 0.25


@pytest.fixture
def batch(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The moto endpoint's queue and image; the clients' environment reaches moto (AWS_*)."""
    env = live_backend_env("TORCHX_TEST_AWS", "moto")
    pytest.importorskip("torchx_sched_aws", reason="needs torchx-sched-aws")
    if env.get("TORCHX_TEST_AWS_BATCH_DOCKER") != "1":
        unavailable("moto runs Batch without Docker: jobs never run")
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to tear the submitting client down")
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return {
        "queue": env.get("TORCHX_TEST_AWS_BATCH_QUEUE") or "torchx",
        "image": env.get("TORCHX_TEST_AWS_IMAGE") or "localhost/torchx-python:bookworm",
    }


def _submit(client: Machine, batch: dict[str, str], shared: Path, plan: str, *cfg: str) -> str:
    opts = ",".join(["targets=aws_batch", f"queue={batch['queue']}", "checkpoint_dir=/ckpt", *cfg])
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", opts, "utils.sh",
        "--image", batch["image"], "--mounts", f"type=bind,src={shared},dst=/ckpt",
        "python3", "/ckpt/counter.py", str(STEPS), str(STEP_SECONDS), plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://") and "/aws_batch:" in handle, proc.stdout
    return handle


def _count(shared: Path) -> int:
    path = shared / "count"
    return int(path.read_text()) if path.exists() else 0


def _batch_job(handle: str) -> dict[str, Any]:
    """The Batch job of the handle, as moto describes it (straight from boto3)."""
    import boto3

    queue, name = handle.split("/aws_batch:", 1)[1].rsplit(":", 1)
    batch = boto3.client("batch")
    (summary,) = batch.list_jobs(jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}])["jobSummaryList"]
    job: dict[str, Any] = batch.describe_jobs(jobs=[summary["jobId"]])["jobs"][0]
    return job


@pytest.mark.aws
def test_a_lost_host_ends_the_attempt_as_a_node_failure_batch_retries(
    tmp_path: Path, batch: dict[str, str], shared: Path
) -> None:
    import boto3

    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, batch, shared, "0", "max_restarts=1", "max_recoveries=2")
    submitter.gone()

    job = _batch_job(handle)
    definition = boto3.client("batch").describe_job_definitions(jobDefinitions=[job["jobDefinition"]])
    strategy = definition["jobDefinitions"][0]["retryStrategy"]
    assert strategy["attempts"] == 4  # 1 + max_restarts + max_recoveries: Batch's one budget
    assert [(r.get("onStatusReason"), r.get("onExitCode"), r.get("onReason"), r["action"].upper())
            for r in strategy["evaluateOnExit"]] == [
        ("Host EC2*", None, None, "RETRY"),
        ("Your Spot Task*", None, None, "RETRY"),
        (None, "*", None, "RETRY"),
        (None, None, "*", "EXIT"),
    ]  # fmt: skip

    eventually(lambda: _count(shared) >= 3, 120, 0.3, "attempt 0 to checkpoint a few steps")
    assert (shared / "pid-0").exists(), "the attempt did not read TORCHX_ATTEMPT=0"
    running = other.status(handle)
    assert running["state"] == "RUNNING" and [a["state"] for a in running["attempts"]] == ["RUNNING"], running
    # what Batch writes when the attempt's EC2 host (or its Spot capacity) goes away
    reason = "Host EC2 (instance i-0abc) terminated."
    boto3.client("batch").terminate_job(jobId=_batch_job(handle)["jobId"], reason=reason)

    status = other.ended(handle, 180)
    # moto ends the job here; Batch would start attempt 1 by the rule above
    assert status["state"] == "FAILED", status
    assert [(a["attempt"], a["state"], a["cause"]) for a in status["attempts"]] == [(0, "FAILED", "NODE_FAILURE")]
    assert reason in status["attempts"][0]["reason"]
    reached = _count(shared)
    assert 3 <= reached < STEPS
    time.sleep(3 * STEP_SECONDS + 1)
    assert _count(shared) == reached, "the attempt kept counting after its host was lost"


@pytest.mark.aws
def test_an_app_error_with_no_restart_left_ends_the_job(tmp_path: Path, batch: dict[str, str], shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, batch, shared, "3")  # max_restarts=0: an app error is the end
    submitter.gone()
    status = other.ended(handle, 180)
    assert status["state"] == "FAILED", status
    # moto's describe_jobs gives no exit code, so the end reads UNKNOWN (counted as an app error);
    # Batch's attempts[].container.exitCode makes it APP_ERROR with the code (unit-tested)
    assert [(a["attempt"], a["state"], a["cause"]) for a in status["attempts"]] == [(0, "FAILED", "UNKNOWN")]
    assert _count(shared) == 0 and (shared / "pid-0").exists()
    # the attempt's output, from CloudWatch Logs, read by the other machine
    eventually(lambda: "attempt 0 starts" in other.torchx("log", handle).stdout, 30, 0.3, "the attempt's log")


@pytest.mark.aws
def test_cancel_from_another_machine_stops_it_for_good(tmp_path: Path, batch: dict[str, str], shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, batch, shared, "0", "max_restarts=3")
    submitter.gone()
    eventually(lambda: _count(shared) >= 1, 120, 0.3, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")
    reached = _count(shared)
    time.sleep(3 * STEP_SECONDS + 1)
    assert _count(shared) == reached < STEPS, "the job kept counting after its cancel"
    status = other.status(handle)
    assert [(a["state"], a["cause"]) for a in status["attempts"]] == [("CANCELLED", "CANCELLED")], status


@pytest.mark.aws
def test_another_machine_lists_the_managed_job_and_not_a_plain_one(
    tmp_path: Path, batch: dict[str, str], shared: Path, lists_native: Callable[..., None]
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, batch, shared, "0", "max_restarts=1")
    cfg = f"queue={batch['queue']}"
    plain = submitter.torchx(
        "run", "--workspace", "", "-s", "aws_batch", "-cfg", cfg, "utils.sh", "--image", batch["image"], "true"
    )
    plain_id = plain.stdout.strip().splitlines()[-1].rsplit("/", 1)[1]
    submitter.gone()
    assert plain_id in {a["app_id"] for a in json.loads(other.torchx("list", "-s", "aws_batch", "--json").stdout)}
    # the mark the other machine picks the job out by, as Batch keeps it
    tags = _batch_job(handle)["tags"]
    assert tags["torchx.pytorch.org/recovery"] == "max_restarts=1 max_recoveries=10", tags

    lists_native(other, handle, "aws_batch", plain_id, lambda: _count(shared) == STEPS)
