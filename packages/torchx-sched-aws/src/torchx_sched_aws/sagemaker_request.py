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
  ``TORCHX_SOURCE_S3_URI`` and hyperparameter ``sagemaker_submit_directory``; ``source_dir``
  ships another directory instead (or names code already in S3).
* TorchX 0.7's ``sagemaker.estimator`` options (``keep_alive_period_in_seconds``,
  ``use_spot_instances``, ``checkpoint_s3_uri`` ...) become the ``CreateTrainingJob`` fields the
  SDK would send; ``git_config`` and ``dependencies`` (work the SDK does on this machine) are
  refused with what to do instead.
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
_INPUT_MODES = ("File", "Pipe", "FastFile")
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
    # TorchX 0.7's sagemaker.estimator options (the SDK's names), as CreateTrainingJob fields
    instance_count: int | None = None
    """number of instances; must equal the role's num_replicas (one container per instance)"""
    keep_alive_period_in_seconds: int | None = None
    """seconds to keep the instances in a warm pool for later jobs (ResourceConfig.KeepAlivePeriodInSeconds)"""
    volume_kms_key: str | None = None
    """KMS key for the instances' storage volumes (ResourceConfig.VolumeKmsKeyId)"""
    input_mode: str | None = None
    """File, Pipe or FastFile (AlgorithmSpecification.TrainingInputMode; default File)"""
    output_kms_key: str | None = None
    """KMS key for the job's output (OutputDataConfig.KmsKeyId)"""
    base_job_name: str | None = None
    """prefix of the training job name (default: the app's name)"""
    tags: dict[str, str] | None = None
    """extra tags of the job (key:value;key2:value2)"""
    model_uri: str | None = None
    """S3 URI of a pre-trained model, given to the job as the model_channel_name input channel"""
    model_channel_name: str | None = None
    """input channel of model_uri (default: model)"""
    metric_definitions: dict[str, str] | None = None
    """metrics read from the job's log: name:regex;name2:regex2 (AlgorithmSpecification.MetricDefinitions)"""
    encrypt_inter_container_traffic: bool | None = None
    """encrypt the traffic between the job's instances"""
    use_spot_instances: bool | None = None
    """run on managed spot instances (set max_wait too)"""
    max_wait: int | None = None
    """longest the job may wait for spot instances and run, seconds (StoppingCondition.MaxWaitTimeInSeconds)"""
    checkpoint_s3_uri: str | None = None
    """S3 URI the job's checkpoints are synced to (CheckpointConfig.S3Uri)"""
    checkpoint_local_path: str | None = None
    """directory in the container the checkpoints are written to (CheckpointConfig.LocalPath)"""
    debugger_hook_config: bool | None = None
    """true: SageMaker Debugger writes its data under output_path (DebugHookConfig)"""
    enable_sagemaker_metrics: bool | None = None
    """SageMaker Metrics time series (AlgorithmSpecification.EnableSageMakerMetricsTimeSeries)"""
    enable_network_isolation: bool | None = None
    """run the containers without network access"""
    disable_profiler: bool | None = None
    """turn SageMaker Debugger's profiler off (ProfilerConfig.DisableProfiler)"""
    environment: dict[str, str] | None = None
    """extra environment variables of the job (the role's env wins)"""
    max_retry_attempts: int | None = None
    """times SageMaker restarts a failed job, 1-30 (RetryStrategy; default: the role's max_retries)"""
    source_dir: str | None = None
    """directory (or s3:// URI of a source.tar.gz) to ship as the job's code instead of the workspace; a directory needs code_location"""
    git_config: dict[str, str] | None = None
    """TorchX 0.7's git source for the SDK to clone: not supported (clone it and pass source_dir)"""
    container_log_level: int | None = None
    """log level of the SageMaker framework containers (hyperparameter sagemaker_container_log_level)"""
    dependencies: list[str] | None = None
    """TorchX 0.7's extra directories for the SDK to add to the code: not supported (put them in source_dir)"""
    training_repository_access_mode: str | None = None
    """Platform or Vpc: how SageMaker reaches the image's registry (TrainingImageConfig)"""
    training_repository_credentials_provider_arn: str | None = None
    """Lambda function that gives the credentials of a private registry (TrainingImageConfig)"""
    disable_output_compression: bool | None = None
    """upload the model output without compressing it (OutputDataConfig.CompressionType NONE)"""
    enable_infra_check: bool | None = None
    """run SageMaker's infrastructure health checks first (InfraCheckConfig)"""


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


