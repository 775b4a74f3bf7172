"""Live tests against the real kube-apiserver (scripts/backends/services.sh up k8s).

The cluster has no DNS or kube-proxy: the tests check the rendezvous *names* and the
objects behind them (Service, pod hostname/subdomain), not name resolution.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from torchx import specs
from torchx.specs import AppState
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_k8s import names
from torchx_sched_k8s.errors import KubernetesError

pytestmark = pytest.mark.k8s

WAIT = 120  # seconds an app may take (image already local; pods start in ~2 s)


@pytest.fixture(scope="module")
def kube(k8s_cluster: Any) -> Iterator[Any]:
    """Direct API access for checking what torchx created: (core, batch, custom)."""
    from kubernetes import client, config

    api = config.new_client_from_config(k8s_cluster.kubeconfig)
    yield client.CoreV1Api(api), client.BatchV1Api(api), client.CustomObjectsApi(api)
    api.close()


def role(cluster: Any, name: str, script: str, **kw: Any) -> specs.Role:
    kw.setdefault("resource", specs.Resource(cpu=1, gpu=0, memMB=128))
    return specs.Role(name, image=cluster.image, entrypoint="sh", args=["-c", script], **kw)


def wait_for(runner: Any, handle: str, states: set[AppState], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        status = runner.status(handle)
        if status is not None and status.state in states:
            return status
        assert time.monotonic() < deadline, f"{handle} never reached {states}: {status}"
        time.sleep(0.3)


def wait_gone(kube: Any, namespace: str, name: str, deadline: float) -> None:
    """Returns once no job, pod or service of app ``name`` is left; fails at ``deadline``."""
    while any(objects_of(kube, namespace, name).values()):
        assert time.monotonic() < deadline, objects_of(kube, namespace, name)
        time.sleep(0.3)


def objects_of(kube: Any, namespace: str, name: str) -> dict[str, list[str]]:
    core, batch, _ = kube
    sel = names.app_selector(name)
    return {
        "jobs": [j.metadata.name for j in batch.list_namespaced_job(namespace, label_selector=sel).items],
        "pods": [p.metadata.name for p in core.list_namespaced_pod(namespace, label_selector=sel).items],
        "services": [s.metadata.name for s in core.list_namespaced_service(namespace, label_selector=sel).items],
    }


def app_name(handle: str) -> str:
    return handle.rsplit(":", 1)[1]


HOSTILE = 'it\'s "quoted" `uname` $(id) ; rm -rf / && echo ${x} \\ é 🚀 --flag=--\nsecond\tline'


def test_hostile_echo_succeeds_with_the_exact_text(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    r = specs.Role(
        "echo",
        image=k8s_cluster.image,
        entrypoint="echo",
        args=[HOSTILE],
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
    )
    handle = runner.run(specs.AppDef("echo", roles=[r]), "kubernetes", cfg=k8s_cfg)
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    assert "".join(runner.log_lines(handle, "echo", 0)) == HOSTILE + "\n"


def test_two_roles_two_replicas_see_their_ids_and_rank0(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any
) -> None:
    script = 'echo "$TORCHX_ROLE_NAME ${replica_id} $TORCHX_REPLICA_IDX $$${rank0_env}"'
    app = specs.AppDef(
        "pair",
        roles=[
            role(k8s_cluster, "Master_Role", script, num_replicas=2),
            role(k8s_cluster, "worker", script, num_replicas=2),
        ],
    )
    handle = runner.run(app, "kubernetes", cfg=k8s_cfg)
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    name, ns = app_name(handle), k8s_cluster.namespace
    rank0 = f"master-role-0.{name}.{ns}.svc"
    for role_name in ("Master_Role", "worker"):
        for k in range(2):
            assert "".join(runner.log_lines(handle, role_name, k)) == f"{role_name} {k} {k} {rank0}\n"
    core, _, _ = kube
    svc = core.read_namespaced_service(name, ns)
    assert svc.spec.cluster_ip == "None"
    assert svc.spec.publish_not_ready_addresses
    assert svc.spec.selector == {names.LABEL_APP_NAME: name}
    pods = core.list_namespaced_pod(ns, label_selector=names.app_selector(name)).items
    assert sorted((p.spec.hostname, p.spec.subdomain) for p in pods) == sorted(
        (f"{slug}-{k}", name) for slug in ("master-role", "worker") for k in range(2)
    )
    assert [r.role for r in status.roles] == ["Master_Role", "worker"]
    assert all(rep.state == AppState.SUCCEEDED for r in status.roles for rep in r.replicas)


def test_failing_replica_fails_the_app_and_stops_the_others(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any
) -> None:
    script = 'if [ "$TORCHX_REPLICA_IDX" = 1 ]; then exit 3; fi; sleep 300'
    handle = runner.run(
        specs.AppDef("fail", roles=[role(k8s_cluster, "r", script, num_replicas=2)]), "kubernetes", cfg=k8s_cfg
    )
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.FAILED, status
    assert "r/1" in status.msg
    assert "exit 3" in status.msg
    _, batch, _ = kube
    jobs = batch.list_namespaced_job(k8s_cluster.namespace, label_selector=names.app_selector(app_name(handle))).items
    assert {j.spec.parallelism for j in jobs} == {0}  # the sleeping replica was stopped
    assert runner.status(handle).state == AppState.FAILED


def test_replica_retry_reruns_only_the_failed_replica(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], tmp_path: Any
) -> None:
    d = str(tmp_path)
    script = (
        f'echo run >> {d}/runs-$TORCHX_REPLICA_IDX; if [ "$TORCHX_REPLICA_IDX" = 0 ] && [ ! -e {d}/flag ];'
        f" then touch {d}/flag; exit 1; fi"
    )
    r = role(
        k8s_cluster,
        "r",
        script,
        num_replicas=2,
        max_retries=1,
        retry_policy=specs.RetryPolicy.REPLICA,
        mounts=[specs.BindMount(d, d)],
    )
    handle = runner.run(specs.AppDef("retry", roles=[r]), "kubernetes", cfg=k8s_cfg)
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    assert status.num_restarts == 1
    assert (tmp_path / "runs-0").read_text() == "run\nrun\n"
    assert (tmp_path / "runs-1").read_text() == "run\n"


def test_application_retry_restarts_every_replica(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], tmp_path: Any
) -> None:
    d = str(tmp_path)
    # replica 0 fails its first run once replica 1 has started, so both runs of both replicas are seen
    script = (
        f'echo run >> {d}/runs-$TORCHX_REPLICA_IDX; if [ "$TORCHX_REPLICA_IDX" = 0 ] && [ ! -e {d}/flag ];'
        f" then touch {d}/flag; for i in $(seq 100); do [ -e {d}/runs-1 ] && exit 1; sleep 0.2; done; exit 2;"
        " fi; sleep 2"
    )
    r = role(k8s_cluster, "r", script, num_replicas=2, max_retries=1, mounts=[specs.BindMount(d, d)])
    handle = runner.run(specs.AppDef("apprestart", roles=[r]), "kubernetes", cfg=k8s_cfg)
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    assert status.num_restarts == 1
    assert (tmp_path / "runs-0").read_text() == "run\nrun\n"
    assert (tmp_path / "runs-1").read_text() == "run\nrun\n"


def test_application_retries_run_out(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    r = role(k8s_cluster, "r", "exit 5", max_retries=1)
    handle = runner.run(specs.AppDef("alwaysfails", roles=[r]), "kubernetes", cfg=k8s_cfg)
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.FAILED, status
    assert status.num_restarts == 1, status


def test_cancel_keeps_the_record_and_delete_removes_everything(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any
) -> None:
    handle = runner.run(
        specs.AppDef("sleepy", roles=[role(k8s_cluster, "s", "sleep 600", num_replicas=2)]), "kubernetes", cfg=k8s_cfg
    )
    wait_for(runner, handle, {AppState.RUNNING})
    runner.cancel(handle)
    status = runner.status(handle)
    assert status is not None
    assert status.state == AppState.CANCELLED
    name, ns = app_name(handle), k8s_cluster.namespace
    deadline = time.monotonic() + WAIT
    while objects_of(kube, ns, name)["pods"]:  # the Job controller kills the pods
        assert time.monotonic() < deadline
        time.sleep(0.3)
    left = objects_of(kube, ns, name)
    assert len(left["jobs"]) == 2
    assert left["services"] == [name]
    assert runner.status(handle).state == AppState.CANCELLED  # still describable
    runner.cancel(handle)  # no-op on an ended app
    runner.delete(handle)
    wait_gone(kube, ns, name, deadline)
    assert runner.status(handle) is None


def test_delete_of_a_finished_app_removes_jobs_pods_and_service(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any
) -> None:
    handle = runner.run(specs.AppDef("done", roles=[role(k8s_cluster, "d", "true")]), "kubernetes", cfg=k8s_cfg)
    assert runner.wait(handle, wait_interval=0.5, timeout=WAIT).state == AppState.SUCCEEDED
    name, ns = app_name(handle), k8s_cluster.namespace
    assert all(objects_of(kube, ns, name).values())
    runner.delete(handle)
    wait_gone(kube, ns, name, time.monotonic() + WAIT)


def test_server_side_validation_error_is_clear_and_creates_nothing(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any
) -> None:
    app = specs.AppDef("invalid", roles=[role(k8s_cluster, "r", "true")])
    info = runner.dryrun(app, "kubernetes", cfg={**k8s_cfg, "node_selector": {"disk": "not valid!"}})
    with pytest.raises(KubernetesError) as e:
        runner.schedule(info)
    msg = str(e.value)
    assert msg.startswith("validate Job"), msg
    assert "rejected the object" in msg, msg
    assert "Invalid value" in msg, msg
    assert "\n" not in msg
    assert e.value.status == 422
    assert not any(objects_of(kube, k8s_cluster.namespace, info.request.name).values())
    info = runner.dryrun(
        app, "kubernetes", cfg={**k8s_cfg, "node_selector": {"disk": "not valid!"}, "validate_spec": False}
    )
    with pytest.raises(KubernetesError, match="Invalid value"):
        runner.schedule(info)
    assert not any(objects_of(kube, k8s_cluster.namespace, info.request.name).values())  # rolled back


def test_missing_namespace_is_clear(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    app = specs.AppDef("nons", roles=[role(k8s_cluster, "r", "true")])
    with pytest.raises(KubernetesError, match="namespace 'torchx-no-such-ns' does not exist"):
        runner.run(app, "kubernetes", cfg={**k8s_cfg, "namespace": "torchx-no-such-ns"})


def test_list_shows_the_apps_of_the_namespace(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    handle = runner.run(specs.AppDef("listed", roles=[role(k8s_cluster, "r", "true")]), "kubernetes", cfg=k8s_cfg)
    runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    apps = {a.app_handle: a for a in runner.list("kubernetes", cfg={"namespace": k8s_cluster.namespace})}
    assert apps[handle].state == AppState.SUCCEEDED
    assert apps[handle].name == "listed"
    times = (apps[handle].submitted, apps[handle].started, apps[handle].ended)
    assert None not in times, times  # creationTimestamp, startTime, completionTime of its Job
    assert times == tuple(sorted(times)), times  # type: ignore[type-var]
    assert handle not in {a.app_handle for a in runner.list("kubernetes", cfg={"namespace": "kube-system"})}


def test_log_follow_since_and_regex(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    script = "for i in 1 2 3 4; do echo line $i; sleep 0.5; done; printf 'no newline'"
    handle = runner.run(specs.AppDef("logs", roles=[role(k8s_cluster, "r", script)]), "kubernetes", cfg=k8s_cfg)
    followed = list(runner.log_lines(handle, "r", 0, should_tail=True))
    assert followed == ["line 1\n", "line 2\n", "line 3\n", "line 4\n", "no newline"]
    assert runner.wait(handle, wait_interval=0.5, timeout=WAIT).state == AppState.SUCCEEDED
    assert list(runner.log_lines(handle, "r", 0, regex=r"line [24]")) == ["line 2\n", "line 4\n"]
    future = datetime.now(timezone.utc) + timedelta(hours=1)
    assert list(runner.log_lines(handle, "r", 0, since=future)) == []
    past = datetime.now(timezone.utc) - timedelta(hours=1)
    assert list(runner.log_lines(handle, "r", 0, since=past)) == followed
    assert list(runner.log_lines(handle, "r", 0, until=past)) == []
    with pytest.raises(ValueError, match=r"has no replica r/1; it has r/0..0"):
        runner.log_lines(handle, "r", 1)


def test_volcano_mode_against_the_schemaless_crd(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """No Volcano controller runs here: the test plays it by patching the job's status."""
    _, _, custom = kube
    app = specs.AppDef("vc", roles=[role(k8s_cluster, "r", "true", num_replicas=2)])
    handle = runner.run(app, "kubernetes", cfg={**k8s_cfg, "mode": "volcano", "queue": "default"})
    name, ns = app_name(handle), k8s_cluster.namespace
    vc = custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", ns, "jobs", name)
    assert [t["name"] for t in vc["spec"]["tasks"]] == ["r-0", "r-1"]
    status = runner.status(handle)
    assert status.state == AppState.PENDING
    assert [len(r.replicas) for r in status.roles] == [2]
    assert handle in {a.app_handle for a in runner.list("kubernetes", cfg={"namespace": ns})}
    runner.cancel(handle)
    assert runner.status(handle).state == AppState.CANCELLED
    assert "no Volcano Command resource" in caplog.text
    custom.patch_namespaced_custom_object_status(
        "batch.volcano.sh",
        "v1alpha1",
        ns,
        "jobs",
        name,
        {"status": {"state": {"phase": "Aborted"}}},
        _content_type="application/merge-patch+json",
    )
    assert runner.status(handle).state == AppState.CANCELLED
    runner.delete(handle)
    assert runner.status(handle) is None


