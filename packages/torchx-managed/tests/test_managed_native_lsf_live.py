"""Managed jobs that recover inside LSF (the OpenLava cluster), with nothing of torchx's left
on the submitting side.

Each test submits with ``torchx run --detach`` from a client in its own PID namespace that is
torn down when torchx returns, moves that client's HOME away, breaks the running attempt on the
cluster, and reads the job from a second client with a fresh HOME. Run by
``nox -s integration-managed``.

What OpenLava on one machine can break: its rerun of a ``bsub -r`` job after a host failure
needs the execution host to go unavailable (its LIM down: here the master's own) or to have
rebooted (sbatchd compares the job's start with the boot time ``uptime`` gives), neither of
which a test can do to the only host. ``brequeue`` takes the same path through LSF: the job's
processes are killed on their host and LSF dispatches the job again, so the next batch shell
finds an attempt that never recorded its end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from torchx.testing.machines import Machine
from torchx.testing.processes import eventually

COUNTER = Path(__file__).with_name("counter.py")
#: steps of the counter and seconds per step: attempt 0 runs long enough to be broken mid-run
STEPS, STEP_SECONDS = 40, 0.25


def _submit(client: Machine, shared: Path, plan: str, *cfg: str) -> str:
    script = shared / "counter.py"
    shutil.copy(COUNTER, script)
    opts = ",".join(["targets=lsf", f"job_dir={shared}", *cfg])
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", opts, "utils.sh",
        "python3", str(script), str(STEPS), str(STEP_SECONDS), plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://") and handle.rsplit("/", 1)[1].startswith("lsf:"), proc.stdout
    return handle


def _job(handle: str) -> str:
    return handle.rsplit(":", 1)[1]


def _count(shared: Path, handle: str) -> int:
    path = shared / f"lsf-{_job(handle)}.checkpoints" / "count"
    return int(path.read_text()) if path.exists() else 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.lsf
def test_requeue_then_app_error_recovers_with_no_client_left(tmp_path: Path, lsf: None, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    # attempt 0 counts (its processes killed and the job requeued by LSF), attempt 1 exits 1,
    # attempt 2 finishes
    handle = _submit(submitter, shared, "0,1,0", "max_restarts=1", "max_recoveries=2")
    submitter.gone()
    job = _job(handle)
    history = subprocess.run(["bhist", "-l", job], capture_output=True, text=True).stdout
    assert "Re-runnable" in history, f"the job was not submitted rerunnable (bsub -r): {history}"

    eventually(lambda: _count(shared, handle) >= 3, 120, 0.3, "attempt 0 to checkpoint a few steps")
    pid0 = int((shared / f"lsf-{job}.checkpoints" / "pid-0").read_text())
    subprocess.run(["brequeue", job], check=True, capture_output=True)
    eventually(lambda: not _alive(pid0), 30, 0.3, "LSF to kill attempt 0 on its host")

    status = other.ended(handle, 300)
    assert status["state"] == "SUCCEEDED", status
    attempts = status["attempts"]
    assert [(a["attempt"], a["state"], a["cause"]) for a in attempts] == [
        (0, "FAILED", "KILLED"),
        (1, "FAILED", "APP_ERROR"),
        (2, "SUCCEEDED", None),
    ], attempts
    assert "brequeue by root" in attempts[0]["reason"], attempts[0]
    assert attempts[1]["exit_code"] == 1
    assert _count(shared, handle) == STEPS
    steps = (shared / f"lsf-{job}.checkpoints" / "steps").read_text().split("\n")
    counted = [int(line.split()[1]) for line in steps if line]
    assert counted == list(range(1, STEPS + 1)), "a step was lost or counted twice across the attempts"
    assert {line.split()[0] for line in steps if line} == {"0", "2"}
    # every attempt's output is in the one job's log, in order
    log = other.torchx("log", handle).stdout
    assert log.index("attempt 0 starts") < log.index("attempt 1 starts") < log.index("attempt 2 resumes")


@pytest.mark.lsf
def test_replica_killed_on_its_host_recovers_in_the_job(tmp_path: Path, lsf: None, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, "0", "max_recoveries=1")
    submitter.gone()
    job = _job(handle)
    eventually(lambda: _count(shared, handle) >= 2, 120, 0.3, "attempt 0 to checkpoint a few steps")
    os.kill(int((shared / f"lsf-{job}.checkpoints" / "pid-0").read_text()), 9)  # a signal torchx did not send
    status = other.ended(handle, 300)
    assert status["state"] == "SUCCEEDED", status
    assert [(a["attempt"], a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        (0, "FAILED", "KILLED", 137),
        (1, "SUCCEEDED", None, 0),
    ], status["attempts"]
    assert _count(shared, handle) == STEPS


@pytest.mark.lsf
def test_cancel_from_another_machine_stops_it_for_good(tmp_path: Path, lsf: None, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, "0", "max_restarts=3", "max_recoveries=3")
    submitter.gone()
    eventually(lambda: _count(shared, handle) >= 1, 120, 0.3, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")
    reached = _count(shared, handle)
    time.sleep(3 * STEP_SECONDS + 2)
    assert _count(shared, handle) == reached, "the job kept counting after its cancel"
    status = other.status(handle)
    assert len(status["attempts"]) == 1 and status["attempts"][0]["state"] == "CANCELLED", status
    pid0 = int((shared / f"lsf-{_job(handle)}.checkpoints" / "pid-0").read_text())
    assert not _alive(pid0), "attempt 0 outlived the cancel"


@pytest.mark.lsf
def test_max_restarts_used_up_ends_failed_with_every_attempt(tmp_path: Path, lsf: None, shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    handle = _submit(client, shared, "3,3,3", "max_restarts=1")
    status = client.ended(handle, 120)
    assert status["state"] == "FAILED", status
    assert [(a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        ("FAILED", "APP_ERROR", 3),
        ("FAILED", "APP_ERROR", 3),
    ]


@pytest.mark.lsf
def test_recover_on_exit_code_is_kept_in_the_job(tmp_path: Path, lsf: None, shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    # 33 restarts uncounted (max_restarts=0); the attempt after a 33 finishes
    handle = _submit(client, shared, "33,33,0", "recover_on_exit_codes=33")
    status = client.ended(handle, 120)
    assert status["state"] == "SUCCEEDED", status
    assert [a["exit_code"] for a in status["attempts"]] == [33, 33, 0]
    client.torchx("delete", handle)  # the job's files go, its checkpoint directory too
    assert not list(shared.glob(f"lsf-{_job(handle)}[-.]*"))
