"""Managed jobs that recover inside their Ray job: the on-cluster torchx driver loops the
attempts, with nothing of torchx's left on the submitting side.

Each test submits with ``torchx run --detach`` from a client in its own PID namespace (torn
down when it returns), moves that client's HOME away, breaks the attempt on the cluster (the
Ray worker process that hosts the replica's actor SIGKILLed; an app error), and reads the job
from a second client with a fresh HOME. The cluster is this machine (``services.sh up ray``),
so the checkpoint directory is a local one. Another machine also lists the job (``torchx list
-s managed -cfg targets=ray``), picked out by its metadata, and not a plain Ray job. Run by
``nox -s integration-managed``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import alive, live_backend_env, unavailable
from torchx.testing.machines import Machine
from torchx.testing.processes import eventually

COUNTER = Path(__file__).with_name("counter.py")
#: steps of the counter and seconds per step: attempt 0 runs long enough to be broken mid-run
STEPS, STEP_SECONDS = 40, 0.25


@pytest.fixture
def ray_address() -> str:
    env = live_backend_env("TORCHX_TEST_RAY", "ray")
    pytest.importorskip("torchx_sched_ray", reason="needs torchx-sched-ray")
    pytest.importorskip("ray", reason="needs ray (the Jobs API client)")
    address = env.get("TORCHX_TEST_RAY_ADDRESS", "http://127.0.0.1:8265")
    import urllib.request

    try:
        with urllib.request.urlopen(f"{address}/api/version", timeout=10) as r:
            r.read()
    except OSError as e:
        unavailable(f"the Ray Jobs API at {address} does not answer: {e}")
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to tear the submitting client down")
    return address


def _submit(client: Machine, address: str, shared: Path, plan: str, *cfg: str) -> str:
    # utils.sh runs ``sh -c '"$@"'``, which forks the counter: the replica's process is sh, and
    # the counter a child that must die with its actor all the same
    opts = ",".join(["targets=ray", f"address={address}", f"checkpoint_dir={shared / 'ckpt'}", *cfg])
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", opts, "utils.sh",
        sys.executable, str(shared / "counter.py"), str(STEPS), str(STEP_SECONDS), plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://") and "/ray:" in handle, proc.stdout
    return handle


def _count(shared: Path) -> int:
    path = shared / "ckpt" / "count"
    return int(path.read_text()) if path.exists() else 0


def _actor_of(pid: int) -> int:
    """The Ray worker process (``ray::...``) whose actor runs process ``pid``."""
    while pid > 1:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if cmdline.startswith(b"ray::"):
            return pid
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    raise AssertionError("the replica's process has no Ray worker above it")


@pytest.mark.ray
def test_actor_killed_then_app_error_recovers_with_no_client_left(
    tmp_path: Path, ray_address: str, shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    # attempt 0 counts (its actor's worker SIGKILLed), attempt 1 exits 1, attempt 2 finishes
    handle = _submit(submitter, ray_address, shared, "0,1,0", "max_restarts=1", "max_recoveries=2")
    submitter.gone()

    eventually(lambda: _count(shared) >= 3, 120, 0.3, "attempt 0 to checkpoint a few steps")
    app_pid = int((shared / "ckpt" / "pid-0").read_text())
    os.kill(_actor_of(app_pid), signal.SIGKILL)
    eventually(lambda: not alive(app_pid), 10, 0.3, "attempt 0's counter to die with its actor")

    status = other.ended(handle, 240)
    assert status["state"] == "SUCCEEDED", status
    attempts = status["attempts"]
    assert [(a["attempt"], a["state"], a["cause"]) for a in attempts] == [
        (0, "FAILED", "NODE_FAILURE"),
        (1, "FAILED", "APP_ERROR"),
        (2, "SUCCEEDED", None),
    ], attempts
    assert attempts[1]["exit_code"] == 1
    assert all(a["started"] and a["ended"] and a["started"] <= a["ended"] for a in attempts)
    assert _count(shared) == STEPS
    steps = (shared / "ckpt" / "steps").read_text().split("\n")
    counted = [int(line.split()[1]) for line in steps if line]
    assert counted == list(range(1, STEPS + 1)), "a step was lost or counted twice across the attempts"
    assert {line.split()[0] for line in steps if line} == {"0", "2"}
    # every attempt's output is in the one job's log, in order, read by the other machine
    log = other.torchx("log", handle).stdout
    assert log.index("attempt 0 starts") < log.index("attempt 1 starts") < log.index("attempt 2 resumes")


@pytest.mark.ray
def test_max_restarts_used_up_ends_failed(tmp_path: Path, ray_address: str, shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    handle = _submit(client, ray_address, shared, "3,3,3", "max_restarts=1")
    status = client.ended(handle, 240)
    assert status["state"] == "FAILED", status
    assert [(a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        ("FAILED", "APP_ERROR", 3),
        ("FAILED", "APP_ERROR", 3),
    ]


@pytest.mark.ray
def test_cancel_from_another_machine_stops_it_for_good(tmp_path: Path, ray_address: str, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, ray_address, shared, "0", "max_restarts=3")
    submitter.gone()
    eventually(lambda: _count(shared) >= 1, 120, 0.3, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")
    reached = _count(shared)
    time.sleep(3 * STEP_SECONDS + 1)
    assert _count(shared) == reached < STEPS, "the job kept counting after its cancel"
    status = other.status(handle)
    assert [(a["attempt"], a["state"]) for a in status["attempts"]] == [(0, "CANCELLED")], status


@pytest.mark.ray
def test_another_machine_lists_the_managed_job_and_not_a_plain_one(
    tmp_path: Path, ray_address: str, shared: Path, lists_native: Callable[..., None]
) -> None:
    from ray.job_submission import JobSubmissionClient
    from torchx_sched_ray.request import split_app_id

    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, ray_address, shared, "0", "max_restarts=1")
    cfg = f"address={ray_address}"
    plain = submitter.torchx("run", "--workspace", "", "-s", "ray", "-cfg", cfg, "utils.sh", "true")
    plain_id = plain.stdout.strip().splitlines()[-1].rsplit("/", 1)[1]
    submitter.gone()
    plain_jobs = json.loads(other.torchx("list", "-s", "ray", "-cfg", cfg, "--json").stdout)
    assert plain_id in {a["app_id"] for a in plain_jobs}
    # the mark the other machine picks the job out by, as the Jobs API keeps it
    address, submission_id = split_app_id(handle.split("/ray:", 1)[1])
    metadata = JobSubmissionClient(address).get_job_info(submission_id).metadata
    assert metadata["torchx.pytorch.org/recovery"] == "max_restarts=1 max_recoveries=10", metadata

    lists_native(other, handle, "ray", plain_id, lambda: _count(shared) == STEPS)
