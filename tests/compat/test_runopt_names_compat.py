"""Run options spelled as TorchX 0.7's ``lsf``, ``ray`` and ``aws_sagemaker`` schedulers spell
them: a ``.torchxconfig`` or ``-cfg`` written for TorchX works unchanged where the option means
something for our scheduler, and is refused in one line (saying what to do) where it does not.

Pure request building (dry runs): no backend is contacted.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from torchx import specs
from torchx.runner import get_runner
from torchx.specs.runopts import InvalidRunConfigException


def app(image: str = "/tmp", replicas: int = 1) -> specs.AppDef:
    role = specs.Role(
        "trainer", image=image, entrypoint="python", args=["train.py", "--lr", "0.1"],
        num_replicas=replicas, resource=specs.Resource(cpu=1, gpu=0, memMB=512),
    )  # fmt: skip
    return specs.AppDef("names", roles=[role])


def dryrun_request(scheduler: str, cfg_str: str, application: specs.AppDef | None = None) -> object:
    """The native request of a dry run with ``-cfg cfg_str`` (parsed as the CLI parses it)."""
    with get_runner() as runner:
        opts = runner.scheduler_run_opts(scheduler)
        cfg = opts.cfg_from_str(cfg_str)
        return runner.dryrun(application or app(), scheduler, cfg=cfg).request


# ---------------------------------------------------------------- lsf


def test_lsf_upstream_names_reach_bsub(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_lsf")
    jobdir = tmp_path / "jobs"
    req = dryrun_request("lsf", f"lsf_queue=normal,jobdir={jobdir},host_network=true")
    args = req.args  # type: ignore[attr-defined]
    assert args[args.index("-q") + 1] == "normal"
    assert req.workdir == str(jobdir)  # type: ignore[attr-defined]


def test_lsf_upstream_torchxconfig_works_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torchx_sched_lsf")
    (tmp_path / ".torchxconfig").write_text(
        textwrap.dedent(f"""\
            [lsf]
            lsf_queue = short
            jobdir = {tmp_path / "out"}
            """)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    with get_runner() as runner:
        req = runner.dryrun(app(), "lsf").request
    assert req.args[req.args.index("-q") + 1] == "short"  # type: ignore[attr-defined]
    assert req.workdir == str(tmp_path / "out")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("cfg", "says"),
    [
        ("container_workdir=/workspace", "job_dir"),
        ("shm_size=2g", "/dev/shm"),
        ("host_network=false", "host's network"),
    ],
)
def test_lsf_docker_options_are_refused_clearly(cfg: str, says: str) -> None:
    pytest.importorskip("torchx_sched_lsf")
    with pytest.raises(InvalidRunConfigException, match="not supported") as e:
        dryrun_request("lsf", cfg)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_lsf_runopts_lists_upstream_names() -> None:
    pytest.importorskip("torchx_sched_lsf")
    with get_runner() as runner:
        text = repr(runner.scheduler_run_opts("lsf"))
    for name in ("lsf_queue", "jobdir", "container_workdir", "host_network", "shm_size"):
        assert name in text


# ---------------------------------------------------------------- ray


def test_ray_upstream_names_reach_the_job_submission(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_ray")
    workdir = tmp_path / "src"
    workdir.mkdir()
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("numpy\n")
    job = dryrun_request("ray", f"dashboard_address=10.1.2.3:8265,working_dir={workdir},requirements={reqs}")
    assert job.address == "http://10.1.2.3:8265"  # type: ignore[attr-defined]
    assert job.app_id.startswith("10.1.2.3:8265-")  # type: ignore[attr-defined]
    assert job.runtime_env["working_dir"] == str(workdir)  # type: ignore[attr-defined]
    assert job.runtime_env["pip"] == ["numpy"]  # type: ignore[attr-defined]


def test_ray_cluster_config_file_is_refused_clearly(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_ray")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("cluster_name: demo\n")
    with pytest.raises(InvalidRunConfigException, match="running cluster's Jobs API") as e:
        dryrun_request("ray", f"cluster_config_file={cluster},cluster_name=demo")
    assert "address=" in str(e.value) and "\n" not in str(e.value)


def test_ray_cluster_name_alone_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("torchx_sched_ray")
    job = dryrun_request("ray", "cluster_name=demo,dashboard_address=127.0.0.1:8265")
    assert job.address == "http://127.0.0.1:8265"  # type: ignore[attr-defined]
    assert any("'cluster_name' (demo) is ignored" in r.getMessage() for r in caplog.records)


def test_ray_runopts_lists_upstream_names() -> None:
    pytest.importorskip("torchx_sched_ray")
    with get_runner() as runner:
        text = repr(runner.scheduler_run_opts("ray"))
    for name in ("cluster_config_file", "cluster_name", "dashboard_address", "working_dir", "requirements"):
        assert name in text


# ---------------------------------------------------------------- aws_sagemaker

ROLE_ARN = "arn:aws:iam::123456789012:role/SageMakerRole"
#: TorchX 0.7's aws_sagemaker run options (its runopts, in its order)
SAGEMAKER_NAMES = [
    "role",
    "instance_count",
    "instance_type",
    "user",
    "keep_alive_period_in_seconds",
    "volume_size",
    "volume_kms_key",
    "max_run",
    "input_mode",
    "output_path",
    "output_kms_key",
    "base_job_name",
    "tags",
    "subnets",
    "security_group_ids",
    "model_uri",
    "model_channel_name",
    "metric_definitions",
    "encrypt_inter_container_traffic",
    "use_spot_instances",
    "max_wait",
    "checkpoint_s3_uri",
    "checkpoint_local_path",
    "debugger_hook_config",
    "enable_sagemaker_metrics",
    "enable_network_isolation",
    "disable_profiler",
    "environment",
    "max_retry_attempts",
    "source_dir",
    "git_config",
    "hyperparameters",
    "container_log_level",
    "code_location",
    "dependencies",
    "training_repository_access_mode",
    "training_repository_credentials_provider_arn",
    "disable_output_compression",
    "enable_infra_check",
]


def sagemaker_app(replicas: int = 2) -> specs.AppDef:
    return app(image="123456789012.dkr.ecr.us-west-2.amazonaws.com/train:1", replicas=replicas)


def assert_valid_create_training_job(request: dict[str, object]) -> None:
    """``request`` passes botocore's own check of CreateTrainingJob's parameters."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(request, model.operation_model("CreateTrainingJob").input_shape)
    assert not report.has_errors(), report.generate_report()


