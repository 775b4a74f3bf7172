"""Failover on a live backend: an attempt that stays pending on Kubernetes (its pod can be
placed on no node) past ``pending_timeout`` is cancelled, nothing stays queued, and the next
target (local_cwd) runs the app. Needs the API server of ``scripts/backends/services.sh up k8s``
(with kube-scheduler), torchx-sched-k8s and torchx-sched-local."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.specs import AppState, Resource
from torchx.specs.handles import parse_app_handle
from torchx.testing import live_backend_env, unique_name
from torchx.testing.apps import command_app
from torchx_managed.journal import ManagedStore

pytestmark = pytest.mark.k8s


@pytest.fixture
def namespace(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh namespace on the live cluster (deleted afterwards)."""
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    pytest.importorskip("torchx_sched_k8s", reason="needs torchx-sched-k8s")
    pytest.importorskip("torchx_sched_local", reason="needs torchx-sched-local")
    monkeypatch.setenv("KUBECONFIG", env["KUBECONFIG"])
    from kubernetes import client, config

    core = client.CoreV1Api(client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration))
    name = unique_name("torchx-managed")
    core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 30  # pods need the namespace's default service account
    while not core.list_namespaced_service_account(name).items and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        yield name
    finally:
        core.delete_namespace(name)


def test_pending_past_the_timeout_fails_over_to_the_next_target(namespace: str, isolated: Path) -> None:
    from kubernetes import client, config

    image = os.environ.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm")
    app = command_app(
        "sh", "-c", "echo attempt $TORCHX_ATTEMPT", name="failover", image=image, resource=Resource(1, 0, 128)
    )
    cfg = {
        "targets": ["kubernetes", "local_cwd"],
        "pending_timeout": "4s",
        "namespace": namespace,  # kubernetes' options: passed to the target that declares them
        "node_selector": {"torchx-test/placement": "nowhere"},
        "reserved_memmb": 0,
    }
    with get_runner("mfailover") as runner:
        start = time.monotonic()
        handle = runner.run(app, "managed", cfg)
        status = runner.wait(handle, wait_interval=0.2, timeout=120)
        took = time.monotonic() - start
        assert status is not None and status.state == AppState.SUCCEEDED, status
        state = ManagedStore().load(parse_app_handle(handle).app_id)
        assert [(a.target, a.state, a.cause) for a in state.attempts] == [
            ("kubernetes", "CANCELLED", "NO_CAPACITY"),
            ("local_cwd", "SUCCEEDED", None),
        ]
        assert "pending_timeout" in state.attempts[0].reason
        assert 4 <= took < 60
        assert "".join(runner.log_lines(str(state.attempts[1].handle), "r", 0)).strip() == "attempt 1"
    core = client.CoreV1Api(client.ApiClient(config.new_client_from_config(os.environ["KUBECONFIG"]).configuration))
    pods = core.list_namespaced_pod(namespace).items
    assert all(p.status.phase in ("Succeeded", "Failed") or p.metadata.deletion_timestamp for p in pods), [
        (p.metadata.name, p.status.phase) for p in pods
    ]  # nothing left queued
