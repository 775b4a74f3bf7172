"""``torchx.schedulers.aws_batch_scheduler``: upstream TorchX's module path for ``aws_batch``.

Code written for TorchX imports from here (through core's import hook) unchanged.
"""

from torchx.schedulers.structured_opts import typed_dict
from torchx.specs.roles import Resource
from torchx.specs.status import AppState

from torchx_sched_aws._common import TAG_APP_NAME as TAG_TORCHX_APPNAME
from torchx_sched_aws._common import TAG_USER as TAG_TORCHX_USER
from torchx_sched_aws._common import TAG_VERSION as TAG_TORCHX_VER
from torchx_sched_aws.batch import _STATES, AWSBatchScheduler, create_scheduler
from torchx_sched_aws.batch_request import BatchJob, BatchOpts, resource_requirements

#: AWS Batch job status -> AppState (our scheduler's table; a copy, so edits here change nothing).
#: Unlike upstream, SUBMITTED maps to AppState.SUBMITTED (upstream: PENDING), and the scheduler
#: reads a FAILED job whose reason is our cancel reason as CANCELLED.
JOB_STATE: dict[str, AppState] = dict(_STATES)


def resource_requirements_from_resource(resource: Resource) -> list[dict[str, str]]:
    """The Batch container ``resourceRequirements`` for ``resource``: VCPU (``cpu``, at least 1),
    MEMORY (``memMB``) and GPU when ``gpu > 0``, values as strings.

    Upstream asserts ``memMB > 0``; ours never fails and lifts MEMORY to at least 4 MiB,
    exactly as our scheduler submits it.
    """
    return resource_requirements(resource)


def resource_from_resource_requirements(resource_requirements: list[dict[str, str]]) -> Resource:
    """The :class:`Resource` a Batch container's ``resourceRequirements`` describe (the inverse of
    :func:`resource_requirements_from_resource`): VCPU -> ``cpu``, MEMORY (MiB) -> ``memMB``,
    GPU -> ``gpu`` (0 when absent). Capabilities and devices are not recovered.

    Raises:
        KeyError: VCPU or MEMORY is missing
    """
    values = {r["type"].upper(): int(float(r["value"])) for r in resource_requirements}
    return Resource(cpu=values["VCPU"], gpu=values.get("GPU", 0), memMB=values["MEMORY"])


#: the run options as TorchX declares them: a TypedDict (``Opts({"k": v})`` or ``Opts(k=v)``)
AWSBatchOpts = typed_dict(BatchOpts, "AWSBatchOpts", __name__)

__all__ = [
    "JOB_STATE",
    "resource_from_resource_requirements",
    "TAG_TORCHX_APPNAME",
    "TAG_TORCHX_USER",
    "TAG_TORCHX_VER",
    "AWSBatchOpts",
    "AWSBatchScheduler",
    "BatchJob",
    "create_scheduler",
    "resource_requirements_from_resource",
]
