"""``torchx.schedulers.aws_batch_scheduler``: upstream TorchX's module path for ``aws_batch``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_aws._common import TAG_APP_NAME as TAG_TORCHX_APPNAME
from torchx_sched_aws._common import TAG_USER as TAG_TORCHX_USER
from torchx_sched_aws._common import TAG_VERSION as TAG_TORCHX_VER
from torchx_sched_aws.batch import AWSBatchScheduler, create_scheduler
from torchx_sched_aws.batch_request import BatchJob
from torchx_sched_aws.batch_request import BatchOpts as AWSBatchOpts

__all__ = [
    "TAG_TORCHX_APPNAME",
    "TAG_TORCHX_USER",
    "TAG_TORCHX_VER",
    "AWSBatchOpts",
    "AWSBatchScheduler",
    "BatchJob",
    "create_scheduler",
]
