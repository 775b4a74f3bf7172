"""``aws_sagemaker``: runs a one-role app as a SageMaker training job through boto3's SageMaker
API (see :mod:`torchx_sched_aws.sagemaker_request` for the mapping; no ``sagemaker`` SDK).

App id: the training job name. ``list`` shows the account's training jobs in the region;
``cancel`` stops the job; logs come from CloudWatch Logs (``/aws/sagemaker/TrainingJobs``,
stream ``<job>/algo-<k+1>-...``). Training jobs cannot be deleted: ``delete`` stops the job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.streams import Stream, filter_regex
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.named_resources_aws import K8S_ITYPE
from torchx.specs.roles import AppDef, Resource, RetryPolicy, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, is_terminal
from torchx.workspace.api import WorkspaceMixin

from torchx_sched_aws import _cwlogs
from torchx_sched_aws._aws import Clients, aws_errors, client_error_code
from torchx_sched_aws.sagemaker_request import SageMakerOpts, TrainingJob, build_training_job, training_job_name

if TYPE_CHECKING:
    from torchx.schedulers.causes import AttemptEnd

logger: logging.Logger = logging.getLogger(__name__)

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
_PENDING_SECONDARY = frozenset(
    {"Starting", "Pending", "LaunchingMLInstances", "PreparingTrainingStack", "Downloading", "DownloadingTrainingImage"}
)
_STATES = {
    "Completed": AppState.SUCCEEDED,
    "Failed": AppState.FAILED,
    "Stopping": AppState.CANCELLED,
    "Stopped": AppState.CANCELLED,
}


def training_state(status: str, secondary: str = "") -> AppState:
    """The torchx state of a training job status (and secondary status)."""
    if status == "InProgress":
        return AppState.PENDING if secondary in _PENDING_SECONDARY else AppState.RUNNING
    return _STATES.get(status, AppState.UNKNOWN)


class AWSSageMakerScheduler(WorkspaceMixin[None], Scheduler[Mapping[str, CfgVal], AppDef, TrainingJob]):
    """SageMaker training jobs through boto3.

    Args:
        session_name: the runner's session name
        clients: boto3 clients to use, by service (``sagemaker``, ``logs``, ``s3``); made
            from the default session when absent
    """

    capabilities = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        workspace=True,
        delete=False,
        retry_policies=frozenset({RetryPolicy.APPLICATION}),
    )

    def __init__(self, session_name: str, clients: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__("aws_sagemaker", session_name)
        self._clients = Clients(clients)

    def _run_opts(self) -> runopts:
        return SageMakerOpts.as_runopts()

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Nothing to build: the workspace is tarred and uploaded at submission (with ``code_location``)."""

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal] | None = None) -> None:
        """Resources need no check here: the request builder checks the instance type."""

    # ------------------------------------------------------------------ submit
    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[TrainingJob]:
        opts = SageMakerOpts.from_cfg(cfg)
        job = build_training_job(app, opts, training_job_name(app, opts.base_job_name))
        if app.roles[0].workspace is not None and job.source is None:
            logger.info(
                "aws_sagemaker: workspace %s is not shipped; set -cfg code_location=s3://...", app.roles[0].workspace
            )
        return AppDryRunInfo(job, str)

    def schedule(self, dryrun_info: AppDryRunInfo[TrainingJob]) -> str:
        """Uploads the workspace (if any) and creates the training job."""
        from torchx_sched_aws._source import upload_workspace

        job = dryrun_info.request
        if job.source is not None and job.source_uri:
            upload_workspace(self._clients("s3"), job.source, job.source_uri)
        with aws_errors(f"aws_sagemaker: creating training job {job.name}"):
            self._clients("sagemaker").create_training_job(**job.request)
        return job.name

    # ------------------------------------------------------------------ query
    def _describe_job(self, app_id: str) -> dict[str, Any] | None:
        try:
            return dict(self._clients("sagemaker").describe_training_job(TrainingJobName=app_id))
        except Exception as e:
            if client_error_code(e) in ("ValidationException", "ResourceNotFound"):
                return None  # no such job
            with aws_errors(f"aws_sagemaker: describing training job {app_id}"):
                raise

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state, its role as submitted and one replica per instance."""
        job = self._describe_job(app_id)
        if job is None:
            return None
        state = training_state(job.get("TrainingJobStatus", ""), job.get("SecondaryStatus", ""))
        algorithm = job.get("AlgorithmSpecification") or {}
        resources = job.get("ResourceConfig") or {}
        env = dict(job.get("Environment") or {})
        name = env.get("TORCHX_ROLE_NAME", app_id)
        count = int(resources.get("InstanceCount", 1))
        entrypoint = list(algorithm.get("ContainerEntrypoint") or [])
        role = Role(
            name=name,
            image=str(algorithm.get("TrainingImage", "")),
            entrypoint=entrypoint[0] if entrypoint else "",
            args=[*entrypoint[1:], *(algorithm.get("ContainerArguments") or [])],
            env=env,
            num_replicas=count,
            resource=Resource(
                cpu=-1,
                gpu=-1,
                memMB=-1,
                capabilities={K8S_ITYPE: str(resources.get("InstanceType", "")).removeprefix("ml.")},
            ),
        )
        region = self._clients.region()
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=0,
            msg=str(job.get("FailureReason") or job.get("SecondaryStatus") or ""),
            ui_url=(
                f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}#/jobs/{app_id}"
                if region
                else None
            ),
            metadata={"arn": job.get("TrainingJobArn", ""), "secondary_status": job.get("SecondaryStatus", "")},
            roles_statuses=[
                RoleStatus(
                    role=name,
                    replicas=[
                        ReplicaStatus(id=i, state=state, role=name, hostname=f"algo-{i + 1}") for i in range(count)
                    ],
                )
            ],
            roles=[role],
        )

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the training job ended, from its status, secondary status and failure reason
        (see :mod:`torchx_sched_aws.sagemaker_causes`); None while it runs, or if unknown."""
        from torchx_sched_aws.sagemaker_causes import training_end

        job = self._describe_job(app_id)
        return None if job is None else training_end(job)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The training jobs of the account in this region, newest first."""
        apps = []
        with aws_errors("aws_sagemaker: listing training jobs"):
            pages = (
                self._clients("sagemaker")
                .get_paginator("list_training_jobs")
                .paginate(SortBy="CreationTime", SortOrder="Descending")
            )
            for page in pages:
                for summary in page["TrainingJobSummaries"]:
                    apps.append(
                        ListAppResponse(
                            app_id=summary["TrainingJobName"],
                            state=training_state(
                                summary.get("TrainingJobStatus", ""), summary.get("SecondaryStatus", "")
                            ),
                            name=summary["TrainingJobName"],
                        )
                    )
        return apps

    # ------------------------------------------------------------------ stop
    def _cancel_existing(self, app_id: str) -> None:
        job = self._describe_job(app_id)
        if job is None or job.get("TrainingJobStatus") != "InProgress":
            return
        try:
            self._clients("sagemaker").stop_training_job(TrainingJobName=app_id)
        except Exception as e:
            if client_error_code(e) == "ValidationException":  # it ended meanwhile
                return
            with aws_errors(f"aws_sagemaker: stopping training job {app_id}"):
                raise

    # ------------------------------------------------------------------ logs
    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines of instance ``k`` (host ``algo-<k+1>``) from CloudWatch Logs."""
        desc = self.describe(app_id)
        if desc is None:
            return iter(())
        role = desc.roles[0]
        if "TORCHX_ROLE_NAME" in role.env and role_name != role.name:
            raise ValueError(f"aws_sagemaker: job {app_id} runs role {role.name!r}, not {role_name!r}")
        count = role.num_replicas
        if not 0 <= k < count:
            raise ValueError(f"aws_sagemaker: job {app_id} has instances 0..{count - 1}, not {k}")
        logs = self._clients("logs")
        prefix = f"{app_id}/algo-{k + 1}-"

        def finished() -> bool:
            latest = self.describe(app_id)
            return latest is None or is_terminal(latest.state)

        stream = _cwlogs.find_stream(logs, LOG_GROUP, prefix)
        while stream is None and should_tail and not finished():
            time.sleep(1.0)
            stream = _cwlogs.find_stream(logs, LOG_GROUP, prefix)
        if stream is None:
            return iter(())
        lines = _cwlogs.iter_lines(logs, LOG_GROUP, stream, since, until, should_tail, finished)
        return filter_regex(regex, lines) if regex else lines


def create_scheduler(session_name: str, **kwargs: Any) -> AWSSageMakerScheduler:
    """The ``aws_sagemaker`` scheduler (factory named by its registration)."""
    return AWSSageMakerScheduler(session_name, **kwargs)
