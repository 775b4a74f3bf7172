"""AppDef -> SageMaker ``CreateTrainingJob`` request (no AWS calls).

Mapping (one role per app: a training job is one cluster of identical instances):

* ``image`` -> ``AlgorithmSpecification.TrainingImage``.
* ``args_mode=command`` (default): ``entrypoint`` -> ``ContainerEntrypoint``, ``args`` ->
  ``ContainerArguments``. ``args_mode=hyperparameters``: ``--key value`` args become
  hyperparameters and the entrypoint the ``sagemaker_program`` one (JSON-encoded, as the
  SageMaker framework containers expect); the image's own entrypoint runs.
* ``num_replicas`` -> ``InstanceCount``; the instance type is ``-cfg instance_type`` or the
  role's ``aws_<type>`` named resource, as ``ml.<type>``.
* ``max_retries`` -> ``RetryStrategy.MaximumRetryAttempts``; ``env`` -> ``Environment`` plus
  ``TORCHX_ROLE_NAME``, ``TORCHX_RANK0_HOST=algo-1`` (SageMaker's first host).
* With ``code_location`` set, the role's workspace is tarred and uploaded to
  ``<code_location>/<job>/source.tar.gz`` at submission; the job gets that URI as
  ``TORCHX_SOURCE_S3_URI`` and hyperparameter ``sagemaker_submit_directory``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.ids import make_unique, sanitize_name
from torchx.schedulers.structured_opts import StructuredOpts
from torchx.specs.env_names import check_env
from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.named_resources_aws import K8S_ITYPE
from torchx.specs.roles import AppDef, Role
from torchx.specs.workspace import Workspace

from torchx_sched_aws._common import default_user, job_tags

SOURCE_ENV = "TORCHX_SOURCE_S3_URI"
ARGS_MODES = ("command", "hyperparameters")
_REPLICA_TOKEN = "\x00torchx-replica-id\x00"
_MAX_WORD = 256  # longest ContainerEntrypoint / ContainerArguments item
_MAX_ARGS = 100
_MAX_ENV_VALUE = 512
_MAX_RETRIES = 30


@dataclass
class SageMakerOpts(StructuredOpts):
    """Run options of ``aws_sagemaker``."""

    role_arn: str = field(metadata={"cfg_key": "role"})
    """ARN of the IAM role the training job runs as"""
    output_path: str
    """S3 URI for the job's output, e.g. s3://bucket/torchx"""
    instance_type: str | None = None
    """instance type, e.g. ml.p4d.24xlarge (default: from the role's aws_* named resource)"""
    volume_size: int = 30
    """storage volume per instance, GB"""
    max_run: int = 86400
    """longest the job may run, seconds"""
    args_mode: str = "command"
    """how entrypoint and args reach the container: command (ContainerEntrypoint/ContainerArguments) or hyperparameters (--key value args as hyperparameters, entrypoint as sagemaker_program)"""
    hyperparameters: dict[str, str] | None = None
    """extra hyperparameters"""
    code_location: str | None = None
    """S3 prefix (s3://bucket/prefix) to upload the workspace to; unset: the workspace is not shipped"""
    subnets: list[str] | None = None
    """VPC subnet ids (with security_group_ids)"""
    security_group_ids: list[str] | None = None
    """VPC security group ids (with subnets)"""
    user: str = field(default_factory=default_user)
    """user recorded in the job's tags"""


