"""Warnings before the end on the live cluster: ``-cfg signal=USR1@N`` reaches every replica
before the time limit, and a SIGTERM to the job's steps (what a preemption sends) reaches the
app while the wrapper that copies its output lives on; the app checkpoints, prints, exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from torchx import specs
from torchx.runner import Runner
from torchx.schedulers.streams import Stream

pytestmark = pytest.mark.slurm

HANDLER = (
    "import os, signal, sys, time\n"
    "def warned(signum, _):\n"
    "    open(os.path.join(sys.argv[1], 'ckpt-' + os.environ['TORCHX_REPLICA_ID']), 'w').write(str(signum))\n"
    "    print('warned', signum, flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGUSR1, warned)\n"
    "signal.signal(signal.SIGTERM, warned)\n"
    "print('up', flush=True)\n"
    "time.sleep(300)\n"
)


def handler_app(job_dir: str, replicas: int) -> specs.AppDef:
    role = specs.Role(
        "w",
        image="/tmp",
        entrypoint=sys.executable,
        args=["-c", HANDLER, job_dir],
        num_replicas=replicas,
        env={"TORCHX_REPLICA_ID": specs.macros.replica_id},
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
    )
    return specs.AppDef("warned", [role])


def logs(runner: Runner, handle: str, replicas: int) -> list[str]:
    return ["".join(runner.log_lines(handle, "w", k, streams=Stream.STDOUT)) for k in range(replicas)]


def up(runner: Runner, handle: str) -> bool:
    """True once the replica printed ``up`` (its log file exists once the job started)."""
    try:
        return "up" in "".join(runner.log_lines(handle, "w", 0))
    except FileNotFoundError:
        return False


def test_signal_option_warns_every_replica_before_the_time_limit(runner: Any, slurm_cluster: Any, job_dir: str) -> None:
    cfg = {"job_dir": job_dir, "partition": slurm_cluster.partition, "time": "2", "signal": "USR1@100", "nomem": True}
    handle = runner.run(handler_app(job_dir, 2), "slurm", cfg)
    status = runner.wait(handle, wait_interval=1, timeout=150)
    assert status is not None and status.state == specs.AppState.SUCCEEDED, status
    assert sorted(f for f in os.listdir(job_dir) if f.startswith("ckpt-")) == ["ckpt-0", "ckpt-1"]
    assert all(log.splitlines() == ["up", "warned 10"] for log in logs(runner, handle, 2))


def test_sigterm_to_the_steps_reaches_the_app_and_its_output_is_kept(
    runner: Any, slurm_cluster: Any, job_dir: str
) -> None:
    cfg = {"job_dir": job_dir, "partition": slurm_cluster.partition, "nomem": True}
    handle = runner.run(handler_app(job_dir, 1), "slurm", cfg)
    deadline = time.monotonic() + 60
    while not up(runner, handle):
        assert time.monotonic() < deadline, runner.status(handle)
        time.sleep(0.2)
    job_id = handle.rsplit("/", 1)[-1]
    subprocess.run(["scancel", "--signal=TERM", job_id], check=True)
    status = runner.wait(handle, wait_interval=1, timeout=60)
    assert status is not None and status.state == specs.AppState.SUCCEEDED, status
    with open(os.path.join(job_dir, "ckpt-0")) as f:
        assert f.read() == "15"
    assert logs(runner, handle, 1) == ["up\nwarned 15\n"]  # stderr also has slurmstepd's "CANCELLED"
