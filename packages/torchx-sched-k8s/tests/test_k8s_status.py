"""App/role/replica states from API objects shaped as the server returns them."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any

from torchx.specs import AppState
from torchx_sched_k8s import names
from torchx_sched_k8s.status import (
    VOLCANO_SILENT_AFTER,
    job_times,
    mcad_view,
    newest_pods,
    pod_message,
    view_jobs,
    volcano_view,
)


def job(
    role: str,
    k: int,
    conds: tuple[str, ...] = (),
    failed: int = 0,
    num: int = 2,
    min_rep: int | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    ann = {
        names.ANNOTATION_ROLE: role,
        names.ANNOTATION_NUM_REPLICAS: str(num),
        names.ANNOTATION_MIN_REPLICAS: str(min_rep or num),
        names.ANNOTATION_MAX_RETRIES: "0",
        names.ANNOTATION_RETRY_POLICY: "APPLICATION",
        names.ANNOTATION_RESTARTS: "0",
        **(extra or {}),
    }
    return {
        "metadata": {"name": f"app-{role}-{k}", "labels": {names.LABEL_REPLICA_ID: str(k)}, "annotations": ann},
        "spec": {"template": {"spec": {"containers": [{"image": "img", "command": ["python"], "args": ["-m", "x"]}]}}},
        "status": {
            "conditions": [{"type": c, "status": "True", "reason": "BackoffLimitExceeded"} for c in conds],
            "failed": failed,
        },
    }


def pod(role: str, k: int, phase: str, created: str = "2026-01-01T00:00:00Z", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"p-{role}-{k}-{created}",
            "creationTimestamp": created,
            "labels": {names.LABEL_REPLICA_ID: str(k)},
            "annotations": {names.ANNOTATION_ROLE: role},
        },
        "spec": {"nodeName": "node-1"},
        "status": {"phase": phase, **status},
    }


def test_unknown_app_has_no_view() -> None:
    assert view_jobs([], []) is None


def test_pending_running_succeeded() -> None:
    jobs = [job("r", 0), job("r", 1)]
    assert view_jobs(jobs, []).state == AppState.PENDING  # type: ignore[union-attr]
    view = view_jobs(jobs, [pod("r", 0, "Running"), pod("r", 1, "Pending")])
    assert view is not None
    assert view.state == AppState.RUNNING
    assert [(r.id, r.state, r.hostname) for r in view.roles_statuses()[0].replicas] == [
        (0, AppState.RUNNING, "node-1"),
        (1, AppState.PENDING, "node-1"),
    ]
    done = view_jobs([job("r", 0, ("Complete",)), job("r", 1, ("Complete",))], [])
    assert done is not None
    assert done.state == AppState.SUCCEEDED
    assert done.num_restarts == 0


def test_failed_replica_fails_the_app_with_its_reason() -> None:
    failed_pod = pod(
        "r", 1, "Failed", containerStatuses=[{"state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]
    )
    view = view_jobs([job("r", 0), job("r", 1, ("Failed",), failed=1)], [pod("r", 0, "Running"), failed_pod])
    assert view is not None
    assert view.state == AppState.FAILED
    assert view.failed_roles == ["r"]
    assert "r/1" in view.msg
    assert "exit 3" in view.msg
    assert "BackoffLimitExceeded" in view.msg


def test_elastic_role_tolerates_failures_down_to_min_replicas() -> None:
    jobs = [
        job("r", 0, ("Complete",), num=3, min_rep=2),
        job("r", 1, ("Failed",), num=3, min_rep=2),
        job("r", 2, ("Complete",), num=3, min_rep=2),
    ]
    view = view_jobs(jobs, [])
    assert view is not None
    assert view.state == AppState.SUCCEEDED


def test_cancelled_and_restarts() -> None:
    extra = {names.ANNOTATION_CANCELLED: "now", names.ANNOTATION_RESTARTS: "2"}
    view = view_jobs(
        [job("r", 0, extra=extra), job("r", 1, ("Complete",), extra=extra, failed=1)], [pod("r", 0, "Running")]
    )
    assert view is not None
    assert view.state == AppState.CANCELLED
    assert [r.state for r in view.replicas] == [AppState.CANCELLED, AppState.SUCCEEDED]
    assert view.num_restarts == 3  # 2 app restarts + 1 pod retried by the Job controller


def test_newest_pod_wins_and_deleted_pods_are_ignored() -> None:
    old, new = pod("r", 0, "Failed", "2026-01-01T00:00:00Z"), pod("r", 0, "Running", "2026-01-01T00:01:00Z")
    gone = pod("r", 0, "Running", "2026-01-01T00:02:00Z")
    gone["metadata"]["deletionTimestamp"] = "x"
    assert newest_pods([new, old, gone])[("r", 0)] is new


def test_pod_messages() -> None:
    waiting = pod(
        "r", 0, "Pending", containerStatuses=[{"state": {"waiting": {"reason": "ErrImagePull", "message": "no"}}}]
    )
    assert pod_message(waiting) == "ErrImagePull: no"
    unsched = pod(
        "r",
        0,
        "Pending",
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}],
    )
    assert pod_message(unsched) == "Unschedulable: 0/1 nodes"


def test_role_definitions_are_reconstructed_in_app_order() -> None:
    a = job("second", 0, extra={names.ANNOTATION_ROLE_INDEX: "1"})
    b = job("first", 0, extra={names.ANNOTATION_ROLE_INDEX: "0"})
    view = view_jobs([a, b], [])
    assert view is not None
    assert [r.name for r in view.role_defs] == ["first", "second"]
    assert view.role_defs[0].entrypoint == "python"
    assert view.role_defs[0].args == ["-m", "x"]


def _templates(role: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "metadata": {"labels": {names.LABEL_REPLICA_ID: str(k)}, "annotations": {names.ANNOTATION_ROLE: role}},
            "spec": {"containers": [{"image": "i", "command": ["c"]}]},
        }
        for k in range(n)
    ]


def test_volcano_phases() -> None:
    vc = {
        "metadata": {"annotations": {}},
        "spec": {"tasks": [{"template": t} for t in _templates("w", 2)]},
        "status": {"state": {"phase": "Running"}, "retryCount": 1},
    }
    view = volcano_view(vc, [pod("w", 0, "Running")])
    assert view.state == AppState.RUNNING
    assert view.num_restarts == 1
    assert [r.state for r in view.replicas] == [AppState.RUNNING, AppState.PENDING]
    vc["status"] = {"state": {"phase": "Completed"}}
    assert volcano_view(vc, []).state == AppState.SUCCEEDED
    vc["metadata"]["annotations"] = {names.ANNOTATION_CANCELLED: "t"}
    assert volcano_view(vc, []).state == AppState.CANCELLED
    assert volcano_view({"spec": {}}, []).state == AppState.PENDING


def test_a_volcano_job_no_controller_touches_says_so_after_a_while() -> None:
    """No phase and no pod for VOLCANO_SILENT_AFTER seconds: still PENDING, and the message names
    the likely cause (Volcano's API without its controller) and the way out (mode=jobs). A job
    the controller acted on, one with a pod, a young one and a cancelled one say nothing."""
    created = "2026-11-29T01:00:00Z"
    vc: dict[str, Any] = {
        "metadata": {"annotations": {}, "creationTimestamp": created},
        "spec": {"tasks": [{"template": t} for t in _templates("w", 1)]},
    }
    late = utc("01:00:00") + VOLCANO_SILENT_AFTER
    view = volcano_view(vc, [], now=late)
    assert view.state == AppState.PENDING
    assert "no Volcano controller has acted on this Volcano Job in 120 s" in view.msg
    assert "-cfg mode=jobs" in view.msg and "\n" not in view.msg
    assert volcano_view(vc, [], now=late - 1).msg == ""
    assert volcano_view(vc, [pod("w", 0, "Pending")], now=late).msg == ""
    assert volcano_view({**vc, "status": {"state": {"phase": "Pending"}}}, [], now=late).msg == ""
    cancelled = {**vc, "metadata": {"annotations": {names.ANNOTATION_CANCELLED: "t"}, "creationTimestamp": created}}
    assert volcano_view(cancelled, [], now=late).msg == ""


def test_mcad_states() -> None:
    items = [{"generictemplate": {"kind": "Service"}}] + [
        {"generictemplate": {"kind": "Pod", **t}} for t in _templates("w", 2)
    ]
    aw = {"metadata": {}, "spec": {"resources": {"GenericItems": items}}, "status": {"state": "Failed"}}
    view = mcad_view(aw, [pod("w", 0, "Failed", containerStatuses=[{"state": {"terminated": {"exitCode": 1}}}])])
    assert view.state == AppState.FAILED
    assert len(view.replicas) == 2
    assert "exit 1" in view.msg


def test_described_role_has_the_values_not_the_kubelet_escapes() -> None:
    from torchx import specs
    from torchx_sched_k8s.opts import KubernetesOpts
    from torchx_sched_k8s.request import build_jobs

    text = "$$ $(id) ${x} $HOME"
    r = specs.Role("w", "i", entrypoint="sh", args=["-c", specs.macros.escape(text)], env={"E": "$${app_id}"})
    req = build_jobs(specs.AppDef("a", [r]), KubernetesOpts(namespace="ns"))
    view = view_jobs([o for o in req.objects if o["kind"] == "Job"], [])
    assert view is not None
    assert view.role_defs[0].args == ["-c", text]
    assert view.role_defs[0].env["E"] == "${app_id}"


def recorded_jobs(name: str) -> list[dict[str, Any]]:
    """The Jobs of a finished 2-replica app as the API server returned them (fixtures/capture_times.py)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", name + ".jobs.json")
    with open(path) as f:
        jobs: list[dict[str, Any]] = json.load(f)
    return jobs


def utc(clock: str) -> float:
    return datetime.fromisoformat(f"2026-11-29T{clock}").replace(tzinfo=timezone.utc).timestamp()


def test_list_times_of_a_succeeded_app_from_its_jobs() -> None:
    jobs = recorded_jobs("times_succeeded")
    assert job_times(jobs, AppState.SUCCEEDED) == (utc("01:37:57"), utc("01:37:57"), utc("01:38:01"))
    assert job_times(jobs, AppState.RUNNING)[2] is None  # no end while the app runs


def test_a_failed_job_ends_at_its_failed_condition() -> None:
    jobs = recorded_jobs("times_failed")
    assert all("completionTime" not in j["status"] for j in jobs)  # k8s sets it on success only
    assert job_times(jobs, AppState.FAILED) == (utc("01:38:01"), utc("01:38:01"), utc("01:38:04"))


def test_a_job_not_started_has_only_its_creation_time() -> None:
    (job, _) = recorded_jobs("times_succeeded")
    pending = {"metadata": job["metadata"], "status": {}}
    assert job_times([pending], AppState.PENDING) == (utc("01:37:57"), None, None)
