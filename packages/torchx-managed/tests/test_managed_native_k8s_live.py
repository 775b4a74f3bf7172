"""Managed jobs that recover inside Kubernetes (the live API server and a real kubelet on
Docker), with nothing of torchx's left on the submitting side.

Each test submits with ``torchx run --detach`` from a client in its own PID namespace (torn
down when it returns), moves that client's HOME away, breaks the running attempt on the node
(its container killed with ``docker kill``, its pod evicted; and an application error), and
reads the job from a second client with a fresh HOME. The checkpoint directory is a hostPath
mount every attempt's pod gets (the kubelet runs on this machine). Both clients find the API
server through ``KUBECONFIG``, which a :class:`Machine` keeps. Run by ``nox -s integration-managed``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import live_backend_env, unavailable, unique_name
from torchx.testing.machines import Machine
from torchx.testing.processes import eventually

COUNTER = Path(__file__).with_name("counter.py")
#: steps of the counter and seconds per step: attempt 0 runs long enough to be broken mid-run
STEPS, STEP_SECONDS = 40, 0.25
#: the app: the counter, its directory mounted from this machine at the same path
COMPONENT = """
from torchx import specs


def counter(shared: str, image: str, plan: str, steps: int = {steps}) -> specs.AppDef:
    role = specs.Role(
        "counter",
        image=image,
        entrypoint="python3",
        args=[shared + "/counter.py", str(steps), "{step}", plan],
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
        mounts=[specs.BindMount(src_path=shared, dst_path=shared)],
    )
    return specs.AppDef("counter", [role])
