"""boto3 client settings, AWS errors as one clear line, and requests checked against botocore's
service models (botocore Stubber: nothing leaves the process)."""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import boto3
import pytest
from botocore.stub import ANY, Stubber
from torchx import specs
from torchx.specs.runopts import runopts
from torchx.workspace.api import WorkspaceMixin
from torchx_sched_aws._aws import AWSError, Clients
from torchx_sched_aws.batch import AWSBatchScheduler
from torchx_sched_aws.batch import create_scheduler as create_batch
from torchx_sched_aws.sagemaker import create_scheduler as create_sagemaker

QUEUE = {
    "jobQueueName": "q",
    "jobQueueArn": "arn:aws:batch:us-east-1:1:job-queue/q",
    "state": "ENABLED",
    "status": "VALID",
    "priority": 1,
    "computeEnvironmentOrder": [],
}


def offline_client(service: str) -> Any:
    return boto3.client(
        service,
        region_name="us-east-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
        endpoint_url="http://127.0.0.1:9",  # never reached: the Stubber answers
    )


def no_aws_env(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_MAX_ATTEMPTS",
        "AWS_RETRY_MODE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def echo_app(**kw: Any) -> specs.AppDef:
    r = specs.Role(
        "echo", image="busybox", entrypoint="echo", args=["hi"], resource=specs.resource(cpu=1, memMB=128), **kw
    )
    return specs.AppDef("echo", roles=[r])


def test_clients_retry_adaptively_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    no_aws_env(monkeypatch, AWS_DEFAULT_REGION="eu-west-1")
    client = Clients()("batch")
    assert client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 5}
    assert client.meta.region_name == "eu-west-1"
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "9")
    assert Clients()("batch").meta.config.retries == {"mode": "standard", "total_max_attempts": 9}


def test_schedule_sends_model_valid_requests() -> None:
    batch = offline_client("batch")
    sched = create_batch("test", clients={"batch": batch})
    app = echo_app(
        num_replicas=2, mounts=specs.parse_mounts(["type=bind,src=/d,dst=/d", "type=volume,src=fs-1,dst=/e"])
    )
    info = sched.submit_dryrun(app, {"queue": "q", "share_id": "s", "priority": 3})
    req = info.request
    arn = f"arn:aws:batch:us-east-1:1:job-definition/{req.name}:1"
    with Stubber(batch) as stub:
        stub.add_response("describe_job_queues", {"jobQueues": [QUEUE]}, {"jobQueues": ["q"]})
        stub.add_response(
            "register_job_definition",
            {"jobDefinitionName": req.name, "jobDefinitionArn": arn, "revision": 1},
            req.job_definition,
        )
        stub.add_response("submit_job", {"jobName": req.name, "jobId": "id-1"}, {**req.submit, "jobDefinition": arn})
        assert sched.schedule(info) == f"q:{req.name}"
        stub.assert_no_pending_responses()


def test_unknown_queue_names_the_existing_ones() -> None:
    batch = offline_client("batch")
    sched = create_batch("test", clients={"batch": batch})
    info = sched.submit_dryrun(echo_app(), {"queue": "nope"})
    with Stubber(batch) as stub:
        stub.add_response("describe_job_queues", {"jobQueues": []}, {"jobQueues": ["nope"]})
        stub.add_response("describe_job_queues", {"jobQueues": [QUEUE]}, {})
        with pytest.raises(AWSError, match=r"job queue 'nope' does not exist in region us-east-1; .*existing: q\)$"):
            sched.schedule(info)


def test_throttling_and_rejection_are_one_line_and_clean_up() -> None:
    batch = offline_client("batch")
    sched = create_batch("test", clients={"batch": batch})
    info = sched.submit_dryrun(echo_app(), {"queue": "q"})
    arn = "arn:aws:batch:us-east-1:1:job-definition/x:1"
    with Stubber(batch) as stub:
        stub.add_response("describe_job_queues", {"jobQueues": [QUEUE]})
        stub.add_client_error("register_job_definition", "ThrottlingException", "Rate exceeded", 400)
        with pytest.raises(AWSError, match="throttled the request .*adaptive mode") as e:
            sched.schedule(info)
        assert "\n" not in str(e.value)

        stub.add_response("describe_job_queues", {"jobQueues": [QUEUE]})
        stub.add_response("register_job_definition", {"jobDefinitionName": "x", "jobDefinitionArn": arn, "revision": 1})
        stub.add_client_error("submit_job", "ClientException", "Container overrides\nare invalid", 400)
        stub.add_response("deregister_job_definition", {}, {"jobDefinition": arn})
        with pytest.raises(
            AWSError, match=r"submitting job .*: AWS rejected the request: Container overrides; are invalid$"
        ):
            sched.schedule(info)
        stub.assert_no_pending_responses()


