"""AppDef -> AWS Batch request: a job definition and the job that runs it (no AWS calls).

Mapping:

* An app with one replica in all is a single ``container`` job; anything bigger is one
  ``multinode`` job with a node range per role (``targetNodes`` ``start:end``), node 0 main.
* ``max_retries`` -> ``retryStrategy.attempts`` = max over roles + 1 (Batch retries the whole job).
* Resources -> ``resourceRequirements`` VCPU/MEMORY/GPU, ``/dev/shm`` of ``memMB``, the
  resource's EFA devices as device mappings, its ``node.kubernetes.io/instance-type``
  capability as the node range's ``instanceType``.
* Mounts: bind -> host volume, volume -> EFS file system (``src`` is its id), device -> device mapping.
* Environment: the role's plus ``TORCHX_ROLE_NAME``, ``TORCHX_ROLE_IDX``,
  ``TORCHX_REPLICA_IDX`` and ``TORCHX_RANK0_HOST`` (the main node's address, from
  ``AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS``; ``localhost`` on the main node, where
  Batch does not set it).
* Multi-node: each node's replica index is ``AWS_BATCH_JOB_NODE_INDEX`` less the range
  start, so nodes run ``/bin/sh -c 'export ...; exec <entrypoint> <args>'`` with every
  user word quoted; ``${replica_id}`` in args/env expands to it there. A single container
  job runs the entrypoint directly.
* Job arrays (a sweep's trials, :func:`build_array_job`): apps of one replica each, alike but
  for argv and env, become one ``container`` job with ``arrayProperties.size`` = N whose
  command is ``/bin/sh -c 'case $INDEX in 0) export ...; exec ...;; ... esac'`` (every user
  word quoted), ``INDEX`` being ``AWS_BATCH_JOB_ARRAY_INDEX`` (or the ``:<index>`` suffix of
  ``AWS_BATCH_JOB_ID`` where that is not set). Element ``i`` of ``queue:name`` is
  ``queue:name[i]``. Batch cannot throttle an array: every element is runnable at once, and
  the queue's compute environment bounds how many run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.devices import DEVICE_PATHS
from torchx.schedulers.ids import make_unique, sanitize_name
from torchx.schedulers.shell import placeholder, shell_word
from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.env_names import check_env
from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.named_resources_aws import K8S_ITYPE
from torchx.specs.roles import AppDef, Resource, Role

from torchx_sched_aws import _shell
from torchx_sched_aws._common import default_user, job_tags

NODE_INDEX_ENV = "AWS_BATCH_JOB_NODE_INDEX"
MAIN_NODE_ADDR_ENV = "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"
#: most attempts Batch allows per job
MAX_ATTEMPTS = 10
_REPLICA_TOKEN = placeholder("torchx-replica-id")  # cannot occur in a real argument
_REPLICA_EXPANSION = {_REPLICA_TOKEN: '"${TORCHX_REPLICA_IDX}"'}
_PERMISSIONS = {"r": "READ", "w": "WRITE", "m": "MKNOD"}


@dataclass
class BatchOpts(StructuredOpts):
    """Run options of ``aws_batch``."""

    queue: str
    """AWS Batch job queue to submit to"""
    user: str = field(default_factory=default_user)
    """user recorded in the job's tags"""
    privileged: bool = False
    """run the containers privileged"""
    share_id: str | None = None
    """share identifier, for fair-share job queues"""
    priority: int = 0
    """scheduling priority (0-9999) within the share; without share_id it is ignored (as TorchX)"""
    job_role_arn: str | None = None
    """IAM role the containers' AWS calls use"""
    execution_role_arn: str | None = None
    """IAM role the ECS agent uses (pull the image, write logs)"""
    image_repo: str | None = None
    """repository the workspace image is pushed to, e.g. 123456789012.dkr.ecr.us-west-2.amazonaws.com/torchx"""


@dataclass
class BatchJob:
    """What ``aws_batch`` submits: a job definition, then a job of it.

    Attributes:
        name: the job's (and job definition's) name
        queue: the job queue
        job_definition: ``register_job_definition`` arguments
        submit: ``submit_job`` arguments but ``jobDefinition`` (the registered ARN)
        images_to_push: what the docker workspace pushes before submitting
    """

    name: str
    queue: str
    job_definition: dict[str, Any]
    submit: dict[str, Any]
    images_to_push: Any = None

    @property
    def job_def(self) -> dict[str, Any]:
        """The job definition (TorchX's name of :attr:`job_definition`)."""
        return self.job_definition

    @property
    def share_id(self) -> str | None:
        """The fair-share identifier the job is submitted with (None: not a fair-share submission)."""
        share: str | None = self.submit.get("shareIdentifier")
        return share

    @property
    def app_id(self) -> str:
        """``queue:job name``."""
        return f"{self.queue}:{self.name}"

    def __str__(self) -> str:
        return json.dumps({"register_job_definition": self.job_definition, "submit_job": self.submit}, indent=2)