def training_job_name(app: AppDef, base: str | None = None) -> str:
    """A unique training job name for ``app`` (letters, digits, ``-``; at most 63), made from
    ``base`` (the ``base_job_name`` option) or the app's name."""
    return make_unique(sanitize_name(base or app.name, max_length=50, allowed=r"a-z0-9\-"))


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
    _check_sdk_options(app.roles[0], opts)
    retries = opts.max_retry_attempts if opts.max_retry_attempts is not None else app.roles[0].max_retries
    if not 0 <= retries <= _MAX_RETRIES:
        raise ValueError(f"aws_sagemaker: max_retries must be at most {_MAX_RETRIES}, got {retries}")
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

    source, submit_uri = _source(role, opts)
    source_uri = None
    if opts.code_location and source is not None:
        split_s3_uri(opts.code_location)
        source_uri = f"{opts.code_location.rstrip('/')}/{name}/source.tar.gz"
    submit_uri = source_uri or submit_uri
    env = {
        **(opts.environment or {}),
        **role.env,
        "TORCHX_ROLE_IDX": "0",
        "TORCHX_ROLE_NAME": role.name,
        RANK0_ENV: "algo-1",
    }
    if role.num_replicas == 1:
        env["TORCHX_REPLICA_IDX"] = "0"
    if submit_uri:
        env[SOURCE_ENV] = submit_uri
    check_env(role, list(env), "aws_sagemaker")
    for key, value in env.items():
        if len(value) > _MAX_ENV_VALUE:
            raise ValueError(
                f"aws_sagemaker: role {role.name!r}: environment variable {key} is longer than"
                f" SageMaker's {_MAX_ENV_VALUE} characters"
            )

    algorithm: dict[str, Any] = {"TrainingImage": role.image, "TrainingInputMode": opts.input_mode or "File"}
    algorithm.update(_algorithm_extras(opts))
    hyperparameters = dict(opts.hyperparameters or {})
    if opts.container_log_level is not None:
        hyperparameters["sagemaker_container_log_level"] = str(opts.container_log_level)
    if opts.args_mode == "command":
        _check_words(role, [role.entrypoint], "entrypoint", 1)
        _check_words(role, role.args, "arguments", _MAX_ARGS)
        algorithm["ContainerEntrypoint"] = [role.entrypoint]
        if role.args:
            algorithm["ContainerArguments"] = list(role.args)
        if submit_uri:
            hyperparameters["sagemaker_submit_directory"] = submit_uri
    else:
        hyperparameters.update(args_to_hyperparameters(role.args))
        hyperparameters["sagemaker_program"] = role.entrypoint
        if submit_uri:
            hyperparameters["sagemaker_submit_directory"] = submit_uri
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
        "Tags": [{"Key": k, "Value": v} for k, v in {**(opts.tags or {}), **job_tags(app, opts.user)}.items()],
    }
    _add_sdk_fields(request, opts)
    if hyperparameters:
        request["HyperParameters"] = hyperparameters
    if retries:
        request["RetryStrategy"] = {"MaximumRetryAttempts": retries}
    if opts.subnets:
        request["VpcConfig"] = {"Subnets": list(opts.subnets), "SecurityGroupIds": list(opts.security_group_ids or [])}
    return TrainingJob(name=name, request=request, source=source if source_uri else None, source_uri=source_uri)


def _check_sdk_options(role: Role, opts: SageMakerOpts) -> None:
    """Refuses the SDK options this scheduler cannot honour (one line: what to do instead)."""
    if opts.git_config:
        raise ValueError(
            "aws_sagemaker: run option 'git_config' is not supported (no sagemaker SDK to clone the repository);"
            " clone it and pass its directory as -cfg source_dir=DIR (with code_location=s3://...)"
        )
    if opts.dependencies:
        raise ValueError(
            "aws_sagemaker: run option 'dependencies' is not supported; copy those directories into"
            " the workspace or source_dir, which is shipped whole"
        )
    if opts.instance_count is not None and opts.instance_count != role.num_replicas:
        raise ValueError(
            f"aws_sagemaker: run option 'instance_count' is {opts.instance_count} but role {role.name!r} has"
            f" {role.num_replicas} replica(s); SageMaker runs one replica per instance: set the role's"
            " num_replicas (e.g. -j NxM for dist.ddp) or leave instance_count out"
        )
    if opts.input_mode is not None and opts.input_mode not in _INPUT_MODES:
        raise ValueError(f"aws_sagemaker: input_mode must be one of {', '.join(_INPUT_MODES)}, got {opts.input_mode!r}")