def test_sagemaker_runopts_has_every_upstream_name() -> None:
    pytest.importorskip("torchx_sched_aws")
    with get_runner() as runner:
        opts = runner.scheduler_run_opts("aws_sagemaker")
    assert [n for n in SAGEMAKER_NAMES if opts.get(n) is None] == []


def test_sagemaker_upstream_options_reach_create_training_job(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_aws")
    cfg = (
        f"role={ROLE_ARN},instance_count=2,instance_type=ml.g5.xlarge,user=alice,"
        "keep_alive_period_in_seconds=600,volume_size=100,volume_kms_key=vkey,max_run=7200,input_mode=FastFile,"
        "output_path=s3://bucket/out,output_kms_key=okey,base_job_name=nightly,tags=team:ml,"
        "subnets=subnet-1;subnet-2,security_group_ids=sg-1,model_uri=s3://bucket/model,model_channel_name=pretrained,"
        "metric_definitions=loss:loss=([0-9.]+),encrypt_inter_container_traffic=true,use_spot_instances=true,"
        "max_wait=9000,checkpoint_s3_uri=s3://bucket/ckpt,checkpoint_local_path=/opt/ml/checkpoints,"
        "debugger_hook_config=true,enable_sagemaker_metrics=true,enable_network_isolation=false,"
        "disable_profiler=true,environment=STAGE:prod,max_retry_attempts=3,source_dir=s3://bucket/code/source.tar.gz,"
        "hyperparameters=epochs:3,container_log_level=20,training_repository_access_mode=Platform,"
        "disable_output_compression=true,enable_infra_check=true"
    )
    job = dryrun_request("aws_sagemaker", cfg, sagemaker_app()).request  # type: ignore[attr-defined]
    assert_valid_create_training_job(job)
    assert job["TrainingJobName"].startswith("nightly-")
    assert job["RoleArn"] == ROLE_ARN
    assert job["ResourceConfig"] == {
        "InstanceType": "ml.g5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100,
        "KeepAlivePeriodInSeconds": 600, "VolumeKmsKeyId": "vkey",
    }  # fmt: skip
    assert job["StoppingCondition"] == {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 9000}
    assert job["OutputDataConfig"] == {"S3OutputPath": "s3://bucket/out", "KmsKeyId": "okey", "CompressionType": "NONE"}
    algo = job["AlgorithmSpecification"]
    assert algo["TrainingInputMode"] == "FastFile"
    assert algo["MetricDefinitions"] == [{"Name": "loss", "Regex": "loss=([0-9.]+)"}]
    assert algo["EnableSageMakerMetricsTimeSeries"] is True
    assert algo["TrainingImageConfig"] == {"TrainingRepositoryAccessMode": "Platform"}
    assert {"Key": "team", "Value": "ml"} in job["Tags"]
    assert {"Key": "torchx.pytorch.org/user", "Value": "alice"} in job["Tags"]
    assert job["VpcConfig"] == {"Subnets": ["subnet-1", "subnet-2"], "SecurityGroupIds": ["sg-1"]}
    assert job["InputDataConfig"][0]["ChannelName"] == "pretrained"
    assert job["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://bucket/model"
    assert job["EnableInterContainerTrafficEncryption"] is True
    assert job["EnableManagedSpotTraining"] is True
    assert job["EnableNetworkIsolation"] is False
    assert job["CheckpointConfig"] == {"S3Uri": "s3://bucket/ckpt", "LocalPath": "/opt/ml/checkpoints"}
    assert job["DebugHookConfig"] == {"S3OutputPath": "s3://bucket/out"}
    assert job["ProfilerConfig"] == {"DisableProfiler": True}
    assert job["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert job["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert job["Environment"]["STAGE"] == "prod"
    assert job["HyperParameters"]["epochs"] == "3"
    assert job["HyperParameters"]["sagemaker_container_log_level"] == "20"
    assert job["HyperParameters"]["sagemaker_submit_directory"] == "s3://bucket/code/source.tar.gz"


def test_sagemaker_source_dir_is_the_uploaded_code(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_aws")
    (tmp_path / "train.py").write_text("print('hi')\n")
    cfg = f"role={ROLE_ARN},output_path=s3://b/out,instance_type=ml.m5.xlarge,code_location=s3://b/code,source_dir={tmp_path}"
    with get_runner() as runner:
        info = runner.dryrun(
            sagemaker_app(1), "aws_sagemaker", cfg=runner.scheduler_run_opts("aws_sagemaker").cfg_from_str(cfg)
        )
    job = info.request
    assert job.source is not None and str(tmp_path) in str(job.source)
    assert job.source_uri and job.source_uri.startswith("s3://b/code/")
    assert job.request["HyperParameters"]["sagemaker_submit_directory"] == job.source_uri
    assert_valid_create_training_job(job.request)


@pytest.mark.parametrize(
    ("cfg", "says"),
    [
        ("git_config=repo:https://example.com/r.git", "source_dir"),
        ("dependencies=/opt/lib", "source_dir"),
        ("instance_count=3", "num_replicas"),
        ("input_mode=Streaming", "File, Pipe, FastFile"),
    ],
)
def test_sagemaker_options_without_an_equivalent_are_refused_clearly(cfg: str, says: str) -> None:
    pytest.importorskip("torchx_sched_aws")
    base = f"role={ROLE_ARN},output_path=s3://b/out,instance_type=ml.m5.xlarge,"
    with pytest.raises(ValueError, match="aws_sagemaker") as e:
        dryrun_request("aws_sagemaker", base + cfg, sagemaker_app())
    assert says in str(e.value) and "\n" not in str(e.value)
