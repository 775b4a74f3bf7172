"""aws_sagemaker request building (no AWS calls)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from torchx import specs
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_aws._source import write_tarball
from torchx_sched_aws.sagemaker import training_state
from torchx_sched_aws.sagemaker_request import (
    SageMakerOpts,
    args_to_hyperparameters,
    build_training_job,
    split_s3_uri,
    training_job_name,
)

ROLE_ARN = "arn:aws:iam::123456789012:role/SageMakerRole"


def opts(**kw: object) -> SageMakerOpts:
    return SageMakerOpts.from_cfg({"role": ROLE_ARN, "output_path": "s3://bucket/out", "user": "bob", **kw})


def role(**kw: object) -> specs.Role:
    base: dict = {
        "name": "trainer",
        "image": "img:1",
        "entrypoint": "python",
        "args": ["train.py", "--lr", "0.1"],
        "resource": specs.resource(h="aws_p3.8xlarge"),
    }
    base.update(kw)
    return specs.Role(**base)


def test_command_mode_request() -> None:
    app = specs.AppDef("train", roles=[role(num_replicas=2, max_retries=3, env={"FOO": specs.macros.app_id})])
    job = build_training_job(app, opts(hyperparameters={"a": "1"}), "train-1")
    r = job.request
    assert r["TrainingJobName"] == "train-1"
    assert r["RoleArn"] == ROLE_ARN
    assert r["AlgorithmSpecification"] == {
        "TrainingImage": "img:1",
        "TrainingInputMode": "File",
        "ContainerEntrypoint": ["python"],
        "ContainerArguments": ["train.py", "--lr", "0.1"],
    }
    assert r["ResourceConfig"] == {"InstanceType": "ml.p3.8xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert r["OutputDataConfig"] == {"S3OutputPath": "s3://bucket/out"}
    assert r["RetryStrategy"] == {"MaximumRetryAttempts": 3}
    assert r["HyperParameters"] == {"a": "1"}
    assert r["Environment"] == {
        "FOO": "train-1",
        "TORCHX_ROLE_IDX": "0",
        "TORCHX_ROLE_NAME": "trainer",
        "TORCHX_RANK0_HOST": "algo-1",
    }
    tags = {t["Key"]: t["Value"] for t in r["Tags"]}
    assert tags["torchx.pytorch.org/user"] == "bob"
    assert tags["torchx.pytorch.org/app-name"] == "train"
    assert job.source is None
    assert "VpcConfig" not in r


def test_hyperparameters_mode_and_source_upload() -> None:
    ws = specs.Workspace({"/src/proj": ""})
    app = specs.AppDef("t", roles=[role(args=["--lr", "0.1", "--epochs=3", "--fast"], workspace=ws)])
    job = build_training_job(
        app, opts(args_mode="hyperparameters", code_location="s3://b/code/", instance_type="m5.xlarge"), "t-1"
    )
    r = job.request
    uri = "s3://b/code/t-1/source.tar.gz"
    assert "ContainerEntrypoint" not in r["AlgorithmSpecification"]
    assert {k: json.loads(v) for k, v in r["HyperParameters"].items()} == {
        "lr": "0.1",
        "epochs": "3",
        "fast": "true",
        "sagemaker_program": "python",
        "sagemaker_submit_directory": uri,
    }
    assert r["Environment"]["TORCHX_SOURCE_S3_URI"] == uri
    assert r["Environment"]["TORCHX_REPLICA_IDX"] == "0"
    assert r["ResourceConfig"]["InstanceType"] == "ml.m5.xlarge"
    assert job.source is ws
    assert job.source_uri == uri
    assert json.loads(str(job))["upload_workspace"] == {"workspace": "/src/proj", "to": uri}


def test_vpc() -> None:
    r = build_training_job(
        specs.AppDef("t", roles=[role()]), opts(subnets=["s-1"], security_group_ids=["sg-1", "sg-2"]), "t-1"
    ).request
    assert r["VpcConfig"] == {"Subnets": ["s-1"], "SecurityGroupIds": ["sg-1", "sg-2"]}


@pytest.mark.parametrize(
    "roles, cfg, message",
    [
        ([role(), role(name="ps")], {}, "a training job runs one role"),
        ([role(resource=specs.resource(cpu=1))], {}, "no instance type"),
        ([role(num_replicas=2, args=[specs.macros.replica_id])], {}, "uses ${replica_id}"),
        ([role()], {"args_mode": "yaml"}, "args_mode must be one of"),
        ([role(args=["positional"])], {"args_mode": "hyperparameters"}, "needs --key value"),
        ([role(args=["x" * 300])], {}, "longer than SageMaker's 256"),
        ([role(env={"A-B": "1"})], {}, "'A-B'"),
        ([role(max_retries=31)], {}, "at most 30"),
        ([role()], {"output_path": "bucket/out"}, "is not an S3 URI"),
        ([role()], {"subnets": ["s-1"]}, "both"),
        ([role(image="")], {}, "has no image"),
    ],
)
def test_bad_input_gets_one_clear_error(roles: list, cfg: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        build_training_job(specs.AppDef("t", roles=roles), opts(**cfg), "t-1")
    assert "\n" not in str(e.value)


def test_names_and_uris() -> None:
    for name in ["train", "My_App.v2", "x" * 200]:
        jn = training_job_name(specs.AppDef(name, roles=[role()]))
        assert re.fullmatch(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", jn), jn
    assert split_s3_uri("s3://b/k/x.tar.gz") == ("b", "k/x.tar.gz")
    assert split_s3_uri("s3://b") == ("b", "")
    assert args_to_hyperparameters(["--a", "1", "--b=2", "--c"]) == {"a": "1", "b": "2", "c": "true"}


def test_states() -> None:
    s = specs.AppState
    assert training_state("InProgress", "Starting") == s.PENDING
    assert training_state("InProgress", "Training") == s.RUNNING
    assert training_state("Completed", "Completed") == s.SUCCEEDED
    assert training_state("Failed") == s.FAILED
    assert training_state("Stopping") == s.CANCELLED
    assert training_state("Stopped") == s.CANCELLED


def test_tarball_keeps_destinations_and_honours_torchxignore(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "train.py").write_text("print('hi')\n")
    (proj / "pkg" / "m.py").write_text("x = 1\n")
    (proj / "secret.txt").write_text("no")
    (proj / ".torchxignore").write_text("secret.txt\n")
    extra = tmp_path / "cfg.yaml"
    extra.write_text("a: 1\n")
    buf = io.BytesIO()
    n = write_tarball(specs.Workspace({str(proj): "", str(extra): "conf/cfg.yaml"}), buf)
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:gz") as tar:
        names = sorted(tar.getnames())
        assert tar.extractfile("train.py").read() == b"print('hi')\n"  # type: ignore[union-attr]
    assert names == [".torchxignore", "conf/cfg.yaml", "pkg/m.py", "train.py"]
    assert n == 4
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_tarball(specs.Workspace({str(tmp_path / "nope"): ""}), io.BytesIO())


def test_macro_values_are_data_in_the_training_job(tmp_path: Path) -> None:
    marker = tmp_path / "pw"  # relative below: SageMaker takes arguments of up to 256 characters
    name = hostile_value(marker.name)  # the app_id macro (a real job name is [a-zA-Z0-9-])
    probe = macro_probe("img:1", marker.name, resource=specs.resource(h="aws_p3.8xlarge"))
    r = build_training_job(specs.AppDef("m", [probe]), opts(args_mode="command"), name).request
    algo = r["AlgorithmSpecification"]
    argv = [*algo["ContainerEntrypoint"], *algo["ContainerArguments"]]
    out = subprocess.run(argv, env=r["Environment"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout == macro_probe_output("", name, 0)
    assert not marker.exists()
