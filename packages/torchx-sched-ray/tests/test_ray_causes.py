"""Ray ``end_cause`` from the Jobs API's status, message and job log recorded on the live
cluster (fixtures/capture_causes.py: exit 3, the replica's process SIGKILLed, its actor's
worker SIGKILLed, stopped, no room to place the replicas, success)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from torchx.schedulers.causes import EndCause
from torchx_sched_ray.causes import ray_end

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "causes_ray_jobs.json")) as f:
    JOBS: dict[str, dict[str, Any]] = json.load(f)


@pytest.mark.parametrize(
    ("name", "cause", "code", "words"),
    [
        ("exit_3", EndCause.APP_ERROR, 3, "replica 0 exited with code 3"),
        ("replica_sigkilled", EndCause.KILLED, 137, "replica 0 killed by SIGKILL"),
        ("actor_killed", EndCause.NODE_FAILURE, None, "The actor is dead because its worker process has died"),
        ("stopped", EndCause.CANCELLED, None, "stopped"),
        ("no_room", EndCause.NO_CAPACITY, None, "could not place all 2 replicas"),
        ("succeeded", EndCause.APP_ERROR, 0, "succeeded"),
    ],
)
def test_recorded(name: str, cause: EndCause, code: int | None, words: str) -> None:
    job = JOBS[name]
    end = ray_end(job["status"], job["message"], job["logs"].splitlines(keepends=True))
    assert end is not None
    assert (end.cause, end.exit_code) == (cause, code), end
    assert words in end.reason


def test_memory_kills_and_running_jobs() -> None:
    job = JOBS["actor_killed"]
    logs = job["logs"].replace("Worker exit type: SYSTEM_ERROR", "Worker exit type: NODE_OUT_OF_MEMORY")
    end = ray_end("FAILED", job["message"], logs.splitlines(keepends=True))
    assert end is not None and end.cause == EndCause.KILLED
    assert ray_end("RUNNING", "", []) is None