def job_name(app: AppDef) -> str:
    """A unique Batch job name for ``app`` (letters, digits, ``-``, ``_``; at most 128)."""
    return make_unique(sanitize_name(app.name, max_length=100, allowed=r"a-z0-9_\-"))


def build_job(app: AppDef, opts: BatchOpts, name: str) -> BatchJob:
    """The Batch request for ``app`` named ``name``.

    Raises:
        ValueError: the app asks for something Batch cannot do (the message says what)
    """
    attempts = max(r.max_retries for r in app.roles) + 1
    if attempts > MAX_ATTEMPTS:
        raise ValueError(
            f"aws_batch: max_retries={attempts - 1} is more than Batch allows ({MAX_ATTEMPTS - 1} retries per job)"
        )
    total = sum(r.num_replicas for r in app.roles)
    multinode = total > 1
    app_id = f"{opts.queue}:{name}"
    tags = job_tags(app, opts.user)
    ranges: list[dict[str, Any]] = []
    start = 0
    for idx, role in enumerate(app.roles):
        end = start + role.num_replicas - 1
        container = _container(role, idx, start, app_id, opts, multinode)
        ranges.append({"targetNodes": f"{start}:{end}" if end > start else str(start), "container": container})
        start = end + 1

    definition: dict[str, Any] = {
        "jobDefinitionName": name,
        "type": "multinode" if multinode else "container",
        "retryStrategy": {"attempts": attempts},
        "propagateTags": True,
        "tags": tags,
    }
    if multinode:
        definition["nodeProperties"] = {"numNodes": total, "mainNode": 0, "nodeRangeProperties": ranges}
    else:
        definition["containerProperties"] = ranges[0]["container"]
    submit: dict[str, Any] = {"jobName": name, "jobQueue": opts.queue, "tags": tags}
    if opts.share_id:  # the priority on the definition as TorchX, and on the submission (it wins there)
        definition["schedulingPriority"] = opts.priority
        submit["shareIdentifier"] = opts.share_id
        submit["schedulingPriorityOverride"] = opts.priority
    return BatchJob(name=name, queue=opts.queue, job_definition=definition, submit=submit)


#: the array index in a job array's element (moto sets only AWS_BATCH_JOB_ID=<parent>:<index>)
ARRAY_INDEX_SHELL = '"${AWS_BATCH_JOB_ARRAY_INDEX:-${AWS_BATCH_JOB_ID##*:}}"'
#: fewest / most elements Batch allows in an array job
ARRAY_SIZE = (2, 10000)


def array_element_id(app_id: str, index: int) -> str:
    """``queue:name[index]``: the app id of element ``index`` of array job ``queue:name``."""
    return f"{app_id}[{index}]"


def split_array_element_id(app_id: str) -> tuple[str, int | None]:
    """``"q:n[3]"`` -> ``("q:n", 3)``; ``"q:n"`` -> ``("q:n", None)``."""
    head, sep, rest = app_id.partition("[")
    if sep and rest.endswith("]") and rest[:-1].isdigit():
        return head, int(rest[:-1])
    return app_id, None


class ArrayShapeError(ValueError):
    """The apps cannot be one Batch array job (the message says why)."""


def build_array_job(apps: list[AppDef], opts: BatchOpts, name: str) -> BatchJob:
    """One array job running ``apps[i]`` as element ``i``.

    Raises:
        ArrayShapeError: an app has several replicas, the apps differ in more than argv and
            env, or there are fewer than 2 or more than 10,000 of them
    """
    if not ARRAY_SIZE[0] <= len(apps) <= ARRAY_SIZE[1]:
        raise ArrayShapeError(f"aws_batch array jobs have {ARRAY_SIZE[0]} to {ARRAY_SIZE[1]} elements, not {len(apps)}")
    if any(sum(r.num_replicas for r in a.roles) != 1 for a in apps):
        raise ArrayShapeError("aws_batch array jobs need apps of one replica (no multi-node arrays)")
    job = build_job(apps[0], opts, name)
    app_id = f"{opts.queue}:{name}"
    containers = [_container(a.roles[0], 0, 0, array_element_id(app_id, i), opts, False) for i, a in enumerate(apps)]
    shared = {k: v for k, v in containers[0].items() if k not in ("command", "environment")}
    envs = [{e["name"]: e["value"] for e in c["environment"]} for c in containers]
    common = {k: v for k, v in envs[0].items() if all(env.get(k) == v for env in envs[1:])}
    cases = []
    for i, (container, env) in enumerate(zip(containers, envs, strict=True)):
        if {k: v for k, v in container.items() if k not in ("command", "environment")} != shared:
            raise ArrayShapeError("aws_batch array jobs need trials that differ only in arguments and env")
        own = [(k, shell_word(v, {})) for k, v in env.items() if k not in common]
        check_env(apps[i].roles[0], [k for k, _ in own], "aws_batch")
        words = [shell_word(w, {}) for w in container["command"]]
        cases.append(f"{i}) {_shell.script(own, words)};;")
    script = f'case {ARRAY_INDEX_SHELL} in {" ".join(cases)} *) echo "torchx: no array element $AWS_BATCH_JOB_ID" >&2; exit 2;; esac'
    container = {**shared, "command": ["/bin/sh", "-c", script]}
    container["environment"] = [{"name": k, "value": v} for k, v in common.items()]
    job.job_definition["containerProperties"] = container
    job.submit["arrayProperties"] = {"size": len(apps)}
    return job


