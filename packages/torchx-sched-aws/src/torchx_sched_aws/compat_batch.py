"""``torchx.schedulers.aws_batch_scheduler``: upstream TorchX's module path for ``aws_batch``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_aws.batch import AWSBatchScheduler, create_scheduler
from torchx_sched_aws.batch_request import BatchJob
from torchx_sched_aws.batch_request import BatchOpts as AWSBatchOpts

__all__ = ["AWSBatchOpts", "AWSBatchScheduler", "BatchJob", "create_scheduler"]
