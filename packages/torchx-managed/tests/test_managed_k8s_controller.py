"""``controller=kubernetes`` before anything runs: its options refused in one line each, and the
objects it asks the API server for (pure request building; the live test runs them)."""

from __future__ import annotations

from typing import Any

import pytest
from torchx.specs.runopts import InvalidRunConfigException, runopts
from torchx.testing import run_cli
from torchx_managed.options import ManagedOptions, check, run_opts

INSTALLED = {"kubernetes": None, "slurm": None, "aws_batch": None, "managed": None}
IMAGE = "registry.example/torchx:1"


def _opts(installed: dict[str, Any] = INSTALLED, **cfg: Any) -> ManagedOptions:
    return check(run_opts().resolve(cfg), installed, lambda _name: runopts())[0]


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"controller": "aws_batch"}, "controller=aws_batch: neither auto, native, local nor an installed scheduler a"),
        ({"journal": "s3://bucket/journal"}, "journal=s3://bucket/journal: a journal on a URL is not supported"),
        ({"journal": "file:///tmp/j"}, "a journal on a URL is not supported"),
        ({"controller": "kubernetes", "journal": "{tmp}/j"}, "controller=kubernetes needs controller_image=IMAGE"),
        (
            {"controller": "kubernetes", "journal": "{tmp}/j", "controller_image": IMAGE, "controller_mounts": ["/opt"]},
            "journal={tmp}/j is under none of controller_mounts [(]/opt[)]: the controller's pod would not see it",
        ),
        (
            {"controller": "kubernetes", "journal": "{tmp}/j", "controller_image": IMAGE, "controller_mounts": ["rel"]},
            "controller_mounts: 'rel' is neither an absolute PATH nor CLAIM:PATH",
        ),
        (
            {"controller": "kubernetes", "journal": "{tmp}/j", "controller_image": IMAGE, "controller_mounts": ["Bad_Claim:/x"]},
            "'Bad_Claim:/x' is neither",
        ),
        ({"controller": "slurm", "journal": "{tmp}/j", "controller_image": IMAGE}, "controller_image is an option of controller=kubernetes only"),
        ({"controller_python": "/venv/bin/python"}, "controller_python is an option of controller=kubernetes only"),
    ],
)  # fmt: skip
def test_bad_controller_options_are_one_line(tmp_path: Any, cfg: dict[str, Any], match: str) -> None:
    given = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in cfg.items()}
    with pytest.raises(InvalidRunConfigException, match=match.format(tmp=tmp_path)) as e:
        _opts(targets=["kubernetes"], **given)
    assert "\n" not in str(e.value)


def test_an_uninstalled_controller_scheduler_names_its_package() -> None:
    with pytest.raises(InvalidRunConfigException, match=r"controller=slurm: the scheduler slurm is not installed") as e:
        _opts({"kubernetes": None}, targets=["kubernetes"], controller="slurm", journal="/tmp/torchx-j")
    assert "torchx-sched-slurm" in str(e.value)


def test_kubernetes_options_are_kept(tmp_path: Any) -> None:
    opts = _opts(
        targets=["kubernetes"],
        controller="kubernetes",
        journal=str(tmp_path / "shared" / "j"),
        controller_image=IMAGE,
        controller_mounts=[str(tmp_path / "shared"), "venv-claim:/opt/venv"],
        controller_python="/opt/venv/bin/python",
        namespace="training",
    )
    assert (opts.controller, opts.controller_image, opts.controller_python) == (
        "kubernetes",
        IMAGE,
        "/opt/venv/bin/python",
    )
    assert opts.controller_mounts == [str(tmp_path / "shared"), "venv-claim:/opt/venv"]
    assert ManagedOptions.from_json({"targets": ["slurm"]}).controller_mounts == []  # an older journal's spec


class _Api:
    """What :func:`objects` reads of the API: where the server is."""

    def __init__(self, host: str) -> None:
        self.host = host


def _objects(host: str, **cfg: Any) -> dict[str, dict[str, Any]]:
    pytest.importorskip("torchx_sched_k8s")
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


def test_cli_a_url_journal_is_one_line_and_submits_nothing(tmp_path: Any) -> None:
    pytest.importorskip("torchx_sched_local", reason="needs torchx-sched-local")
    pytest.importorskip("torchx_components", reason="needs torchx-components")
    code, out, err = run_cli(
        "run", "-s", "managed", "-cfg", "targets=local_cwd,controller=local_cwd,journal=s3://bucket/journal", "utils.echo",
        env={"TORCHX_MANAGED_STATE_DIR": str(tmp_path / "managed"), "XDG_STATE_HOME": str(tmp_path / "state")},
    )  # fmt: skip
    assert code != 0 and "a journal on a URL is not supported" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and not out.strip(), err
    assert not (tmp_path / "managed").exists() or not any((tmp_path / "managed").iterdir())


def test_cli_an_unreachable_api_server_is_one_line_and_submits_nothing(tmp_path: Any) -> None:
    pytest.importorskip("torchx_sched_k8s", reason="needs torchx-sched-k8s")
    pytest.importorskip("torchx_components", reason="needs torchx-components")
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