def resource_requirements(res: Resource) -> list[dict[str, str]]:
    """A container's ``resourceRequirements`` for ``res``: VCPU (at least 1), MEMORY in MiB
    (at least Batch's minimum of 4) and GPU when ``res.gpu > 0``."""
    requirements = [
        {"type": "VCPU", "value": str(max(1, res.cpu))},
        {"type": "MEMORY", "value": str(max(4, res.memMB))},
    ]
    if res.gpu > 0:
        requirements.append({"type": "GPU", "value": str(res.gpu)})
    return requirements


def _container(role: Role, idx: int, start: int, app_id: str, opts: BatchOpts, multinode: bool) -> dict[str, Any]:
    if not role.image:
        raise ValueError(f"aws_batch: role {role.name!r} has no image; set Role(image='repo/image:tag')")
    values = macros.Values(
        img_root="", app_id=app_id, replica_id=_REPLICA_TOKEN if multinode else "0", rank0_env=RANK0_ENV
    )
    role = values.apply(role)
    env = {**role.env, "TORCHX_ROLE_IDX": str(idx), "TORCHX_ROLE_NAME": role.name}
    if multinode:
        dynamic = [(k, v) for k, v in env.items() if _REPLICA_TOKEN in v]
        check_env(role, [k for k, _ in dynamic], "aws_batch")
        exports = [
            ("TORCHX_REPLICA_IDX", f"$(({NODE_INDEX_ENV} - {start}))"),
            (RANK0_ENV, f'"${{{MAIN_NODE_ADDR_ENV}:-localhost}}"'),
            *((k, shell_word(v, _REPLICA_EXPANSION)) for k, v in dynamic),
        ]
        words = [shell_word(w, _REPLICA_EXPANSION) for w in [role.entrypoint, *role.args]]
        command = ["/bin/sh", "-c", _shell.script(exports, words)]
        env = {k: v for k, v in env.items() if _REPLICA_TOKEN not in v}
    else:
        command = [role.entrypoint, *role.args]
        env.update({"TORCHX_REPLICA_IDX": "0", RANK0_ENV: "localhost"})

    res = role.resource
    requirements = resource_requirements(res)
    linux: dict[str, Any] = {"devices": _devices(role)}
    if res.memMB > 0:
        linux["sharedMemorySize"] = res.memMB
    container: dict[str, Any] = {
        "image": role.image,
        "command": command,
        "environment": [{"name": k, "value": v} for k, v in env.items()],
        "resourceRequirements": requirements,
        "linuxParameters": linux,
        "logConfiguration": {"logDriver": "awslogs"},
        "privileged": opts.privileged,
    }
    volumes, mount_points = _volumes(role)
    if volumes:
        container["volumes"] = volumes
        container["mountPoints"] = mount_points
    if opts.job_role_arn:
        container["jobRoleArn"] = opts.job_role_arn
    if opts.execution_role_arn:
        container["executionRoleArn"] = opts.execution_role_arn
    instance_type = res.capabilities.get(K8S_ITYPE)
    if multinode and instance_type:
        container["instanceType"] = str(instance_type)
    return container


def _devices(role: Role) -> list[dict[str, Any]]:
    devices = [
        {
            "hostPath": m.src_path,
            "containerPath": m.dst_path,
            "permissions": [_PERMISSIONS[c] for c in m.permissions if c in _PERMISSIONS],
        }
        for m in role.mounts
        if isinstance(m, DeviceMount)
    ]
    for name, count in role.resource.devices.items():
        pattern = DEVICE_PATHS.get(name)
        if pattern is None:
            raise ValueError(
                f"aws_batch: role {role.name!r} asks for device {name!r}, which Batch cannot map;"
                f" known: {', '.join(sorted(DEVICE_PATHS))}"
            )
        devices += [
            {
                "hostPath": pattern.format(i),
                "containerPath": pattern.format(i),
                "permissions": ["READ", "WRITE", "MKNOD"],
            }
            for i in range(count)
        ]
    return devices


def _volumes(role: Role) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    volumes: list[dict[str, Any]] = []
    points: list[dict[str, Any]] = []
    for i, m in enumerate(role.mounts):
        name = f"mount_{i}"
        if isinstance(m, BindMount):
            volumes.append({"name": name, "host": {"sourcePath": m.src_path}})
        elif isinstance(m, VolumeMount):
            volumes.append({"name": name, "efsVolumeConfiguration": {"fileSystemId": m.src}})
        else:
            continue
        points.append({"containerPath": m.dst_path, "readOnly": m.read_only, "sourceVolume": name})
    return volumes, points
