"""``torchx.schedulers.aws_batch_scheduler`` as TorchX 0.7 documents it."""

from __future__ import annotations

import pytest
from torchx import specs

pytest.importorskip("torchx_sched_aws")
pytest.importorskip("boto3")

from torchx.schedulers.aws_batch_scheduler import (
    AWSBatchOpts,
    AWSBatchScheduler,
    BatchJob,
    create_scheduler,
    resource_from_resource_requirements,
    resource_requirements_from_resource,
)


def app() -> specs.AppDef:
    role = specs.Role(
        "r", image="python:3.11", entrypoint="echo", args=["hi"], resource=specs.resource(cpu=2, gpu=1, memMB=4096)
    )
    return specs.AppDef("a", roles=[role])


def test_batch_job_fields() -> None:
    sched = create_scheduler("compat")
    job = sched.submit_dryrun(app(), AWSBatchOpts(queue="q", share_id="team", priority=3)).request
    assert isinstance(job, BatchJob)
    assert job.queue == "q"
    assert job.share_id == "team"
    assert job.job_def["schedulingPriority"] == 3
    assert job.job_def["type"] == "container"
    assert job.job_def["containerProperties"]["image"] == "python:3.11"


def test_priority_without_share_id_is_accepted() -> None:
    job = create_scheduler("compat").submit_dryrun(app(), AWSBatchOpts(queue="q", priority=5)).request
    assert job.share_id is None


def test_resource_round_trip() -> None:
    res = specs.resource(cpu=2, gpu=1, memMB=4096)
    back = resource_from_resource_requirements(resource_requirements_from_resource(res))
    assert (back.cpu, back.gpu, back.memMB) == (2, 1, 4096)
    no_gpu = resource_from_resource_requirements([{"type": "VCPU", "value": "4"}, {"type": "MEMORY", "value": "1000"}])
    assert (no_gpu.cpu, no_gpu.gpu, no_gpu.memMB) == (4, 0, 1000)


@pytest.mark.aws
def test_client_and_log_client_are_used() -> None:
    """The documented constructor arguments: the given boto3 clients are the ones called."""
    import boto3
    from torchx.testing import live_backend_env

    env = live_backend_env("TORCHX_TEST_AWS", "aws")
    calls: list[str] = []
    batch = boto3.client("batch", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=env["AWS_DEFAULT_REGION"])
    logs = boto3.client("logs", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=env["AWS_DEFAULT_REGION"])
    batch.meta.events.register("before-call.batch.*", lambda model, **kw: calls.append(model.name))
    sched = AWSBatchScheduler("compat", client=batch, log_client=logs)
    assert sched.describe("no-such-queue:no-such-job") is None
    assert calls, "the batch client passed as client= was not used"