def _source(role: Role, opts: SageMakerOpts) -> tuple[Workspace | None, str | None]:
    """(directory to upload, already uploaded ``s3://`` code) of the job: ``source_dir`` or the workspace."""
    if not opts.source_dir:
        return role.workspace, None
    if opts.source_dir.startswith("s3://"):
        split_s3_uri(opts.source_dir)
        return None, opts.source_dir
    if not opts.code_location:
        raise ValueError(
            "aws_sagemaker: source_dir is uploaded to code_location; pass -cfg code_location=s3://bucket/prefix"
        )
    return Workspace.from_str(opts.source_dir), None


def _algorithm_extras(opts: SageMakerOpts) -> dict[str, Any]:
    """The ``AlgorithmSpecification`` fields of the SDK options."""
    out: dict[str, Any] = {}
    if opts.metric_definitions:
        out["MetricDefinitions"] = [{"Name": k, "Regex": v} for k, v in opts.metric_definitions.items()]
    if opts.enable_sagemaker_metrics is not None:
        out["EnableSageMakerMetricsTimeSeries"] = opts.enable_sagemaker_metrics
    image_config: dict[str, Any] = {}
    if opts.training_repository_access_mode:
        image_config["TrainingRepositoryAccessMode"] = opts.training_repository_access_mode
    if opts.training_repository_credentials_provider_arn:
        image_config["TrainingRepositoryAuthConfig"] = {
            "TrainingRepositoryCredentialsProviderArn": opts.training_repository_credentials_provider_arn
        }
    if image_config:
        out["TrainingImageConfig"] = image_config
    return out


def _add_sdk_fields(request: dict[str, Any], opts: SageMakerOpts) -> None:
    """Adds the ``CreateTrainingJob`` fields of the SDK options that are set."""
    resources, output, stopping = request["ResourceConfig"], request["OutputDataConfig"], request["StoppingCondition"]
    if opts.keep_alive_period_in_seconds is not None:
        resources["KeepAlivePeriodInSeconds"] = opts.keep_alive_period_in_seconds
    if opts.volume_kms_key:
        resources["VolumeKmsKeyId"] = opts.volume_kms_key
    if opts.output_kms_key:
        output["KmsKeyId"] = opts.output_kms_key
    if opts.disable_output_compression:
        output["CompressionType"] = "NONE"
    if opts.max_wait is not None:
        stopping["MaxWaitTimeInSeconds"] = opts.max_wait
    if opts.use_spot_instances is not None:
        request["EnableManagedSpotTraining"] = opts.use_spot_instances
    if opts.encrypt_inter_container_traffic is not None:
        request["EnableInterContainerTrafficEncryption"] = opts.encrypt_inter_container_traffic
    if opts.enable_network_isolation is not None:
        request["EnableNetworkIsolation"] = opts.enable_network_isolation
    if opts.checkpoint_s3_uri:
        request["CheckpointConfig"] = {"S3Uri": opts.checkpoint_s3_uri}
        if opts.checkpoint_local_path:
            request["CheckpointConfig"]["LocalPath"] = opts.checkpoint_local_path
    elif opts.checkpoint_local_path:
        raise ValueError(
            "aws_sagemaker: checkpoint_local_path needs checkpoint_s3_uri=s3://... (where they are synced)"
        )
    if opts.debugger_hook_config:
        request["DebugHookConfig"] = {"S3OutputPath": opts.output_path}
    if opts.disable_profiler is not None:
        request["ProfilerConfig"] = {"DisableProfiler": opts.disable_profiler}
    if opts.enable_infra_check is not None:
        request["InfraCheckConfig"] = {"EnableInfraCheck": opts.enable_infra_check}
    if opts.model_uri:
        split_s3_uri(opts.model_uri)
        request["InputDataConfig"] = [
            {
                "ChannelName": opts.model_channel_name or "model",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": opts.model_uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "ContentType": "application/x-sagemaker-model",
                "InputMode": "File",
            }
        ]
