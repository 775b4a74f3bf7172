"""LSF ``end_cause`` against the live OpenLava cluster (marker ``lsf``): a replica killed on its
host from outside, ``bkill`` by the owner and by root of another user's job, cancel, exit code."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import pytest
from torchx import specs
from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx_sched_lsf.scheduler import LsfScheduler

pytestmark = pytest.mark.lsf


@pytest.fixture
def sched(lsf_cluster: dict[str, str]) -> LsfScheduler:
    return LsfScheduler("causes")


def _until(check: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def _submit(sched: LsfScheduler, job_dir: str, cmd: str, replicas: int = 1) -> str:
    role = specs.Role(
        "cause",
        image=job_dir,
        entrypoint="bash",
        args=["-c", cmd],
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
    )
    return sched.submit(specs.AppDef("causes", [role]), {"job_dir": job_dir})


def _ended(sched: LsfScheduler, app_id: str) -> AttemptEnd:
    _until(lambda: (d := sched.describe(app_id)) is not None and specs.is_terminal(d.state))
    end = sched.end_cause(app_id)
    assert end is not None
    return end


def test_a_replica_killed_on_its_host_is_killed(sched: LsfScheduler, job_dir: str) -> None:
    pidfile = os.path.join(job_dir, "pid")
    app_id = _submit(
        sched, job_dir, f"if [ {specs.macros.replica_id} = 1 ]; then echo $BASHPID > {pidfile}; fi; exec sleep 60", 2
    )
    try:
        _until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0)
        assert sched.end_cause(app_id) is None
        with open(pidfile) as f:
            os.kill(int(f.read()), 9)
        end = _ended(sched, app_id)
        assert (end.cause, end.exit_code) == (EndCause.KILLED, 137), end
        assert end.reason.startswith("cause/1 ")
    finally:
        sched.cancel(app_id)


def _started(sched: LsfScheduler, job_dir: str, name: str) -> str:
    """A job whose replica runs (LSF reads a kill in the job's first moments as DONE)."""
    marker = os.path.join(job_dir, name)
    app_id = _submit(sched, job_dir, f"touch {marker}; exec sleep 60")
    _until(lambda: os.path.exists(marker))
    return app_id


def test_bkill_by_the_owner_is_cancelled_and_cancel_too(sched: LsfScheduler, job_dir: str) -> None:
    outside = _started(sched, job_dir, "outside")
    subprocess.run(["bkill", outside], check=True, capture_output=True)
    end = _ended(sched, outside)
    assert end.cause == EndCause.CANCELLED and "bkill by its owner" in end.reason, end
    inside = _started(sched, job_dir, "inside")
    sched.cancel(inside)
    assert _ended(sched, inside) == AttemptEnd(EndCause.CANCELLED, None, "cancelled through torchx")
    desc = sched.describe(inside)
    assert desc is not None and desc.state == specs.AppState.CANCELLED, desc  # describe agrees with end_cause


def test_bkill_by_root_of_another_users_job_is_killed(sched: LsfScheduler, job_dir: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("submits a job as `nobody`: needs root")
    os.chmod(job_dir, 0o777)
    out = subprocess.run(
        ["runuser", "-u", "nobody", "--", "bsub", "-J", "causes-nobody", "-o", "/dev/null", "sleep 60"],
        capture_output=True,
        text=True,
        check=True,
        cwd=job_dir,
    ).stdout
    app_id = out.split("<", 1)[1].split(">", 1)[0]
    try:
        _until(lambda: " RUN " in subprocess.run(["bjobs", app_id], capture_output=True, text=True).stdout)
        time.sleep(2)  # OpenLava records a job killed in its first second of running as DONE
        subprocess.run(["bkill", app_id], check=True, capture_output=True)
        end = _ended(sched, app_id)
        assert end.cause == EndCause.KILLED and "not its owner nobody" in end.reason, end
    finally:
        subprocess.run(["bkill", app_id], capture_output=True)


def test_exit_code(sched: LsfScheduler, job_dir: str) -> None:
    end = _ended(sched, _submit(sched, job_dir, "exit 3"))
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 3), end
