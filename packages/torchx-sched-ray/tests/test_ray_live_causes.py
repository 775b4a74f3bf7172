"""Ray ``end_cause`` against the live cluster (marker ``ray``): a replica's actor worker
SIGKILLed (what a lost node looks like to the job), its process SIGKILLed, a stop."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.causes import AttemptEnd, EndCause
from torchx_sched_ray.scheduler import RayScheduler, create_scheduler

pytestmark = pytest.mark.ray


@pytest.fixture
def sched(ray_cluster: Any) -> RayScheduler:
    return create_scheduler("causes")


def _submit(sched: RayScheduler, cluster: Any, cmd: str) -> str:
    res = specs.Resource(cpu=1, gpu=0, memMB=128)
    roles = [
        specs.Role("w", image="unused", entrypoint="bash", args=["-c", cmd], resource=res),
        specs.Role("other", image="unused", entrypoint="sleep", args=["300"], resource=res),
    ]
    return sched.submit(specs.AppDef("causes", roles), {"address": cluster.address})


def _first_line(sched: RayScheduler, app_id: str) -> str:
    deadline = time.monotonic() + 60
    while not (text := "".join(sched.log_iter(app_id, "w", 0)).strip()):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    return text


def _ended(sched: RayScheduler, app_id: str) -> AttemptEnd:
    desc = sched.wait(app_id, timeout=120, poll_interval=0.3)
    assert desc is not None and specs.is_terminal(desc.state), desc
    end = sched.end_cause(app_id)
    assert end is not None
    return end


def test_a_dead_actor_is_a_node_failure(sched: RayScheduler, ray_cluster: Any) -> None:
    app_id = _submit(sched, ray_cluster, 'echo "$PPID"; exec sleep 300')  # the actor's worker process
    worker = int(_first_line(sched, app_id))
    assert sched.end_cause(app_id) is None
    os.kill(worker, 9)
    end = _ended(sched, app_id)
    assert end.cause == EndCause.NODE_FAILURE and "actor is dead" in end.reason, end


def test_a_replica_killed_from_outside_is_killed(sched: RayScheduler, ray_cluster: Any) -> None:
    app_id = _submit(sched, ray_cluster, 'echo "$$$$"; exec sleep 300')  # "$$$$": $$ after the macro escape
    os.kill(int(_first_line(sched, app_id)), 9)
    end = _ended(sched, app_id)
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 137), end


def test_stop_is_cancelled(sched: RayScheduler, ray_cluster: Any) -> None:
    app_id = _submit(sched, ray_cluster, "echo up; exec sleep 300")
    _first_line(sched, app_id)
    sched.cancel(app_id)
    assert _ended(sched, app_id).cause == EndCause.CANCELLED
