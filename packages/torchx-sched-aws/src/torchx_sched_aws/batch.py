"""``aws_batch``: runs apps as AWS Batch jobs (see :mod:`torchx_sched_aws.batch_request`).

App id: ``<queue>:<job name>``. ``list`` finds torchx's jobs (tagged
``torchx.pytorch.org/version``) in every queue, or in ``-cfg queue=...``. Logs come from
CloudWatch Logs (``/aws/batch/job``); ``cancel`` terminates the job (it then reads as
CANCELLED); ``delete`` also deregisters its job definition. Job arrays
(``capabilities.job_arrays``): element ``i`` of array ``queue:name`` is ``queue:name[i]``
(Batch's child job ``<job id>:<i>``); Batch cannot throttle them (``max_parallel`` is not
applied: the compute environment's size bounds how many run). Workspaces are built into a
docker image by the installed ``docker`` workspace plugin and pushed to ``image_repo``.
Recovery (``capabilities.recovery``, for ``torchx-managed``): the job's ``retryStrategy`` and
``AWS_BATCH_JOB_ATTEMPT`` (see :mod:`torchx_sched_aws.batch_recovery`).
"""

from __future__ import annotations

import builtins
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities, UnsupportedFeatureError
from torchx.schedulers.streams import Stream, filter_regex
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import AppDef, Resource, RetryPolicy, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, is_terminal
from torchx.workspace.api import WorkspaceMixin

from torchx_sched_aws import _cwlogs
from torchx_sched_aws._aws import AWSError, Clients, aws_errors, client_error_code
from torchx_sched_aws._common import TAG_APP_NAME, TAG_VERSION
from torchx_sched_aws._workspace import docker_workspace_mixin
from torchx_sched_aws.batch_request import (
    ArrayShapeError,
    BatchJob,
    BatchOpts,
    array_element_id,
    build_array_job,
    build_job,
    job_name,
    split_array_element_id,
)

if TYPE_CHECKING:
    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

#: reason given to ``terminate_job``; a FAILED job with it reads as CANCELLED
CANCEL_REASON = "cancelled via torchx"
LOG_GROUP = "/aws/batch/job"

_STATES = {
    "SUBMITTED": AppState.SUBMITTED,
    "PENDING": AppState.PENDING,
    "RUNNABLE": AppState.PENDING,
    "STARTING": AppState.PENDING,
    "RUNNING": AppState.RUNNING,
    "SUCCEEDED": AppState.SUCCEEDED,
    "FAILED": AppState.FAILED,
}
_BATCH = 100  # ids per describe_jobs call


def job_state(job: Mapping[str, Any]) -> AppState:
    """The torchx state of a Batch job (or node) description."""
    status = str(job.get("status", ""))
    if status == "FAILED" and str(job.get("statusReason", "")).startswith(CANCEL_REASON):
        return AppState.CANCELLED
    return _STATES.get(status, AppState.UNKNOWN)


def job_times(job: Mapping[str, Any]) -> tuple[float | None, float | None, float | None]:
    """(submitted, started, ended) in seconds since the epoch from a Batch job description's
    ``createdAt``/``startedAt``/``stoppedAt`` (milliseconds); None where Batch has not set one."""

    def seconds(key: str) -> float | None:
        value = job.get(key)
        return value / 1000 if isinstance(value, (int, float)) and value > 0 else None

    return seconds("createdAt"), seconds("startedAt"), seconds("stoppedAt")


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("environment") or []}


def node_ranges(job: Mapping[str, Any]) -> list[tuple[str, int, int, dict[str, Any]]]:
    """``(role name, first node, last node, container)`` of each role of a job description."""
    nodes = job.get("nodeProperties")
    if not nodes:
        container = job.get("container") or {}
        return [(_env(container).get("TORCHX_ROLE_NAME", "role0"), 0, 0, dict(container))]
    last = int(nodes["numNodes"]) - 1
    out = []
    for i, rng in enumerate(nodes.get("nodeRangeProperties") or []):
        first, sep, end = str(rng["targetNodes"]).partition(":")
        lo = int(first or 0)
        hi = (int(end) if end else last) if sep else lo
        container = rng.get("container") or {}
        out.append((_env(container).get("TORCHX_ROLE_NAME", f"role{i}"), lo, hi, dict(container)))
    return out


