"""Recovery never kills a healthy job: while the target's scheduler does not answer (slurmctld
frozen with SIGSTOP, so every status call times out), the managed job's state is UNKNOWN and
its driver asks again with back-off; it never starts a new attempt. Run by
``nox -s integration-managed``."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Resource, Role
from torchx.specs.handles import parse_app_handle
from torchx.testing.processes import eventually
from torchx_managed.journal import ManagedStore

#: seconds slurmctld stays frozen (longer than Slurm's MessageTimeout: status calls time out)
FROZEN = 25


def _slurmctld() -> int:
    out = subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == 1, f"expected one slurmctld, found {out}"
    return int(out[0])


@pytest.mark.slurm
def test_a_scheduler_that_does_not_answer_is_unknown_never_a_new_attempt(slurm: str, shared: Path) -> None:
    started = shared / "started"
    role = Role(
        "r",
        image=str(shared),
        entrypoint="bash",
        args=["-c", f'echo "$TORCHX_ATTEMPT" >> {started}; sleep {FROZEN + 10}; echo done'],
        resource=Resource(1, 0, 128),
    )
    cfg = {"targets": ["slurm"], "controller": "local", "partition": slurm, "job_dir": str(shared)}
    with get_runner("unreachable") as runner:
        handle = runner.run(AppDef("unreachable", [role]), "managed", cfg)
        try:
            eventually(started.exists, 120, 0.3, "the attempt to start")
            pid = _slurmctld()
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(2)
                status = runner.status(handle)  # its own status call times out inside
                assert status is not None and status.state == AppState.UNKNOWN, status
                assert "did not answer" in status.msg
                time.sleep(FROZEN - 2)
            finally:
                os.kill(pid, signal.SIGCONT)
            final = runner.wait(handle, wait_interval=0.5, timeout=180)
            assert final is not None and final.state == AppState.SUCCEEDED, final
        finally:
            runner.cancel(handle)
    job = ManagedStore().load(parse_app_handle(handle).app_id)
    assert [(a.n, a.state) for a in job.attempts] == [(0, "SUCCEEDED")]
    assert started.read_text() == "0\n", "a second attempt was started while the first ran"
    log = (Path(ManagedStore().job_dir(parse_app_handle(handle).app_id)) / "driver.log").read_text()
    assert "asking again, no new attempt" in log