VOLCANO_JOB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "jobs.batch.volcano.sh"},
    "spec": {
        "group": "batch.volcano.sh",
        "scope": "Namespaced",
        "names": {"plural": "jobs", "singular": "job", "kind": "Job", "listKind": "JobList"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


@pytest.fixture(scope="module")
def volcano_crd(k8s_cluster: Any) -> Iterator[None]:
    """Volcano's Job CRD on the cluster (scripts/backends/k8s-up.sh installs it; made here if
    missing and then left in place: other sessions share this API server)."""
    from kubernetes import client, config

    api = config.new_client_from_config(k8s_cluster.kubeconfig)
    ext = client.ApiextensionsV1Api(api)
    try:
        ext.create_custom_resource_definition(VOLCANO_JOB_CRD)
    except client.ApiException as e:
        if e.status != 409:  # 409: already there
            raise
    custom = client.CustomObjectsApi(api)
    deadline = time.monotonic() + 30
    while True:
        try:
            custom.get_api_resources("batch.volcano.sh", "v1alpha1")
            break
        except client.ApiException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    yield
    api.close()


def test_default_mode_is_a_volcano_job_where_the_cluster_has_volcano(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any, volcano_crd: None
) -> None:
    """As TorchX: without ``mode``, ``kubernetes`` creates a Volcano Job in the ``queue``."""
    _, batch, custom = kube
    cfg = {k: v for k, v in k8s_cfg.items() if k != "mode"}
    app = specs.AppDef("auto", roles=[role(k8s_cluster, "r", "true", max_retries=0)])
    handle = runner.run(app, "kubernetes", cfg={**cfg, "queue": "team-a"})
    name, ns = app_name(handle), k8s_cluster.namespace
    try:
        vc = custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", ns, "jobs", name)
        assert vc["spec"]["queue"] == "team-a"
        assert vc["spec"]["maxRetry"] == 0
        assert "policies" not in vc["spec"]["tasks"][0]  # max_retries=0: no restart
        assert batch.list_namespaced_job(ns, label_selector=f"{names.LABEL_APP_NAME}={name}").items == []
    finally:
        runner.delete(handle)
    assert runner.status(handle) is None


def test_auto_mode_without_a_volcano_controller_says_so_in_status(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], volcano_crd: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This cluster serves Volcano's Job API but runs no Volcano controller: ``mode=auto`` makes a
    Volcano Job that nothing ever starts. Its status stays PENDING, and once the job has gone
    without status or pods for a while (5 s here), the message says so and names mode=jobs."""
    from torchx_sched_k8s import status as k8s_status

    monkeypatch.setattr(k8s_status, "VOLCANO_SILENT_AFTER", 5.0)
    cfg = {k: v for k, v in k8s_cfg.items() if k != "mode"}
    app = specs.AppDef("novc", roles=[role(k8s_cluster, "r", "true")])
    handle = runner.run(app, "kubernetes", cfg=cfg)
    try:
        first = runner.status(handle)
        assert first.state == AppState.PENDING
        assert "Volcano" not in first.msg
        time.sleep(6.1)  # creationTimestamp has a resolution of one second
        later = runner.status(handle)
        assert later.state == AppState.PENDING
        assert "no Volcano controller has acted on this Volcano Job" in later.msg
        assert "-cfg mode=jobs" in later.msg
    finally:
        runner.delete(handle)


def test_auto_mode_follows_the_discovery_answer(k8s_cluster: Any, volcano_crd: None) -> None:
    """The real discovery documents: the served Volcano version means volcano; a group version the
    server does not serve (as on a cluster without Volcano) means jobs."""
    from torchx_sched_k8s.kubeapi import KubeApi
    from torchx_sched_k8s.request import mode_from_discovery
    from torchx_sched_k8s.scheduler import create_scheduler

    kube = KubeApi()
    try:
        assert mode_from_discovery(kube.discover("batch.volcano.sh", "v1alpha1")) == "volcano"
        assert kube.discover("batch.volcano.sh", "v1alpha9") is None
        assert mode_from_discovery(kube.discover("batch.volcano.sh", "v1alpha9")) == "jobs"
        assert mode_from_discovery(kube.discover("workload.codeflare.dev", "v1beta9")) == "jobs"
    finally:
        kube.close()
    sched = create_scheduler("t")
    try:
        assert sched.auto_mode() == "volcano"
    finally:
        sched.close()


def test_mcad_on_a_cluster_without_the_appwrapper_crd(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    app = specs.AppDef("aw", roles=[role(k8s_cluster, "r", "true")])
    with pytest.raises(KubernetesError, match="does not serve this API.*CRD"):
        runner.run(app, "kubernetes_mcad", cfg=k8s_cfg)
    assert runner.list("kubernetes_mcad", cfg={"namespace": k8s_cluster.namespace}) == []


@pytest.fixture(scope="module")
def appwrapper_crd(k8s_cluster: Any) -> Iterator[None]:
    """A schema-less AppWrapper CRD for this module (no MCAD controller: tests dispatch by hand)."""
    from kubernetes import client, config

    api = config.new_client_from_config(k8s_cluster.kubeconfig)
    ext = client.ApiextensionsV1Api(api)
    name = "appwrappers.workload.codeflare.dev"
    if any(c.metadata.name == name for c in ext.list_custom_resource_definition().items):
        pytest.skip("the cluster has a real AppWrapper CRD: not replacing it")
    ext.create_custom_resource_definition(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": "workload.codeflare.dev",
                "scope": "Namespaced",
                "names": {
                    "plural": "appwrappers",
                    "singular": "appwrapper",
                    "kind": "AppWrapper",
                    "listKind": "AppWrapperList",
                },
                "versions": [
                    {
                        "name": "v1beta1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
            },
        }
    )
    deadline = time.monotonic() + 30
    while True:
        conds = ext.read_custom_resource_definition(name).status.conditions or []
        if any(c.type == "Established" and c.status == "True" for c in conds):
            break
        assert time.monotonic() < deadline, "the AppWrapper CRD never became established"
        time.sleep(0.2)
    time.sleep(1)  # discovery of the new group
    try:
        yield
    finally:
        ext.delete_custom_resource_definition(name)
        api.close()


def test_mcad_appwrapper_items_run_when_dispatched(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any, appwrapper_crd: None
) -> None:
    """Plays MCAD's dispatcher: creates the wrapper's generic items, which the real server validates and runs."""
    core, _, custom = kube
    script = 'echo "${replica_id} $$${rank0_env}"'
    app = specs.AppDef("aw", roles=[role(k8s_cluster, "r", script, num_replicas=2)])
    handle = runner.run(app, "kubernetes_mcad", cfg=k8s_cfg)
    name, ns = app_name(handle), k8s_cluster.namespace
    assert runner.status(handle).state == AppState.PENDING
    aw = custom.get_namespaced_custom_object("workload.codeflare.dev", "v1beta1", ns, "appwrappers", name)
    for item in aw["spec"]["resources"]["GenericItems"]:
        obj = item["generictemplate"]
        create = core.create_namespaced_service if obj["kind"] == "Service" else core.create_namespaced_pod
        create(ns, obj)
    custom.patch_namespaced_custom_object_status(
        "workload.codeflare.dev",
        "v1beta1",
        ns,
        "appwrappers",
        name,
        {"status": {"state": "Running"}},
        _content_type="application/merge-patch+json",
    )
    deadline = time.monotonic() + WAIT
    while not all(r.state == AppState.SUCCEEDED for r in runner.status(handle).roles[0].replicas):
        assert time.monotonic() < deadline, runner.status(handle)
        time.sleep(0.3)
    assert runner.status(handle).state == AppState.RUNNING  # MCAD has not marked it Completed yet
    for k in range(2):
        assert "".join(runner.log_lines(handle, "r", k)) == f"{k} r-0.{name}.{ns}.svc\n"
    assert [a.app_handle for a in runner.list("kubernetes_mcad", cfg={"namespace": ns})] == [handle]
    runner.delete(handle)
    wait_gone(kube, ns, name, deadline)
    assert runner.status(handle) is None


def test_mcad_cancel_marks_the_wrapper_and_removes_its_pods(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any, appwrapper_crd: None
) -> None:
    core, _, custom = kube
    handle = runner.run(
        specs.AppDef("awc", roles=[role(k8s_cluster, "r", "sleep 600")]), "kubernetes_mcad", cfg=k8s_cfg
    )
    name, ns = app_name(handle), k8s_cluster.namespace
    aw = custom.get_namespaced_custom_object("workload.codeflare.dev", "v1beta1", ns, "appwrappers", name)
    (pod, *_) = [
        i["generictemplate"] for i in aw["spec"]["resources"]["GenericItems"] if i["generictemplate"]["kind"] == "Pod"
    ]
    core.create_namespaced_pod(ns, pod)  # as MCAD's controller would
    wait_for(runner, handle, {AppState.PENDING})
    runner.cancel(handle)
    assert runner.status(handle).state == AppState.CANCELLED
    deadline = time.monotonic() + WAIT
    while objects_of(kube, ns, name)["pods"]:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert runner.status(handle).state == AppState.CANCELLED
    runner.delete(handle)
    assert runner.status(handle) is None


@pytest.mark.docker
def test_docker_workspace_image_runs_in_a_pod(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], tmp_path: Any
) -> None:
    """Builds the workspace on the local engine (the kubelet's), retags it to image_repo, runs it.

    There is no registry here, so the push is replaced by the local tag it would have pushed.
    """
    from torchx.workspace.api import get_workspace_mixin

    try:
        get_workspace_mixin("docker")
        import docker
    except (LookupError, ImportError):
        pytest.skip("the docker workspace (torchx-sched-local[docker]) is not installed")
    if k8s_cluster.kubelet != "docker":
        pytest.skip("pods run images only with the real kubelet on Docker")
    (tmp_path / "hello.txt").write_text("from the workspace\n")
    app = specs.AppDef("ws", roles=[role(k8s_cluster, "r", "cat hello.txt")])
    repo = "localhost/torchx-k8s-ws-test"
    info = runner.dryrun(app, "kubernetes", cfg={**k8s_cfg, "image_repo": repo}, workspace=str(tmp_path))
    ((local, (pushed_repo, tag)),) = info.request.images_to_push.items()
    assert pushed_repo == repo
    assert local.startswith("sha256:")
    image = info.request.objects[1]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"{repo}:{tag}"
    client = docker.from_env()
    client.images.get(local).tag(repo, tag=tag)
    info.request.images_to_push = None
    try:
        handle = runner.schedule(info)
        status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
        assert status is not None, status
        assert status.state == AppState.SUCCEEDED, status
        assert "".join(runner.log_lines(handle, "r", 0)) == "from the workspace\n"
        runner.delete(handle)
    finally:
        for ref in (f"{repo}:{tag}", local):
            try:
                client.images.remove(ref, force=True)
            except docker.errors.APIError:
                pass
        client.close()


def test_many_replicas_are_created_in_parallel(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any
) -> None:
    r = role(k8s_cluster, "r", "echo ${replica_id}", num_replicas=10, resource=specs.Resource(cpu=0, gpu=0, memMB=32))
    handle = runner.run(specs.AppDef("many", roles=[r]), "kubernetes", cfg=k8s_cfg)
    assert len(objects_of(kube, k8s_cluster.namespace, app_name(handle))["jobs"]) == 10
    status = runner.wait(handle, wait_interval=0.5, timeout=3 * WAIT)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    assert "".join(runner.log_lines(handle, "r", 9)) == "9\n"
    runner.delete(handle)


def test_macro_values_are_data_in_pods(runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    marker = "/tmp/pwned"
    probe = macro_probe(k8s_cluster.image, marker, num_replicas=2, resource=specs.Resource(cpu=1, gpu=0, memMB=128))
    probe.args.append(specs.macros.escape(hostile_value(marker)))  # one more word, to arrive as it is
    handle = runner.run(specs.AppDef("macros", roles=[probe]), "kubernetes", cfg=k8s_cfg)
    status = runner.wait(handle, wait_interval=0.5, timeout=WAIT)
    assert status is not None, status
    assert status.state == AppState.SUCCEEDED, status
    app_id = handle.rsplit("/", 1)[1]
    for k in range(2):
        expected = macro_probe_output("", app_id, k).splitlines(keepends=True)
        expected.insert(-1, f"<{hostile_value(marker)}>\n")  # before PROBE_ENV's line
        assert "".join(runner.log_lines(handle, "probe", k)) == "".join(expected)


@pytest.mark.parametrize("mode", ["jobs", "volcano"])
def test_pod_overlay_sets_node_selector_and_toleration_on_the_created_pods(
    runner: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any], kube: Any, mode: str
) -> None:
    """What upstream's overlay docs show (a node selector and a toleration) lands on the pods the
    API server holds; the other role's pods are untouched; the app's Job overlay lands on the jobs."""
    from torchx.specs.overlays import set_overlay

    core, _, custom = kube
    gpu = role(k8s_cluster, "gpu", "sleep 30", num_replicas=2)
    set_overlay(gpu, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"torchx-test/pool": "a100"}}})
    toleration = {"key": "torchx-test/gpu", "operator": "Exists", "effect": "NoSchedule"}
    set_overlay(gpu, "kubernetes", "V1Pod", {"spec": {"tolerations": [toleration]}})
    app = specs.AppDef("overlay", roles=[gpu, role(k8s_cluster, "cpu", "sleep 30")])
    set_overlay(app, "kubernetes", "Job", {"metadata": {"annotations": {"torchx-test/overlay": "job"}}})
    cfg = {**k8s_cfg, "mode": mode, "queue": "default"} if mode == "volcano" else {**k8s_cfg, "mode": mode}
    handle = runner.run(app, "kubernetes", cfg=cfg)
    name, ns = app_name(handle), k8s_cluster.namespace
    try:
        if mode == "volcano":  # no Volcano controller here: read the pod templates it would create
            vc = custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", ns, "jobs", name)
            assert vc["metadata"]["annotations"]["torchx-test/overlay"] == "job"
            specs_by_role = {t["name"]: t["template"]["spec"] for t in vc["spec"]["tasks"]}
            selectors = {n: s.get("nodeSelector") for n, s in specs_by_role.items()}
            tolerations = {n: s.get("tolerations") or [] for n, s in specs_by_role.items()}
        else:
            deadline = time.monotonic() + WAIT
            while True:
                pods = core.list_namespaced_pod(ns, label_selector=names.app_selector(name)).items
                if len(pods) == 3:
                    break
                assert time.monotonic() < deadline, [p.metadata.name for p in pods]
                time.sleep(0.3)
            selectors = {p.spec.hostname: p.spec.node_selector for p in pods}
            jobs = kube[1].list_namespaced_job(ns, label_selector=names.app_selector(name)).items
            assert [j.metadata.annotations["torchx-test/overlay"] for j in jobs] == ["job"] * 3
            tolerations = {
                p.spec.hostname: [
                    {"key": t.key, "operator": t.operator, "effect": t.effect} for t in p.spec.tolerations or []
                ]
                for p in pods
            }
        assert selectors == {
            "gpu-0": {"torchx-test/pool": "a100"},
            "gpu-1": {"torchx-test/pool": "a100"},
            "cpu-0": None,
        }
        assert toleration in tolerations["gpu-0"] and toleration in tolerations["gpu-1"]
        assert toleration not in tolerations["cpu-0"]
    finally:
        runner.cancel(handle)
        runner.delete(handle)
