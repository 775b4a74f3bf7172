"""A managed job driven by a controller that runs as a job on a cluster (``controller=slurm``,
``controller=lsf``), with its journal on a shared directory: failover across targets (a
Slurm partition DOWN, then Kubernetes), restarts after an application error, and cancel go on
with the submitting client torn down and its HOME gone. Run by ``nox -s integration-managed``.

(LSF is not the second target here: the test Slurm cluster's nodes are this machine under the
names node1..node4, which the one-host OpenLava cluster refuses as submission hosts.)"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from torchx.testing import live_backend_env
from torchx.testing.machines import Machine
from torchx.testing.processes import eventually


def _until(check: Callable[[], bool], timeout: float, what: str, shared: Path | None = None) -> None:
    """:func:`eventually`, with the controller's log in the failure when ``shared`` is given."""
    try:
        eventually(check, timeout, 0.5, what)
    except AssertionError as e:
        raise AssertionError(f"{e}; the controller's log:\n{_controller_logs(shared)}" if shared else str(e)) from None


def _controller_logs(shared: Path) -> str:
    journal = shared / "journal"
    return "".join(p.read_text()[-3000:] for p in sorted(journal.glob("*controller*")) if p.is_file())


@pytest.fixture
def clusters(slurm: str) -> dict[str, str]:
    """Slurm and Kubernetes (with a kubelet), both live; the image of the Kubernetes target.
    KUBECONFIG is put in this process's environment: the controller job inherits it."""
    env = live_backend_env("TORCHX_TEST_K8S", "k8s")
    pytest.importorskip("torchx_sched_k8s", reason="needs torchx-sched-k8s")
    if env.get("TORCHX_TEST_K8S_KUBELET", "none") == "none":
        pytest.fail("the Kubernetes test cluster has no kubelet: pods would never run")
    os.environ["KUBECONFIG"] = env["KUBECONFIG"]
    return {"image": env.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm")}


@pytest.fixture(autouse=True)
def _stop_controller(shared: Path) -> Iterator[None]:
    """Ends the test's controller job (it would idle a while before it ends by itself)."""
    yield
    record = shared / "journal" / "controller.json"
    if record.exists():
        controller = json.loads(record.read_text())["handle"]
        kill = "scancel" if controller.startswith("slurm://") else "bkill"
        subprocess.run([kill, controller.rsplit("/", 1)[1]], check=False, capture_output=True)


@pytest.fixture
def down_partition() -> Iterator[str]:
    """A Slurm partition that is DOWN: jobs submitted to it stay pending."""
    name = f"torchx-down-{uuid.uuid4().hex[:6]}"
    node = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True).stdout.split()[-1]
    subprocess.run(["scontrol", "create", f"PartitionName={name}", f"Nodes={node}", "State=DOWN"], check=True)
    yield name
    subprocess.run(["scontrol", "delete", f"PartitionName={name}"], check=False)


