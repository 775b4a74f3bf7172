"""Fixtures: apps for request tests, and the live Kubernetes API server from scripts/backends/services.sh."""

from __future__ import annotations

import os
import shlex
import ssl
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

ENV_FILE = os.path.join(os.environ.get("TORCHX_SERVICES_DIR", "/tmp/torchx-services"), "env.sh")


def read_env_file(path: str) -> dict[str, str]:
    """The ``export K=V`` lines of the services env file (``unset`` lines drop keys)."""
    env: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if len(words) >= 2 and words[0] == "export" and "=" in words[1]:
                key, _, value = words[1].partition("=")
                env[key] = value
            elif words and words[0] == "unset":
                for key in words[1:]:
                    env.pop(key, None)
    return env


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


def _unavailable(reason: str) -> None:
    if os.environ.get("TORCHX_REQUIRE_LIVE") == "1":
        pytest.fail(f"live Kubernetes required (TORCHX_REQUIRE_LIVE=1) but unavailable: {reason}")
    pytest.skip(f"no live Kubernetes: {reason}")


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
    env = dict(os.environ) if os.environ.get("TORCHX_TEST_K8S") == "1" else {}
    if not env:
        if not os.path.exists(ENV_FILE):
            _unavailable(f"{ENV_FILE} is missing; run `scripts/backends/services.sh up k8s`")
        env = read_env_file(ENV_FILE)
    if env.get("TORCHX_TEST_K8S") != "1" or not env.get("KUBECONFIG"):
        _unavailable(f"{ENV_FILE} says k8s is down; run `scripts/backends/services.sh up k8s`")
    why = _ready(env.get("TORCHX_TEST_K8S_API", ""), env.get("TORCHX_TEST_K8S_TOKEN", ""))
    if why:
        _unavailable(why)
    if env.get("TORCHX_TEST_K8S_KUBELET", "none") == "none":
        _unavailable("the cluster has no kubelet: pods would never run")
    mp = pytest.MonkeyPatch()
    mp.setenv("KUBECONFIG", env["KUBECONFIG"])
    from kubernetes import client, config

    api = client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration)
    core = client.CoreV1Api(api)
    namespace = f"torchx-test-{os.getpid()}-{int(time.time()) % 100000}"
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
    """Run options for the live cluster: the test namespace, local images, fast stops."""
    return {"namespace": k8s_cluster.namespace, "image_pull_policy": "IfNotPresent", "termination_grace_period": 1}


@pytest.fixture
def runner() -> Iterator[Any]:
    """A torchx Runner (session ``k8stest``)."""
    from torchx.runner import get_runner

    with get_runner("k8stest") as r:
        yield r
