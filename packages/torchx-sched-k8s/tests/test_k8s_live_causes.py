"""Kubernetes ``end_cause`` against the live API server and docker kubelet (marker ``k8s``):
a pod evicted through the eviction API mid-run, a container killed on the node, a cancel."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx_sched_k8s import names
from torchx_sched_k8s.scheduler import KubernetesScheduler, create_scheduler

pytestmark = pytest.mark.k8s


@pytest.fixture
def sched(k8s_cluster: Any) -> Iterator[KubernetesScheduler]:
    s = create_scheduler("causes")
    yield s
    s.close()


@pytest.fixture(scope="module")
def core(k8s_cluster: Any) -> Iterator[Any]:
    from kubernetes import client, config

    api = config.new_client_from_config(k8s_cluster.kubeconfig)
    yield client.CoreV1Api(api)
    api.close()


def _submit(sched: KubernetesScheduler, cluster: Any, cfg: dict[str, Any], script: str) -> str:
    role = specs.Role(
        "w",
        image=cluster.image,
        entrypoint="sh",
        args=["-c", script],
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
    )
    return sched.submit(specs.AppDef("causes", [role]), cfg)


def _running_pod(sched: KubernetesScheduler, core: Any, app_id: str) -> Any:
    namespace, name = names.parse_app_id(app_id)
    deadline = time.monotonic() + 120
    while True:
        pods = core.list_namespaced_pod(namespace, label_selector=names.app_selector(name)).items
        running = [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        if running:
            return running[0]
        assert time.monotonic() < deadline, pods
        time.sleep(0.3)


def _ended(sched: KubernetesScheduler, app_id: str) -> AttemptEnd:
    desc = sched.wait(app_id, timeout=120, poll_interval=0.5)
    assert desc is not None and specs.is_terminal(desc.state), desc
    end = sched.end_cause(app_id)
    assert end is not None
    return end


def test_a_pod_evicted_mid_run_is_run_again_by_its_job(
    sched: KubernetesScheduler, core: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]
) -> None:
    app_id = _submit(sched, k8s_cluster, k8s_cfg, "sleep 5")
    pod = _running_pod(sched, core, app_id)
    assert sched.end_cause(app_id) is None
    body = {"metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace}}
    core.create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, body)
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 0), end


def test_a_container_killed_on_the_node_is_killed(
    sched: KubernetesScheduler, core: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]
) -> None:
    if k8s_cluster.kubelet != "docker":
        pytest.skip("needs the docker kubelet: the container is killed with `docker kill`")
    app_id = _submit(sched, k8s_cluster, k8s_cfg, "sleep 120")
    pod = _running_pod(sched, core, app_id)
    ids = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"name=k8s_w_{pod.metadata.name}"], capture_output=True, text=True
    ).stdout.split()
    assert ids, pod.metadata.name
    subprocess.run(["docker", "kill", *ids], check=True, capture_output=True)
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 137), end


def test_exit_code_and_cancel(sched: KubernetesScheduler, core: Any, k8s_cluster: Any, k8s_cfg: dict[str, Any]) -> None:
    failing = _submit(sched, k8s_cluster, k8s_cfg, "exit 3")
    cancelled = _submit(sched, k8s_cluster, k8s_cfg, "sleep 120")
    _running_pod(sched, core, cancelled)
    sched.cancel(cancelled)
    assert _ended(sched, cancelled).cause == EndCause.CANCELLED
    end = _ended(sched, failing)
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 3), end
    assert sched.end_cause("nosuchns:nosuchapp") is None
