"""Kubernetes ``end_cause`` from Jobs and pods recorded on the live API server + docker kubelet
(fixtures/capture_causes.py: exit 3, OOM at a 64 MiB limit, the container killed with
``docker kill`` on the node, a cancel through torchx, a pod evicted through the eviction API
that its Job ran again to success)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from torchx.schedulers.causes import EndCause
from torchx_sched_k8s.causes import app_end, pod_end
from torchx_sched_k8s.status import view_jobs

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def recorded(name: str) -> dict[str, Any]:
    with open(os.path.join(FIXTURES, f"causes_{name}.json")) as f:
        data: dict[str, Any] = json.load(f)
    return data


@pytest.mark.parametrize(
    ("name", "cause", "code", "words"),
    [
        ("exit_3", EndCause.APP_ERROR, 3, "w/0 Error (exit 3)"),
        ("oom", EndCause.KILLED, 137, "OOMKilled"),
        ("container_killed", EndCause.KILLED, 137, "SIGKILL"),
        ("cancelled", EndCause.CANCELLED, None, "cancelled"),
        ("pod_evicted_then_finished", EndCause.APP_ERROR, 0, "succeeded"),
    ],
)
def test_recorded(name: str, cause: EndCause, code: int | None, words: str) -> None:
    data = recorded(name)
    view = view_jobs(data["jobs"], data["pods"])
    assert view is not None
    end = app_end(view, data["pods"])
    assert end is not None
    assert (end.cause, end.exit_code) == (cause, code), end
    assert words in end.reason


def test_the_evicted_pod_is_kept_apart_from_its_replacement() -> None:
    data = recorded("pod_evicted_then_finished")
    evicted = next(p for p in data["pods"] if p["metadata"].get("deletionTimestamp"))
    end = pod_end(evicted, data["jobs"][0], "w/0")
    assert (end.cause, end.exit_code) == (EndCause.KILLED, 137)  # 1.20: no DisruptionTarget, just the kill


def _with_status(pod: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {**pod, "status": {**pod["status"], **status}}


def test_pod_reasons_and_disruption_conditions() -> None:
    pod = recorded("exit_3")["pods"][0]
    for reason, cause in (("NodeLost", EndCause.NODE_FAILURE), ("Evicted", EndCause.PREEMPTED)):
        end = pod_end(_with_status(pod, reason=reason, message="m"), None, "w/0")
        assert end.cause == cause and reason in end.reason
    for reason, cause in (
        ("PreemptionByScheduler", EndCause.PREEMPTED),
        ("EvictionByEvictionAPI", EndCause.PREEMPTED),
        ("DeletionByTaintManager", EndCause.NODE_FAILURE),
    ):
        cond = {"type": "DisruptionTarget", "status": "True", "reason": reason}
        end = pod_end(_with_status(pod, conditions=[cond]), None, "w/0")
        assert end.cause == cause and reason in end.reason


def test_deadline_and_unschedulable() -> None:
    data = recorded("exit_3")
    job = json.loads(json.dumps(data["jobs"][0]))
    job["status"]["conditions"][0]["reason"] = "DeadlineExceeded"
    assert pod_end(data["pods"][0], job, "w/0").cause == EndCause.TIMEOUT
    pending = {
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
    }
    assert pod_end(pending, None, "w/0").cause == EndCause.NO_CAPACITY
