"""A managed job driven by a controller that runs as a Kubernetes Deployment
(``controller=kubernetes``) on the live API server and its real kubelet on Docker, with its
journal on a directory the node mounts into the controller's pod (a hostPath).

The test cluster's image holds no torchx: the controller's pod mounts this machine's dev
virtualenv, its Python and the repository at the same paths (``controller_mounts``) and runs
that Python (``controller_python``), as the README describes for such a cluster.

Each test submits from a client in its own PID namespace (torn down when ``torchx run
--detach`` returns), moves its HOME away, and reads the job from a second client with a fresh
HOME. Run by ``nox -s integration-managed``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import live_backend_env, unavailable, unique_name
from torchx.testing.machines import Machine
from torchx.testing.processes import eventually

#: steps of the counter and seconds per step: attempt 0 outlives a controller pod's replacement
STEPS, STEP_SECONDS = 80, 0.25
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
CONTROLLER_LABEL = "torchx.pytorch.org/managed-controller"


@pytest.fixture
def k8s() -> Iterator[dict[str, Any]]:
    """A fresh namespace on the live cluster: its name, the core/apps/authorization APIs, the image."""
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    pytest.importorskip("torchx_sched_k8s", reason="needs torchx-sched-k8s")
    if env.get("TORCHX_TEST_K8S_KUBELET") != "docker":
        unavailable("needs the real kubelet on Docker: the controller runs as a pod, attempts are killed with docker")
    if os.environ.get("KUBECONFIG") != env["KUBECONFIG"]:
        pytest.fail(f"export KUBECONFIG={env['KUBECONFIG']}: the clients find the API server through it")
    from kubernetes import client, config

    api = client.ApiClient(config.new_client_from_config(env["KUBECONFIG"]).configuration)
    core = client.CoreV1Api(api)
    namespace = unique_name("torchx-ctl")
    core.create_namespace({"metadata": {"name": namespace}})
    eventually(lambda: bool(core.list_namespaced_service_account(namespace).items), 30, 0.2, "the default SA")
    try:
        yield {
            "namespace": namespace,
            "core": core,
            "auth": client.AuthorizationV1Api(api),
            "batch": client.BatchV1Api(api),
            "image": env.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm"),
        }
    finally:
        core.delete_namespace(namespace)
        api.close()


def _python_mounts() -> list[str]:
    """What the controller's pod mounts to run this interpreter's torchx: the virtualenv, the
    Python it was made from, and the repository its editable installs point into."""
    venv = Path(sys.prefix)
    base = Path(os.path.realpath(sys.base_prefix))
    repo = Path(__file__).resolve().parents[3]
    return [str(venv), str(base), str(repo)]


def _submit(
    client: Machine, shared: Path, k8s: dict[str, Any], plan: str, *cfg: str, steps: int = STEPS, journal: str = ""
) -> str:
    """Submits the counter; its journal on ``shared`` (the pod mounts it), or at ``journal``."""
    component = shared / "component.py"
    component.write_text(COMPONENT.format(steps=steps, step=STEP_SECONDS))
    opts = ",".join(
        [
            "targets=kubernetes",
            f"namespace={k8s['namespace']}",
            "mode=jobs",
            "image_pull_policy=IfNotPresent",
            "termination_grace_period=1",
            "controller=kubernetes",
            f"journal={journal or shared / 'journal'}",
            f"controller_image={k8s['image']}",
            f"controller_python={sys.executable}",
            "controller_mounts=" + ";".join([*_python_mounts(), *([] if journal else [str(shared)])]),
            f"checkpoint_dir={shared}/ckpt",
            *cfg,
        ]
    )
    proc = client.torchx(
        "run", "--detach", "--workspace", "", "-s", "managed", "-cfg", opts, f"{component}:counter",
        "--shared", str(shared), "--image", str(k8s["image"]), "--plan", plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://") and "@" in handle, proc.stdout + proc.stderr
    return handle


def _pods(k8s: dict[str, Any], controller: bool) -> list[Any]:
    """The namespace's live (not deleted) pods of the controller, or of the attempts."""
    pods = k8s["core"].list_namespaced_pod(k8s["namespace"]).items
    return [
        p
        for p in pods
        if not p.metadata.deletion_timestamp and (CONTROLLER_LABEL in (p.metadata.labels or {})) == controller
    ]


