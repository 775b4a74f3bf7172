"""The schedulers without a cluster: plugin registration, run options, dry runs, speed, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
import yaml
from torchx import specs
from torchx.plugins import get_registry
from torchx.runner import get_runner
from torchx.schedulers.api import Scheduler
from torchx_sched_k8s.errors import KubernetesError
from torchx_sched_k8s.scheduler import create_mcad_scheduler, create_scheduler
from torchx_sched_k8s.workspace import WorkspaceUnavailableError


def app(n: int = 2, **kw: Any) -> specs.AppDef:
    kw.setdefault("args", ["hi"])
    return specs.AppDef(
        "echo",
        roles=[
            specs.Role(
                "echo",
                image="localhost/img:1",
                entrypoint="echo",
                num_replicas=n,
                resource=specs.Resource(cpu=1, gpu=0, memMB=256),
                **kw,
            )
        ],
    )


def test_plugin_registers_both_schedulers() -> None:
    schedulers = get_registry(refresh=True).schedulers
    assert schedulers["kubernetes"].factory == "torchx_sched_k8s.scheduler:create_scheduler"
    assert schedulers["kubernetes_mcad"].factory == "torchx_sched_k8s.scheduler:create_mcad_scheduler"


def test_discovery_and_dry_run_with_a_mode_never_import_the_kubernetes_client() -> None:
    code = (
        "import sys; from torchx.plugins import get_registry; get_registry(refresh=True)\n"
        "from torchx import specs\n"
        "from torchx_sched_k8s.scheduler import create_scheduler\n"
        "s = create_scheduler('t')\n"
        "a = specs.AppDef('a', roles=[specs.Role('r', image='i', entrypoint='e', resource=specs.resource(cpu=1))])\n"
        "str(s.submit_dryrun(a, {'mode': 'volcano'}))\n"
        "str(s.submit_dryrun(a, {'mode': 'jobs'}))\n"
        "print('kubernetes' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_run_options() -> None:
    opts = create_scheduler("t").run_opts()
    for key in (
        "namespace",
        "service_account",
        "image_repo",
        "priority_class",
        "image_pull_policy",
        "queue",
        "mode",
        "node_selector",
        "tolerations",
        "validate_spec",
    ):
        assert opts.get(key) is not None, key
    assert opts.get("namespace").default == "default"  # type: ignore[union-attr]
    mcad = create_mcad_scheduler("t").run_opts()
    assert mcad.get("priority") is not None
    assert mcad.get("mode") is None


def test_runner_dry_run_prints_kubectl_ready_yaml() -> None:
    with get_runner("s") as runner:
        info = runner.dryrun(
            app(), "kubernetes", cfg={"namespace": "team", "mode": "jobs", "tolerations": "a=b:NoSchedule;c:NoExecute"}
        )
        docs = list(yaml.safe_load_all(str(info)))
        assert [d["kind"] for d in docs] == ["Service", "Job", "Job"]
        env = {e["name"]: e["value"] for e in docs[1]["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["TORCHX_JOB_ID"] == f"kubernetes://s/{info.request.app_id}"
        assert len(docs[1]["spec"]["template"]["spec"]["tolerations"]) == 2
        vc = runner.dryrun(app(), "kubernetes", cfg={"mode": "volcano", "queue": "q"})
        assert [d["kind"] for d in yaml.safe_load_all(str(vc))] == ["Job"]
        aw = runner.dryrun(app(), "kubernetes_mcad", cfg={"priority": 3})
        assert [d["kind"] for d in yaml.safe_load_all(str(aw))] == ["AppWrapper"]


def test_bad_mode_and_bad_options_are_one_clear_error() -> None:
    with get_runner("s") as runner:
        with pytest.raises(ValueError, match="mode='x' is unknown; use volcano, jobs or auto"):
            runner.dryrun(app(), "kubernetes", cfg={"mode": "x"})
        with pytest.raises(ValueError, match="toleration"):
            runner.dryrun(app(), "kubernetes", cfg={"tolerations": ["k:Never"]})


def test_unsupported_retry_policy_is_refused_for_mcad() -> None:
    from torchx.schedulers.capabilities import UnsupportedFeatureError

    with get_runner("s") as runner, pytest.raises(UnsupportedFeatureError, match="REPLICA"):
        runner.dryrun(app(max_retries=1, retry_policy=specs.RetryPolicy.REPLICA), "kubernetes_mcad")


def test_workspace_without_docker_plugin_is_a_clear_error(tmp_path: Any) -> None:
    from torchx.workspace.api import workspace_mixin_or_placeholder
    from torchx_sched_k8s.scheduler import KubernetesScheduler

    placeholder = workspace_mixin_or_placeholder("no-such-workspace", "torchx-sched-k8s[docker]")
    cls = type("K", (placeholder, KubernetesScheduler), {})
    sched = cls("t")
    a = app(workspace=specs.Workspace.from_str(str(tmp_path)))
    with pytest.raises(WorkspaceUnavailableError, match=r"torchx-sched-k8s\[docker\].*--workspace ''"):
        sched.build_workspaces(a.roles, {})
    assert (
        sched.submit_dryrun(app(), {"mode": "jobs"}).request.images_to_push is None
    )  # no workspace: the image runs as it is


def test_scheduler_mixes_in_the_installed_docker_workspace() -> None:
    from torchx.workspace.api import WorkspaceMixin, get_workspace_mixin

    sched = create_scheduler("t")
    assert isinstance(sched, WorkspaceMixin)
    try:
        mixin = get_workspace_mixin("docker")
    except LookupError:
        mixin = None
    if mixin is not None:
        assert isinstance(sched, mixin)
        assert sched.run_opts().get("image_repo") is not None


def test_dry_run_of_a_thousand_replicas_is_fast() -> None:
    big = app(1000, args=["--rank", "${replica_id}", "--app", "${app_id}"], env={"A": "b${replica_id}"})
    sched = create_scheduler("t")
    best_dryrun = best_yaml = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        info = sched.submit_dryrun(big, {"mode": "jobs"})
        t1 = time.perf_counter()
        text = str(info)
        t2 = time.perf_counter()
        best_dryrun, best_yaml = min(best_dryrun, t1 - t0), min(best_yaml, t2 - t1)
    assert len(info.request.objects) == 1001
    assert text.count("\nkind: Job\n") == 1000
    # budgets: 30 ms and 0.1 s on an idle machine; the bounds leave room for a loaded CI box
    assert best_dryrun < 0.09, best_dryrun
    assert best_yaml < 0.3, best_yaml


def test_dict_bodies_reach_the_server_unchanged() -> None:
    """The objects of a dry run arrive at an HTTP server as the request built them, at the
    resource paths of their kinds, a patch as a merge patch with the kubeconfig's token."""
    import http.server
    import threading

    from kubernetes import client
    from torchx_sched_k8s.kubeapi import KubeApi

    sent: list[tuple[str, str, str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            sent.append((self.command, self.path, self.headers.get("Content-Type", ""), json.loads(body or b"null")))
            assert self.headers["authorization"] == "Bearer t0ken"
            self.send_response(201)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_POST = do_PATCH = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    cfg = client.Configuration(host=f"http://127.0.0.1:{server.server_address[1]}", api_key={"authorization": "t0ken"})
    cfg.api_key_prefix = {"authorization": "Bearer"}
    kube = KubeApi(client.ApiClient(cfg))
    try:
        a = app(mounts=specs.parse_mounts(["type=device,src=/dev/fuse"]))
        req = create_scheduler("t").submit_dryrun(a, {"mode": "jobs", "namespace": "ns1"}).request
        for obj in req.objects:
            kube.create(obj)
        kube.create(req.objects[1], dry_run=True)
        kube.patch_job("ns1", "j", {"spec": {"parallelism": 0}})
        # an app of one object (a Volcano Job) is created without a dry run first: one request
        sched = create_scheduler("t", api_client=client.ApiClient(cfg))
        one = sched.submit_dryrun(app(n=1), {"mode": "volcano", "namespace": "ns1"})
        assert len(one.request.objects) == 1
        sched.schedule(one)
    finally:
        kube.close()
        server.shutdown()
        server.server_close()
        thread.join()
    assert [s[1] for s in sent[:5]] == [
        "/api/v1/namespaces/ns1/services",
        "/apis/batch/v1/namespaces/ns1/jobs",
        "/apis/batch/v1/namespaces/ns1/jobs",
        "/apis/batch/v1/namespaces/ns1/jobs?dryRun=All",
        "/apis/batch/v1/namespaces/ns1/jobs/j",
    ]
    assert [s[3] for s in sent[:3]] == json.loads(json.dumps(req.objects))
    assert sent[-2][:1] == ("PATCH",) and sent[-2][2] == "application/merge-patch+json"
    assert [s[:2] for s in sent[4:]] == [("PATCH", "/apis/batch/v1/namespaces/ns1/jobs/j"),
                                         ("POST", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns1/jobs")]  # fmt: skip


def test_unreachable_server_is_one_clear_line() -> None:
    from kubernetes import client

    cfg = client.Configuration(host="https://127.0.0.1:1")
    cfg.retries = 0
    sched: Scheduler[Any, Any, Any] = create_scheduler("t", api_client=client.ApiClient(cfg))
    with pytest.raises(KubernetesError) as e:
        sched.describe("default:x-abc")
    msg = str(e.value)
    assert msg.startswith("list Jobs")
    assert "cannot reach the Kubernetes API server at https://127.0.0.1:1" in msg
    assert "\n" not in msg


def test_missing_kubeconfig_is_one_clear_line(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubernetesError, match="no usable Kubernetes configuration.*set KUBECONFIG"):
        create_scheduler("t").list()


def test_auto_mode_without_a_reachable_cluster_is_torchx_volcano_job(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nope"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    sched = create_scheduler("t")
    assert sched.run_opts().get("mode").default == "auto"  # type: ignore[union-attr]
    assert [o["kind"] for o in sched.submit_dryrun(app(), {}).request.objects] == ["Job"]
    assert sched.submit_dryrun(app(), {}).request.kind == "volcano"


def test_malformed_app_id_is_unknown() -> None:
    assert create_scheduler("t").describe("no-namespace") is None


def test_fresh_job_drops_server_fields_and_counts_the_restart() -> None:
    from torchx_sched_k8s import names
    from torchx_sched_k8s.scheduler import _fresh_job

    server_copy = {
        "metadata": {
            "name": "a-r-0",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "7",
            "labels": {"x": "y", "controller-uid": "u", "job-name": "a-r-0"},
            "annotations": {names.ANNOTATION_RESTARTS: "0"},
        },
        "spec": {
            "selector": {"matchLabels": {"controller-uid": "u"}},
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"x": "y", "controller-uid": "u", "job-name": "a-r-0"}},
                "spec": {"containers": []},
            },
        },
        "status": {"failed": 1},
    }
    fresh = _fresh_job(server_copy, 1)
    assert fresh == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "a-r-0",
            "namespace": "ns",
            "labels": {"x": "y"},
            "annotations": {names.ANNOTATION_RESTARTS: "1"},
        },
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": []}}},
    }
    assert server_copy["metadata"]["annotations"][names.ANNOTATION_RESTARTS] == "0"  # the input is left alone
