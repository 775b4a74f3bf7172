"""``controller=kubernetes`` with torchx-sched-k8s installed: the objects the controller asks
the API server for (pure request building; ``test_managed_k8s_controller_live.py`` runs them)
and an API server that cannot be reached, refused in one line before anything is recorded.

Here, not in torchx-managed: they need torchx-sched-k8s (its API client) and torchx-components
(``utils.sh``); the e2e session installs every package."""

from __future__ import annotations

import json
from typing import Any

import pytest
from torchx.specs.runopts import InvalidRunConfigException
from torchx.testing import run_cli
from torchx_managed.options import ManagedOptions

IMAGE = "registry.example/torchx:1"


class _Api:
    """What :func:`objects` reads of the API: where the server is."""

    def __init__(self, host: str) -> None:
        self.host = host


def _objects(host: str, root: str = "/shared/j", secret: bool = False, **cfg: Any) -> dict[str, dict[str, Any]]:
    from torchx_managed import k8s_controller

    opts = ManagedOptions(["kubernetes"], controller="kubernetes", controller_image=IMAGE, **cfg)
    objs = k8s_controller.objects(opts, root, "training", _Api(host), secret=secret)  # type: ignore[arg-type]
    return {o["kind"]: o for o in objs}


def test_the_deployment_runs_one_controller_pod_of_its_own_account() -> None:
    objs = _objects("https://k8s.example:6443")
    name = objs["Deployment"]["metadata"]["name"]
    assert name.startswith("torchx-controller-") and {o["metadata"]["name"] for o in objs.values()} == {name}
    spec = objs["Deployment"]["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == name and "hostNetwork" not in pod
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == [
        "python3",
        "-m",
        "torchx_managed.controller",
        "/shared/j",
        "--lease",
        f"training/{name}",
    ]
    assert pod["volumes"] == [{"name": "mount-0", "hostPath": {"path": "/shared/j", "type": "Directory"}}]
    assert container["volumeMounts"] == [{"name": "mount-0", "mountPath": "/shared/j"}]
    assert container["resources"]["limits"] == {"memory": "256Mi"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["PYTHONUNBUFFERED"], env["MALLOC_ARENA_MAX"]) == ("1", "2")  # as a controller job's
    assert objs["RoleBinding"]["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "training"}]


def test_the_role_grants_the_drivers_work_and_its_own_lease_and_deployment_only() -> None:
    rules = _objects("https://k8s.example:6443")["Role"]["rules"]
    granted = {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
    assert granted == {
        ("batch", "jobs"),
        ("", "pods"),
        ("", "pods/log"),
        ("", "services"),
        ("batch.volcano.sh", "jobs"),
        ("coordination.k8s.io", "leases"),
        ("apps", "deployments"),
    }
    for rule in rules:
        if rule["resources"] in (["leases"], ["deployments"]):
            assert len(rule["resourceNames"]) == 1 and "create" not in rule["verbs"], rule


def test_a_loopback_api_server_puts_the_pod_on_the_node_network_and_a_claim_is_mounted() -> None:
    objs = _objects("https://127.0.0.1:16443", controller_mounts=["/shared", "venv:/opt/venv"])
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("127.0.0.1", "16443")
    assert pod["volumes"][1] == {"name": "mount-1", "persistentVolumeClaim": {"claimName": "venv"}}


AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-example-secret",
    "AWS_SESSION_TOKEN": "session-token-example",
    "AWS_REGION": "eu-west-1",
    "AWS_ENDPOINT_URL": "https://minio.example:9000",
}


def test_a_bucket_journal_hands_the_pod_a_secret_and_mounts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_managed.k8s_controller import bucket_env

    for key, value in AWS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    assert bucket_env("s3://bucket/j") == AWS and bucket_env("/shared/j") == {}
    objs = _objects("https://k8s.example:6443", root="s3://bucket/j", secret=True)
    name = objs["Deployment"]["metadata"]["name"]
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["envFrom"] == [{"secretRef": {"name": name}}]
    assert pod["volumes"] == [] and container["volumeMounts"] == []
    assert container["command"][3] == "s3://bucket/j"
    text = json.dumps(objs)
    assert not [v for v in AWS.values() if v in text] and "AWS_" not in text, "a credential in the manifests"


def test_a_bucket_journal_with_no_access_key_gives_the_pod_the_endpoint_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_managed.k8s_controller import bucket_env

    for key in AWS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "https://s3.example")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert bucket_env("s3://bucket/j") == {}  # an IAM role for the service account: no Secret
    pod = _objects("https://k8s.example:6443", root="s3://bucket/j")["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "envFrom" not in container and env["AWS_ENDPOINT_URL_S3"] == "https://s3.example"
    assert env["AWS_DEFAULT_REGION"] == "us-west-2" and "AWS_ACCESS_KEY_ID" not in env


def test_a_loopback_bucket_endpoint_with_a_remote_api_server_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_managed.k8s_controller import check_endpoint

    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5055")
    with pytest.raises(InvalidRunConfigException, match=r"^managed: journal=s3://b/j: its endpoint http://127") as e:
        check_endpoint("s3://b/j", _Api("https://k8s.example:6443"))  # type: ignore[arg-type]
    assert "cannot reach" in str(e.value) and "\n" not in str(e.value)
    check_endpoint("s3://b/j", _Api("https://127.0.0.1:16443"))  # type: ignore[arg-type]  # one machine: hostNetwork
    check_endpoint("/shared/j", _Api("https://k8s.example:6443"))  # type: ignore[arg-type]


def test_cli_an_unreachable_api_server_is_one_line_and_submits_nothing(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "kubeconfig"  # nothing listens on port 9 of this machine
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    journal = tmp_path / "journal"
    cfg = f"targets=kubernetes,mode=jobs,controller=kubernetes,journal={journal},controller_image={IMAGE}"
    code, out, err = run_cli(
        "run", "--workspace", "", "-s", "managed", "-cfg", cfg, "utils.sh", "--image", IMAGE, "true",
        env={"KUBECONFIG": str(kubeconfig), "TORCHX_MANAGED_STATE_DIR": str(tmp_path / "managed")},
    )  # fmt: skip
    assert code != 0 and "cannot reach the Kubernetes API server at https://127.0.0.1:9" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and not out.strip(), err
    assert journal.is_dir() and not any(journal.iterdir()), "the job was recorded"
