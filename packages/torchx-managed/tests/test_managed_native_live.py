"""Managed jobs that recover inside Slurm, with nothing of torchx's left on the submitting side.

Each test submits with ``torchx run --detach`` from a client in its own PID namespace
(``unshare --pid --fork --kill-child``: every process the client started dies when it
returns), moves that client's HOME away, breaks the running attempt on the cluster, and reads
the job from a second client with a fresh HOME (another machine: none of the first one's
state). Run by ``nox -s integration-managed``.
"""

from __future__ import annotations

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


def _submit(client: Machine, shared: Path, slurm: str, plan: str, *cfg: str) -> str:
    script = shared / "counter.py"
    shutil.copy(COUNTER, script)
    opts = ",".join(["targets=slurm", f"partition={slurm}", f"job_dir={shared}", *cfg])
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", opts, "utils.sh",
        "python3", str(script), str(STEPS), str(STEP_SECONDS), plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://") and ":" in handle.rsplit("/", 1)[1], proc.stdout
    return handle


def _slurm_id(handle: str) -> str:
    return handle.rsplit(":", 1)[1]


def _count(shared: Path, handle: str) -> int:
    path = shared / f"slurm-{_slurm_id(handle)}.checkpoints" / "count"
    return int(path.read_text()) if path.exists() else 0


@pytest.mark.slurm
def test_node_down_then_app_error_recovers_with_no_client_left(tmp_path: Path, slurm: str, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    # attempt 0 counts (broken by its node going DOWN), attempt 1 exits 1, attempt 2 finishes
    handle = _submit(submitter, shared, slurm, "0,1,0", "max_restarts=1", "max_recoveries=2")
    submitter.gone()
    job = _slurm_id(handle)

    eventually(lambda: _count(shared, handle) >= 3, 120, 0.3, "attempt 0 to checkpoint a few steps")
    node = subprocess.run(
        ["squeue", "-h", "-j", job, "-o", "%N"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["scontrol", "update", f"nodename={node}", "state=down", "reason=torchx-native-test"], check=True)
    subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], capture_output=True, check=False)

    status = other.ended(handle, 300)
    assert status["state"] == "SUCCEEDED", status
    attempts = status["attempts"]
    assert [(a["attempt"], a["state"], a["cause"]) for a in attempts] == [
        (0, "FAILED", "NODE_FAILURE"),
        (1, "FAILED", "APP_ERROR"),
        (2, "SUCCEEDED", None),
    ], attempts
    assert attempts[1]["exit_code"] == 1
    assert _count(shared, handle) == STEPS
    steps = (shared / f"slurm-{job}.checkpoints" / "steps").read_text().split("\n")
    counted = [int(line.split()[1]) for line in steps if line]
    assert counted == list(range(1, STEPS + 1)), "a step was lost or counted twice across the attempts"
    assert {line.split()[0] for line in steps if line} == {"0", "2"}
    # every attempt's output is in the one job's log, in order
    log = other.torchx("log", handle).stdout
    assert log.index("attempt 0 starts") < log.index("attempt 1 starts") < log.index("attempt 2 resumes")


@pytest.mark.slurm
def test_cancel_from_another_machine_stops_it_for_good(tmp_path: Path, slurm: str, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit(submitter, shared, slurm, "0", "max_restarts=3")
    submitter.gone()
    eventually(lambda: _count(shared, handle) >= 1, 120, 0.3, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")
    reached = _count(shared, handle)
    time.sleep(3 * STEP_SECONDS + 1)
    assert _count(shared, handle) == reached, "the job kept counting after its cancel"
    status = other.status(handle)
    assert len(status["attempts"]) == 1 and status["attempts"][0]["state"] == "CANCELLED", status


@pytest.mark.slurm
def test_max_restarts_used_up_ends_failed_with_every_attempt(tmp_path: Path, slurm: str, shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    handle = _submit(client, shared, slurm, "3,3,3", "max_restarts=1")
    status = client.ended(handle, 120)
    assert status["state"] == "FAILED", status
    assert [(a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        ("FAILED", "APP_ERROR", 3),
        ("FAILED", "APP_ERROR", 3),
    ]


@pytest.mark.slurm
def test_recover_on_exit_code_and_backoff_are_kept_in_the_job(tmp_path: Path, slurm: str, shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    # 33 restarts uncounted (max_restarts=0); the attempt after a 33 finishes
    handle = _submit(client, shared, slurm, "33,33,0", "recover_on_exit_codes=33")
    status = client.ended(handle, 120)
    assert status["state"] == "SUCCEEDED", status
    assert [a["exit_code"] for a in status["attempts"]] == [33, 33, 0]