@dataclass
class TrainingJob:
    """What ``aws_sagemaker`` submits.

    Attributes:
        name: the training job's name (the app id)
        request: ``create_training_job`` arguments
        source: the workspace to upload before creating the job
        source_uri: where it goes (``s3://...tar.gz``)
    """

    name: str
    request: dict[str, Any]
    source: Workspace | None = None
    source_uri: str | None = None

    def __str__(self) -> str:
        out: dict[str, Any] = {"create_training_job": self.request}
        if self.source is not None:
            out["upload_workspace"] = {"workspace": str(self.source), "to": self.source_uri}
        return json.dumps(out, indent=2)


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> ``(bucket, key)``.

    Raises:
        ValueError: not an S3 URI
    """
    if not uri.startswith("s3://") or not uri[5:].split("/", 1)[0]:
        raise ValueError(f"aws_sagemaker: {uri!r} is not an S3 URI; expected s3://bucket/prefix")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


def training_job_name(app: AppDef) -> str:
    """A unique training job name for ``app`` (letters, digits, ``-``; at most 63)."""
    return make_unique(sanitize_name(app.name, max_length=50, allowed=r"a-z0-9\-"))


def _instance_type(role: Role, opts: SageMakerOpts) -> str:
    itype = opts.instance_type or role.resource.capabilities.get(K8S_ITYPE)
    if not itype:
        raise ValueError(
            f"aws_sagemaker: no instance type for role {role.name!r}; give it an aws_* named resource"
            " (e.g. resource(h='aws_p3.2xlarge')) or pass -cfg instance_type=ml.m5.xlarge"
        )
    itype = str(itype)
    return itype if itype.startswith("ml.") else f"ml.{itype}"


def args_to_hyperparameters(args: list[str]) -> dict[str, str]:
    """``["--lr", "0.1", "--epochs=3", "--fast"]`` -> ``{"lr": "0.1", "epochs": "3", "fast": "true"}``.

    Raises:
        ValueError: an argument is not part of a ``--key value`` pair
    """
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or len(arg) == 2:
            raise ValueError(
                f"aws_sagemaker: args_mode=hyperparameters needs --key value arguments, got {arg!r};"
                " use -cfg args_mode=command to pass arguments as they are"
            )
        key, sep, value = arg[2:].partition("=")
        if not sep:
            has_value = i + 1 < len(args) and not args[i + 1].startswith("--")
            value = args[i + 1] if has_value else "true"
            i += 1 if has_value else 0
        out[key] = value
        i += 1
    return out


def _check_words(role: Role, words: list[str], what: str, limit: int) -> None:
    if len(words) > limit:
        raise ValueError(f"aws_sagemaker: role {role.name!r}: SageMaker takes at most {limit} {what}, got {len(words)}")
    for w in words:
        if len(w) > _MAX_WORD:
            raise ValueError(
                f"aws_sagemaker: role {role.name!r}: {what} {w[:40]!r}... is longer than SageMaker's"
                f" {_MAX_WORD} characters; pass it in a file or an environment variable"
            )


def build_training_job(app: AppDef, opts: SageMakerOpts, name: str) -> TrainingJob:
    """The ``create_training_job`` request for ``app``, named ``name``.

    Raises:
        ValueError: the app asks for something SageMaker cannot do (the message says what)
    """
    if len(app.roles) != 1:
        raise ValueError(
            f"aws_sagemaker: a training job runs one role, app {app.name!r} has {len(app.roles)}"
            f" ({', '.join(r.name for r in app.roles)}); use aws_batch for several roles"
        )
    if opts.args_mode not in ARGS_MODES:
        raise ValueError(f"aws_sagemaker: args_mode must be one of {', '.join(ARGS_MODES)}, got {opts.args_mode!r}")
    if bool(opts.subnets) != bool(opts.security_group_ids):
        raise ValueError("aws_sagemaker: a VPC needs both -cfg subnets=... and security_group_ids=...")
    if not 0 <= app.roles[0].max_retries <= _MAX_RETRIES:
        raise ValueError(f"aws_sagemaker: max_retries must be at most {_MAX_RETRIES}, got {app.roles[0].max_retries}")
    split_s3_uri(opts.output_path)
    values = macros.Values(
        img_root="",
        app_id=name,
        replica_id="0" if app.roles[0].num_replicas == 1 else _REPLICA_TOKEN,
        rank0_env=RANK0_ENV,
    )
    role = values.apply(app.roles[0])
    if not role.image:
        raise ValueError(f"aws_sagemaker: role {role.name!r} has no image; set Role(image='repo/image:tag')")
    if any(_REPLICA_TOKEN in w for w in [role.entrypoint, *role.args, *role.env.values()]):
        raise ValueError(
            f"aws_sagemaker: role {role.name!r} uses ${{replica_id}}, but SageMaker starts identical"
            " containers; read the host name (algo-N) from /opt/ml/input/config/resourceconfig.json instead"
        )

    source_uri = None
    if opts.code_location and role.workspace is not None:
        split_s3_uri(opts.code_location)
        source_uri = f"{opts.code_location.rstrip('/')}/{name}/source.tar.gz"
    env = {**role.env, "TORCHX_ROLE_IDX": "0", "TORCHX_ROLE_NAME": role.name, RANK0_ENV: "algo-1"}
    if role.num_replicas == 1:
        env["TORCHX_REPLICA_IDX"] = "0"
    if source_uri:
        env[SOURCE_ENV] = source_uri
    check_env(role, list(env), "aws_sagemaker")
    for key, value in env.items():
        if len(value) > _MAX_ENV_VALUE:
            raise ValueError(
                f"aws_sagemaker: role {role.name!r}: environment variable {key} is longer than"
                f" SageMaker's {_MAX_ENV_VALUE} characters"
            )

    algorithm: dict[str, Any] = {"TrainingImage": role.image, "TrainingInputMode": "File"}
    hyperparameters = dict(opts.hyperparameters or {})
    if opts.args_mode == "command":
        _check_words(role, [role.entrypoint], "entrypoint", 1)
        _check_words(role, role.args, "arguments", _MAX_ARGS)
        algorithm["ContainerEntrypoint"] = [role.entrypoint]
        if role.args:
            algorithm["ContainerArguments"] = list(role.args)
        if source_uri:
            hyperparameters["sagemaker_submit_directory"] = source_uri
    else:
        hyperparameters.update(args_to_hyperparameters(role.args))
        hyperparameters["sagemaker_program"] = role.entrypoint
        if source_uri:
            hyperparameters["sagemaker_submit_directory"] = source_uri
        hyperparameters = {k: json.dumps(v) for k, v in hyperparameters.items()}

    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": opts.role_arn,
        "AlgorithmSpecification": algorithm,
        "OutputDataConfig": {"S3OutputPath": opts.output_path},
        "ResourceConfig": {
            "InstanceType": _instance_type(role, opts),
            "InstanceCount": role.num_replicas,
            "VolumeSizeInGB": opts.volume_size,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": opts.max_run},
        "Environment": env,
        "Tags": [{"Key": k, "Value": v} for k, v in job_tags(app, opts.user).items()],
    }
    if hyperparameters:
        request["HyperParameters"] = hyperparameters
    if role.max_retries:
        request["RetryStrategy"] = {"MaximumRetryAttempts": role.max_retries}
    if opts.subnets:
        request["VpcConfig"] = {"Subnets": list(opts.subnets), "SecurityGroupIds": list(opts.security_group_ids or [])}
    return TrainingJob(name=name, request=request, source=role.workspace if source_uri else None, source_uri=source_uri)
