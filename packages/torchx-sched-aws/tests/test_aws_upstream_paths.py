"""Upstream's module paths of the AWS schedulers are this package's."""

from __future__ import annotations


def test_upstream_paths() -> None:
    from torchx.schedulers.aws_batch_scheduler import AWSBatchOpts, AWSBatchScheduler
    from torchx.schedulers.aws_sagemaker_scheduler import AWSSageMakerOpts, AWSSageMakerScheduler
    from torchx_sched_aws import batch, batch_request, sagemaker, sagemaker_request

    assert (AWSBatchScheduler, AWSBatchOpts) == (batch.AWSBatchScheduler, batch_request.BatchOpts)
    assert (AWSSageMakerScheduler, AWSSageMakerOpts) == (
        sagemaker.AWSSageMakerScheduler,
        sagemaker_request.SageMakerOpts,
    )
