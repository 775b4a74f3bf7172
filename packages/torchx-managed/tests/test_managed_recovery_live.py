"""Managed jobs that finish although their attempt is broken for real on a live backend:
Slurm (the attempt's node set DOWN; preempted by a higher-tier partition; a partition DOWN
with a fail-over to local_cwd), LSF (the
attempt killed on its host), Kubernetes (the attempt's container killed on the node; its pod
evicted), AWS Batch on moto (the job ended with Batch's reason for a lost host). Each backend's
``end_cause`` tells the driver why the attempt ended. Run by ``nox -s integration-managed``."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.runner import Runner, get_runner
from torchx.specs import AppDef, AppState, Resource, Role
from torchx.specs.handles import parse_app_handle
from torchx.testing import live_backend_env, unavailable, unique_name
from torchx_managed.journal import Attempt, ManagedStore

#: the app: attempt 0 says it runs (a file for host-side backends, a log line) and waits to be
#: broken; any later attempt finishes at once
SCRIPT = 'if [ "$TORCHX_ATTEMPT" = 0 ]; then {ready}echo running; exec sleep 300; fi; echo "finished on attempt $TORCHX_ATTEMPT"'


def _app(image: str, ready: str = "", resource: Resource | None = None) -> AppDef:
    cmd = SCRIPT.format(ready=f"touch {ready}; " if ready else "")
    role = Role("r", image=image, entrypoint="bash", args=["-c", cmd], resource=resource or Resource(1, 0, 128))
    return AppDef(f"recover-{uuid.uuid4().hex[:6]}", [role])


def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def _attempt(handle: str, n: int) -> Attempt:
    """Attempt ``n`` of the managed job once its target took it (it has a handle)."""
    app_id = parse_app_handle(handle).app_id

    def started() -> bool:
        attempts = ManagedStore().load(app_id).attempts
        return len(attempts) > n and attempts[n].handle is not None

    _until(started, 120, f"attempt {n} of {handle} to be submitted")
    return ManagedStore().load(app_id).attempts[n]


def _finished(runner: Runner, handle: str, timeout: float = 240) -> list[tuple[str, str | None, str | None]]:
    """Waits for the managed job to succeed; (target, state, cause) of each attempt."""
    status = runner.wait(handle, wait_interval=0.5, timeout=timeout)
    assert status is not None and status.state == AppState.SUCCEEDED, status
    attempts = ManagedStore().load(parse_app_handle(handle).app_id).attempts
    return [(a.target, a.state, a.cause) for a in attempts]


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner("recovery") as r:
        yield r


# ---------------------------------------------------------------- Slurm


def _slurm_node(job_id: str) -> str:
    out = subprocess.run(["squeue", "-h", "-r", "-j", job_id, "-o", "%N"], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


@pytest.mark.slurm
def test_slurm_node_set_down_mid_run_the_job_finishes(
    runner: Runner, slurm: str, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SBATCH_NO_REQUEUE", "1")  # the attempt ends NODE_FAIL (else Slurm requeues it itself)
    ready = os.path.join(str(shared), "running")
    cfg = {"targets": ["slurm"], "partition": slurm, "job_dir": str(shared), "controller": "local"}
    handle = runner.run(_app(str(shared), ready), "managed", cfg)
    try:
        first = _attempt(handle, 0)
        _until(lambda: os.path.exists(ready), 120, "attempt 0 to run")
        node = _slurm_node(parse_app_handle(str(first.handle)).app_id)
        subprocess.run(
            ["scontrol", "update", f"nodename={node}", "state=down", "reason=torchx-managed-test"], check=True
        )
        # back at once (other tests share the cluster); ReturnToService=2 may have done it already
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], capture_output=True, check=False)
        assert _finished(runner, handle) == [("slurm", "FAILED", "NODE_FAILURE"), ("slurm", "SUCCEEDED", None)]
    finally:
        runner.cancel(handle)


@pytest.mark.slurm
def test_slurm_partition_down_fails_over_to_local_cwd_and_leaves_nothing_queued(
    runner: Runner, slurm: str, shared: Path
) -> None:
    partition = f"torchx-down-{uuid.uuid4().hex[:6]}"
    node = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True).stdout.split()[-1]
    subprocess.run(["scontrol", "create", f"PartitionName={partition}", f"Nodes={node}", "State=DOWN"], check=True)
    try:
        cfg = {
            "targets": ["slurm", "local_cwd"],
            "pending_timeout": "5s",
            "partition": partition,
            "job_dir": str(shared),
        }
        app = _app(str(shared))
        app.roles[0].args = ["-c", 'echo "finished on attempt $TORCHX_ATTEMPT"']
        handle = runner.run(app, "managed", cfg)
        attempts = _finished(runner, handle, timeout=120)
        assert attempts == [("slurm", "CANCELLED", "NO_CAPACITY"), ("local_cwd", "SUCCEEDED", None)]
        slurm_job = parse_app_handle(str(_attempt(handle, 0).handle)).app_id
        left = subprocess.run(["squeue", "-h", "-j", slurm_job, "-t", "PD,R"], capture_output=True, text=True).stdout
        assert left.strip() == "", left  # nothing left queued
    finally:
        subprocess.run(["scontrol", "delete", f"PartitionName={partition}"], check=False)


@pytest.mark.slurm
def test_slurm_attempt_preempted_is_recovered(runner: Runner, slurm: str, shared: Path) -> None:
    parts = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True).stdout.split()
    if not {"preemptible", "urgent"} <= {p.rstrip("*") for p in parts}:
        unavailable("the cluster has no 'preemptible'/'urgent' partitions: rerun scripts/backends/slurm-up.sh")
    ready = os.path.join(str(shared), "running")
    handle = runner.run(
        _app(str(shared), ready),
        "managed",
        {"targets": ["slurm"], "partition": "preemptible", "job_dir": str(shared), "controller": "local"},
    )
    try:
        _attempt(handle, 0)
        _until(lambda: os.path.exists(ready), 120, "attempt 0 to run")
        # a whole-node job of the higher-tier 'urgent' partition takes the node back
        urgent = runner.run(
            AppDef(
                "urgent", [Role("u", image=str(shared), entrypoint="sleep", args=["1"], resource=Resource(1, 0, 128))]
            ),
            "slurm",
            {"partition": "urgent", "exclusive": True, "job_dir": str(shared)},
        )
        assert _finished(runner, handle) == [("slurm", "FAILED", "PREEMPTED"), ("slurm", "SUCCEEDED", None)]
        runner.wait(urgent, wait_interval=0.5, timeout=60)
    finally:
        runner.cancel(handle)


# ---------------------------------------------------------------- LSF (OpenLava)


@pytest.mark.lsf
def test_lsf_attempt_killed_from_outside_is_recovered(runner: Runner, lsf: None, shared: Path) -> None:
    pidfile = os.path.join(str(shared), "pid")
    app = _app(str(shared))
    app.roles[0].args = [
        "-c",
        f'if [ "$TORCHX_ATTEMPT" = 0 ]; then echo $BASHPID > {pidfile}; exec sleep 300; fi;'
        ' echo "finished on attempt $TORCHX_ATTEMPT"',
    ]
    handle = runner.run(app, "managed", {"targets": ["lsf"], "controller": "local", "job_dir": str(shared)})
    try:
        _until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, 120, "attempt 0 to run")
        with open(pidfile) as f:
            os.kill(int(f.read()), 9)  # a signal torchx did not send
        assert _finished(runner, handle) == [("lsf", "FAILED", "KILLED"), ("lsf", "SUCCEEDED", None)]
    finally:
        runner.cancel(handle)


# ---------------------------------------------------------------- Kubernetes


@pytest.fixture
def k8s(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A fresh namespace on the live cluster: (core API, the run options for it)."""
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    pytest.importorskip("torchx_sched_k8s", reason="needs torchx-sched-k8s")
    if env.get("TORCHX_TEST_K8S_KUBELET", "none") == "none":
        unavailable("the cluster has no kubelet: pods would never run")
    monkeypatch.setenv("KUBECONFIG", env["KUBECONFIG"])
    from kubernetes import client, config

    api = client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration)
    core = client.CoreV1Api(api)
    namespace = unique_name("torchx-recovery")
    core.create_namespace({"metadata": {"name": namespace}})
    deadline = time.monotonic() + 30
    while not core.list_namespaced_service_account(namespace).items and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        yield {
            "core": core,
            "kubelet": env.get("TORCHX_TEST_K8S_KUBELET"),
            "image": env.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm"),
            # plain Jobs: the test cluster may serve Volcano's CRD without running its controller
            "cfg": {
                "namespace": namespace,
                "mode": "jobs",
                "image_pull_policy": "IfNotPresent",
                "termination_grace_period": 1,
            },
        }
    finally:
        core.delete_namespace(namespace)
        api.close()


