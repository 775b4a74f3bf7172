"""``controller=kubernetes`` with torchx-sched-k8s installed: the objects the controller asks
the API server for (pure request building; ``test_managed_k8s_controller_live.py`` runs them)
and an API server that cannot be reached, refused in one line before anything is recorded.

Here, not in torchx-managed: they need torchx-sched-k8s (its API client) and torchx-components
(``utils.sh``); the e2e session installs every package."""

from __future__ import annotations

from typing import Any

from torchx.testing import run_cli
from torchx_managed.options import ManagedOptions

IMAGE = "registry.example/torchx:1"


class _Api:
    """What :func:`objects` reads of the API: where the server is."""

    def __init__(self, host: str) -> None:
        self.host = host


def _objects(host: str, **cfg: Any) -> dict[str, dict[str, Any]]:
    from torchx_managed import k8s_controller

    opts = ManagedOptions(["kubernetes"], controller="kubernetes", controller_image=IMAGE, **cfg)
    objs = k8s_controller.objects(opts, "/shared/j", "training", _Api(host))  # type: ignore[arg-type]
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
