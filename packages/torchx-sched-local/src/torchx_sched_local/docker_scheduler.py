"""``local_docker``: every replica is a container on the local Docker engine.

One bridge network per app (replicas reach each other by hostname ``<role>-<replica>``;
``TORCHX_RANK0_HOST`` names the first replica of the first role), labels to find the
app's containers, resource limits, bind/volume/device mounts, retries through the
container restart policy. An image that is not on the engine is pulled at submit, as
TorchX does. Needs the ``docker`` SDK (``pip install 'torchx-sched-local[docker]'``).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import math
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.devices import get_device_mounts
from torchx.schedulers.ids import make_unique, sanitize_name
from torchx.schedulers.streams import Stream, decode_chunks, filter_regex, lines_from_chunks
from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.roles import NONE, AppDef, RetryPolicy
from torchx.specs.runopts import CfgVal, require_non_negative, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, fail_fast_state, is_terminal

from torchx_sched_local.codec import role_from_dict, role_to_dict
from torchx_sched_local.docker_workspace import LABEL_VERSION, DockerWorkspaceMixin, torchx_version
from torchx_sched_local.limits import check_replica_count

if TYPE_CHECKING:
    from docker.models.containers import Container
    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

logger: logging.Logger = logging.getLogger(__name__)

LABEL_APP_ID = "torchx.pytorch.org/app-id"
LABEL_APP_NAME = "torchx.pytorch.org/app-name"
LABEL_ROLE_NAME = "torchx.pytorch.org/role-name"
LABEL_ROLE_INDEX = "torchx.pytorch.org/role-index"
LABEL_REPLICA_ID = "torchx.pytorch.org/replica-id"
#: the submitted role as JSON (on the first replica of each role), for ``describe``
LABEL_ROLE = "torchx.pytorch.org/role"
#: seconds a container gets between SIGTERM and SIGKILL (``cancel``, or a sibling's failure)
LABEL_STOP_GRACE = "torchx.pytorch.org/stop-grace-period"
#: on the marker volume ``torchx-cancelled-<app id>`` that ``cancel`` leaves
LABEL_CANCELLED = "torchx.pytorch.org/cancelled"
_EXITED = re.compile(r"^Exited \((-?\d+)\)")
_RUNNING = ("running", "paused", "restarting", "removing")
_STOPPABLE = ("running", "paused", "restarting")


@dataclass
class DockerOpts(StructuredOpts):
    """Run options of ``local_docker``."""

    copy_env: list[str] | None = None
    """Variables of this process's environment to copy into the containers (glob patterns, e.g. AWS_*)."""
    env: dict[str, str] | None = None
    """Extra environment variables for every container."""
    privileged: bool = False
    """Run the containers privileged."""
    network: str | None = None
    """An existing network to run on (default: a new bridge network per app, removed by `torchx delete`)."""
    stop_grace_period: float = 10.0
    """Seconds between SIGTERM and SIGKILL when the app is cancelled or another replica failed."""


