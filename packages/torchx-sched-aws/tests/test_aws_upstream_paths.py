"""Upstream's module paths of the AWS schedulers are this package's."""

from __future__ import annotations


def test_upstream_paths() -> None:
    from torchx.schedulers.aws_batch_scheduler import AWSBatchOpts, AWSBatchScheduler
    from torchx.schedulers.aws_sagemaker_scheduler import AWSSageMakerOpts, AWSSageMakerScheduler
    from torchx_sched_aws import batch, batch_request, sagemaker, sagemaker_request

    assert AWSBatchScheduler is batch.AWSBatchScheduler
    assert set(AWSBatchOpts.__annotations__) == {k for k, _ in batch_request.BatchOpts.as_runopts()}
    assert AWSSageMakerScheduler is sagemaker.AWSSageMakerScheduler
    assert set(AWSSageMakerOpts.__annotations__) == {k for k, _ in sagemaker_request.SageMakerOpts.as_runopts()}


def test_upstream_batch_state_table_and_resources() -> None:
    from torchx.schedulers.aws_batch_scheduler import JOB_STATE, resource_requirements_from_resource
    from torchx.specs import AppState, Resource

    assert JOB_STATE["RUNNABLE"] == AppState.PENDING
    assert JOB_STATE["RUNNING"] == AppState.RUNNING
    assert JOB_STATE["SUCCEEDED"] == AppState.SUCCEEDED
    assert JOB_STATE["FAILED"] == AppState.FAILED
    assert resource_requirements_from_resource(Resource(cpu=2, gpu=1, memMB=1024)) == [
        {"type": "VCPU", "value": "2"},
        {"type": "MEMORY", "value": "1024"},
        {"type": "GPU", "value": "1"},
    ]
    assert [r["type"] for r in resource_requirements_from_resource(Resource(cpu=1, gpu=0, memMB=512))] == [
        "VCPU",
        "MEMORY",
    ]
