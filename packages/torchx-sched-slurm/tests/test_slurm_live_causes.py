"""Slurm ``end_cause`` against the live cluster (marker ``slurm``), with the faults made for real:
the node of a running replica set DOWN (and back), a cancel through torchx, a replica
SIGKILLed on its node."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx_sched_slurm.scheduler import SlurmScheduler

pytestmark = pytest.mark.slurm


def _role(cmd: str, replicas: int = 1) -> specs.Role:
    return specs.Role(
        "causes",
        image="/tmp",
        entrypoint="bash",
        args=["-c", cmd],
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=128),
    )


def _until(check: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def _ended(sched: SlurmScheduler, app_id: str) -> AttemptEnd:
    _until(lambda: (d := sched.describe(app_id)) is not None and specs.is_terminal(d.state), timeout=120)
    end = sched.end_cause(app_id)
    assert end is not None
    return end


def _node_of(app_id: str, offset: int | None) -> str:
    """The node of component ``offset`` of het job ``app_id`` (None: of the plain job ``app_id``)."""
    want = app_id if offset is None else f"{app_id}+{offset}"
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %N"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        job, _, node = line.partition(" ")
        if job == want:
            return node.strip()
    raise LookupError(f"{want} is not running")


def set_node_down(node: str) -> None:
    """Sets ``node`` DOWN (its jobs end NODE_FAIL) and resumes it at once: other helpers share the
    cluster, so it is down for no longer than a scontrol call."""
    subprocess.run(["scontrol", "update", f"nodename={node}", "state=down", "reason=torchx-end-cause-test"], check=True)
    # ReturnToService=2 may already have brought it back: then resume says the state is invalid
    subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], capture_output=True, check=False)


@pytest.fixture
def sched(slurm_cluster: Any) -> SlurmScheduler:
    return SlurmScheduler("causes")


def _submit(sched: SlurmScheduler, cluster: Any, job_dir: str, cmd: str, replicas: int = 1) -> str:
    return sched.submit(
        specs.AppDef("causes", [_role(cmd, replicas)]), {"partition": cluster.partition, "job_dir": job_dir}
    )


def test_a_node_set_down_mid_run_is_a_node_failure(
    sched: SlurmScheduler, slurm_cluster: Any, job_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SBATCH_NO_REQUEUE", "1")  # else the cluster's JobRequeue=1 requeues it
    app_id = _submit(sched, slurm_cluster, job_dir, "exec sleep 120", replicas=2)
    try:
        _until(lambda: (d := sched.describe(app_id)) is not None and d.state == specs.AppState.RUNNING)
        assert sched.end_cause(app_id) is None
        set_node_down(_node_of(app_id, 1))
        end = _ended(sched, app_id)
        assert end.cause == EndCause.NODE_FAILURE, end
        assert "NODE_FAIL" in end.reason
    finally:
        sched.cancel(app_id)


def test_a_node_set_down_is_requeued_by_slurm_and_says_so(
    sched: SlurmScheduler, slurm_cluster: Any, job_dir: str
) -> None:
    marker = os.path.join(job_dir, "ran-once")
    app_id = _submit(sched, slurm_cluster, job_dir, f"test -e {marker} && exit 0; touch {marker}; exec sleep 120")
    try:
        _until(lambda: os.path.exists(marker))
        set_node_down(_node_of(app_id, None))
        end = _ended(sched, app_id)
        assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 0), end
        assert "after 1 requeue: NODE_FAIL" in end.reason
    finally:
        sched.cancel(app_id)


def test_cancel_through_torchx_is_cancelled(sched: SlurmScheduler, slurm_cluster: Any, job_dir: str) -> None:
    app_id = _submit(sched, slurm_cluster, job_dir, "exec sleep 120", replicas=2)
    _until(lambda: (d := sched.describe(app_id)) is not None and d.state == specs.AppState.RUNNING)
    sched.cancel(app_id)
    end = _ended(sched, app_id)
    assert end.cause == EndCause.CANCELLED, end


def test_a_replica_sigkilled_on_its_node_is_killed(sched: SlurmScheduler, slurm_cluster: Any, job_dir: str) -> None:
    pidfile = os.path.join(job_dir, "pid")
    app_id = _submit(
        sched,
        slurm_cluster,
        job_dir,
        f"if [ {specs.macros.replica_id} = 1 ]; then echo $BASHPID > {pidfile}; fi; exec sleep 120",
        replicas=2,
    )
    try:
        _until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0)
        with open(pidfile) as f:
            os.kill(int(f.read()), 9)
        end = _ended(sched, app_id)
        assert (end.cause, end.exit_code) == (EndCause.KILLED, 137), end
        assert end.reason.startswith("causes/1 ")
    finally:
        sched.cancel(app_id)


def _preemption_configured() -> None:
    parts = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True).stdout.split()
    if not {"preemptible", "urgent"} <= {p.rstrip("*") for p in parts}:
        from torchx.testing import unavailable

        unavailable("the cluster has no 'preemptible'/'urgent' partitions: rerun scripts/backends/slurm-up.sh")


def test_a_job_preempted_by_a_higher_tier_partition_is_preempted(sched: SlurmScheduler, job_dir: str) -> None:
    _preemption_configured()
    app_id = sched.submit(
        specs.AppDef("causes", [_role("exec sleep 120")]), {"partition": "preemptible", "job_dir": job_dir}
    )
    urgent = ""
    try:
        _until(lambda: (d := sched.describe(app_id)) is not None and d.state == specs.AppState.RUNNING)
        # a whole-node job of the 'urgent' partition takes the node back
        urgent = sched.submit(
            specs.AppDef("urgent", [_role("sleep 1")]), {"partition": "urgent", "exclusive": True, "job_dir": job_dir}
        )
        end = _ended(sched, app_id)
        assert end.cause == EndCause.PREEMPTED, end
        assert "preempted at" in end.reason
    finally:
        sched.cancel(app_id)
        if urgent:
            sched.cancel(urgent)