def _running_pod(core: Any, attempt: Attempt) -> Any:
    from torchx_sched_k8s import names

    namespace, name = names.parse_app_id(parse_app_handle(str(attempt.handle)).app_id)
    found: list[Any] = []

    def running() -> bool:
        pods = core.list_namespaced_pod(namespace, label_selector=names.app_selector(name)).items
        found[:] = [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        return bool(found)

    _until(running, 120, "the attempt's pod to run")
    return found[0]


@pytest.mark.k8s
def test_k8s_container_killed_on_the_node_is_recovered(runner: Runner, k8s: dict[str, Any]) -> None:
    if k8s["kubelet"] != "docker":
        pytest.skip("needs the docker kubelet: the container is killed with `docker kill`")
    handle = runner.run(_app(k8s["image"]), "managed", {"targets": ["kubernetes"], "controller": "local", **k8s["cfg"]})
    try:
        pod = _running_pod(k8s["core"], _attempt(handle, 0))
        ids = subprocess.run(
            ["docker", "ps", "-q", "--filter", f"name=k8s_r_{pod.metadata.name}"], capture_output=True, text=True
        ).stdout.split()
        assert ids, pod.metadata.name
        subprocess.run(["docker", "kill", *ids], check=True, capture_output=True)
        attempts = _finished(runner, handle)
        assert attempts == [("kubernetes", "FAILED", "KILLED"), ("kubernetes", "SUCCEEDED", None)]
    finally:
        runner.cancel(handle)


@pytest.mark.k8s
def test_k8s_pod_evicted_mid_run_the_job_finishes(runner: Runner, k8s: dict[str, Any]) -> None:
    # the Job runs an evicted pod again itself: the attempt goes on and ends well
    app = _app(k8s["image"])
    app.roles[0].args = ["-c", "echo running; sleep 6; echo finished"]
    handle = runner.run(app, "managed", {"targets": ["kubernetes"], "controller": "local", **k8s["cfg"]})
    try:
        pod = _running_pod(k8s["core"], _attempt(handle, 0))
        body = {"metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace}}
        k8s["core"].create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, body)
        assert _finished(runner, handle) == [("kubernetes", "SUCCEEDED", None)]
    finally:
        runner.cancel(handle)


# ---------------------------------------------------------------- AWS Batch (moto)


@pytest.fixture
def batch(monkeypatch: pytest.MonkeyPatch) -> str:
    """The moto endpoint's Batch queue (jobs run as real containers)."""
    env = live_backend_env("TORCHX_TEST_AWS", "moto")
    pytest.importorskip("torchx_sched_aws", reason="needs torchx-sched-aws")
    if env.get("TORCHX_TEST_AWS_BATCH_DOCKER") != "1":
        unavailable("moto runs Batch without Docker: jobs never run")
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return env.get("TORCHX_TEST_AWS_BATCH_QUEUE") or "torchx"


@pytest.mark.aws
def test_batch_job_ended_by_a_lost_host_is_recovered(runner: Runner, batch: str) -> None:
    from torchx_sched_aws.batch import create_scheduler

    image = os.environ.get("TORCHX_TEST_AWS_IMAGE", "localhost/torchx-python:bookworm")
    handle = runner.run(_app(image), "managed", {"targets": ["aws_batch"], "controller": "local", "queue": batch})
    try:
        app_id = parse_app_handle(str(_attempt(handle, 0).handle)).app_id
        sched = create_scheduler("recovery")
        _until(lambda: (d := sched.describe(app_id)) is not None and d.state == AppState.RUNNING, 120, "attempt 0")
        job = sched._job(app_id)
        assert job is not None
        # what Batch writes when the EC2 host (or its Spot capacity) goes away
        sched._clients("batch").terminate_job(jobId=job["jobId"], reason="Host EC2 (instance i-0abc) terminated.")
        attempts = _finished(runner, handle)
        assert attempts == [("aws_batch", "FAILED", "NODE_FAILURE"), ("aws_batch", "SUCCEEDED", None)]
    finally:
        runner.cancel(handle)


def test_the_script_reads_the_attempt_number(tmp_path: Path) -> None:
    cmd = _app("/tmp").roles[0].args[1]
    for attempt, out in (("1", "finished on attempt 1\n"), ("2", "finished on attempt 2\n")):
        proc = subprocess.run(["bash", "-c", cmd], env={**os.environ, "TORCHX_ATTEMPT": attempt}, capture_output=True)
        assert proc.stdout.decode() == out