def _submit(client: Machine, shared: Path, partition: str, image: str, command: str, *cfg: str) -> str:
    opts = ",".join(
        [
            "targets=slurm;kubernetes",
            "mode=jobs",
            "image_pull_policy=IfNotPresent",
            "controller=slurm",
            f"journal={shared / 'journal'}",
            f"partition={partition}",
            f"job_dir={shared}",
            *cfg,
        ]
    )
    proc = client.torchx(
        "run", "--detach", "--workspace", "", "-s", "managed", "-cfg", opts,
        "utils.sh", "--image", image, "--memMB", "256", "sh", "-c", command,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.endswith("@" + quote(str(shared / "journal"), safe="")), proc.stdout
    return handle


@pytest.mark.slurm
@pytest.mark.k8s
def test_failover_from_a_down_partition_to_kubernetes_with_the_submitter_gone(
    tmp_path: Path, clusters: dict[str, str], shared: Path, down_partition: str
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    command = 'echo "attempt $TORCHX_ATTEMPT on $(hostname)"'
    handle = _submit(submitter, shared, down_partition, clusters["image"], command, "pending_timeout=5s")
    submitter.gone()
    try:
        _until(lambda: other.status(handle)["state"] in ("SUCCEEDED", "FAILED"), 240, "the job to end", shared)
    finally:
        other.torchx("cancel", handle, check=False)  # nothing left pending on a failure
    status = other.status(handle)
    attempts = [(a["scheduler"], a["state"], a["cause"]) for a in status["attempts"]]
    assert status["state"] == "SUCCEEDED", status
    assert attempts[0] == ("slurm", "CANCELLED", "NO_CAPACITY"), status
    assert [a[:2] for a in attempts[1:]] == [("kubernetes", "SUCCEEDED")], status
    assert "attempt 1 on" in other.torchx("log", handle).stdout
    listed = json.loads(other.torchx("list", "-s", "managed", "-cfg", f"journal={shared / 'journal'}", "--json").stdout)
    assert [(a["app_handle"], a["state"]) for a in listed] == [(handle, "SUCCEEDED")]
    # the controller was a Slurm job (its log in the journal directory), not a process of the gone client
    controller = json.loads((shared / "journal" / "controller.json").read_text())["handle"]
    assert controller.startswith("slurm://"), controller
    logs = "".join(p.read_text() for p in (shared / "journal").glob("slurm-*-controller-0.log"))
    assert "driving job" in logs, logs
    # the attempt left on the DOWN partition is not queued any more
    queued = subprocess.run(["squeue", "-h", "-p", down_partition, "-t", "PD,R"], capture_output=True, text=True)
    assert queued.stdout.strip() == ""


@pytest.mark.slurm
@pytest.mark.k8s
def test_cancel_from_another_machine_reaches_the_controller(
    tmp_path: Path, clusters: dict[str, str], shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    partition = live_backend_env("TORCHX_TEST_SLURM", "slurm").get("TORCHX_TEST_SLURM_PARTITION", "debug")
    ticks = shared / "ticks"
    handle = _submit(submitter, shared, partition, clusters["image"], f"while :; do echo x >> {ticks}; sleep 0.2; done")
    try:
        submitter.gone()
        _until(lambda: ticks.exists(), 120, "the attempt to run")
        _until(lambda: other.status(handle)["attempts"][-1]["state"] == "RUNNING", 60, "the attempt to read RUNNING")
    finally:  # never leave the endless attempt running on the cluster
        other.torchx("cancel", handle)
    _until(lambda: other.status(handle)["state"] == "CANCELLED", 90, "the job to read CANCELLED")
    size = ticks.stat().st_size
    time.sleep(2)
    assert ticks.stat().st_size == size, "the attempt kept running after the cancel"
    assert len(other.status(handle)["attempts"]) == 1


@pytest.mark.slurm
@pytest.mark.lsf
def test_an_lsf_controller_restarts_a_slurm_attempt_after_an_app_error(
    tmp_path: Path, slurm: str, lsf: None, shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    partition = slurm
    opts = ",".join(
        [
            "targets=slurm",
            "controller=lsf",
            f"journal={shared / 'journal'}",
            f"partition={partition}",
            f"job_dir={shared}",
            "max_restarts=1",
        ]
    )
    command = 'echo "attempt $TORCHX_ATTEMPT"; [ "$TORCHX_ATTEMPT" = 1 ]'
    proc = submitter.torchx(
        "run", "--detach", "--workspace", "", "-s", "managed", "-cfg", opts, "utils.sh", "sh", "-c", command,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    submitter.gone()
    try:
        _until(lambda: other.status(handle)["state"] in ("SUCCEEDED", "FAILED"), 180, "the job to end", shared)
    finally:
        other.torchx("cancel", handle, check=False)
    status = other.status(handle)
    assert status["state"] == "SUCCEEDED", status
    attempts = [(a["scheduler"], a["state"], a["cause"]) for a in status["attempts"]]
    assert attempts[0] == ("slurm", "FAILED", "APP_ERROR") and len(attempts) == 2, attempts
    assert attempts[1][:2] == ("slurm", "SUCCEEDED"), attempts
    controller = json.loads((shared / "journal" / "controller.json").read_text())["handle"]
    assert controller.startswith("lsf://"), controller