def _role(name: str, first: int, last: int, container: Mapping[str, Any]) -> Role:
    reqs = {r["type"]: int(float(r["value"])) for r in container.get("resourceRequirements") or []}
    command = list(container.get("command") or [])
    return Role(
        name=name,
        image=str(container.get("image", "")),
        entrypoint=command[0] if command else "",
        args=command[1:],
        env=_env(container),
        num_replicas=last - first + 1,
        resource=Resource(cpu=reqs.get("VCPU", -1), gpu=reqs.get("GPU", 0), memMB=reqs.get("MEMORY", -1)),
    )


class AWSBatchScheduler(WorkspaceMixin[Any], Scheduler[Mapping[str, CfgVal], AppDef, BatchJob]):
    """AWS Batch through boto3 (see the module docstring for the mapping).

    Args:
        session_name: the runner's session name
        client: the boto3 ``batch`` client to use (TorchX's argument)
        log_client: the boto3 ``logs`` client to use (TorchX's argument)
        clients: boto3 clients to use, by service (``batch``, ``logs``); made from the
            default session when absent
    """

    capabilities = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        workspace=True,
        retry_policies=frozenset({RetryPolicy.APPLICATION}),
        mounts=frozenset({"bind", "volume", "device"}),
        job_arrays=True,
        recovery=True,
    )

    def __init__(
        self,
        session_name: str,
        client: Any = None,
        log_client: Any = None,
        clients: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__("aws_batch", session_name)
        given = dict(clients or {})
        if client is not None:  # TorchX's constructor arguments: the batch and logs clients
            given["batch"] = client
        if log_client is not None:
            given["logs"] = log_client
        self._clients = Clients(given)

    def _run_opts(self) -> runopts:
        return BatchOpts.as_runopts()

    # ------------------------------------------------------------------ submit
    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[BatchJob]:
        images_to_push = self.dryrun_push_images(app, cfg)
        request = build_job(app, BatchOpts.from_cfg(cfg), job_name(app))
        request.images_to_push = images_to_push
        return AppDryRunInfo(request, str)

    def submit_array_dryrun(
        self, apps: Sequence[AppDef], cfg: Mapping[str, CfgVal], max_parallel: int | None = None
    ) -> AppDryRunInfo[BatchJob]:
        """One array job running ``apps[i]`` as element ``i`` (``max_parallel`` cannot be applied on Batch).

        Raises:
            UnsupportedFeatureError: the apps cannot be one array (see :func:`build_array_job`)
        """
        resolved = self.run_opts().resolve(cfg)
        if max_parallel:
            logging.getLogger(__name__).warning(
                "aws_batch cannot throttle a job array: all %d elements are runnable at once"
                " (max_parallel=%d is not applied; the compute environment's size bounds them)",
                len(apps),
                max_parallel,
            )
        try:
            request = build_array_job(list(apps), BatchOpts.from_cfg(resolved), job_name(apps[0]))
        except ArrayShapeError as e:
            raise UnsupportedFeatureError(str(e)) from None
        return AppDryRunInfo(request, str)

    def array_element_id(self, array_id: str, index: int) -> str:
        """``queue:name[index]``."""
        return array_element_id(array_id, index)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[BatchJob]:
        """A job that recovers inside Batch: its ``retryStrategy`` (``attempts``,
        ``evaluateOnExit``) and ``TORCHX_ATTEMPT`` from ``AWS_BATCH_JOB_ATTEMPT`` (see
        :mod:`torchx_sched_aws.batch_recovery`).

        Raises:
            UnsupportedFeatureError: Batch cannot express the policy (the message says why)
        """
        from torchx_sched_aws.batch_recovery import PolicyError, recover

        info = self._submit_dryrun(app, cfg)
        try:
            recover(info.request, policy)
        except PolicyError as e:
            raise UnsupportedFeatureError(str(e)) from None
        return info

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The job's attempts from ``describe_jobs``' ``attempts[]`` (exit codes, status
        reasons, start and stop times); None for an unknown job, or one not submitted to
        recover (its tags lack :data:`~torchx.schedulers.recovery.RECOVERY_MARK`)."""
        from torchx_sched_aws.batch_recovery import attempts_of, is_marked

        job = self._job(app_id)
        return attempts_of(job, CANCEL_REASON) if job is not None and is_marked(job) else None

    def recovery_list(self) -> builtins.list[ListAppResponse]:
        """The jobs of :meth:`list` submitted to recover, picked by their tags in the same
        ``describe_jobs`` pass (no further call per job)."""
        from torchx_sched_aws.batch_recovery import is_marked

        return self._list(None, is_marked)

    def schedule(self, dryrun_info: AppDryRunInfo[BatchJob]) -> str:
        """Checks the queue, pushes the workspace image (if any), registers the job definition, submits the job."""
        req = dryrun_info.request
        self._check_queue(req.queue)
        if req.images_to_push:
            self.push_images(req.images_to_push)
        batch = self._clients("batch")
        with aws_errors(f"aws_batch: registering job definition {req.name}"):
            arn = batch.register_job_definition(**req.job_definition)["jobDefinitionArn"]
        try:
            with aws_errors(f"aws_batch: submitting job {req.name} to queue {req.queue}"):
                batch.submit_job(**req.submit, jobDefinition=arn)
        except AWSError:
            with aws_errors(f"aws_batch: deregistering job definition {arn}"):
                batch.deregister_job_definition(jobDefinition=arn)
            raise
        return req.app_id

    def _check_queue(self, queue: str) -> None:
        batch = self._clients("batch")
        with aws_errors(f"aws_batch: looking up job queue {queue!r}"):
            found = batch.describe_job_queues(jobQueues=[queue])["jobQueues"]
            if not found:
                known = sorted(q["jobQueueName"] for q in batch.describe_job_queues()["jobQueues"])
                raise AWSError(
                    f"aws_batch: job queue {queue!r} does not exist in region {self._clients.region() or '?'};"
                    f" pass -cfg queue=NAME (existing: {', '.join(known) or 'none'})"
                )
        state, status = found[0].get("state"), found[0].get("status")
        if state != "ENABLED" or status == "INVALID":
            raise AWSError(f"aws_batch: job queue {queue!r} cannot take jobs (state {state}, status {status})")

    # ------------------------------------------------------------------ query
    def _find_job(self, app_id: str) -> dict[str, Any] | None:
        queue, sep, name = app_id.rpartition(":")
        if not sep or not queue or not name:
            return None
        batch = self._clients("batch")
        what = f"aws_batch: looking up job {app_id}"
        summaries: list[dict[str, Any]] = []
        try:
            pages = batch.get_paginator("list_jobs").paginate(
                jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]
            )
            for page in pages:
                # array elements (``<id>:<i>``) share their array's name: only the array itself
                summaries += [s for s in page["jobSummaryList"] if s["jobName"] == name and ":" not in s["jobId"]]
        except Exception as e:
            if client_error_code(e) == "ClientException":  # no such queue
                return None
            with aws_errors(what):
                raise
        if not summaries:
            return None
        latest = max(summaries, key=lambda s: s.get("createdAt", 0))
        with aws_errors(what):
            jobs = batch.describe_jobs(jobs=[latest["jobId"]])["jobs"]
        return dict(jobs[0]) if jobs else None

    def _job(self, app_id: str) -> dict[str, Any] | None:
        """The description of a job, or of an array element (``queue:name[i]``)."""
        base, index = split_array_element_id(app_id)
        job = self._find_job(base)
        if job is None or index is None:
            return job
        with aws_errors(f"aws_batch: looking up array element {app_id}"):
            jobs = self._clients("batch").describe_jobs(jobs=[f"{job['jobId']}:{index}"])["jobs"]
        return dict(jobs[0]) if jobs else None

    def _describe_nodes(self, job_id: str, indices: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Node index -> description of those nodes of a multi-node job Batch knows."""
        ids = [f"{job_id}#{i}" for i in indices]
        nodes: dict[int, dict[str, Any]] = {}
        with aws_errors(f"aws_batch: describing the nodes of job {job_id}"):
            for i in range(0, len(ids), _BATCH):
                for node in self._clients("batch").describe_jobs(jobs=ids[i : i + _BATCH])["jobs"]:
                    index = (node.get("nodeDetails") or {}).get("nodeIndex")
                    if index is not None:
                        nodes[int(index)] = node
        return nodes

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state, its roles as submitted and each node's state."""
        job = self._job(app_id)
        if job is None:
            return None
        state = job_state(job)
        ranges = node_ranges(job)
        num_nodes = int((job.get("nodeProperties") or {}).get("numNodes", 0))
        nodes: dict[int, dict[str, Any]] = {}
        if num_nodes and (state == AppState.RUNNING or is_terminal(state)):
            nodes = self._describe_nodes(job["jobId"], range(num_nodes))
        statuses = []
        for name, first, last, _ in ranges:
            replicas = []
            for i in range(first, last + 1):
                node = nodes.get(i, {})
                interfaces = (node.get("container") or {}).get("networkInterfaces") or [{}]
                replicas.append(
                    ReplicaStatus(
                        id=i - first,
                        state=job_state(node) if node else state,
                        role=name,
                        hostname=str(interfaces[0].get("privateIpv4Address", "")),
                    )
                )
            statuses.append(RoleStatus(role=name, replicas=replicas))
        region = self._clients.region()
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            num_restarts=max(len(job.get("attempts") or []) - 1, 0),
            msg=str(job.get("statusReason", "")),
            ui_url=(
                f"https://{region}.console.aws.amazon.com/batch/home?region={region}#jobs/detail/{job['jobId']}"
                if region
                else None
            ),
            metadata={
                "job_id": job["jobId"],
                "job_definition": job.get("jobDefinition", ""),
                "tags": job.get("tags", {}),
            },
            roles_statuses=statuses,
            roles=[_role(*r) for r in ranges],
        )

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the job ended, from Batch's status reasons and the container's exit code (see
        :mod:`torchx_sched_aws.batch_causes`); None while it runs, or for an unknown job."""
        from torchx_sched_aws.batch_causes import batch_end

        job = self._job(app_id)
        return None if job is None else batch_end(job, CANCEL_REASON)

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """torchx's jobs in ``cfg["queue"]``, or in every queue, in any state."""
        return self._list(cfg)

    def _list(
        self, cfg: Mapping[str, CfgVal] | None, keep: Callable[[Mapping[str, Any]], bool] | None = None
    ) -> builtins.list[ListAppResponse]:
        """torchx's jobs (of those, the ones whose description ``keep`` takes)."""
        batch = self._clients("batch")
        queue = (cfg or {}).get("queue")
        apps: list[ListAppResponse] = []
        with aws_errors("aws_batch: listing jobs"):
            if queue:
                queues = [str(queue)]
            else:
                queues = [
                    q["jobQueueName"]
                    for page in batch.get_paginator("describe_job_queues").paginate()
                    for q in page["jobQueues"]
                ]
            for q in queues:
                # any filter makes Batch return jobs in every status
                pages = batch.get_paginator("list_jobs").paginate(
                    jobQueue=q, filters=[{"name": "AFTER_CREATED_AT", "values": ["0"]}]
                )
                ids = [s["jobId"] for page in pages for s in page["jobSummaryList"]]
                for i in range(0, len(ids), _BATCH):
                    for job in batch.describe_jobs(jobs=ids[i : i + _BATCH])["jobs"]:
                        tags = job.get("tags") or {}
                        if TAG_VERSION in tags and (keep is None or keep(job)):
                            submitted, started, ended = job_times(job)
                            apps.append(
                                ListAppResponse(
                                    app_id=f"{q}:{job['jobName']}",
                                    state=job_state(job),
                                    name=str(tags.get(TAG_APP_NAME, job["jobName"])),
                                    submitted=submitted,
                                    started=started,
                                    ended=ended,
                                )
                            )
        return apps

    # ------------------------------------------------------------------ stop
    def _cancel_existing(self, app_id: str) -> None:
        job = self._job(app_id)
        if job is None or is_terminal(job_state(job)):
            return
        with aws_errors(f"aws_batch: terminating job {app_id}"):
            self._clients("batch").terminate_job(jobId=job["jobId"], reason=CANCEL_REASON)

    def _delete_existing(self, app_id: str) -> None:
        self._cancel_existing(app_id)
        job = self._job(app_id)
        if job is not None and job.get("jobDefinition"):
            with aws_errors(f"aws_batch: deregistering the job definition of {app_id}"):
                self._clients("batch").deregister_job_definition(jobDefinition=job["jobDefinition"])

    # ------------------------------------------------------------------ logs
    def _log_stream(self, job: Mapping[str, Any], node: int) -> str | None:
        """The CloudWatch stream of ``node``, else of the job (None before there is one)."""
        descriptions = [job]
        if job.get("nodeProperties"):
            descriptions = [*self._describe_nodes(job["jobId"], [node]).values(), job]
        for desc in descriptions:
            attempts = desc.get("attempts") or [{}]
            for container in (desc.get("container") or {}, attempts[-1].get("container") or {}):
                if container.get("logStreamName"):
                    return str(container["logStreamName"])
        return None

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
        """Lines of node ``k`` of ``role_name`` from CloudWatch Logs (stdout and stderr combined)."""
        job = self._job(app_id)
        if job is None:
            return iter(())
        ranges = {name: (first, last) for name, first, last, _ in node_ranges(job)}
        if role_name not in ranges:
            raise ValueError(f"aws_batch: app {app_id} has no role {role_name!r} (roles: {', '.join(ranges)})")
        first, last = ranges[role_name]
        if not 0 <= k <= last - first:
            raise ValueError(f"aws_batch: role {role_name!r} has replicas 0..{last - first}, not {k}")
        stream = self._log_stream(job, first + k)
        while stream is None and should_tail and not is_terminal(job_state(job)):
            time.sleep(1.0)
            job = self._job(app_id) or job
            stream = self._log_stream(job, first + k)
        if stream is None:
            return iter(())

        def finished() -> bool:
            latest = self._job(app_id)
            return latest is None or is_terminal(job_state(latest))

        lines = _cwlogs.iter_lines(self._clients("logs"), LOG_GROUP, stream, since, until, should_tail, finished)
        return filter_regex(regex, lines) if regex else lines


@functools.lru_cache(maxsize=1)
def _scheduler_class() -> type[AWSBatchScheduler]:
    """:class:`AWSBatchScheduler` with the installed docker workspace (or its stand-in) mixed in."""
    mixin = docker_workspace_mixin()
    return type(
        "AWSBatchScheduler",
        (mixin, AWSBatchScheduler),
        {"__module__": __name__, "__doc__": AWSBatchScheduler.__doc__},
    )


def create_scheduler(session_name: str, **kwargs: Any) -> AWSBatchScheduler:
    """The ``aws_batch`` scheduler (factory named by its registration)."""
    return _scheduler_class()(session_name, **kwargs)
