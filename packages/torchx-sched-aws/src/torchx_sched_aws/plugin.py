"""torchx plugin hooks of torchx-sched-aws: registers ``aws_batch`` and ``aws_sagemaker``.

Imports nothing but ``torchx.plugins``: boto3 is loaded only when a scheduler is used.
"""

from __future__ import annotations

from collections.abc import Iterator

from torchx.plugins import LegacyModule, SchedulerPlugin, hookimpl


@hookimpl
def torchx_schedulers() -> Iterator[SchedulerPlugin]:
    """The AWS schedulers."""
    yield SchedulerPlugin(
        "aws_batch",
        "torchx_sched_aws.batch:create_scheduler",
        "AWS Batch: one (multi-node) job per app, logs from CloudWatch",
    )
    yield SchedulerPlugin(
        "aws_sagemaker",
        "torchx_sched_aws.sagemaker:create_scheduler",
        "Amazon SageMaker training jobs (single role), logs from CloudWatch",
    )


@hookimpl
def torchx_legacy_modules() -> Iterator[LegacyModule]:
    """Upstream's module paths of the AWS schedulers."""
    yield LegacyModule("torchx.schedulers.aws_batch_scheduler", "torchx_sched_aws.compat_batch")
    yield LegacyModule("torchx.schedulers.aws_sagemaker_scheduler", "torchx_sched_aws.compat_sagemaker")