def _controller_pod(k8s: dict[str, Any], other_than: str = "") -> str:
    """The name of the controller's running pod (not ``other_than``) once it drives a job."""
    found: list[str] = []

    def driving() -> bool:
        found[:] = [
            p.metadata.name for p in _pods(k8s, True) if p.status.phase == "Running" and p.metadata.name != other_than
        ]
        return len(found) == 1 and "driving job" in _log(k8s, found[0])

    eventually(driving, 120, 0.5, "the controller's pod to drive the job")
    return found[0]


def _log(k8s: dict[str, Any], pod: str) -> str:
    try:
        return str(k8s["core"].read_namespaced_pod_log(pod, k8s["namespace"]))
    except Exception as e:  # not started yet
        return f"<no log: {e}>"


def _count(shared: Path) -> int:
    path = shared / "ckpt" / "count"
    return int(path.read_text()) if path.exists() else 0


def _allowed(k8s: dict[str, Any], verb: str, resource: str, group: str = "") -> bool:
    """Whether the controller's ServiceAccount may ``verb`` ``resource`` in the namespace."""
    sa = next(p.spec.service_account_name for p in _pods(k8s, True))
    review = k8s["auth"].create_subject_access_review(
        {
            "spec": {
                "user": f"system:serviceaccount:{k8s['namespace']}:{sa}",
                "resourceAttributes": {
                    "namespace": k8s["namespace"],
                    "verb": verb,
                    "resource": resource,
                    "group": group,
                },
            }
        }
    )
    return bool(review.status.allowed)


