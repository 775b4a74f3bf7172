"""``torchx.schedulers.aws_sagemaker_scheduler``: upstream TorchX's module path for ``aws_sagemaker``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx_sched_aws.sagemaker import AWSSageMakerScheduler, create_scheduler
from torchx_sched_aws.sagemaker_request import SageMakerOpts as AWSSageMakerOpts
from torchx_sched_aws.sagemaker_request import TrainingJob as AWSSageMakerJob

__all__ = ["AWSSageMakerJob", "AWSSageMakerOpts", "AWSSageMakerScheduler", "create_scheduler"]
