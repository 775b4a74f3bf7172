"""Fixtures: apps for request tests, and the live Kubernetes API server from scripts/backends/services.sh."""

from __future__ import annotations

import ssl
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from torchx.testing import live_backend_env, unavailable, unique_name


@dataclass(frozen=True)
class K8sCluster:
    """The live API server the tests talk to.

    Attributes:
        kubeconfig: path of its kubeconfig
        image: a local image pods can run (never pulled)
        kubelet: ``docker`` (real containers), ``fake`` (host processes) or ``none``
        namespace: a namespace made for this test session
    """

    kubeconfig: str
    image: str
    kubelet: str
    namespace: str


def _ready(api: str, token: str) -> str:
    """'' if the API server answers /readyz, else why not."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"{api}/readyz", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
            body = resp.read().decode().strip()
    except OSError as e:
        return f"{api}/readyz: {e}"
    return "" if body == "ok" else f"{api}/readyz answered {body!r}"


@pytest.fixture(scope="session")
def k8s_cluster() -> Iterator[K8sCluster]:
    """The cluster of the services env file, with a fresh namespace (deleted afterwards).

    Skips when it is absent (fails under ``TORCHX_REQUIRE_LIVE=1``).
    """
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    if not env.get("KUBECONFIG"):
        unavailable("the services env sets no KUBECONFIG; run `scripts/backends/services.sh up k8s`")
    why = _ready(env.get("TORCHX_TEST_K8S_API", ""), env.get("TORCHX_TEST_K8S_TOKEN", ""))
    if why:
        unavailable(why)
    if env.get("TORCHX_TEST_K8S_KUBELET", "none") == "none":
        unavailable("the cluster has no kubelet: pods would never run")
    mp = pytest.MonkeyPatch()
    mp.setenv("KUBECONFIG", env["KUBECONFIG"])
    from kubernetes import client, config

    api = client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration)
    core = client.CoreV1Api(api)
    namespace = unique_name("torchx-test")
    core.create_namespace({"metadata": {"name": namespace}})
    deadline = time.monotonic() + 30  # pods need the namespace's default service account
    while not core.list_namespaced_service_account(namespace).items and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        yield K8sCluster(
            kubeconfig=env["KUBECONFIG"],
            image=env.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm"),
            kubelet=env.get("TORCHX_TEST_K8S_KUBELET", "docker"),
            namespace=namespace,
        )
    finally:
        core.delete_namespace(namespace)  # the namespace controller removes what is left, in the background
        api.close()
        mp.undo()


@pytest.fixture
def k8s_cfg(k8s_cluster: K8sCluster) -> dict[str, Any]:
    """Run options for the live cluster: the test namespace, local images, fast stops, and plain
    Jobs (the cluster serves Volcano's CRDs, so ``auto`` would pick Volcano, but no Volcano
    controller runs there: a Volcano Job would never start a pod)."""
    return {
        "namespace": k8s_cluster.namespace,
        "image_pull_policy": "IfNotPresent",
        "termination_grace_period": 1,
        "mode": "jobs",
    }


@pytest.fixture
def runner() -> Iterator[Any]:
    """A torchx Runner (session ``k8stest``)."""
    from torchx.runner import get_runner

    with get_runner("k8stest") as r:
        yield r