def _cancelled_from_another_machine(tmp_path: Path, k8s: dict[str, Any], shared: Path, **submit: Any) -> None:
    """A long job whose submitter is gone, cancelled from another machine: it reads CANCELLED
    (one attempt, CANCELLED), its attempt's pods stop and it counts no more."""
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, k8s, "0", "max_restarts=3", "max_recoveries=3", steps=400, **submit)
    submitter.gone()
    pod = _controller_pod(k8s)
    eventually(lambda: _count(shared) >= 1, 120, 0.3, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")

    def stopped() -> bool:  # deleted pods included: their containers may still run
        pods = k8s["core"].list_namespaced_pod(k8s["namespace"]).items
        return not [
            p for p in pods if p.status.phase == "Running" and CONTROLLER_LABEL not in (p.metadata.labels or {})
        ]

    try:
        eventually(stopped, 180, 0.3, "the attempt's pod to stop")  # a busy 2-CPU kubelet took over 60 s
    except AssertionError as e:
        jobs = [(j.metadata.name, j.spec.parallelism) for j in k8s["batch"].list_namespaced_job(k8s["namespace"]).items]
        raise AssertionError(f"{e}; Jobs {jobs}; the controller's log:\n{_log(k8s, pod)}") from None
    reached = _count(shared)
    time.sleep(3)
    assert _count(shared) == reached, "the attempt kept counting after the cancel"
    status = other.status(handle)
    assert [(a["state"], a["cause"]) for a in status["attempts"]] == [("CANCELLED", "CANCELLED")], status


def _kill_the_running_attempt(k8s: dict[str, Any]) -> None:
    """``docker kill`` of the container of the one attempt pod running on the node (once the
    API reads it Running: a loaded kubelet reports a started container seconds late)."""
    attempt: list[str] = []

    def running() -> bool:
        attempt[:] = [p.metadata.name for p in _pods(k8s, False) if p.status.phase == "Running"]
        return len(attempt) == 1

    eventually(running, 60, 0.3, "one attempt pod to read Running")
    ids = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"name=k8s_counter_{attempt[0]}_"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert ids, f"no container of pod {attempt[0]} on the node"
    subprocess.run(["docker", "kill", *ids], check=True, capture_output=True)


def _recovered_from_the_kill(status: dict[str, Any], shared: Path, steps: int, log: str) -> None:
    """The job read SUCCEEDED after attempt 0 was killed, and counted every step once; the
    controller's log (``log``) shows it took the Lease and saw attempt 0 fail."""
    assert status["state"] == "SUCCEEDED", (status, log)
    assert [(a["attempt"], a["state"], a["cause"]) for a in status["attempts"]] == [
        (0, "FAILED", "KILLED"),
        (1, "SUCCEEDED", None),
    ], status["attempts"]
    assert _count(shared) == steps
    lines = (shared / "ckpt" / "steps").read_text().split()
    assert [int(c) for c in lines[1::2]] == list(range(1, steps + 1)), "a step was lost or counted twice"
    assert "took lease" in log and "attempt 0: FAILED" in log, log


@pytest.mark.k8s
def test_controller_pod_deleted_then_attempt_killed_recovers_with_no_client_left(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, k8s, "0", "max_recoveries=2")
    submitter.gone()
    first = _controller_pod(k8s)
    eventually(lambda: _count(shared) >= 2, 120, 0.3, "attempt 0 to checkpoint")

    # the controller's pod is lost: its Deployment starts another, which takes the Lease and resumes
    k8s["core"].delete_namespaced_pod(first, k8s["namespace"])
    second = _controller_pod(k8s, other_than=first)
    assert _count(shared) < STEPS, "attempt 0 ended before the controller was replaced: nothing was tested"

    # then the attempt's container is killed on the node: the new controller starts attempt 1
    _kill_the_running_attempt(k8s)
    _recovered_from_the_kill(other.ended(handle, 240), shared, STEPS, _log(k8s, second))
    controller = json.loads((shared / "journal" / "controller.json").read_text())["handle"]
    assert controller.startswith(f"deployment {k8s['namespace']}/torchx-controller-"), controller
    # the controller's ServiceAccount may drive Jobs and read pods' logs there, and nothing else
    assert _allowed(k8s, "create", "jobs", "batch") and _allowed(k8s, "get", "pods/log")
    assert not _allowed(k8s, "list", "secrets") and not _allowed(k8s, "create", "deployments", "apps")
    assert not _allowed(k8s, "create", "roles", "rbac.authorization.k8s.io")


@pytest.mark.k8s
def test_cancel_from_another_machine_reaches_the_kubernetes_controller(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    _cancelled_from_another_machine(tmp_path, k8s, shared)


@pytest.mark.k8s
def test_an_idle_controller_scales_to_zero_and_the_next_job_scales_it_back(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    from kubernetes import client
    from torchx_managed.controller import IDLE_EXIT

    apps = client.AppsV1Api(k8s["core"].api_client)
    first, second = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(first, shared, k8s, "0", steps=4)
    assert first.ended(handle, 180)["state"] == "SUCCEEDED"
    (deployment,) = apps.list_namespaced_deployment(k8s["namespace"]).items
    name = deployment.metadata.name

    def replicas() -> int:
        return int(apps.read_namespaced_deployment(name, k8s["namespace"]).spec.replicas or 0)

    eventually(
        lambda: replicas() == 0 and not _pods(k8s, True), IDLE_EXIT + 90, 1.0, "the idle controller to scale to 0"
    )
    (shared / "ckpt" / "count").unlink()
    handle = _submit(second, shared, k8s, "0", steps=4)
    assert replicas() == 1, "the submission did not scale the controller back"
    assert second.ended(handle, 180)["state"] == "SUCCEEDED"
    assert _count(shared) == 4


@pytest.mark.k8s
def test_a_frozen_controller_loses_its_lease_and_stops_when_it_wakes(
    tmp_path: Path, k8s: dict[str, Any], shared: Path
) -> None:
    """Fencing across nodes: a controller process frozen past its Lease (a partitioned node)
    loses it to another, and stops as soon as it runs again, without taking it back."""
    from torchx_managed.lease import LEASE_DURATION, Lease
    from torchx_sched_k8s.kubeapi import KubeApi

    journal = shared / "journal"
    journal.mkdir()
    name = "torchx-controller-fencing"
    api = KubeApi()
    from torchx_managed.lease import lease_object

    api.create(lease_object(k8s["namespace"], name))
    log = open(tmp_path / "holder.log", "w")  # noqa: SIM115 (the process writes it)
    holder = subprocess.Popen(
        [sys.executable, "-m", "torchx_managed.controller", str(journal), "--lease", f"{k8s['namespace']}/{name}"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        eventually(
            lambda: "controlling the managed jobs" in (tmp_path / "holder.log").read_text(), 30, 0.2, "the holder"
        )
        contender = Lease(api, k8s["namespace"], name, "contender")
        assert not contender.try_acquire(), "took a Lease its holder renews"
        holder.send_signal(signal.SIGSTOP)  # frozen: it renews nothing
        frozen = time.monotonic()
        stop = threading.Event()
        threading.Timer(LEASE_DURATION + 30, stop.set).start()
        assert contender.acquire(stop), "the contender never got the Lease of a frozen holder"
        waited = time.monotonic() - frozen
        assert LEASE_DURATION - 1 <= waited <= LEASE_DURATION + 10, waited
        contender.keep(lambda: None)
        holder.send_signal(signal.SIGCONT)
        assert holder.wait(timeout=20) == 1, "the holder went on after it lost its Lease"
        text = (tmp_path / "holder.log").read_text()
        assert "lost lease" in text, text
        current = api.get_lease(k8s["namespace"], name)
        assert current is not None and current["spec"]["holderIdentity"] == "contender", current
        stop.set()
        contender.release()
        released = api.get_lease(k8s["namespace"], name)
        assert released is not None and not released["spec"].get("holderIdentity"), released
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            holder.wait()
        log.close()
        api.close()


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, str]]]:
    """A fresh ``s3://`` journal on the moto endpoint, and the submitting machines' ``AWS_*``
    credentials: made up here, so that a leak of any of them is found by its value."""
    from torchx.testing.buckets import live_s3_prefix

    url = live_s3_prefix("torchx-k8s-controller-live")
    tag = f"{os.getpid()}x{int(time.time() * 1000) % 10**9}"
    made = {
        "AWS_ACCESS_KEY_ID": f"AKIATORCHX{tag}",
        "AWS_SECRET_ACCESS_KEY": f"torchx-secret-{tag}",
        "AWS_SESSION_TOKEN": f"torchx-session-{tag}",
    }
    for key, value in made.items():
        monkeypatch.setenv(key, value)  # moto takes any credentials
    yield url, made


def _secret_and_manifest(k8s: dict[str, Any], url: str) -> tuple[dict[str, str], Any, str]:
    """The controller's Secret (decoded), its Deployment, and the text of the Deployment and of
    its pods as the API server keeps them."""
    import base64

    from kubernetes import client
    from torchx_managed.k8s_controller import resource_name

    name = resource_name(url)
    apps = client.AppsV1Api(k8s["core"].api_client)
    secret = k8s["core"].read_namespaced_secret(name, k8s["namespace"])
    data = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    deployment = apps.read_namespaced_deployment(name, k8s["namespace"])
    serialize = k8s["core"].api_client.sanitize_for_serialization
    text = json.dumps([serialize(deployment), *[serialize(p) for p in _pods(k8s, True)]])
    owners = [(o.kind, o.name, o.uid) for o in secret.metadata.owner_references or []]
    assert owners == [("Deployment", name, deployment.metadata.uid)], owners
    return data, deployment, text


@pytest.mark.k8s
@pytest.mark.aws
def test_a_kubernetes_controller_on_a_bucket_journal_recovers_a_killed_attempt(
    tmp_path: Path, k8s: dict[str, Any], shared: Path, bucket: tuple[str, dict[str, str]]
) -> None:
    from torchx.testing.buckets import read_object
    from torchx_managed.k8s_controller import BUCKET_SETTINGS

    url, made = bucket
    steps = STEPS  # 20 s: attempt 0 runs when it is killed, on a loaded node too
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, k8s, "0", "max_recoveries=2", steps=steps, journal=url)
    assert "s3%3A" in handle, handle
    submitter.gone()
    pod = _controller_pod(k8s)
    eventually(lambda: _count(shared) >= 2, 120, 0.3, "attempt 0 to checkpoint")
    _kill_the_running_attempt(k8s)
    _recovered_from_the_kill(other.ended(handle, 240), shared, steps, _log(k8s, pod))
    record = json.loads(read_object(f"{url}/controller.json") or b"{}")
    assert record["handle"].startswith(f"deployment {k8s['namespace']}/torchx-controller-"), record
    # the pod reached the bucket with the submitter's credentials, from the Secret only
    data, deployment, text = _secret_and_manifest(k8s, url)
    settings = {k: os.environ[k] for k in BUCKET_SETTINGS if os.environ.get(k)}
    assert "AWS_ENDPOINT_URL" in settings and data == {**made, **settings}, sorted(data)
    leaked = [k for k, v in made.items() if v in text]
    assert not leaked and "AWS_" not in text, f"in the manifest: {leaked}"
    (container,) = deployment.spec.template.spec.containers
    assert [e.secret_ref.name for e in container.env_from] == [deployment.metadata.name]
    # nothing of the journal's is mounted: the pod mounts the Python it runs, and reads the bucket
    assert [v.host_path.path for v in deployment.spec.template.spec.volumes] == _python_mounts()
    assert not _allowed(k8s, "get", "secrets"), "the controller's account may read Secrets"


@pytest.mark.k8s
@pytest.mark.aws
def test_cancel_from_another_machine_reaches_the_kubernetes_controller_on_a_bucket(
    tmp_path: Path, k8s: dict[str, Any], shared: Path, bucket: tuple[str, dict[str, str]]
) -> None:
    from kubernetes import client

    url, made = bucket
    _cancelled_from_another_machine(tmp_path, k8s, shared, journal=url)
    # the Secret goes with the controller's Deployment (Kubernetes' garbage collector)
    data, deployment, _ = _secret_and_manifest(k8s, url)
    assert data["AWS_SECRET_ACCESS_KEY"] == made["AWS_SECRET_ACCESS_KEY"]
    name = deployment.metadata.name
    client.AppsV1Api(k8s["core"].api_client).delete_namespaced_deployment(
        name, k8s["namespace"], propagation_policy="Background"
    )

    def secret_gone() -> bool:
        return name not in [s.metadata.name for s in k8s["core"].list_namespaced_secret(k8s["namespace"]).items]

    eventually(secret_gone, 60, 0.5, "the Secret to be deleted with its Deployment")


def _refused_in_one_line(tmp_path: Path, k8s: dict[str, Any], url: str) -> str:
    """Submits ``utils.sh true`` under a Kubernetes controller on journal ``url`` from a fresh
    client; asserts it failed with one line on stderr and nothing on stdout; returns that line."""
    opts = ",".join(
        [
            "targets=kubernetes",
            f"namespace={k8s['namespace']}",
            "controller=kubernetes",
            f"journal={url}",
            f"controller_image={k8s['image']}",
        ]
    )
    proc = Machine(tmp_path, "laptop").torchx(
        "run", "--workspace", "", "-s", "managed", "-cfg", opts, "utils.sh", "--image", k8s["image"], "true",
        check=False,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and not proc.stdout.strip() and len(lines) == 1, proc
    return lines[0]


@pytest.mark.k8s
@pytest.mark.aws
def test_a_bucket_the_submitter_cannot_write_is_one_line_and_makes_nothing(
    tmp_path: Path, k8s: dict[str, Any], shared: Path, bucket: tuple[str, dict[str, str]]
) -> None:
    from kubernetes import client

    url = "s3://no-such-bucket-torchx-k8s/j"
    line = _refused_in_one_line(tmp_path, k8s, url)
    assert line.startswith(f"torchx: error: managed: journal={url}: cannot write there"), line
    apps = client.AppsV1Api(k8s["core"].api_client)
    assert not apps.list_namespaced_deployment(k8s["namespace"]).items
    assert not [s for s in k8s["core"].list_namespaced_secret(k8s["namespace"]).items if s.type == "Opaque"]


@pytest.mark.k8s
def test_the_secret_written_again_holds_the_new_credentials_only(k8s: dict[str, Any]) -> None:
    """What a scale back to 1 writes over a kept Secret: the new values, and no key of the old
    ones left (a session token of expired credentials would break the new ones)."""
    import base64

    from torchx_managed.k8s_controller import put_secret
    from torchx_sched_k8s.kubeapi import KubeApi

    api = KubeApi()
    try:
        put_secret(api, k8s["namespace"], "torchx-controller-x", {"AWS_ACCESS_KEY_ID": "a", "AWS_SESSION_TOKEN": "t"})
        put_secret(api, k8s["namespace"], "torchx-controller-x", {"AWS_ACCESS_KEY_ID": "b", "AWS_REGION": "r"})
    finally:
        api.close()
    secret = k8s["core"].read_namespaced_secret("torchx-controller-x", k8s["namespace"])
    data = {k: base64.b64decode(v).decode() for k, v in secret.data.items()}
    assert data == {"AWS_ACCESS_KEY_ID": "b", "AWS_REGION": "r"}, data
    assert secret.metadata.labels["app.kubernetes.io/name"] == "torchx-managed-controller"


@pytest.mark.k8s
@pytest.mark.aws
def test_a_deployment_that_cannot_be_made_leaves_no_secret_nor_other_object(
    tmp_path: Path, k8s: dict[str, Any], bucket: tuple[str, dict[str, str]]
) -> None:
    """The namespace's quota forbids Deployments: the submission is one line, and the Secret (the
    submitter's credentials), account, Role, binding and Lease made before it are deleted."""
    from kubernetes import client

    namespace = k8s["namespace"]
    quota = {"metadata": {"name": "no-deployments"}, "spec": {"hard": {"count/deployments.apps": "0"}}}
    k8s["core"].create_namespaced_resource_quota(namespace, quota)

    def enforced() -> bool:  # the quota controller has filled in what is used
        return bool(k8s["core"].read_namespaced_resource_quota("no-deployments", namespace).status.hard)

    eventually(enforced, 30, 0.2, "the quota's status")
    line = _refused_in_one_line(tmp_path, k8s, bucket[0])
    assert line.startswith("torchx: error:") and "exceeded quota" in line, line
    rbac, coordination = (
        client.RbacAuthorizationV1Api(k8s["core"].api_client),
        client.CoordinationV1Api(k8s["core"].api_client),
    )
    left = {
        "secrets": [s.metadata.name for s in k8s["core"].list_namespaced_secret(namespace).items if s.type == "Opaque"],
        "accounts": [a.metadata.name for a in k8s["core"].list_namespaced_service_account(namespace).items],
        "roles": [r.metadata.name for r in rbac.list_namespaced_role(namespace).items],
        "bindings": [b.metadata.name for b in rbac.list_namespaced_role_binding(namespace).items],
        "leases": [x.metadata.name for x in coordination.list_namespaced_lease(namespace).items],
        "jobs": [j.metadata.name for j in k8s["batch"].list_namespaced_job(namespace).items],
    }
    assert left == {"secrets": [], "accounts": ["default"], "roles": [], "bindings": [], "leases": [], "jobs": []}, left