@dataclass
class DockerContainer:
    """One replica's container, as ``local_docker`` will create it."""

    name: str
    hostname: str
    image: str
    command: list[str]
    env: dict[str, str]
    labels: dict[str, str]
    mounts: list[dict[str, Any]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    nano_cpus: int | None = None
    mem_limit: str | None = None
    gpus: int = 0
    max_retries: int = 0
    privileged: bool = False
    network: str | None = None

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments ``client.containers.create(image, command, **kwargs)`` gets for
        this container (TorchX's ``DockerContainer.kwargs``); needs the ``docker`` SDK."""
        from docker.types import DeviceRequest, Mount

        kwargs: dict[str, Any] = {
            "name": self.name,
            "hostname": self.hostname,
            "environment": self.env,
            "labels": self.labels,
            "mounts": [Mount(m["target"], m["source"], type=m["type"], read_only=m["read_only"]) for m in self.mounts],
            "privileged": self.privileged,
            "detach": True,
        }
        if self.network:
            kwargs["network"] = self.network
        if self.mem_limit:
            kwargs.update(mem_limit=self.mem_limit, shm_size=self.mem_limit)
        if self.nano_cpus:
            kwargs["nano_cpus"] = self.nano_cpus
        if self.gpus:
            kwargs["device_requests"] = [DeviceRequest(count=self.gpus, capabilities=[["gpu"]])]
        if self.devices:
            kwargs["devices"] = self.devices
        if self.max_retries:
            kwargs["restart_policy"] = {"Name": "on-failure", "MaximumRetryCount": self.max_retries}
        return kwargs


@dataclass
class DockerJob:
    """What ``local_docker`` runs: the app id, its network and its containers."""

    app_id: str
    network: str
    create_network: bool
    stop_grace_period: float
    containers: list[DockerContainer] = field(default_factory=list)

    def __str__(self) -> str:
        from torchx.util.yaml import dump

        return dump(asdict(self))


def _mount(m: BindMount | VolumeMount | DeviceMount) -> dict[str, Any] | str:
    if isinstance(m, BindMount):
        return {"type": "bind", "source": m.src_path, "target": m.dst_path, "read_only": m.read_only}
    if isinstance(m, VolumeMount):
        return {"type": "volume", "source": m.src, "target": m.dst_path, "read_only": m.read_only}
    return f"{m.src_path}:{m.dst_path}:{m.permissions}"


def _replica_state(status: str, exit_code: int | None) -> AppState:
    if status == "created":
        return AppState.PENDING
    if status in _RUNNING:
        return AppState.RUNNING
    if status == "exited" and exit_code == 0:
        return AppState.SUCCEEDED
    return AppState.FAILED


def _finished_key(stamp: str) -> tuple[str, str]:
    """Sort key of a Docker ``FinishedAt`` time (UTC, RFC 3339 with 0-9 fraction digits)."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return whole, fraction.ljust(9, "0")


class DockerScheduler(DockerWorkspaceMixin, Scheduler[DockerOpts, AppDef, DockerJob]):
    """Runs apps as containers on the local Docker engine (see the module docstring).

    Args:
        session_name: the session (part of app handles)
        docker_client: the client to use (default: from the environment)
    """

    capabilities = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        log_streams=frozenset({"stdout", "stderr", "combined"}),
        workspace=True,
        retry_policies=frozenset({RetryPolicy.REPLICA, RetryPolicy.APPLICATION}),
        mounts=frozenset({"bind", "volume", "device"}),
        attach=True,
        recovery=True,
    )

    runs_without_docker_sdk = False

    def __init__(self, session_name: str, docker_client: Any = None) -> None:
        super().__init__("local_docker", session_name, docker_client=docker_client)

    def close(self) -> None:
        """Closes the Docker client's connections."""
        if self._docker is not None:
            self._docker.close()
            self._docker = None

    # ------------------------------------------------------------------ submitting
    def _run_opts(self) -> runopts:
        return DockerOpts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: DockerOpts | None = None) -> None:
        """Containers need no resource; APPLICATION retries need a single-replica app.

        Raises:
            ValueError: APPLICATION retries on an app of several replicas
        """
        replicas = sum(r.num_replicas for r in app.roles)
        for role in app.roles:
            if role.max_retries > 0 and role.retry_policy == RetryPolicy.APPLICATION and replicas > 1:
                raise ValueError(
                    f"role {role.name!r}: local_docker restarts failed containers one by one (restart policy);"
                    " with several replicas use retry_policy=REPLICA (APPLICATION works for one replica)"
                )

    def _submit_dryrun(self, app: AppDef, cfg: DockerOpts) -> AppDryRunInfo[DockerJob]:
        opts = DockerOpts.from_cfg(cfg)
        check_replica_count(app, "local_docker", user_processes=False)
        app_id = make_unique(sanitize_name(app.name, max_length=40))
        job = DockerJob(
            app_id=app_id,
            network=opts.network or f"torchx-{app_id}",
            create_network=not opts.network,
            stop_grace_period=float(require_non_negative("stop_grace_period", opts.stop_grace_period)),
        )
        base_env: dict[str, str] = {}
        for pattern in opts.copy_env or []:
            base_env.update({k: v for k, v in os.environ.items() if fnmatch.fnmatchcase(k, pattern)})
        base_env.update(opts.env or {})
        hostnames: list[list[str]] = []
        seen: set[str] = set()
        for index, role in enumerate(app.roles):
            names = []
            for k in range(role.num_replicas):
                host = sanitize_name(f"{role.name}-{k}")
                if host in seen:
                    host = sanitize_name(f"{role.name}-{index}-{k}")
                seen.add(host)
                names.append(host)
            hostnames.append(names)
        rank0 = hostnames[0][0]
        for index, role in enumerate(app.roles):
            res = role.resource
            # Resource.devices (EFA, Neuron) become device mounts, as in TorchX
            mounts = [_mount(m) for m in [*role.mounts, *get_device_mounts(dict(res.devices or {}))]]
            for k in range(role.num_replicas):
                filled = macros.Values(img_root="", app_id=app_id, replica_id=str(k), rank0_env=RANK0_ENV).apply(role)
                labels = {
                    LABEL_APP_ID: app_id,
                    LABEL_APP_NAME: app.name,
                    LABEL_ROLE_NAME: role.name,
                    LABEL_ROLE_INDEX: str(index),
                    LABEL_REPLICA_ID: str(k),
                    LABEL_STOP_GRACE: str(math.ceil(opts.stop_grace_period)),
                    LABEL_VERSION: torchx_version(),
                }
                if k == 0:
                    labels[LABEL_ROLE] = json.dumps(role_to_dict(role), default=str)
                job.containers.append(
                    DockerContainer(
                        name=f"{app_id}-{hostnames[index][k]}",
                        hostname=hostnames[index][k],
                        image=role.image,
                        command=[filled.entrypoint, *filled.args],
                        env={
                            "PYTHONUNBUFFERED": "1",
                            **base_env,
                            RANK0_ENV: rank0,
                            "TORCHX_ROLE_NAME": role.name,
                            "TORCHX_REPLICA_IDX": str(k),
                            **filled.env,
                        },
                        labels=labels,
                        mounts=[m for m in mounts if isinstance(m, dict)],
                        devices=[m for m in mounts if isinstance(m, str)],
                        nano_cpus=int(res.cpu * 1e9) if res.cpu > 0 else None,
                        mem_limit=f"{res.memMB}m" if res.memMB > 0 else None,
                        gpus=max(res.gpu, 0),
                        max_retries=role.max_retries,
                        privileged=bool(opts.privileged),
                        network=job.network,
                    )
                )
        return AppDryRunInfo(job, str)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[DockerJob]:
        """A container that recovers by itself: the app (one replica) runs under core's bash
        restart loop as the container's main process (see :mod:`.docker_recovery`); the role's
        own ``max_retries`` (Docker's restart policy) is not used.

        Raises:
            UnsupportedFeatureError: the app has several replicas (each container would recover
                on its own, not the app as one attempt)
        """
        from torchx.schedulers.capabilities import UnsupportedFeatureError

        from torchx_sched_local.docker_recovery import LABEL_RECOVERY, loop_command

        if sum(r.num_replicas for r in app.roles) != 1:
            raise UnsupportedFeatureError(
                "local_docker recovers an app of one replica by itself (a restart loop in its container);"
                " an app of several replicas needs controller=local"
            )
        info = self._submit_dryrun(app, DockerOpts.from_cfg(cfg))
        container = info.request.containers[0]
        container.command = loop_command(policy, container.command)
        container.max_retries = 0
        container.labels[LABEL_RECOVERY] = "1"
        return info

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts the container's restart loop recorded in it; None for an unknown app or
        one that does not recover by itself."""
        from torchx_sched_local.docker_recovery import LABEL_RECOVERY, read_attempts

        containers = self._containers(app_id, LABEL_RECOVERY)
        return read_attempts(containers[0]) if containers else None

    def schedule(self, dryrun_info: AppDryRunInfo[DockerJob]) -> str:
        """Creates the network and the containers, then starts them all. An image that is not
        on the engine is pulled first (an image already there is used as it is).

        Raises:
            ValueError: an image is not on the engine and pulling it failed (the engine's reason
                is in the message)
        """
        job = dryrun_info.request
        client = self._docker_client  # first: a clear error if the docker SDK is missing
        from docker.errors import ImageNotFound

        if job.create_network:
            self._create_network(job)
        created: list[Container] = []
        try:
            for spec in job.containers:
                try:
                    created.append(self._create(job, spec))
                except ImageNotFound:
                    self._pull(spec.image)
                    created.append(self._create(job, spec))
            for container in created:
                container.start()
        except BaseException:
            for container in created:
                container.remove(force=True)
            if job.create_network:
                client.networks.get(job.network).remove()
            raise
        return job.app_id

    def _pull(self, image: str) -> None:
        """Pulls ``image``, which is not on the engine.

        Raises:
            ValueError: the pull failed, or ``image`` is a local image id (nothing to pull)
        """
        from docker.errors import APIError

        if image.startswith("sha256:"):
            raise ValueError(
                f"image {image!r} is not on the Docker engine; build it again (an image id cannot be pulled)"
            )
        logger.info("pulling image %s: it is not on the Docker engine (this may take a while)", image)
        try:
            self._docker_client.images.pull(image)
        except APIError as e:
            reason = " ".join(str(e.explanation or e).split())
            raise ValueError(
                f"image {image!r} is not on the Docker engine and pulling it failed ({reason});"
                " check the image name, `docker login` to its registry, or build or load it first"
            ) from None

    def _create_network(self, job: DockerJob) -> None:
        """Creates the app's network; if the engine ran out of subnets, removes the networks of
        ended torchx apps (their containers are stopped) and tries once more."""
        from docker.errors import APIError

        client = self._docker_client
        try:
            client.networks.create(job.network, driver="bridge", labels={LABEL_APP_ID: job.app_id})
            return
        except APIError as e:
            if "address pool" not in str(e):
                raise
        for network in client.networks.list(filters={"label": LABEL_APP_ID}):
            try:
                network.remove()  # refused while a container of it runs
            except APIError:
                pass
        client.networks.create(job.network, driver="bridge", labels={LABEL_APP_ID: job.app_id})

    def _create(self, job: DockerJob, spec: DockerContainer) -> Container:
        client = self._docker_client
        return client.containers.create(
            spec.image,
            spec.command,
            networking_config={job.network: client.api.create_endpoint_config(aliases=[spec.hostname])},
            **spec.kwargs,
        )

    # ------------------------------------------------------------------ state
    def _containers(self, app_id: str, *labels: str, sparse: bool = False) -> list[Container]:
        return list(
            self._docker_client.containers.list(
                all=True, sparse=sparse, filters={"label": [f"{LABEL_APP_ID}={app_id}", *labels]}
            )
        )

    def _cancelled(self) -> set[str]:
        volumes = self._docker_client.volumes.list(filters={"label": LABEL_CANCELLED})
        return {v.attrs["Labels"][LABEL_CANCELLED] for v in volumes}

    def _is_cancelled(self, app_id: str) -> bool:
        volumes = self._docker_client.volumes.list(filters={"label": f"{LABEL_CANCELLED}={app_id}"})
        return bool(volumes)

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's state from its containers; None if it has none.

        Once the app has FAILED (a replica exited non-zero with no restart left), its
        containers still running are stopped as ``cancel`` does, so that no replica waits
        forever for a dead peer; the app stays FAILED with the first failure as its message.
        """
        containers = self._containers(app_id)
        if not containers:
            return None
        cancelled = self._is_cancelled(app_id)
        desc = self._describe(app_id, containers, cancelled)
        live = [c for c in containers if c.status in _STOPPABLE]
        if desc.state == AppState.FAILED and live:
            self._stop(live)
            desc = self._describe(app_id, self._containers(app_id), cancelled)
        return desc

    def _describe(self, app_id: str, containers: list[Container], cancelled: bool) -> DescribeAppResponse:
        """The app's state from these (inspected) containers of it; the earliest failure is the message."""
        entries = sorted(containers, key=lambda c: (int(c.labels[LABEL_ROLE_INDEX]), int(c.labels[LABEL_REPLICA_ID])))
        roles = [role_from_dict(json.loads(c.labels[LABEL_ROLE])) for c in entries if LABEL_ROLE in c.labels]
        statuses: dict[str, RoleStatus] = {}
        states: list[AppState] = []
        failures: list[tuple[tuple[str, str], str]] = []  # (finished at, message)
        restarts = 0
        for c in entries:
            state_attrs = c.attrs["State"]
            code = state_attrs.get("ExitCode")
            state = _replica_state(state_attrs["Status"], code)
            role, k = c.labels[LABEL_ROLE_NAME], int(c.labels[LABEL_REPLICA_ID])
            error = NONE
            if state == AppState.FAILED:
                detail = f"exited with code {code}" + (" (out of memory)" if state_attrs.get("OOMKilled") else "")
                if state_attrs.get("Error"):
                    detail += f": {state_attrs['Error']}"
                if cancelled:
                    state = AppState.CANCELLED
                else:
                    failures.append((_finished_key(state_attrs.get("FinishedAt", "")), f"{role}/{k} {detail}"))
                    error = json.dumps({"message": failures[-1][1], "exit_code": code})
            restarts += int(c.attrs.get("RestartCount", 0))
            states.append(state)
            statuses.setdefault(role, RoleStatus(role, [])).replicas.append(
                ReplicaStatus(
                    id=k, state=state, role=role, hostname=c.attrs["Config"]["Hostname"], structured_error_msg=error
                )
            )
        app_state = fail_fast_state(states, cancelled)
        msg = min(failures)[1] if failures else ""
        return DescribeAppResponse(
            app_id=app_id,
            state=app_state,
            num_restarts=restarts,
            msg="cancelled" if app_state == AppState.CANCELLED else msg,
            roles_statuses=list(statuses.values()),
            roles=roles,
        )

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the app ended: ``CANCELLED`` after ``torchx cancel``; else from the engine's
        ``State`` of its earliest failed container (see :mod:`torchx_sched_local.docker_causes`:
        ``OOMKilled`` and a signal from outside are ``KILLED``, an exit code ``APP_ERROR``).
        None while it runs, or for an unknown app."""
        from torchx.schedulers.causes import AttemptEnd, EndCause

        from torchx_sched_local.docker_causes import container_end

        containers = self._containers(app_id)
        if not containers:
            return None
        cancelled = self._is_cancelled(app_id)
        state = self._describe(app_id, containers, cancelled).state
        if not is_terminal(state):
            return None
        if state == AppState.CANCELLED:
            return AttemptEnd(EndCause.CANCELLED, None, "cancelled through torchx")
        failed = [
            (_finished_key(c.attrs["State"].get("FinishedAt", "")), c)
            for c in containers
            if _replica_state(c.attrs["State"]["Status"], c.attrs["State"].get("ExitCode")) == AppState.FAILED
        ]
        if not failed:
            return AttemptEnd(EndCause.APP_ERROR, 0, "succeeded")
        _, first = min(failed, key=lambda item: item[0])
        return container_end(first.attrs["State"], f"{first.labels[LABEL_ROLE_NAME]}/{first.labels[LABEL_REPLICA_ID]}")

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """Every app with containers on the engine, newest first."""
        apps: dict[str, tuple[float, str, list[AppState]]] = {}
        containers = self._docker_client.containers.list(all=True, sparse=True, filters={"label": LABEL_APP_ID})
        for c in containers:
            attrs = c.attrs
            labels = attrs.get("Labels") or {}
            match = _EXITED.match(attrs.get("Status", ""))
            state = _replica_state(attrs.get("State", ""), int(match.group(1)) if match else None)
            created, name, states = apps.setdefault(labels[LABEL_APP_ID], (0.0, labels.get(LABEL_APP_NAME, ""), []))
            states.append(state)
            apps[labels[LABEL_APP_ID]] = (max(created, float(attrs.get("Created", 0))), name, states)
        cancelled = self._cancelled() if apps else set()
        ordered = sorted(apps.items(), key=lambda item: item[1][0], reverse=True)
        return [
            ListAppResponse(app_id, fail_fast_state(states, app_id in cancelled), name=name)
            for app_id, (_, name, states) in ordered
        ]

    def wait(self, app_id: str, timeout: float | None = None, poll_interval: float = 1.0) -> DescribeAppResponse | None:
        """Blocks until the app ends or ``timeout`` passes, woken by the engine's container events."""
        deadline = None if timeout is None else time.monotonic() + timeout
        since_ns = time.time_ns()
        while True:
            desc = self.describe(app_id)
            if desc is None or is_terminal(desc.state):
                return desc
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return desc
            window = 30.0 if remaining is None else min(30.0, remaining)
            events = self._docker_client.events(
                since=f"{since_ns // 10**9}.{since_ns % 10**9:09d}",
                until=f"{time.time() + window:.3f}",
                filters={
                    "type": "container",
                    "label": f"{LABEL_APP_ID}={app_id}",
                    "event": ["die", "destroy", "start"],
                },
                decode=True,
            )
            try:
                for event in events:  # any event: look again (events are replayed from since_ns)
                    since_ns = max(since_ns, int(event.get("timeNano", 0)) + 1)
                    break
            finally:
                events.close()

    # ------------------------------------------------------------------ stopping
    def _cancel_existing(self, app_id: str) -> None:
        """Stops every container (SIGTERM, then SIGKILL after the grace period); the app ends CANCELLED."""
        desc = self.describe(app_id)
        if desc is None or is_terminal(desc.state):
            return
        self._docker_client.volumes.create(
            name=f"torchx-cancelled-{app_id}", labels={LABEL_CANCELLED: app_id, LABEL_APP_ID: app_id}
        )
        self._stop(self._containers(app_id, sparse=True))

    def _stop(self, containers: Sequence[Container]) -> None:
        """Stops the containers in parallel: SIGTERM, then SIGKILL after the app's grace period."""

        def stop(c: Container) -> None:
            labels = c.attrs.get("Labels") or c.attrs["Config"]["Labels"]  # sparse or inspected
            c.stop(timeout=int(labels.get(LABEL_STOP_GRACE, "10")))

        with ThreadPoolExecutor(max_workers=min(16, max(1, len(containers)))) as pool:
            list(pool.map(stop, containers))

    def _delete_existing(self, app_id: str) -> None:
        """Removes the app's containers, its network and its cancel marker."""
        client = self._docker_client
        from docker.errors import NotFound

        containers = self._containers(app_id)
        with ThreadPoolExecutor(max_workers=min(16, max(1, len(containers)))) as pool:
            list(pool.map(lambda c: c.remove(force=True), containers))
        for network in client.networks.list(filters={"label": f"{LABEL_APP_ID}={app_id}"}):
            network.remove()
        try:
            client.volumes.get(f"torchx-cancelled-{app_id}").remove(force=True)
        except NotFound:
            pass

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
        """Lines of replica ``k`` of ``role_name`` from the engine (default stream: ``combined``).

        Raises:
            ValueError: the app has no such replica
        """
        found = self._containers(app_id, f"{LABEL_ROLE_NAME}={role_name}", f"{LABEL_REPLICA_ID}={k}", sparse=True)
        if not found:
            raise ValueError(f"local_docker app {app_id!r} has no replica {role_name}/{k}")
        stream = Stream(streams) if streams is not None else Stream.COMBINED
        chunks = found[0].logs(
            stdout=stream != Stream.STDERR,
            stderr=stream != Stream.STDOUT,
            stream=True,
            follow=should_tail,
            since=since.timestamp() if since else None,
            until=until.timestamp() if until else None,
        )
        lines = lines_from_chunks(decode_chunks(chunks))
        return filter_regex(regex, lines) if regex else lines


def create_scheduler(session_name: str, docker_client: Any = None, **kwargs: Any) -> DockerScheduler:
    """The ``local_docker`` scheduler (other keyword arguments, meant for other schedulers, are ignored)."""
    return DockerScheduler(session_name, docker_client=docker_client)