"""


@pytest.fixture
def k8s() -> Iterator[dict[str, Any]]:
    """A fresh namespace on the live cluster: its name, the core API, the image."""
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    pytest.importorskip("torchx_sched_k8s", reason="needs torchx-sched-k8s")
    if env.get("TORCHX_TEST_K8S_KUBELET") != "docker":
        unavailable("needs the real kubelet on Docker: attempts are broken with `docker kill`")
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to tear the submitting client down")
    if os.environ.get("KUBECONFIG") != env["KUBECONFIG"]:
        pytest.fail(f"export KUBECONFIG={env['KUBECONFIG']}: the clients find the API server through it")
    from kubernetes import client, config

    api = client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration)
    core = client.CoreV1Api(api)
    namespace = unique_name("torchx-native")
    core.create_namespace({"metadata": {"name": namespace}})
    deadline = time.monotonic() + 30
    while not core.list_namespaced_service_account(namespace).items and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        yield {"namespace": namespace, "core": core, "image": env.get("TORCHX_TEST_K8S_IMAGE")}
    finally:
        core.delete_namespace(namespace)
        api.close()


def _submit(client: Machine, shared: Path, k8s: dict[str, Any], plan: str, *cfg: str, steps: int = STEPS) -> str:
    component = shared / "component.py"
    component.write_text(COMPONENT.format(steps=steps, step=STEP_SECONDS))
    opts = ",".join(
        [
            "targets=kubernetes",
            f"namespace={k8s['namespace']}",
            "mode=jobs",
            "image_pull_policy=IfNotPresent",
            "termination_grace_period=1",
            f"checkpoint_dir={shared}/ckpt",
            *cfg,
        ]
    )
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", opts, f"{component}:counter",
        "--shared", str(shared), "--image", str(k8s["image"]), "--plan", plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://") and "/kubernetes:" in handle, proc.stdout + proc.stderr
    return handle


def _count(shared: Path) -> int:
    path = shared / "ckpt" / "count"
    return int(path.read_text()) if path.exists() else 0


def _still_for(shared: Path, seconds: float) -> bool:
    """True if the counter did not move for ``seconds``."""
    before = _count(shared)
    time.sleep(seconds)
    return _count(shared) == before


def _running_pod(k8s: dict[str, Any]) -> str:
    """The name of the job's pod whose container runs (one at a time)."""
    found: list[str] = []

    def running() -> bool:
        pods = k8s["core"].list_namespaced_pod(k8s["namespace"]).items
        found[:] = [p.metadata.name for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
        return len(found) == 1

    eventually(running, 120, 0.3, "the attempt's pod to run")
    return found[0]


def _steps(shared: Path) -> list[tuple[int, int]]:
    lines = (shared / "ckpt" / "steps").read_text().split("\n")
    return [(int(a), int(c)) for a, c in (line.split() for line in lines if line)]


@pytest.mark.k8s
def test_container_killed_then_app_error_recovers_with_no_client_left(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    # attempt 0 counts (its container is killed on the node), attempt 1 exits 1, attempt 2 finishes
    handle = _submit(submitter, shared, k8s, "0,1,0", "max_restarts=1", "max_recoveries=2")
    submitter.gone()

    eventually(lambda: _count(shared) >= 3, 120, 0.3, "attempt 0 to checkpoint a few steps")
    pod = _running_pod(k8s)
    ids = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"name=k8s_counter_{pod}_"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert ids, f"no container of pod {pod} on the node"
    subprocess.run(["docker", "kill", *ids], check=True, capture_output=True)

    status = other.ended(handle)
    assert status["state"] == "SUCCEEDED", status
    attempts = status["attempts"]
    assert [(a["attempt"], a["state"], a["cause"], a["exit_code"]) for a in attempts] == [
        (0, "FAILED", "KILLED", 137),
        (1, "FAILED", "APP_ERROR", 1),
        (2, "SUCCEEDED", None, 0),
    ], attempts
    assert _count(shared) == STEPS
    steps = _steps(shared)
    assert [c for _, c in steps] == list(range(1, STEPS + 1)), "a step was lost or counted twice across the attempts"
    assert {a for a, _ in steps} == {0, 2}
    # every attempt's output, in order, from the other machine
    log = other.torchx("log", handle).stdout
    assert log.index("attempt 0 starts") < log.index("attempt 1 starts") < log.index("attempt 2 resumes"), log


@pytest.mark.k8s
def test_pod_evicted_is_recovered_with_the_next_attempt_number(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    steps = 200  # 50 s of work: the eviction takes effect long before the app could end by itself
    handle = _submit(submitter, shared, k8s, "0", "max_recoveries=1", steps=steps)
    submitter.gone()
    eventually(lambda: _count(shared) >= 3, 120, 0.3, "attempt 0 to checkpoint a few steps")
    pod = _running_pod(k8s)
    k8s["core"].create_namespaced_pod_eviction(pod, k8s["namespace"], {"metadata": {"name": pod}})

    status = other.ended(handle)
    assert status["state"] == "SUCCEEDED", status
    # this server (before 1.26) keeps nothing of an evicted pod: the attempt reads as ended from outside
    assert [(a["attempt"], a["state"], a["cause"]) for a in status["attempts"]] == [
        (0, "FAILED", "KILLED"),
        (1, "SUCCEEDED", None),
    ], status["attempts"]
    assert (shared / "ckpt" / "pid-1").exists(), "the replacement pod did not get TORCHX_ATTEMPT=1"
    assert _count(shared) == steps
    assert [c for _, c in _steps(shared)] == list(range(1, steps + 1))


@pytest.mark.k8s
def test_cancel_from_another_machine_stops_it_for_good(tmp_path: Path, k8s: dict[str, Any], shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, k8s, "0", "max_restarts=3", "max_recoveries=3", steps=400)
    submitter.gone()
    eventually(lambda: _count(shared) >= 1, 120, 0.3, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")
    # the app stops counting (its process ended): what the kubelet of a busy 2-CPU node reports
    # of the pod came minutes late in CI (the pod read Running for over 180 s, grace period 1 s)
    eventually(lambda: _still_for(shared, 8 * STEP_SECONDS), 180, 0.3, "the attempt to stop counting")
    reached = _count(shared)
    time.sleep(15)  # longer than the Job controller's first back-off: no new attempt comes
    assert _count(shared) == reached, "the job kept counting after its cancel"
    assert not (shared / "ckpt" / "pid-1").exists(), "a new attempt started after the cancel"
    status = other.status(handle)
    assert status["state"] == "CANCELLED", status
    assert [(a["state"], a["cause"]) for a in status["attempts"]] == [("CANCELLED", "CANCELLED")], status


@pytest.mark.k8s
def test_max_restarts_used_up_ends_failed_with_every_attempt(tmp_path: Path, k8s: dict[str, Any], shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    # this server counts every failed pod alike: backoffLimit = max_restarts + max_recoveries = 1
    handle = _submit(client, shared, k8s, "3,3,3", "max_restarts=1", "max_recoveries=0")
    status = client.ended(handle, 180)
    assert status["state"] == "FAILED", status
    assert [(a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        ("FAILED", "APP_ERROR", 3),
        ("FAILED", "APP_ERROR", 3),
    ], status["attempts"]


@pytest.mark.k8s
def test_an_app_of_several_replicas_is_refused_by_native_and_driven_locally_by_auto(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    client = Machine(tmp_path, "laptop")
    cfg = f"targets=kubernetes,namespace={k8s['namespace']},mode=jobs,checkpoint_dir={shared}/ckpt"
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", cfg + ",controller=native", "utils.echo", "--num_replicas", "2",
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "runs apps of one replica" in proc.stderr and "controller=local" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not k8s["core"].list_namespaced_pod(k8s["namespace"]).items, "something was submitted"
    # auto: the same job is driven from this machine, and the user is told why
    proc = client.torchx("run", "--dryrun", "-s", "managed", "-cfg", cfg, "utils.echo", "--num_replicas", "2")
    assert "recovers through a driver on this machine: kubernetes: recovery inside" in proc.stderr, proc.stderr