def test_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    no_aws_env(monkeypatch, AWS_DEFAULT_REGION="us-east-1")
    with pytest.raises(AWSError, match="no AWS credentials found; configure them") as e:
        create_batch("test").list({"queue": "q"})
    assert "\n" not in str(e.value)


def test_no_region(monkeypatch: pytest.MonkeyPatch) -> None:
    no_aws_env(monkeypatch, AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s")
    with pytest.raises(AWSError, match="no AWS region configured; set AWS_DEFAULT_REGION"):
        create_sagemaker("test").list()


def test_unreachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    no_aws_env(
        monkeypatch,
        AWS_ACCESS_KEY_ID="k",
        AWS_SECRET_ACCESS_KEY="s",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ENDPOINT_URL=url,
    )
    t0 = time.monotonic()
    with pytest.raises(AWSError, match=f"cannot reach the AWS endpoint {url}; check AWS_ENDPOINT_URL"):
        create_sagemaker("test").describe("job")
    assert time.monotonic() - t0 < 10  # default retries (5 attempts) back off briefly


def test_without_docker_workspace_plugin_a_workspace_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchx.workspace.api
    from torchx_sched_aws import batch

    def missing(name: str) -> type:
        raise LookupError(f"no workspace plugin {name!r} is installed (pip install 'torchx-sched-local[docker]')")

    monkeypatch.setattr(torchx.workspace.api, "get_workspace_mixin", missing)
    batch._scheduler_class.cache_clear()
    try:
        sched = create_batch("test")
        assert isinstance(sched, AWSBatchScheduler)
        app = echo_app(workspace=specs.Workspace({"/src": ""}))
        with pytest.raises(
            RuntimeError, match=r"pip install '\S*torchx-sched-local\[docker\]', or .*--workspace ''"
        ) as e:
            sched.build_workspaces(app.roles, {"queue": "q"})
        assert "\n" not in str(e.value)
        assert not sched.submit_dryrun(echo_app(), {"queue": "q"}).request.images_to_push
    finally:
        batch._scheduler_class.cache_clear()


class FakeDockerWorkspace(WorkspaceMixin[dict]):
    """Stands in for torchx-sched-local's docker workspace: "builds" sha256:built, pushes to image_repo."""

    pushed: ClassVar[list[dict]] = []

    def workspace_opts(self) -> runopts:
        opts = runopts()
        opts.add("quiet", type_=bool, default=False, help="quiet build")
        return opts

    def build_workspace_and_update_role(self, role: specs.Role, workspace: str, cfg: Mapping[str, Any]) -> None:
        role.image = "sha256:built"

    def dryrun_push_images(self, app: specs.AppDef, cfg: Mapping[str, Any]) -> dict:
        out = {}
        for role in app.roles:
            if role.image == "sha256:built":
                role.image = f"{cfg['image_repo']}:built"
                out["sha256:built"] = role.image
        return out

    def push_images(self, images_to_push: dict) -> None:
        self.pushed.append(images_to_push)


def test_docker_workspace_plugin_is_mixed_in(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchx.workspace.api
    from torchx_sched_aws import batch

    monkeypatch.setattr(torchx.workspace.api, "get_workspace_mixin", lambda name: FakeDockerWorkspace)
    batch._scheduler_class.cache_clear()
    try:
        client = offline_client("batch")
        sched = create_batch("test", clients={"batch": client})
        assert isinstance(sched, FakeDockerWorkspace)
        assert "quiet" in sched.run_opts()
        app = echo_app(workspace=specs.Workspace({"/src": ""}))
        cfg = sched.run_opts().resolve({"queue": "q", "image_repo": "repo/x"})
        sched.build_workspaces(app.roles, cfg)
        info = sched.submit_dryrun(app, cfg)
        assert info.request.job_definition["containerProperties"]["image"] == "repo/x:built"
        with Stubber(client) as stub:
            stub.add_response("describe_job_queues", {"jobQueues": [QUEUE]})
            stub.add_response(
                "register_job_definition", {"jobDefinitionName": "x", "jobDefinitionArn": "a", "revision": 1}
            )
            stub.add_response(
                "submit_job", {"jobName": "x", "jobId": "i"}, {**info.request.submit, "jobDefinition": ANY}
            )
            sched.schedule(info)
        assert FakeDockerWorkspace.pushed == [{"sha256:built": "repo/x:built"}]
    finally:
        batch._scheduler_class.cache_clear()
