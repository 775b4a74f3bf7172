"""``torchx.schedulers.aws_sagemaker_scheduler``: upstream TorchX's module path for ``aws_sagemaker``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.schedulers.structured_opts import typed_dict

from torchx_sched_aws.sagemaker import AWSSageMakerScheduler, create_scheduler
from torchx_sched_aws.sagemaker_request import SageMakerOpts
from torchx_sched_aws.sagemaker_request import TrainingJob as AWSSageMakerJob

#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
AWSSageMakerOpts = typed_dict(SageMakerOpts, "AWSSageMakerOpts", __name__)

__all__ = ["AWSSageMakerJob", "AWSSageMakerOpts", "AWSSageMakerScheduler", "create_scheduler"]
